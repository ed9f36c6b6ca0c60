"""report.html from a validated results.json: structure, escaping of hostile node names, absent, not kept and
malformed sections, the heatmap, the step-time chart, the rounds, the tool."""
import copy
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

import report_documents as docs
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _html_report, _report_svg, _results
from conftest import REPO

SLOW = docs.DEMO_SLOW
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


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

    def sections(self):
        return dict((s["attrs"]["id"], s["text"]) for s in self.find("section"))


def parsed(document):
    page = Page(_html_report.render_html(document, str(docs.DEMO_DIR)))
    assert page.problems == []
    return page


@pytest.fixture(scope="module")
def results():
    return docs.demo()


@pytest.fixture(scope="module")
def page(results):
    return parsed(results)


def test_the_verdict_is_the_documents_verdict_big_and_red(page, results):
    verdict = page.by_id("verdict")
    assert "fail" in verdict["attrs"]["class"].split()
    assert verdict["text"].startswith("FAIL") and results["verdict"]["message"] in verdict["text"]
    for node in results["verdict"]["failed_nodes"]:
        assert node in verdict["text"]
    assert "gpu012 (fabric)" in verdict["text"] and "gpu003 (nccl_single_node, topology)" in verdict["text"]
    counts = page.find("p", klass="counts")[0]["text"]
    assert "16 node(s), 7 failed; 622 check(s): 578 pass, 12 fail, 32 skip" == counts
    assert results["verdict"]["cluster_problems"][0] in page.by_id("cluster-problems")["text"]
    assert page.by_id("incomplete") is None and page.by_id("contradictions") is None


def test_node_table_has_a_row_per_node_failed_first_and_the_cluster_row(page, results):
    rows = page.find("tr", within="nodes-table")[1:]
    node_rows = [r for r in rows if "data-node" in r["attrs"]]
    assert [r["attrs"]["data-node"] for r in node_rows][:7] == results["verdict"]["failed_nodes"]
    assert len(node_rows) == len(results["nodes"]) == 16
    row = dict((r["attrs"]["data-node"], r) for r in node_rows)[SLOW]
    assert "pinned" in row["text"] and "461.1" in row["text"] and "2 of 2 pairs" in row["text"]
    cluster = [r for r in rows if r["attrs"].get("data-cluster")]
    assert len(cluster) == 1 and "bad" in cluster[0]["attrs"]["class"] and "11-node all_reduce_perf" in cluster[0]["text"]
    stage_cells = page.find("td", within="nodes-table", klass="st")
    assert len(stage_cells) == 16 * (1 + 8 + 1) + (1 + 8)  # result, 8 stages, fabric verdict; the cluster row


def test_heatmap_draws_the_matrix_and_outlines_the_pinned_node(page, results):
    nodes = sorted(results["fabric"]["nodes"])
    cells = page.find("rect", within="heatmap", klass="cell")
    assert len(cells) == len(nodes) ** 2 == 121
    tested = [c for c in cells if c["attrs"].get("data-busbw")]
    assert len(tested) == 2 * 6
    low = [c for c in cells if "low" in c["attrs"]["class"].split()]
    assert len(low) == 4 and all(SLOW in (c["attrs"]["data-a"], c["attrs"]["data-b"]) for c in low)
    outlines = page.find("rect", within="heatmap", klass="outline")
    assert [o["attrs"]["data-node"] for o in outlines] == [SLOW, SLOW] and not any(o["attrs"].get("stroke-dasharray") for o in outlines)
    marked = page.find("text", within="heatmap", klass="marked")
    assert sorted(t["text"] for t in marked) == ["PINNED \u25b6 %s" % SLOW] * 2
    fabric = page.sections()["fabric"]
    assert "6 of 55 pairs tested, mode adaptive" in fabric and "the median of the pairs" in fabric
    assert "Full allocation: 11 node(s), 174.6 GB/s" in fabric and "10 cleared" in fabric
    assert page.find("li", within="fabric-evidence", data_node=SLOW)


def test_rounds_are_drawn_with_every_group(page, results):
    groups = page.find("g", within="rounds-chart", klass="group")
    assert len(groups) == sum(len(r["groups"]) for r in results["fabric"]["rounds"]) == 7
    assert [g["attrs"]["data-round"] for g in groups] == ["1"] * 5 + ["2"] * 2
    low = [g for g in groups if g["attrs"]["data-status"] == "low"]
    assert len(low) == 2 and all(SLOW in g["attrs"]["data-nodes"].split() for g in low)
    assert groups[0]["attrs"]["data-status"] == "low"  # the low group first in its round
    links = [a["attrs"]["href"] for a in page.find("a", within="rounds")]
    assert links == ["raw/_fabric/round1-gpu001-gpu012.txt", "raw/_fabric/round2-gpu012-gpu016.txt"]


