"""The report as a person sees it: rendered by headless Chromium with every host name unresolvable.

From the slow-node fixture (a real 16-node simulated acceptance run plus the fabric, workload and
baseline sections, tests/fixtures/report/SOURCES.md): Chromium's DOM holds the heatmap with n x n
cells and the pinned node named on it; the screenshot shows one dark red row and one dark red column
exactly where that node's row and column are; the page asks the network for nothing (Chromium's
own net log, checked against a control page that does). Then a real ansible-playbook replay run
shows the callback writing report.html and metrics.prom next to results.json.

Set GPUCLUSTER_REPORT_SCREENSHOT=/some/file.png to keep the screenshot for a look.
"""
import json
import os
import shutil
import subprocess

import pytest

import report_png
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _html_report
from conftest import FIXTURES, REPO
from harness import playbook

pytestmark = pytest.mark.integration

RUN_DIR = FIXTURES / "report" / "run_slow_node"
SLOW = "gpu014"
WINDOW = (1400, 2400)
# the heatmap's colour for a pair at half the median busbw (_html_report._RAMP's first stop)
DARK_RED = (165, 0, 38)
HEALTHY_GREEN = (26, 152, 80)
VERDICT_RED = (207, 34, 46)  # #cf222e


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
           "--user-data-dir=%s" % profile, '--host-resolver-rules=MAP * ~NOTFOUND',
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


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    path = out / "report.html"
    path.write_text(_html_report.render_html(json.loads((RUN_DIR / "results.json").read_text()), str(RUN_DIR)))
    return path


def test_the_page_asks_the_network_for_nothing(report, tmp_path):
    text = report.read_text()
    assert "http://" not in text and "https://" not in text
    _dom, log = run_chromium(tmp_path, report.as_uri(), "--dump-dom")
    assert page_requests(log) == []
    # control: the same check does see a page that loads a picture and a style sheet from elsewhere
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://example.invalid/a.png">'
                       '<link rel="stylesheet" href="https://fonts.example.invalid/b.css"></body></html>')
    _dom, log = run_chromium(tmp_path, control.as_uri(), "--dump-dom")
    assert sorted(page_requests(log)) == ["http://example.invalid/a.png", "https://fonts.example.invalid/b.css"]


def test_chromium_builds_the_heatmap_and_names_the_pinned_node(report, tmp_path):
    dom, _log = run_chromium(tmp_path, report.as_uri(), "--dump-dom")
    start = dom.index('<svg id="heatmap"')
    heatmap = dom[start:dom.index("</svg>", start)]
    assert heatmap.count('<rect class="cell') == 16 * 16
    assert heatmap.count("PINNED \u25b6 %s</text>" % SLOW) == 2
    assert heatmap.count('class="cell low"') == 30
    for section in ('<svg id="busbw-curves"', '<svg id="step-times"', 'id="rounds-table"', 'id="nodes-table"'):
        assert section in dom


def near(colour, target, tolerance=14):
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


def test_the_screenshot_shows_the_slow_node_row_and_column_in_red(report, tmp_path):
    shot = tmp_path / "report.png"
    run_chromium(tmp_path, report.as_uri(), "--screenshot=%s" % shot, "--window-size=%d,%d" % WINDOW)
    if os.environ.get("GPUCLUSTER_REPORT_SCREENSHOT"):
        shutil.copy(str(shot), os.environ["GPUCLUSTER_REPORT_SCREENSHOT"])
    image = report_png.read_png(str(shot))
    width, height, _channels, _rows = image
    assert (width, height) == WINDOW
    # the verdict banner: a wide red block near the top
    assert sum(1 for x in range(0, width, 4) if near(report_png.pixel(image, x, 100), VERDICT_RED)) > 200
    # every second pixel each way is plenty for cells of 30 pixels; bands are in sampled coordinates
    step = 2
    red_rows, red_cols = [0] * (height // step), [0] * (width // step)
    green_rows, green_cols = [0] * (height // step), [0] * (width // step)
    rows, channels = image[3], image[2]
    for y in range(0, height - height % step, step):
        line = rows[y]
        for x in range(0, width - width % step, step):
            at = x * channels
            colour = (line[at], line[at + 1], line[at + 2])
            if near(colour, DARK_RED):
                red_rows[y // step] += 1
                red_cols[x // step] += 1
            elif near(colour, HEALTHY_GREEN, 40):
                green_rows[y // step] += 1
                green_cols[x // step] += 1
    # the grid: the rows and columns with many healthy cells
    grid_rows = bands(green_rows, 150 // step)
    grid_cols = bands(green_cols, 150 // step)
    top, bottom = grid_rows[0][0], grid_rows[-1][1]
    left, right = grid_cols[0][0], grid_cols[-1][1]
    cell = (bottom - top + 1) / 16.0
    assert cell * step > 10, "the heatmap is too small to read"
    assert abs((right - left + 1) / 16.0 - cell) < 1, "the heatmap is not square"
    # one dark red row band and one dark red column band, 15 cells long, at the slow node's place (14th of 16)
    row_bands = bands(red_rows, int(12 * cell))
    col_bands = bands(red_cols, int(12 * cell))
    assert len(row_bands) == 1 and len(col_bands) == 1, (row_bands, col_bands)
    assert round((row_bands[0][0] - top) / cell) == 13
    assert round((col_bands[0][0] - left) / cell) == 13
    # a cell high and wide, less the outline drawn around the pinned node's row and column
    assert cell * 0.7 <= row_bands[0][1] - row_bands[0][0] + 1 <= cell * 1.1
    assert cell * 0.7 <= col_bands[0][1] - col_bands[0][0] + 1 <= cell * 1.1


def promtool_check(text):
    if not shutil.which("promtool"):
        pytest.fail("promtool is missing: install the Debian package 'prometheus'", pytrace=False)
    return subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_callback_writes_report_and_metrics_next_to_results(tmp_path):
    """A real ansible-playbook run (a replay of the fixture's nccl-tests outputs: no node is touched)."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  vars:\n    acceptance_profile: hgx_h100_sxm\n  children:\n"
        "    slurm_controller:\n      hosts:\n        localhost:\n"
        "          ansible_connection: local\n          ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        "    gpu_nodes:\n      vars:\n        ansible_connection: local\n"
        "        ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        "      hosts:\n        gpu003: {}\n        gpu013: {}\n        gpu014: {}\n")
    run = playbook(inventory, tmp_path / "artifacts", "-e", "acceptance_replay_dir=%s" % RUN_DIR,
                   "--tags", "nccl_single_node", timeout=300)
    assert run.results is not None, run.output[-3000:]
    assert run.results["verdict"] == "fail"
    assert "artifacts: %s (report.html, junit.xml, results.json, metrics.prom, raw/)" % run.dir in run.output
    page = (run.dir / "report.html").read_text()
    assert page == _html_report.render_html(run.results, str(run.dir))
    assert page.count('<polyline class="curve') == 3  # read from the run's own raw/<node>/all_reduce_perf.txt
    assert page.count('<polyline class="curve slow" data-node="gpu003"') == 1
    assert "Fabric pairwise tests: not run" in page
    metrics = (run.dir / "metrics.prom").read_text()
    assert 'gpucluster_acceptance_node_status{node="gpu003",stage="nccl_single_node"} 0' in metrics
    proc = promtool_check(metrics)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.path.getsize(str(run.dir / "results.json")) > 0 and (REPO / "tools" / "render-report").exists()
