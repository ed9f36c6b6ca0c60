"""The checkpoint plan judged from accounting texts and node states (_judge_checkpoint_plan, _providers)."""
import copy

import pytest
import yaml

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_checkpoint_plan import judge_checkpoint_plan
from ansible_collections.gpucluster.acceptance.plugins.module_utils._providers import QUESTIONS, compare_providers

from conftest import REPO
from test_sacct import EVENTS, SACCT

STATES = {
    "gpu001": {"stages": {"checkpoint": {"status": "pass", "metrics": {
        "shared_write_s": 12.0, "local_write_s": 3.0, "release_s": 3.1, "durable_s": 15.0}}}},
    "gpu002": {"stages": {"checkpoint": {"status": "pass", "metrics": {
        "shared_write_s": 20.0, "local_write_s": 2.0, "release_s": 2.1, "durable_s": 22.0}}}},
    "gpu003": {"stages": {"checkpoint": {"status": "error", "metrics": {"shared_write_s": 99.0}}}},
}
# A long completed job (10 h on 4 nodes) gives the failures some node time.
SACCT_LONG = SACCT.replace("|COMPLETED|0:0|2026-12-02T03:32:47|2026-12-02T03:32:48|2026-12-02T03:32:49|1|1|acc2",
                           "|COMPLETED|0:0|2026-12-02T03:32:47|2026-12-02T03:32:48|2026-12-02T03:32:49|36000|4|acc[1-4]")
EXPOSURE = 36000 * 4 + 76
WINDOW = {"start": "2026-12-02T03:00:00", "end": "2026-12-02T04:00:00"}


def _inputs(**extra):
    found = {"sacct": {"output": SACCT_LONG, "rc": 0}, "events": {"output": EVENTS, "rc": 0}, "states": STATES,
             "nodes": 4, "gpus_per_node": 8, "window": WINDOW}
    found.update(extra)
    return found


def _by_check(checks):
    out = {}
    for check in checks:
        out.setdefault(check["check"], []).append(check)
    return out


def test_plan_from_measured_c_and_accounting():
    checks, document = judge_checkpoint_plan(_inputs(), {"job_nodes": [2, 4], "min_node_hours": 0,
                                                         "price_per_gpu_hour": 2.0})
    found = _by_check(checks)
    (write,) = found["checkpoint_plan.write_time"]
    # The slowest node that reported (an errored stage is not a measurement), all at once, shared path.
    assert write["status"] == "pass" and document["write"]["sync_s"] == 20.0 and document["write"]["slowest"] == "gpu002"
    assert document["write"]["async_s"] == 3.1 and document["write"]["durable_s"] == 22.0
    (mtbf,) = found["checkpoint_plan.mtbf"]
    assert mtbf["status"] == "pass" and document["mtbf"]["failures"] == 2  # node_fail + requeue
    assert document["mtbf"]["failures_by_kind"]["timeout"] == 1 and "not counted: 1 signal, 1 timeout" in mtbf["message"]
    assert document["mtbf"]["mtbf_node_s"] == pytest.approx(EXPOSURE / 2)
    assert document["restart"] == {"restart_s": 126.0, "source": "measured", "samples": 1, "max_s": 126.0}
    assert [j["nodes"] for j in document["jobs"]] == [2, 4]
    assert document["jobs"][1]["mtbf_s"] == pytest.approx(EXPOSURE / 2 / 4)
    assert document["cost"]["nodes"] == 4 and document["cost"]["effective"] > 2.0
    assert [r["lever"] for r in document["sensitivity"]] == ["base", "write_half", "mtbf_half", "restart_half", "async"]


def test_counting_signals_and_timeouts_when_asked():
    checks, document = judge_checkpoint_plan(_inputs(), {"job_nodes": [1], "min_node_hours": 0,
                                                         "count_kinds": ["node_fail", "requeue", "signal", "timeout"]})
    assert document["mtbf"]["failures"] == 4
    assert "not counted" not in _by_check(checks)["checkpoint_plan.mtbf"][0]["message"]


def test_no_accounting_is_not_enough_data_and_no_number():
    checks, document = judge_checkpoint_plan(
        _inputs(sacct={"output": "sacct: error: Slurm accounting storage is disabled", "rc": 1}, events=None),
        {"job_nodes": [4]})
    (mtbf,) = _by_check(checks)["checkpoint_plan.mtbf"]
    assert mtbf["status"] == "error" and mtbf["component"] == "accounting"
    assert mtbf["message"].startswith("not enough data: accounting could not be read (sacct rc=1: sacct: error: "
                                      "Slurm accounting storage is disabled)")
    assert document["mtbf"]["mtbf_node_s"] is None and document["jobs"] == []
    assert "checkpoint_plan.interval" not in _by_check(checks)


def test_no_accounting_with_a_quoted_m_plans_and_says_so():
    checks, document = judge_checkpoint_plan(
        _inputs(sacct={"output": "sacct: error: Slurm accounting storage is disabled", "rc": 1}),
        {"job_nodes": [4], "mtbf_node_h": 2000})
    (mtbf,) = _by_check(checks)["checkpoint_plan.mtbf"]
    assert mtbf["status"] == "skip" and "using the quoted M_node = 2000.0 h" in mtbf["message"]
    assert document["mtbf"]["source"] == "quoted" and document["jobs"][0]["mtbf_s"] == 2000 * 3600 / 4


