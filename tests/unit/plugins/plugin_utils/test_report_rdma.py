"""The RDMA pair stage in report.html and metrics.prom, drawn from a real run's results.json (two NICs
pinned by perftest on a simulated cluster), and from runs that did not have the stage or lost its block."""
import copy
import json

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _html_report, _prometheus, _results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_rdma import rdma_view

from conftest import FIXTURES

RUN = json.loads((FIXTURES / "report" / "rdma_run" / "results.json").read_text())
DEMO = json.loads((FIXTURES / "report" / "demo_run" / "results.json").read_text())


def section(page, anchor):
    start = page.index('<section id="%s">' % anchor)
    return page[start:page.index("</section>", start)]


def test_the_real_run_validates_and_its_rails_and_pinned_nics_are_drawn():
    assert _results.validate(RUN) == []
    view = rdma_view(RUN)
    assert [r["rail"] for r in view["rails"]] == [str(k) for k in range(8)]
    assert [(r["rail"], r["pinned"]) for r in view["rails"] if r["pinned"]] == [("2", ["gpu003"]), ("5", ["gpu002"])]
    page = _html_report.render_html(RUN)
    html = section(page, "rdma")
    assert "ib_write_bw between node pairs, NIC k to NIC k on each rail, buffers on the GPU nearest each NIC" in html
    assert "32 NIC(s) judged, 30 passed" in html
    assert html.count("<tr") == 1 + 8 and html.count('<tr class="bad">') == 2
    assert "gpu002 (pinned)" in html and "gpu003 (pinned)" in html
    assert "gpu002 mlx5_5 (rail 5, GPU5): 2 of 2 pairs" in html


def test_the_metrics_name_each_nic_s_lowest_figure_and_the_pinned_ones():
    text = _prometheus.render_textfile(RUN)
    lines = [line for line in text.splitlines() if line.startswith("gpucluster_acceptance_rdma_nic_slow{")]
    assert len(lines) == 32
    slow = sorted(line for line in lines if line.endswith(" 1"))
    assert slow == ['gpucluster_acceptance_rdma_nic_slow{nic="mlx5_2",node="gpu003",rail="2"} 1',
                    'gpucluster_acceptance_rdma_nic_slow{nic="mlx5_5",node="gpu002",rail="5"} 1']
    lowest = dict((line.split("{")[1].split("}")[0], float(line.rsplit(" ", 1)[1]))
                  for line in text.splitlines() if line.startswith("gpucluster_acceptance_rdma_nic_lowest_gbits{"))
    assert lowest['nic="mlx5_5",node="gpu002",rail="5"'] < 0.6 * 400 < 0.9 * 400 < lowest['nic="mlx5_5",node="gpu004",rail="5"']


def test_a_run_without_the_stage_has_no_section_and_one_that_lost_its_block_says_so():
    assert rdma_view(DEMO) is None and '<section id="rdma">' not in _html_report.render_html(DEMO)
    lost = copy.deepcopy(RUN)
    del lost["rdma"]
    html = section(_html_report.render_html(lost), "rdma")
    assert "The rdma stage ran (32 check(s)) but this results.json has no rdma block" in html
