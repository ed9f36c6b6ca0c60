"""The report of a real acceptance run as a person sees it: headless Chromium, every host name unresolvable.

The session's demo run (tests/conftest.py demo_run: tools/demo.sh, what `make demo` runs, once):
a real ansible-playbook acceptance run (every stage) of the simulated 16-node demo cluster on real
Slurm, whose faults include one slow node (slow_node 0.5 on gpu012: only the multi-node tests can
see it), sim/clusters/demo.yml. Its callback writes results.json, report.html and metrics.prom. Then:
the page and metrics are the renderings of that results.json; Chromium's DOM holds the pairwise
heatmap with the pinned node outlined, the step-time chart, the localisation rounds with
every group of results.json and the RDMA stage's rails; the screenshot shows each tested pair's colour where its cell is and
the pinned node's row and column red and outlined; the page asks the network for nothing
(Chromium's own net log, checked against a control page that does).

GPUCLUSTER_REPORT_RUN_DIR=artifacts/<run-id> runs the same checks on that run's artifacts instead
(e.g. a `make demo` run; its pinned node is read from its results.json). Set
GPUCLUSTER_REPORT_SCREENSHOT=/some/file.png to keep the screenshot for a look.
"""
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import report_png
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _html_report, _prometheus
from harness import validated_results

pytestmark = pytest.mark.integration

SLOW = "gpu012"  # sim/clusters/demo.yml's slow node
WINDOW = (1400, 3200)
VERDICT_RED = (207, 34, 46)  # #cf222e
OUTLINE = (31, 35, 40)  # #1f2328


class Run(object):
    """The artifacts of one finished acceptance run: its directory, results.json, output and exit code."""

    def __init__(self, directory, results, output="", rc=None):
        self.dir, self.results, self.output, self.rc = Path(directory), results, output, rc


@pytest.fixture(scope="module")
def run(request):
    given = os.environ.get("GPUCLUSTER_REPORT_RUN_DIR")
    if given:
        return Run(given, validated_results(Path(given) / "results.json"))
    _work, directory, log, rc = request.getfixturevalue("demo_run")
    return Run(directory, validated_results(directory / "results.json"), log, rc)


@pytest.fixture(scope="module")
def pinned(run):
    nodes = run.results["fabric"]["pinned"]["nodes"]
    if not os.environ.get("GPUCLUSTER_REPORT_RUN_DIR"):
        assert nodes == [SLOW], run.results["fabric"]["nodes"]
    assert len(nodes) == 1, nodes
    return nodes[0]


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("chromium is missing: install the Debian package 'chromium' (tools/install-system-deps.sh "
                    "does) to render the HTML report in a real browser", pytrace=False)
    return path