def test_curves_the_run_did_not_keep_say_so_and_its_step_times_are_drawn(page, results):
    sections = page.sections()
    assert "not drawn: the nccl_single_node stage ran (80 check(s)) but this results.json has no busbw curve" \
        in sections["curves"]
    assert page.by_id("busbw-curves") is None
    ranks = page.find("g", within="step-times", klass="rank")
    assert len(ranks) == 3 * len(results["workload"]["ranks"]) == 48  # compute, sync and step panels
    assert sorted(set(int(g["attrs"]["data-rank"]) for g in ranks)) == list(range(16))
    assert not [g for g in ranks if "flagged" in g["attrs"]["class"].split()]
    assert "16 rank(s) on 16 node(s); flagged by the judge, in red (none)" in sections["workload"]
    assert "not run" not in sections["curves"] + sections["workload"] + sections["fabric"] + sections["rounds"]


def test_step_times_of_a_run_that_kept_no_rows_say_so(results):
    page = parsed(docs.mutated(results, lambda d: d.pop("workload")))
    assert "not drawn: the workload stage ran (64 check(s)) but this results.json has no per-rank rows" \
        in page.sections()["workload"]
    assert page.by_id("step-times") is None


def test_curves_and_step_times_from_the_documents_blocks():
    document = docs.workload_and_curves()
    page = parsed(document)
    lines = page.find("polyline", within="busbw-curves", klass="curve")
    assert len(lines) == 3
    assert [line["attrs"]["data-node"] for line in lines if "slow" in line["attrs"]["class"].split()] == ["gpu003"]
    assert [t["text"] for t in page.find("text", within="busbw-curves", klass="curve-label")] == ["gpu003"]
    ticks = [t["text"] for t in page.find("text", within="busbw-curves")]
    assert "8M" in ticks and "8G" in ticks
    ranks = page.find("g", within="step-times", klass="rank")
    assert len(ranks) == 2 * len(document["workload"]["ranks"])  # compute and sync panels
    flagged = [g for g in ranks if "flagged" in g["attrs"]["class"].split()]
    assert [(g["attrs"]["data-rank"], g["attrs"]["data-phase"]) for g in flagged] == [("4", "compute"), ("4", "sync")]
    assert [t["text"] for t in page.find("text", within="step-times", klass="flagged")] == ["gpu003", "gpu003"]
    row = dict((r["attrs"]["data-node"], r["text"]) for r in page.find("tr", within="nodes-table") if "data-node" in r["attrs"])
    assert "16.0 / 1.0" in row["gpu003"]


def test_a_run_without_fabric_or_workload():
    page = parsed(docs.preflight_only())
    sections = page.sections()
    for name in ("fabric", "rounds", "curves", "workload"):
        assert "not run (the " in sections[name], name
    assert page.by_id("heatmap") is None and page.by_id("rounds-chart") is None
    assert "Fabric" not in " ".join(t["text"] for t in page.find("th", within="nodes-table"))
    assert "pass" in page.by_id("verdict")["attrs"]["class"].split()


def test_a_fabric_stage_that_ended_on_a_scheduler_error():
    page = parsed(docs.scheduler_error())
    error = page.by_id("fabric-error")["text"]
    assert "ended on a scheduler error" in error and "Unable to contact slurm controller" in error and "No node is blamed" in error
    assert len(page.find("rect", within="heatmap", klass="untested")) == 12 and not page.find("rect", within="heatmap", klass="outline")
    groups = page.find("g", within="rounds-chart", klass="group")
    assert [g["attrs"]["data-status"] for g in groups] == ["error", "error"]


def test_a_replay_with_groups_that_are_not_replayable():
    page = parsed(docs.replay_not_replayable())
    assert "replay of /data/artifacts/20261130T090000Z-live" in page.find("p", klass="meta")[0]["text"]
    groups = page.find("g", within="rounds-chart", klass="group")
    assert sorted(g["attrs"]["data-status"] for g in groups) == ["not_replayable", "not_replayable", "pass"]
    assert "no busbw" in " ".join(g["text"] for g in groups if g["attrs"]["data-status"] == "not_replayable")


def test_a_malformed_block_is_shown_as_an_error_and_the_rest_is_drawn(results):
    document = docs.mutated(results, lambda d: d["fabric"].update(pairwise=d["fabric"].pop("matrix")))
    page = parsed(document)
    sections = page.sections()
    assert "could not be drawn from this results.json" in sections["fabric"]
    assert "fabric/matrix: missing (the results schema requires it)" in sections["fabric"]
    assert page.by_id("heatmap") is None and page.by_id("rounds-chart") is not None and page.by_id("nodes-table")


