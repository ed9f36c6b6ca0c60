"""The checkpoint plan through the results contract into report.html and metrics.prom."""
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpucluster.acceptance.plugins.filter.checkpoint_plan import _checkpoint_plan
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _prometheus, _report_page, _results

from conftest import REPO

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from test_judge_checkpoint_plan import SACCT_LONG, STATES, WINDOW  # noqa: E402
from test_prometheus_textfile import parse, promtool_check, series_of  # noqa: E402
from test_sacct import EVENTS  # noqa: E402


def _document(**options):
    providers = yaml.safe_load((REPO / "docs" / "examples" / "providers.yml").read_text())
    result = _checkpoint_plan({"sacct": {"stdout": SACCT_LONG, "stderr": "", "rc": 0, "cmd": ["sacct", "-P"]},
                               "events": {"stdout": EVENTS, "rc": 0}, "states": STATES, "nodes": 4, "gpus_per_node": 8,
                               "window": WINDOW, "providers": providers},
                              dict({"job_nodes": [2, 4], "min_node_hours": 0, "price_per_gpu_hour": 2.0}, **options))
    run = {"id": "20261202T040000.000000Z-1", "playbook": "checkpoint_plan.yml", "started": "2026-12-02T04:00:00Z",
           "finished": "2026-12-02T04:01:00Z"}
    document = _results.build_document(run, result["checks"], targets=sorted(STATES),
                                       documents={result["stage"]: result["document"]})
    assert _results.validate(document) == []
    return document


def test_the_block_is_in_results_json_and_valid():
    document = _document()
    block = document["checkpoint_plan"]
    assert block["write"]["sync_s"] == 20.0 and block["restart"]["source"] == "measured"
    assert [r["rank"] for r in block["providers"]["ranked"]] == [1, 2, 3]


def test_schema_refuses_a_made_up_source():
    document = _document()
    document["checkpoint_plan"]["mtbf"]["source"] = "datasheet"
    assert any("datasheet" in problem for problem in _results.validate(document))


def test_report_section_shows_the_plan_sensitivity_and_providers():
    document = _document()
    page = _report_page.render_html(document)
    section = page.split('<section id="checkpoint">', 1)[1].split("</section>", 1)[0]
    assert "C, checkpoint write</th><td>20 s on gpu002, shared path (measured here)" in section
    assert "R, restart</th><td>2 min (from the requeue records, 1 requeue(s))" in section
    assert "asynchronous saves to local NVMe" in section and "C halved" in section
    # This cluster's M is the measured one (20 h per node here): it ranks last, and the table says so.
    names = [r["name"] for r in document["checkpoint_plan"]["providers"]["ranked"]]
    assert names[-1] == "This cluster (as accepted)"
    assert [section.index("<td>%s</td>" % name) for name in names] == sorted(section.index("<td>%s</td>" % n) for n in names)
    assert "20.0 h (measured)" in section
    assert "A useful GPU-hour costs <b>$" in section


def test_no_plan_no_section():
    page = _report_page.render_html(_results.build_document({"id": "r", "playbook": "acceptance.yml"}, [], []))
    assert 'id="checkpoint"' not in page


def test_metrics_families_pass_promtool():
    text = _prometheus.render_textfile(_document())
    families = parse(text)
    write = series_of(families, "gpucluster_acceptance_checkpoint_write_seconds")
    assert write[(("kind", "sync"),)] == "20" and write[(("kind", "async"),)] == "3.1"
    goodput = series_of(families, "gpucluster_acceptance_goodput_ratio")
    assert (("mode", "sync"), ("nodes", "4")) in goodput
    assert len(series_of(families, "gpucluster_acceptance_provider_effective_gpu_hour_cost")) == 3
    proc = promtool_check(text)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("broken", [{"jobs": "x"}, {"write": None}, {"providers": {"ranked": ["x"]}}])
def test_a_malformed_block_does_not_cost_the_page(broken):
    document = _document()
    document["checkpoint_plan"].update(broken)
    page = _report_page.render_html(document)
    assert '<section id="checkpoint">' in page
    _prometheus.render_textfile(document)