def run_chromium(tmp_path, url, *args):
    """Headless Chromium with no network: every host name resolves to nothing. Returns (stdout, net log)."""
    profile = tmp_path / ("profile-%d" % len(list(tmp_path.glob("profile-*"))))
    net_log = profile.with_suffix(".netlog.json")
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--force-device-scale-factor=1", "--user-data-dir=%s" % profile, '--host-resolver-rules=MAP * ~NOTFOUND',
           "--log-net-log=%s" % net_log] + list(args) + [url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, json.loads(net_log.read_text())


def page_requests(net_log):
    """URLs the page itself asked for (initiator: its origin), not Chromium's own background requests."""
    names = dict((v, k) for k, v in net_log["constants"]["logEventTypes"].items())
    found = []
    for event in net_log["events"]:
        params = event.get("params") or {}
        if names.get(event["type"]) == "URL_REQUEST_START_JOB" and "url" in params:
            if params.get("initiator") != "not an origin" and not params["url"].startswith("file:"):
                found.append(params["url"])
    return found


class Dom(HTMLParser):
    """The elements of Chromium's DOM dump: (tag, attrs, ancestor ids)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.stack = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "within": [e["attrs"].get("id") for e in self.stack],
                              "text": []})
        if tag not in ("meta", "br", "link", "img", "input", "hr"):
            self.stack.append(self.elements[-1])

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "within": [e["attrs"].get("id") for e in self.stack],
                              "text": []})

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for element in self.stack:
            element["text"].append(data)

    def find(self, tag, within, klass=None):
        return [e for e in self.elements if e["tag"] == tag and within in e["within"]
                and (klass is None or klass in e["attrs"].get("class", "").split())]

    def by_id(self, name):
        return [e for e in self.elements if e["attrs"].get("id") == name]


@pytest.fixture(scope="module")
def dom(run, tmp_path_factory):
    text, _log = run_chromium(tmp_path_factory.mktemp("dom"), (run.dir / "report.html").as_uri(), "--dump-dom")
    return Dom(text)


def test_the_callback_draws_page_and_metrics_from_its_results_json(run):
    if run.rc is not None:
        assert run.rc != 0  # the slow node fails acceptance
        assert "artifacts: %s (report.html, junit.xml, results.json, metrics.prom, raw/)" % run.dir in run.output
    assert (run.dir / "report.html").read_text() == _html_report.render_html(run.results, str(run.dir))
    metrics = (run.dir / "metrics.prom").read_text()
    assert metrics == _prometheus.render_textfile(run.results)
    assert "gpucluster_acceptance_verdict 0\n" in metrics
    if not shutil.which("promtool"):
        pytest.fail("promtool is missing: install the Debian package 'prometheus'", pytrace=False)
    proc = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_page_asks_the_network_for_nothing(run, tmp_path):
    text = (run.dir / "report.html").read_text()
    assert "http://" not in text and "https://" not in text
    _dom, log = run_chromium(tmp_path, (run.dir / "report.html").as_uri(), "--dump-dom")
    assert page_requests(log) == []
    # control: the same check does see a page that loads a picture and a style sheet from elsewhere
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://example.invalid/a.png">'
                       '<link rel="stylesheet" href="https://fonts.example.invalid/b.css"></body></html>')
    _dom, log = run_chromium(tmp_path, control.as_uri(), "--dump-dom")
    assert sorted(page_requests(log)) == ["http://example.invalid/a.png", "https://fonts.example.invalid/b.css"]


def test_chromium_draws_the_heatmap_with_the_pinned_node_outlined(run, dom, pinned):
    fabric = run.results["fabric"]
    names = sorted(fabric["nodes"])
    cells = dom.find("rect", "heatmap", "cell")
    assert len(cells) == len(names) ** 2
    tested = [c for c in cells if c["attrs"].get("data-busbw")]
    pairs = set(tuple(sorted((a, b))) for a, row in fabric["matrix"].items() for b, v in row.items() if v is not None)
    assert len(tested) == 2 * len(pairs) > 0
    outlines = dom.find("rect", "heatmap", "outline")
    assert [o["attrs"]["data-node"] for o in outlines] == [pinned, pinned]
    labels = ["".join(t["text"]) for t in dom.find("text", "heatmap", "marked")]
    assert labels == ["PINNED \u25b6 %s" % pinned] * 2
    low = [c for c in cells if "low" in c["attrs"]["class"].split()]
    assert low and all(pinned in (c["attrs"]["data-a"], c["attrs"]["data-b"]) for c in low)


def test_chromium_draws_the_step_time_chart(run, dom):
    # workload.ranks is what the chart draws (the builder makes it from the workload.rank checks' metrics)
    ranks = (run.results.get("workload") or {}).get("ranks")
    per_rank = [c for c in run.results["checks"] if c["check"] == "workload.rank"]
    assert ranks, "results.json has no workload.ranks: %d workload.rank check(s), %d with metrics.rank" % (
        len(per_rank), len([c for c in per_rank if "rank" in (c.get("metrics") or {})]))
    marks = dom.find("g", "step-times", "rank")
    assert len(set(m["attrs"]["data-rank"] for m in marks)) == len(ranks)
    assert set(m["attrs"]["data-phase"] for m in marks) >= {"compute", "sync"}


def test_chromium_draws_the_rounds_with_their_groups(run, dom):
    rounds = run.results["fabric"]["rounds"]
    groups = dom.find("g", "rounds-chart", "group")
    summaries = dom.find("g", "rounds-chart", "group-summary")
    assert len(groups) + sum(int(s["attrs"]["data-count"]) for s in summaries) == sum(len(r["groups"]) for r in rounds) > 0
    for entry in rounds:
        drawn = sorted(g["attrs"]["data-nodes"] for g in groups if g["attrs"]["data-round"] == str(entry["round"]))
        assert drawn == sorted(" ".join(g["nodes"]) for g in entry["groups"])
        assert sorted(g["attrs"]["data-status"] for g in groups if g["attrs"]["data-round"] == str(entry["round"])) == \
            sorted(g["status"] for g in entry["groups"])


def test_chromium_draws_the_rdma_rails_of_the_run(run, dom):
    # The full run has the RDMA pair stage: one table row per rail of results.json's rdma block.
    rails = run.results["rdma"]["rails"]
    rows = dom.find("tr", "rdma")
    cells = dom.find("td", "rdma")
    assert len(rows) == 1 + len(rails) == 9
    assert len(cells) == 7 * len(rails)
    slow = [n for r in rails.values() for n in r["pinned"] + r["suspects"]]
    assert len(dom.find("tr", "rdma", "bad")) == len([r for r in rails.values() if r["pinned"] or r["suspects"]])
    assert not slow or any(slow[0] in "".join(c["text"]) for c in cells)


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def near(colour, target, tolerance=10):
    return all(abs(a - b) <= tolerance for a, b in zip(colour, target))


def bands(counts, minimum):
    """[(first, last)] runs of consecutive indexes whose count reaches minimum."""
    runs, start = [], None
    for index, count in enumerate(counts + [0]):
        if count >= minimum and start is None:
            start = index
        elif count < minimum and start is not None:
            runs.append((start, index - 1))
            start = None
    return runs


def test_the_screenshot_shows_each_pair_and_the_pinned_node_row_and_column(run, dom, pinned, tmp_path):
    shot = tmp_path / "report.png"
    run_chromium(tmp_path, (run.dir / "report.html").as_uri(), "--screenshot=%s" % shot, "--window-size=%d,%d" % WINDOW)
    if os.environ.get("GPUCLUSTER_REPORT_SCREENSHOT"):
        shutil.copy(str(shot), os.environ["GPUCLUSTER_REPORT_SCREENSHOT"])
    image = report_png.read_png(str(shot))
    width, height, channels, rows = image
    assert (width, height) == WINDOW
    # the verdict banner: a wide red block near the top
    assert sum(1 for x in range(0, width, 4) if near(report_png.pixel(image, x, 100), VERDICT_RED)) > 200
    svg = dom.by_id("heatmap")[0]["attrs"]
    count, cell = int(svg["data-nodes"]), int(svg["data-cell"])
    cells = [c["attrs"] for c in dom.find("rect", "heatmap", "cell") if "diag" not in c["attrs"]["class"].split()]
    # the grid on the screen: the rows and columns made mostly of off-diagonal cell colours
    fills = set(rgb(c["fill"]) for c in cells)
    keys = set((r + dr) // 4 * 4096 + (g + dg) // 4 * 64 + (b + db) // 4
               for r, g, b in fills for dr in (-3, 0, 3) for dg in (-3, 0, 3) for db in (-3, 0, 3))
    hits = [[x for x in range(width) if rows[y][x * channels] // 4 * 4096 + rows[y][x * channels + 1] // 4 * 64
             + rows[y][x * channels + 2] // 4 in keys] for y in range(height)]
    minimum = int(0.6 * (count - 1) * cell)
    # a band per row of cells (white strokes between them), from the first one down a grid's height
    # (the charts further down have long lines of similar greys)
    grid_rows = bands([len(h) for h in hits], minimum)
    assert grid_rows, "no heatmap grid on the screenshot"
    top = grid_rows[0][0]
    bottom = [b for a, b in grid_rows if a < top + count * cell][-1]
    col_hits = [0] * width  # the columns counted within the grid's rows only
    for y in range(top, bottom + 1):
        for x in hits[y]:
            col_hits[x] += 1
    grid_cols = bands(col_hits, minimum)
    assert grid_cols, "no heatmap grid on the screenshot"
    left, right = grid_cols[0][0], grid_cols[-1][1]
    assert abs((bottom - top + 1) / count - cell) <= 1 and abs((right - left + 1) / count - cell) <= 1, \
        (top, bottom, left, right, cell)
    x0, y0 = min(int(c["x"]) for c in cells), min(int(c["y"]) for c in cells)
    order = dict(((int(c["y"]) - y0) // cell, c["data-a"]) for c in cells)  # row index -> its node
    assert sorted(order) == list(range(count)) and pinned in order.values()
    p = [i for i, name in order.items() if name == pinned][0]
    # every off-diagonal cell shows its own colour at its place; the pinned node's pairs are red, the others not
    for c in cells:
        i, j = (int(c["y"]) - y0) // cell, (int(c["x"]) - x0) // cell
        colour = report_png.pixel(image, left + j * cell + cell // 2, top + i * cell + cell // 2)
        assert near(colour, rgb(c["fill"])), (c["data-a"], c["data-b"], colour, c["fill"])
        if c.get("data-busbw"):
            red = colour[0] > 150 and colour[1] < 120
            assert red == (pinned in (c["data-a"], c["data-b"])), (c["data-a"], c["data-b"], colour)
    # the outline: dark lines along both edges of the pinned node's row and of its column, the whole grid long
    # (within 3 pixels of where the grid's bands put the edge: anti-aliased borders blur the bands' ends)
    for edge in (top + p * cell, top + (p + 1) * cell):
        dark = max(sum(1 for x in range(left, right + 1) if near(report_png.pixel(image, x, y), OUTLINE, 40))
                   for y in range(edge - 3, edge + 4))
        assert dark >= 0.9 * (right - left + 1), ("row", edge, dark)
    for edge in (left + p * cell, left + (p + 1) * cell):
        dark = max(sum(1 for y in range(top, bottom + 1) if near(report_png.pixel(image, x, y), OUTLINE, 40))
                   for x in range(edge - 3, edge + 4))
        assert dark >= 0.9 * (bottom - top + 1), ("column", edge, dark)
