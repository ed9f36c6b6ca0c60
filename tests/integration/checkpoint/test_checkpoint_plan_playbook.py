"""playbooks/checkpoint_plan.yml end to end: real slurmdbd + MariaDB, a real job history with injected
node failures and requeues, the checkpoint stage on every node, and the plan in results.json,
report.html and metrics.prom.

The history is injected at a known rate per node-second of job time (sim/jobhistory.py); M comes
from the real sacct records and must hold that rate inside its 95 % interval; R from the real
requeue records. A cluster without accounting gives "not enough data", never a number.
"""
import sys
from pathlib import Path

import pytest

import harness

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

import jobhistory  # noqa: E402  pylint: disable=wrong-import-position,import-error

pytestmark = pytest.mark.integration

SLOW = "gpu003"
RESTART_DELAY = 1.0


def _plan_args(truth, *extra):
    window = truth["window"]
    return ["-e", "checkpoint_plan_min_node_hours=0", "-e", "checkpoint_plan_window_start=%s" % window["start"],
            "-e", "checkpoint_plan_window_end=%s" % window["end"], "-e", '{"checkpoint_plan_job_nodes": [2, 6]}',
            "-e", "checkpoint_plan_price_per_gpu_hour=2.5",
            "-e", "checkpoint_plan_providers_file=%s" % (REPO / "docs" / "examples" / "providers.yml")] + list(extra)


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """One accounting cluster, one history, one checkpoint_plan.yml run (module scope: ~2 min)."""
    faults = [{"kind": "slow_storage", "node": SLOW, "factor": 0.1, "path": "local"}]
    sim = harness.SimRun(harness.spec("ckplan", faults=faults, count=6, accounting=True),
                         tmp_path_factory.mktemp("ckplan"))
    with sim:
        plan = jobhistory.plan(jobs=20, nodes_per_job=2, seconds=2, node_fail_rate=0.06, requeue_fraction=0.5,
                               exit_failures=2, timeouts=0, seed=5)
        truth = jobhistory.run(sim.cluster, plan, restart_delay=RESTART_DELAY, timeout=300)
        assert truth["mismatches"] == [], truth["mismatches"]
        run = sim.acceptance(*_plan_args(truth), playbook_name="checkpoint_plan.yml")
        yield sim, truth, run


def _checks(run, check):
    return [c for c in run.results["checks"] if c["check"] == check]


def test_m_holds_the_injected_rate_inside_its_interval(planned):
    _sim, truth, run = planned
    block = run.results["checkpoint_plan"]
    mtbf = block["mtbf"]
    assert mtbf["status"] == "measured" and mtbf["source"] == "accounting", mtbf
    assert mtbf["failures"] == truth["planned_node_failures"] > 0
    injected_m = 1.0 / truth["rate_per_node_s"]
    assert mtbf["mtbf_node_s_low"] <= injected_m <= mtbf["mtbf_node_s_high"], (mtbf, injected_m)
    (check,) = _checks(run, "checkpoint_plan.mtbf")
    assert check["status"] == "pass" and "node_fail" in check["message"]


def test_r_from_the_requeue_records(planned):
    _sim, truth, run = planned
    restart = run.results["checkpoint_plan"]["restart"]
    assert restart["source"] == "measured" and restart["samples"] == len(truth["requeued"]) > 0
    # Released RESTART_DELAY after the failure; sacct's times are whole seconds, scheduling adds a little.
    assert RESTART_DELAY <= restart["restart_s"] <= RESTART_DELAY + 4, restart


def test_interval_goodput_and_cost_in_results_and_report(planned):
    _sim, _truth, run = planned
    block = run.results["checkpoint_plan"]
    assert block["write"]["source"] == "measured" and block["write"]["stage"] == "checkpoint"
    assert [j["nodes"] for j in block["jobs"]] == [2, 6]
    for job in block["jobs"]:
        assert job["interval_s"] > 0 and 0 <= job["goodput"] <= 1
        assert job["mtbf_s"] == pytest.approx(block["mtbf"]["mtbf_node_s"] / job["nodes"])
    assert block["cost"]["effective"] is None or block["cost"]["effective"] >= 2.5
    assert [r["lever"] for r in block["sensitivity"]][:4] == ["base", "write_half", "mtbf_half", "restart_half"]
    assert len(block["providers"]["ranked"]) == 3 and block["providers"]["errors"] == []
    page = (run.dir / "report.html").read_text()
    section = page.split('<section id="checkpoint">', 1)[1].split("</section>", 1)[0]
    assert "from the requeue records" in section and "Provider B" in section
    assert "<th>checkpoint every (Young)</th>" in section and "What each lever buys (6-node jobs)" in section
    metrics = (run.dir / "metrics.prom").read_text()
    assert 'gpucluster_acceptance_goodput_ratio{mode="sync",nodes="6"}' in metrics
    # The raw accounting texts are kept: the plan can be replayed from them.
    assert (run.dir / "raw" / "_checkpoint_plan" / "sacct.txt").exists()
    assert (run.dir / "raw" / "_checkpoint_plan" / "sacct-events.txt").exists()


def test_the_slow_nvme_is_named_by_the_checkpoint_stage(planned):
    _sim, _truth, run = planned
    bad = [c for c in run.results["checks"] if c["status"] in ("fail", "error")]
    assert any(c["node"] == SLOW and c["stage"].startswith("checkpoint") for c in bad), bad
    assert not [c for c in bad if c["node"] not in (SLOW, None)], bad
    assert run.rc != 0  # the slow node fails the run


def test_replay_of_the_captured_accounting_gives_the_same_plan(planned):
    sim, truth, run = planned
    raw = run.dir / "raw" / "_checkpoint_plan"
    replay = sim.acceptance(*_plan_args(truth, "--skip-tags", "checkpoint", "-e", "checkpoint_plan_write_s=%s"
                                        % run.results["checkpoint_plan"]["write"]["sync_s"],
                                        "-e", "checkpoint_plan_sacct_file=%s" % (raw / "sacct.txt"),
                                        "-e", "checkpoint_plan_events_file=%s" % (raw / "sacct-events.txt"),
                                        "-e", "checkpoint_plan_accounting=false"),
                            playbook_name="checkpoint_plan.yml")
    live, again = run.results["checkpoint_plan"], replay.results["checkpoint_plan"]
    assert again["mtbf"] == live["mtbf"] and again["restart"] == live["restart"]
    assert [j["interval_s"] for j in again["jobs"]] == [j["interval_s"] for j in live["jobs"]]


def test_no_accounting_is_not_enough_data(tmp_path_factory):
    sim = harness.SimRun(harness.spec("cknoacct", count=2), tmp_path_factory.mktemp("cknoacct"))
    with sim:
        run = sim.acceptance("--skip-tags", "checkpoint", "-e", "checkpoint_plan_write_s=60",
                             playbook_name="checkpoint_plan.yml")
    (check,) = _checks(run, "checkpoint_plan.mtbf")
    assert check["status"] == "error" and check["component"] == "accounting"
    assert check["message"].startswith("not enough data: accounting could not be read (sacct rc=1:"), check
    block = run.results["checkpoint_plan"]
    assert block["mtbf"]["mtbf_node_s"] is None and block["jobs"] == []
    assert not _checks(run, "checkpoint_plan.interval")
    assert run.rc != 0 and "not enough data" in run.output