def test_a_contradiction_is_listed_on_the_page(results):
    document = docs.mutated(results, lambda d: d["verdict"]["failed_nodes"].append("gpu099"))
    text = _html_report.render_html(document)
    assert "This results.json contradicts itself" in text
    assert "verdict/failed_nodes names gpu099, which nodes does not list" in text


def test_a_section_that_breaks_is_reported_and_the_rest_is_drawn(monkeypatch, results):
    def broken(_fabric):
        raise KeyError("boom")
    monkeypatch.setattr(_report_svg, "heatmap", broken)
    text = _html_report.render_html(results)
    assert "could not be drawn from this results.json:<ul><li>KeyError: &#x27;boom&#x27;" in text
    assert 'id="rounds-chart"' in text and 'id="nodes-table"' in text


def test_a_document_that_is_not_one_still_gives_a_page():
    for document in (None, [], {"schema": "gpucluster.acceptance/results/1", "verdict": "fail", "checks": []}):
        page = Page(_html_report.render_html(document))
        assert page.problems == []
        assert "could not be drawn" in "".join(e["text"] for e in page.find("body"))


HOSTILE = [
    '<script>alert("x")</script>',
    'gpu" onmouseover="alert(1)',
    "it's&amp;<b>bold</b>",
    "</svg></table><img src=x onerror=alert(2)>",
]


def test_hostile_node_names_are_escaped_everywhere(results):
    mapping = {"gpu001": HOSTILE[0], "gpu016": HOSTILE[1], "gpu003": HOSTILE[2], SLOW: HOSTILE[3]}
    document = docs.renamed(results, mapping)
    for check in document["checks"]:
        check["message"] = "%s %s" % (check["message"], HOSTILE[0])
    document["run"]["id"] = HOSTILE[1]
    assert _results.validate(document) == []
    text = _html_report.render_html(document)
    page = Page(text)
    assert page.problems == []
    tags = set(e["tag"] for e in page.elements)
    assert "script" not in tags and "img" not in tags and "b" not in tags
    assert not [e for e in page.elements if any(k.startswith("on") for k in e["attrs"])]
    for name in HOSTILE:
        assert name not in text
    rows = [r["attrs"].get("data-node") for r in page.find("tr", within="nodes-table")]
    assert set(HOSTILE) <= set(rows)
    labels = [t["text"] for t in page.find("text", within="heatmap")]
    assert "PINNED \u25b6 %s" % HOSTILE[3][:31] + "\u2026" in labels  # long names are shortened on the axes
    assert len(page.find("rect", within="heatmap", klass="cell")) == 121
    assert [o["attrs"]["data-node"] for o in page.find("rect", within="heatmap", klass="outline")] == [HOSTILE[3]] * 2


def test_the_page_loads_nothing_from_elsewhere(page, results):
    text = _html_report.render_html(results)
    assert "http://" not in text and "https://" not in text and "//" not in text.replace("://", "")
    assert not page.find("script") and not page.find("img") and not page.find("link") and not page.find("iframe")
    for element in page.elements:
        for key in ("src", "href", "xlink:href", "srcset", "action"):
            value = element["attrs"].get(key)
            if value is not None:
                assert key == "href" and ":" not in value, (key, value)
    assert "@import" not in text and "url(" not in text.replace("url(#heatmap-ramp)", "")


def test_rendering_reads_nothing_but_the_document(results, tmp_path):
    # the run directory is not read: a page drawn without it, or with an empty one, is the same page
    assert _html_report.render_html(results) == _html_report.render_html(results, str(tmp_path))


def test_rendering_does_not_change_the_document(results):
    before = copy.deepcopy(results)
    _html_report.render_html(results, str(docs.DEMO_DIR))
    assert results == before


