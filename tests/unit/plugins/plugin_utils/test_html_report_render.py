"""The HTML report: structure, escaping of hostile node names, absent sections, the heatmap, the tool."""
import copy
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _html_report
from conftest import FIXTURES, REPO

RUN_DIR = FIXTURES / "report" / "run_slow_node"
SLOW = "gpu014"           # pinned by the fabric localisation, flagged by the workload test
SLOW_SINGLE = "gpu003"    # NVLink down: its single-node busbw is 5 % of its peers'
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


def load():
    return json.loads((RUN_DIR / "results.json").read_text())


class Page(HTMLParser):
    """Elements of a page: (tag, attrs, ancestor ids, text), with a well-formedness check."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.stack, self.problems = [], [], []
        self.feed(text)
        self.close()
        if self.stack:
            self.problems.append("unclosed: %s" % [e["tag"] for e in self.stack])

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "within": [e["attrs"].get("id") for e in self.stack], "text": ""}
        self.elements.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "within": [e["attrs"].get("id") for e in self.stack],
                              "text": ""})

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1]["tag"] != tag:
            self.problems.append("</%s> closes %s" % (tag, self.stack[-1]["tag"] if self.stack else "nothing"))
            return
        self.stack.pop()

    def handle_data(self, data):
        for element in self.stack:
            element["text"] += data

    def find(self, tag=None, within=None, klass=None, **attrs):
        found = []
        for element in self.elements:
            if tag and element["tag"] != tag:
                continue
            if within and within not in element["within"]:
                continue
            if klass and klass not in element["attrs"].get("class", "").split():
                continue
            if any(element["attrs"].get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            found.append(element)
        return found

    def by_id(self, name):
        found = [e for e in self.elements if e["attrs"].get("id") == name]
        assert len(found) <= 1, "id %s twice" % name
        return found[0] if found else None


@pytest.fixture(scope="module")
def results():
    return load()


@pytest.fixture(scope="module")
def page(results):
    text = _html_report.render_html(results, str(RUN_DIR))
    parsed = Page(text)
    assert parsed.problems == []
    return parsed


def test_verdict_is_big_red_and_names_the_bad_nodes(page):
    verdict = page.by_id("verdict")
    assert "fail" in verdict["attrs"]["class"].split()
    assert verdict["text"].startswith("FAIL")
    for node in ("gpu003", "gpu009", "gpu011", SLOW):
        assert node in verdict["text"]
    assert "4 of 16 node(s) failed" in verdict["text"]


def test_node_table_has_a_row_per_node_bad_first_with_stage_cells_and_numbers(page, results):
    rows = page.find("tr", within="nodes-table")[1:]
    assert [r["attrs"]["data-node"] for r in rows][:4] == ["gpu003", "gpu009", "gpu011", SLOW]
    assert len(rows) == len(results["nodes"]) == 16
    row = next(r for r in rows if r["attrs"]["data-node"] == SLOW)
    assert "pinned" in row["text"] and "41.6 / 1.3" in row["text"] and "469.4" in row["text"]
    assert "15 of 15 pairs" in row["text"]  # the problem's sentence
    stage_cells = page.find("td", within="nodes-table", klass="st")
    assert len(stage_cells) == 16 * (1 + 8 + 1)  # result, 8 stages, fabric verdict
    slow_single = next(r for r in rows if r["attrs"]["data-node"] == SLOW_SINGLE)
    assert "-95.4 %" in slow_single["text"]  # the baseline delta
    assert page.find("td", within="nodes-table", klass="fail")


def test_heatmap_has_n_squared_cells_and_the_slow_node_row_and_column_are_low(page, results):
    heatmap = page.by_id("heatmap")
    assert heatmap["tag"] == "svg"
    nodes = sorted(results["fabric"]["verdicts"])
    cells = page.find("rect", within="heatmap", klass="cell")
    assert len(cells) == len(nodes) ** 2
    low = [c for c in cells if "low" in c["attrs"]["class"].split()]
    assert len(low) == 2 * (len(nodes) - 1)
    assert all(SLOW in (c["attrs"]["data-a"], c["attrs"]["data-b"]) for c in low)
    # the pinned node is outlined (row and column) and named as such on both axes
    assert len(page.find("rect", within="heatmap", klass="outline")) == 2
    marked = page.find("text", within="heatmap", klass="marked")
    assert sorted(t["text"] for t in marked) == ["PINNED \u25b6 %s" % SLOW] * 2
    assert "a red row and column" in page.by_id("fabric")["text"]


def test_heatmap_of_a_sparse_matrix_greys_untested_pairs_and_outlines_suspects():
    results = {"verdict": "fail", "fabric": {
        "pairwise": {"a": {"b": 300.0}, "c": {"d": 150.0}},
        "verdicts": {"a": {"status": "cleared"}, "b": {"status": "cleared"}, "c": {"status": "suspect"},
                     "d": {"status": "suspect"}, "e": {"status": "untested"}}}}
    parsed = Page(_html_report.render_html(results))
    cells = parsed.find("rect", within="heatmap", klass="cell")
    assert len(cells) == 25
    assert len([c for c in cells if "untested" in c["attrs"]["class"]]) == 25 - 5 - 4
    assert len([c for c in cells if c["attrs"].get("data-busbw")]) == 4
    outlines = parsed.find("rect", within="heatmap", klass="outline")
    assert len(outlines) == 4 and all(o["attrs"].get("stroke-dasharray") for o in outlines)


def test_curves_have_one_line_per_node_and_the_slow_one_is_red(page):
    lines = page.find("polyline", within="busbw-curves", klass="curve")
    assert len(lines) == 16
    slow = [line["attrs"]["data-node"] for line in lines if "slow" in line["attrs"]["class"].split()]
    assert slow == [SLOW_SINGLE]
    assert [t["text"] for t in page.find("text", within="busbw-curves", klass="curve-label")] == [SLOW_SINGLE]
    ticks = [t["text"] for t in page.find("text", within="busbw-curves")]
    assert "8M" in ticks and "8G" in ticks  # log2 axis from 8 MiB to 8 GiB


def test_curves_come_from_results_when_given_and_say_why_when_raw_files_are_not():
    results = {"nccl_curves": {"n1": [[1024, 1.0], [2048, 2.0], [4096, 4.0]], "n2": {"1024": 1.1, "4096": 4.2}}}
    parsed = Page(_html_report.render_html(results))
    assert len(parsed.find("polyline", within="busbw-curves", klass="curve")) == 2
    text = _html_report.render_html(load())  # no run_dir: the raw outputs cannot be read
    assert "render with the run directory" in text


def test_step_times_flag_the_slow_node_ranks(page):
    ranks = page.find("g", within="step-times", klass="rank")
    assert len(ranks) == 2 * 128  # compute and sync panels
    flagged = [g for g in ranks if "flagged" in g["attrs"]["class"].split()]
    assert len(flagged) == 2 * 8
    assert set(g["attrs"]["data-node"] for g in flagged) == {SLOW}
    assert [t["text"] for t in page.find("text", within="step-times", klass="node-label")
            if t["attrs"]["fill"] == _html_report.SLOW_LINE] == [SLOW, SLOW]


def test_rounds_table_has_a_row_per_round_with_the_low_group_first(page, results):
    rows = page.find("tr", within="rounds-table")[1:]
    assert len(rows) == len(results["fabric"]["rounds"]) == 15
    first_chip = page.find("span", within="rounds-table", klass="chip")[0]
    assert SLOW in first_chip["text"] and "low" in first_chip["text"] and "fail" in first_chip["attrs"]["class"]


HOSTILE = [
    '<script>alert("x")</script>',
    'gpu" onmouseover="alert(1)',
    "it's&amp;<b>bold</b>",
    "</svg></table><img src=x onerror=alert(2)>",
]


def renamed(results, mapping):
    """The results with node names replaced everywhere (keys and values)."""
    text = json.dumps(results)
    for old, new in mapping.items():
        text = text.replace('"%s"' % old, json.dumps(new))
    return json.loads(text)


def test_hostile_node_names_are_escaped_everywhere():
    results = load()
    mapping = dict(("gpu%03d" % (i + 11), name) for i, name in enumerate(HOSTILE))  # gpu011..gpu014
    results = renamed(results, mapping)
    for check in results["checks"]:
        check["message"] = "%s %s" % (check["message"], HOSTILE[0])
    results["run"]["id"] = HOSTILE[1]
    text = _html_report.render_html(results, str(RUN_DIR))
    parsed = Page(text)
    assert parsed.problems == []
    tags = set(e["tag"] for e in parsed.elements)
    assert "script" not in tags and "img" not in tags and "b" not in tags
    assert not [e for e in parsed.elements if any(k.startswith("on") for k in e["attrs"])]
    for name in HOSTILE:
        assert name not in text
    # the names are still shown, as text
    rows = [r["attrs"].get("data-node") for r in parsed.find("tr", within="nodes-table")]
    assert set(HOSTILE) <= set(rows)
    labels = [t["text"] for t in parsed.find("text", within="heatmap")]
    assert "PINNED \u25b6 %s" % HOSTILE[3][:31] + "\u2026" in labels  # long names are shortened on the axes
    assert len(parsed.find("rect", within="heatmap", klass="cell")) == 256


@pytest.mark.parametrize("drop", ["fabric", "workload", "baseline", "raw", "nodes", "checks"])
def test_each_absent_section_says_not_run(drop):
    results = load()
    del results[drop]
    text = _html_report.render_html(results, str(RUN_DIR) if drop != "raw" else None)
    parsed = Page(text)
    assert parsed.problems == []
    sections = dict((s["attrs"]["id"], s["text"]) for s in parsed.find("section"))
    absent = {"fabric": ["fabric", "rounds"], "workload": ["workload"], "nodes": [], "checks": [],
              "baseline": [], "raw": ["curves"]}[drop]
    for section in absent:
        assert "not run" in sections[section] or "not drawn" in sections[section], section
    if drop == "fabric":
        assert parsed.by_id("heatmap") is None and parsed.by_id("rounds-table") is None
        assert "Fabric" not in [t["text"] for t in parsed.find("th", within="nodes-table")]
    if drop == "baseline":
        assert "vs baseline" not in text
    assert "could not be drawn" not in text


def test_an_empty_or_damaged_document_still_gives_a_page():
    for results in ({}, {"verdict": "pass", "nodes": {}, "checks": []}, None,
                    {"fabric": "oops", "workload": [1, 2], "nodes": {"n": "x"}, "checks": ["y", None],
                     "baseline": {"nodes": {"n": {"busbw": "fast"}}}, "run": "z", "raw": {"n": None}},
                    {"fabric": {"pairwise": {"a": {"b": "x", "c": None}}, "rounds": [None, {"groups": [None]}]},
                     "workload": {"ranks": {"0": {"node": "a", "compute_p50": "x"}, "1": None}}}):
        text = _html_report.render_html(results)
        parsed = Page(text)
        assert parsed.problems == []
        assert "could not be drawn" not in text
        assert text.count("not run") >= 3 or parsed.by_id("heatmap") is not None


def test_a_section_that_breaks_is_reported_and_the_rest_is_drawn(monkeypatch):
    def broken(_results):
        raise KeyError("boom")
    monkeypatch.setattr(_html_report, "_heatmap", broken)
    text = _html_report.render_html(load(), str(RUN_DIR))
    assert "could not be drawn from this results.json: KeyError: &#x27;boom&#x27;" in text
    assert 'id="step-times"' in text and 'id="busbw-curves"' in text


def test_the_page_loads_nothing_from_elsewhere(page, results):
    text = _html_report.render_html(results, str(RUN_DIR))
    assert "http://" not in text and "https://" not in text and "//" not in text.replace("://", "")
    assert not page.find("script") and not page.find("img") and not page.find("link") and not page.find("iframe")
    for element in page.elements:
        for key in ("src", "href", "xlink:href", "srcset", "action"):
            value = element["attrs"].get(key)
            if value is not None:
                assert key == "href" and ":" not in value, (key, value)
    assert "@import" not in text and "url(" not in text.replace("url(#heatmap-ramp)", "")


def test_baseline_shapes():
    rows = _html_report.baseline_rows({"baseline": {"n1": {"busbw": -12.5}, "n2": {"busbw": {"ratio": 0.9}},
                                                    "n3": {"busbw": {"value": 90, "baseline": 100}},
                                                    "n4": {"busbw": {"delta": -3}}, "n5": "x",
                                                    "n6": {"busbw": {"rel_diff": -0.2}}}})
    assert "n1" not in rows  # a bare number is a value of a baseline document, not a change
    assert round(rows["n2"][0][1], 6) == -10.0 and round(rows["n3"][0][1], 6) == -10.0
    assert rows["n4"] == [("busbw", None, "busbw -3")]
    assert rows["n6"] == [("busbw", -20.0, "busbw -20.0 %")]
    assert "n5" not in rows


def test_baseline_and_step_times_from_the_stages_checks_when_the_sections_are_absent():
    results = load()
    del results["baseline"], results["workload"]
    results["checks"].append({"stage": "baseline", "node": "gpu003", "check": "baseline.single_node_busbw",
                              "status": "fail", "message": "m", "component": None,
                              "metrics": {"metric": "single_node_busbw", "value": 21.4, "baseline": 465.0,
                                          "rel_diff": -0.954}})
    results["checks"].append({"stage": "workload", "node": SLOW, "check": "workload.straggler", "status": "fail",
                              "message": "m", "component": "rank 104",
                              "metrics": {"compute_p50_ms": 41.0, "sync_p50_ms": 1.2, "compute_p99_ms": 44.0}})
    parsed = Page(_html_report.render_html(results, str(RUN_DIR)))
    rows = dict((r["attrs"]["data-node"], r["text"]) for r in parsed.find("tr", within="nodes-table")[1:])
    assert "-95.4 %" in rows["gpu003"] and "41.0 / 1.2" in rows[SLOW]
    assert "not run" in dict((e["attrs"]["id"], e["text"]) for e in parsed.find("section"))["workload"]


def test_rank_keys_with_units():
    rows = _html_report.rank_rows({"workload": {"unit": "s", "ranks": {
        "1": {"node": "b", "compute_p50_ms": 20.0, "sync_p50": 0.5},
        "0": {"node": "a", "compute_p50_us": 21000, "compute_p99": 0.03}}}})
    assert [r["rank"] for r in rows] == ["0", "1"]
    assert rows[0]["values"] == {("compute", "50"): 21.0, ("compute", "99"): 30.0}
    assert rows[1]["values"] == {("compute", "50"): 20.0, ("sync", "50"): 500.0}


def run_tool(*args, python=sys.executable, root=REPO):
    return subprocess.run([python, str(root / "tools" / "render-report")] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_render_report_tool_redraws_a_run(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(str(RUN_DIR), str(run))
    proc = run_tool(run)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(run / "report.html"), str(run / "metrics.prom")]
    html_text = (run / "report.html").read_text()
    assert html_text == _html_report.render_html(load(), str(run))
    assert (run / "metrics.prom").read_text().startswith("# HELP gpucluster_acceptance_")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    proc = run_tool(run / "results.json", "-o", tmp_path / "out", "--textfile-dir", textfiles)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "report.html").exists()
    assert (textfiles / "gpucluster_acceptance.prom").read_text() == (run / "metrics.prom").read_text()
    assert [p.name for p in textfiles.iterdir()] == ["gpucluster_acceptance.prom"]  # no temporary file left
    assert oct(os.stat(str(textfiles / "gpucluster_acceptance.prom")).st_mode & 0o777) == "0o644"


def test_render_report_tool_runs_from_a_bare_checkout_with_any_python3(tmp_path):
    """No venv, no .build link: the tool links the collection itself; run through its own shebang."""
    root = tmp_path / "checkout"
    shutil.copytree(str(REPO / "plugins"), str(root / "plugins"), ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tools").mkdir()
    shutil.copy(str(REPO / "tools" / "render-report"), str(root / "tools" / "render-report"))
    env = {"PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(root / "tools" / "render-report"), str(RUN_DIR), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert 'id="heatmap"' in (tmp_path / "out" / "report.html").read_text()


def test_render_report_tool_refuses_what_is_not_a_results_file(tmp_path):
    (tmp_path / "results.json").write_text('{"a": 1}')
    proc = run_tool(tmp_path)
    assert proc.returncode == 2 and "not an acceptance results.json" in proc.stderr
    proc = run_tool(tmp_path / "missing")
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_copy_is_not_changed_by_rendering(results):
    before = copy.deepcopy(results)
    _html_report.render_html(results, str(RUN_DIR))
    assert results == before


def test_a_big_sparse_fabric_stays_small_and_uplinks_are_listed():
    nodes = ["n%04d" % i for i in range(600)]
    pairwise = dict((nodes[i], {nodes[i + 1]: 360.0 if i else 150.0}) for i in range(0, 600, 2))
    results = {"fabric": {"pairwise": pairwise, "verdicts": dict((n, {"status": "cleared"}) for n in nodes),
                          "uplinks": {"leaf02": {"status": "pinned", "evidence": ["leaf02 uplink: 6 of 6 low"]},
                                      "leaf01": {"status": "cleared"}}}}
    text = _html_report.render_html(results)
    assert len(text) < 2000000
    parsed = Page(text)
    assert len(parsed.find("rect", within="heatmap", klass="cell")) == 600  # 300 pairs, both ways
    assert len(parsed.find("rect", within="heatmap", klass="low")) == 2
    assert parsed.find("rect", within="heatmap", klass="untested-background")
    assert "leaf02 uplink: 6 of 6 low" in text and "leaf01" not in text
