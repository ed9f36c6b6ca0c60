"""NVLink domains through the results contract into the console summary, report.html and metrics.prom."""
import sys
from pathlib import Path

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import judge_nvlink_domains
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _prometheus, _report, _report_page, _results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from test_nvlink_domains import RACK_B, racks, tray  # noqa: E402
from test_prometheus_textfile import parse, promtool_check, series_of  # noqa: E402

SMALL = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"domain_trays": 4}})
RUN = {"id": "20261205T120000.000000Z-1", "playbook": "acceptance.yml", "started": "2026-12-05T12:00:00Z",
       "finished": "2026-12-05T12:10:00Z"}


def _document():
    states = racks(4, 4)
    checks = []
    for node in ("gpu005", "gpu006", "gpu007", "gpu008"):  # rack B: every tray's fabric degraded
        states[node] = tray("%s.32766" % RACK_B, failed=["gpu.fabric"])
        checks.append({"stage": "gpu_health", "node": node, "check": "gpu.fabric", "status": "fail",
                       "message": "GPU0 fabric health: NVLink bandwidth: Degraded", "metrics": {}, "component": "GPU0"})
    for node in sorted(states):
        checks.append({"stage": "topology", "node": node, "check": "topology.nvlink", "status": "pass",
                       "message": "ok", "metrics": {}, "component": None})
    result = judge_nvlink_domains(states, SMALL)
    document = _results.build_document(RUN, checks + result["checks"], targets=sorted(states),
                                       documents={result["stage"]: result["document"]})
    assert _results.validate(document) == []
    return document


def test_the_capacity_and_one_line_per_rack_in_the_console_summary():
    lines = _report.summary_lines(_document(), "artifacts/x")
    assert lines[1].startswith("NVLink domains: 2 NVLink domain(s) (8 trays, 32 GPUs): 1 full (4 trays each, all passing); ")
    rack = [line for line in lines if "nvlink_domain:" in line]
    assert rack == ["  gpu[005-008] FAIL nvlink_domain: all 4 trays of NVLink domain %s.32766 fail gpu.fabric: a "
                    "rack-level fault (an NVLink switch tray, the rack's power or cooling), not 4 tray faults" % RACK_B]
    assert not [line for line in lines if line.startswith("  gpu005 ")]  # not one line per tray
    assert not [line for line in lines if line.startswith("  cluster FAIL nvlink_domain")]


def test_the_report_has_a_domain_table_and_the_metrics_a_family_per_fact():
    document = _document()
    page = _report_page.render_html(document)
    assert '<section id="nvlink">' in page and "NVLink domains (rack scale)" in page
    assert "<td><code>%s.32766</code></td><td>0 of 4</td>" % RACK_B in page
    text = _prometheus.render_textfile(document)
    families = parse(text)
    trays = series_of(families, "gpucluster_acceptance_nvlink_domain_trays")
    assert trays[(("domain", "%s.32766" % RACK_B), ("state", "failed"))] == "4"
    assert series_of(families, "gpucluster_acceptance_nvlink_domain_tp_groups")[(("tp", "16"),)] == "1"
    assert series_of(families, "gpucluster_acceptance_nvlink_domains_full")[()] == "1"
    assert promtool_check(text).returncode == 0


def test_the_schema_refuses_a_domain_row_without_its_counts():
    document = _document()
    del document["nvlink_domains"]["domains"][0]["gpus_passed"]
    assert any("gpus_passed" in problem for problem in _results.validate(document))