def test_a_big_sparse_fabric_stays_small_and_uplinks_are_listed():
    nodes = ["n%04d" % i for i in range(600)]
    matrix = {}
    for i in range(0, 600, 2):
        value = 360.0 if i else 150.0
        matrix.setdefault(nodes[i], {})[nodes[i + 1]] = value
        matrix.setdefault(nodes[i + 1], {})[nodes[i]] = value
    rounds = [{"round": 1, "groups": [docs.fabric_group((nodes[i], nodes[i + 1]), "low" if i == 0 else "pass",
                                                        matrix[nodes[i]][nodes[i + 1]]) for i in range(0, 600, 2)]}]
    fabric = docs.fabric_block("fail", dict((n, "cleared") for n in nodes), rounds, matrix=matrix)
    fabric["uplinks"] = {"leaf02": {"verdict": "pinned", "evidence": ["leaf02 uplink: 6 of 6 low"]},
                         "leaf01": {"verdict": "cleared", "evidence": []}}
    document = docs.build([docs.check("fabric", None, "leaf_uplink", "fail", "leaf02 uplink: 6 of 6 low")], nodes,
                          {"fabric": fabric})
    text = _html_report.render_html(document)
    assert len(text) < 3000000
    page = Page(text)
    assert len(page.find("rect", within="heatmap", klass="cell")) == 600  # 300 pairs, both ways
    assert len(page.find("rect", within="heatmap", klass="low")) == 2
    assert page.find("rect", within="heatmap", klass="untested-background")
    assert "leaf02 uplink: 6 of 6 low" in page.by_id("uplinks")["text"] and "leaf01" not in page.by_id("uplinks")["text"]
    groups = page.find("g", within="rounds-chart", klass="group")
    summary = page.find("g", within="rounds-chart", klass="group-summary")
    assert len(groups) == 1 and [s["attrs"]["data-count"] for s in summary] == ["299"]


# ------------------------------------------------------------------------------------ tools/render-report

def run_tool(*args, python=sys.executable, root=REPO, env=None):
    return subprocess.run([python, str(root / "tools" / "render-report")] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=120, check=False, env=env)


def test_render_report_tool_redraws_a_run(tmp_path, results):
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _prometheus
    run = tmp_path / "run"
    shutil.copytree(str(docs.DEMO_DIR), str(run))
    proc = run_tool(run)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(run / "report.html"), str(run / "metrics.prom")]
    assert (run / "report.html").read_text() == _html_report.render_html(results, str(run))
    assert (run / "metrics.prom").read_text() == _prometheus.render_textfile(results)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    proc = run_tool(run / "results.json", "-o", tmp_path / "out", "--textfile-dir", textfiles)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "report.html").exists()
    assert (textfiles / "gpucluster_acceptance.prom").read_text() == (run / "metrics.prom").read_text()
    assert [p.name for p in textfiles.iterdir()] == ["gpucluster_acceptance.prom"]  # no temporary file left
    assert oct(os.stat(str(textfiles / "gpucluster_acceptance.prom")).st_mode & 0o777) == "0o644"


def test_render_report_tool_refuses_an_invalid_results_file_and_lists_its_problems(tmp_path, results):
    run = tmp_path / "run"
    run.mkdir()
    document = docs.mutated(results, lambda d: (d["fabric"].update(pairwise=d["fabric"].pop("matrix")),
                                                d["verdict"].update(status="green")))
    (run / "results.json").write_text(_results.dumps(document))
    proc = run_tool(run)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "is not a valid results.json; nothing written" in proc.stderr
    assert "fabric: 'matrix' is a required property" in proc.stderr and "verdict/status: 'green' is not one of" in proc.stderr
    assert sorted(p.name for p in run.iterdir()) == ["results.json"]
    (run / "results.json").write_text('{"a": 1}')
    proc = run_tool(run)
    assert proc.returncode == 2 and "not a gpucluster.acceptance/results/2 document" in proc.stderr
    proc = run_tool(tmp_path / "missing")
    assert proc.returncode == 2 and "cannot be read" in proc.stderr


def bare_checkout(tmp_path):
    root = tmp_path / "checkout"
    for folder in ("plugins", "schemas"):
        shutil.copytree(str(REPO / folder), str(root / folder), ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tools").mkdir()
    shutil.copy(str(REPO / "tools" / "render-report"), str(root / "tools" / "render-report"))
    return root


def test_render_report_tool_runs_from_a_bare_checkout(tmp_path):
    """No .build link: the tool links the collection itself; run through its own shebang."""
    root = bare_checkout(tmp_path)
    env = {"PATH": "%s:/usr/bin:/bin" % os.path.dirname(sys.executable)}  # a python3 with jsonschema first
    proc = subprocess.run([str(root / "tools" / "render-report"), str(docs.DEMO_DIR), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert 'id="heatmap"' in (tmp_path / "out" / "report.html").read_text()


def test_render_report_tool_without_jsonschema_refuses_to_draw_unvalidated(tmp_path):
    root = bare_checkout(tmp_path)  # no .venv to fall back on
    stub = tmp_path / "stub" / "jsonschema"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('jsonschema hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=str(stub.parent))
    proc = run_tool(docs.DEMO_DIR, "-o", tmp_path / "out", root=root, env=env)
    assert proc.returncode == 2 and "the jsonschema library is missing" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