def test_no_failure_plans_at_the_bound_and_labels_it():
    quiet = SACCT_LONG.splitlines()[0] + "\n" + "\n".join(line for line in SACCT_LONG.splitlines()[1:] if "|COMPLETED|" in line)
    checks, document = judge_checkpoint_plan(_inputs(sacct={"output": quiet, "rc": 0}), {"job_nodes": [4]})
    (mtbf,) = _by_check(checks)["checkpoint_plan.mtbf"]
    assert mtbf["status"] == "skip" and mtbf["message"].startswith("not enough data: no job-killing failure in")
    assert document["mtbf"]["source"] == "bound" and document["mtbf"]["mtbf_node_s"] is None
    (interval,) = _by_check(checks)["checkpoint_plan.interval"]
    assert "(at the bound on M)" in interval["message"]


def test_goodput_floor_fails_the_job_size():
    checks, _document = judge_checkpoint_plan(_inputs(), {"job_nodes": [1, 4], "min_node_hours": 0, "min_goodput": 0.96})
    statuses = [(c["component"], c["status"]) for c in _by_check(checks)["checkpoint_plan.interval"]]
    assert statuses == [("job_1", "pass"), ("job_4", "fail")]


def test_no_c_is_an_error_naming_the_stage():
    checks, document = judge_checkpoint_plan(_inputs(states={}), {"job_nodes": [4], "min_node_hours": 0})
    (write,) = _by_check(checks)["checkpoint_plan.write_time"]
    assert write["status"] == "error" and "checkpoint stage measured none" in write["message"]
    assert document["jobs"] == []


def test_a_given_c_wins():
    _checks, document = judge_checkpoint_plan(_inputs(), {"job_nodes": [4], "min_node_hours": 0, "write_s": 60})
    assert document["write"]["source"] == "given" and document["write"]["sync_s"] == 60


def test_unreadable_lines_are_an_error_beside_the_plan():
    checks, document = judge_checkpoint_plan(_inputs(sacct={"output": SACCT_LONG + "Segmentation fault\n", "rc": 0}),
                                             {"job_nodes": [4], "min_node_hours": 0})
    (parse,) = _by_check(checks)["checkpoint_plan.parse"]
    assert parse["status"] == "error" and "Segmentation fault" in parse["message"]
    assert document["mtbf"]["failures"] == 2 and document["jobs"]


def test_example_providers_file_ranks_the_cheapest_list_price_last():
    data = yaml.safe_load((REPO / "docs" / "examples" / "providers.yml").read_text())
    found = compare_providers(data, restart_s=600, measured_mtbf_node_s=2000 * 3600)
    assert found["errors"] == []
    names = [r["name"] for r in found["ranked"]]
    assert names == ["This cluster (as accepted)", "Provider A", "Provider B"]
    cheapest = min(found["ranked"], key=lambda r: r["price_per_gpu_hour"])
    assert cheapest["name"] == "Provider B" and cheapest["rank"] == 3
    assert [round(r["effective_cost"], 2) for r in found["ranked"]] == [2.10, 2.15, 2.34]
    assert len(found["questions"]) == len(QUESTIONS) == 7


def test_bad_provider_entries_are_named():
    data = yaml.safe_load((REPO / "docs" / "examples" / "providers.yml").read_text())
    broken = copy.deepcopy(data)
    broken["providers"][0]["price_per_gpu_hour"] = "cheap"
    broken["providers"][1]["answers"]["uptime"] = "yes"
    found = compare_providers(broken, restart_s=600)
    assert "Provider A: price_per_gpu_hour must be a positive number, got 'cheap'" in found["errors"]
    assert any("answers.uptime is not a contract question" in e for e in found["errors"])
    assert "This cluster (as accepted): mtbf_node_h is 'measured' but this run measured no M" in found["errors"]
    assert [r["rank"] for r in found["ranked"]][-1] is None


def test_real_history_m_holds_the_injected_rate_and_r_the_requeues():
    from test_sacct import _fixture, _truth  # pylint: disable=import-outside-toplevel
    truth = _truth()
    checks, document = judge_checkpoint_plan(
        {"sacct": {"output": _fixture("sacct_X_D.psv"), "rc": 0},
         "events": {"output": _fixture("sacctmgr_events.psv"), "rc": 0},
         "states": STATES, "nodes": 16, "gpus_per_node": 8, "window": truth["window"]},
        {"job_nodes": [2], "min_node_hours": 0})
    mtbf = document["mtbf"]
    assert mtbf["status"] == "measured" and mtbf["failures"] == len(truth["node_failures"])
    assert mtbf["mtbf_node_s_low"] <= 1 / truth["rate_per_node_s"] <= mtbf["mtbf_node_s_high"]
    assert document["restart"]["restart_s"] == sorted(truth["restart_s_sacct"])[len(truth["restart_s_sacct"]) // 2]
    assert not [c for c in checks if c["status"] == "error"]


def test_sensitivity_says_what_asynchronous_saves_buy():
    # The example: C = 60 s, saves to NVMe in 8 s, M_job = 8 h, R = 600 s.
    checks, _document = judge_checkpoint_plan(
        {"sacct": None, "states": {}, "nodes": 64},
        {"job_nodes": [64], "write_s": 60, "async_write_s": 8, "mtbf_node_h": 64 * 8, "restart_s": 600})
    (found,) = _by_check(checks)["checkpoint_plan.sensitivity"]
    assert found["message"].startswith(
        "for 64-node jobs at goodput 91.5 %: asynchronous saves to local NVMe would cut C from 60 s to 8 s: "
        "every 11 min, +4.1 points; halving C (60 s to 30 s): every 22 min, +1.9 points")
