# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seeded failure plan of the simulated cluster's job history (sim/jobhistory.py: plan)."""
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sim"))

import jobhistory  # noqa: E402  pylint: disable=wrong-import-position,import-error


def failures(plan):
    return [(job["index"], run["run"], run["fail_at"], run["node_index"])
            for job in plan["jobs"] for run in job["runs"] if run["fail_at"] is not None]


def test_same_seed_same_plan_other_seed_other_plan():
    assert jobhistory.plan(seed=5) == jobhistory.plan(seed=5)
    assert failures(jobhistory.plan(seed=5)) != failures(jobhistory.plan(seed=6))


def test_default_history_is_40_jobs_of_3_s_on_2_nodes_with_about_ten_failures():
    plan = jobhistory.plan()
    assert plan["job_count"] == 40 and plan["nodes_per_job"] == 2 and plan["seconds"] == 3.0
    counts = [jobhistory.plan(seed=s)["node_failures"] for s in range(200)]
    assert 8 <= sum(counts) / len(counts) <= 12
    kinds = [job["kind"] for job in plan["jobs"]]
    assert kinds.count("exit") == 3 and kinds.count("timeout") == 0
    assert sum(job["requeue"] for job in plan["jobs"]) == 20
    assert sorted(job["exit_code"] for job in plan["jobs"] if job["kind"] == "exit") == [1, 2, 3]


def test_rate_is_failures_per_node_second_of_exposure():
    """Over many seeds, failures / planned exposure estimates the rate (the estimator's truth)."""
    total_k, total_t = 0, 0.0
    for seed in range(300):
        plan = jobhistory.plan(jobs=40, nodes_per_job=4, seconds=10, node_fail_rate=0.01, seed=seed)
        total_k += plan["node_failures"]
        total_t += plan["exposure_node_s_planned"]
    assert total_k / total_t == pytest.approx(0.01, rel=0.08)


def test_exposure_counts_every_run_up_to_its_failure():
    plan = jobhistory.plan(jobs=12, nodes_per_job=3, seconds=4, node_fail_rate=0.05, seed=3, timeouts=1)
    expected = 0.0
    for job in plan["jobs"]:
        if job["kind"] == "timeout":
            continue
        for run in job["runs"]:
            expected += 3 * (run["fail_at"] if run["fail_at"] is not None else job["seconds"])
    assert plan["exposure_node_s_planned"] == pytest.approx(expected, abs=1e-3)
    assert plan["node_failures"] == len(failures(plan))


@given(seed=st.integers(0, 2 ** 32), jobs=st.integers(1, 30), nodes=st.integers(1, 8),
       seconds=st.floats(2, 20), rate=st.floats(0, 0.5), fraction=st.floats(0, 1), timeouts=st.integers(0, 2))
def test_every_plan_keeps_its_invariants(seed, jobs, nodes, seconds, rate, fraction, timeouts):
    plan = jobhistory.plan(jobs=jobs, nodes_per_job=nodes, seconds=seconds, node_fail_rate=rate,
                           requeue_fraction=fraction, exit_failures=min(2, jobs), timeouts=timeouts, seed=seed)
    assert len(plan["jobs"]) == jobs + timeouts
    assert sum(job["requeue"] for job in plan["jobs"]) == int(round(fraction * jobs))
    for job in plan["jobs"]:
        runs = job["runs"]
        assert [r["run"] for r in runs] == list(range(len(runs)))
        if job["kind"] == "timeout":
            assert runs == [{"run": 0, "fail_at": None, "node_index": None}] and not job["requeue"]
            continue
        low = min(0.3, job["seconds"] / 3)
        for run in runs:
            if run["fail_at"] is not None:
                # Inside the run, far enough from its end for the node to go down while the job runs.
                assert low - 1e-3 <= run["fail_at"] <= max(low, job["seconds"] - jobhistory.GUARD_S) + 1e-3  # ms
                assert 0 <= run["node_index"] < nodes
        # Every run but the last failed; only requeued jobs run again, at most MAX_RUNS times.
        assert all(r["fail_at"] is not None for r in runs[:-1])
        assert len(runs) == 1 or job["requeue"]
        assert len(runs) <= jobhistory.MAX_RUNS
        if len(runs) == jobhistory.MAX_RUNS:
            assert runs[-1]["fail_at"] is None
        states = jobhistory.expected_states(job)
        final = "COMPLETED" if job["kind"] == "sleep" else "FAILED"
        assert states[:-1] == ["NODE_FAIL"] * (len(runs) - 1)
        assert states[-1] in ("NODE_FAIL", final) and (states[-1] == "NODE_FAIL") == (runs[-1]["fail_at"] is not None)
    if rate == 0:
        assert plan["node_failures"] == 0


def test_exit_jobs_run_half_as_long_and_timeouts_come_last():
    plan = jobhistory.plan(jobs=6, seconds=6, exit_failures=2, timeouts=2, seed=1)
    assert [j["kind"] for j in plan["jobs"][-2:]] == ["timeout", "timeout"]
    assert {j["seconds"] for j in plan["jobs"] if j["kind"] == "exit"} == {3.0}
    assert [j["name"] for j in plan["jobs"]] == ["hist-%03d" % i for i in range(8)]
    assert jobhistory.plan(jobs=2)["exit_failures"] == 2  # the default 3, at most --jobs


@pytest.mark.parametrize("kwargs, message", [
    ({"jobs": 0}, "--jobs: must be an integer >= 1"),
    ({"seconds": 1.5}, "--seconds: must be a number >= 2"),
    ({"node_fail_rate": -0.1}, "--node-fail-rate: must be a number >= 0"),
    ({"node_fail_rate": float("nan")}, "--node-fail-rate: must be a number >= 0"),
    ({"requeue_fraction": 1.5}, "--requeue-fraction: must be a number from 0 to 1"),
    ({"exit_failures": 5, "jobs": 4}, "--exit-failures: 5 of 4 jobs"),
    ({"nodes_per_job": True}, "--nodes-per-job: must be an integer >= 1"),
    ({"timeouts": -1}, "--timeouts: must be an integer >= 0"),
])
def test_bad_parameters_name_the_option(kwargs, message):
    with pytest.raises(jobhistory.HistoryError, match="^%s" % message):
        jobhistory.plan(**kwargs)


def test_nodes_per_job_must_fit_the_cluster():
    with pytest.raises(jobhistory.HistoryError, match="^--nodes-per-job: 4 nodes per job on a cluster of 3"):
        jobhistory.check_parameters(4, 4, 3, 0.1, 0.5, 1, 0, 0, nodes=3)


# ---------------------------------------------------------------------------------------------
# The runner's per-job state machine, driven by scripted squeue states (no Slurm)
# ---------------------------------------------------------------------------------------------
class FakeCluster:
    run_dir = "/nonexistent"

    def __init__(self):
        self.commands = []

    def run(self, argv, timeout=30):
        self.commands.append(argv)
        out = ""
        if argv[:3] == ["scontrol", "show", "hostnames"]:
            out = "gpu001\ngpu002\n"
        return type("Proc", (), {"returncode": 0, "stdout": out, "stderr": ""})()


def drive(job, script, restart_delay=1.0):
    """Feed (time, squeue state) pairs to one job; return (runner, info, commands)."""
    cluster = FakeCluster()
    runner = jobhistory._Runner(cluster, {"jobs": [job], "nodes_per_job": 2}, restart_delay, 0.1)
    info = {"job": job, "phase": "pending", "t0": None, "node": None, "runs": []}
    clock = {"now": 0.0}
    runner.clock = lambda: clock["now"]
    for now, state in script:
        clock["now"] = now
        runner._step("7", info, state, {"state": state, "nodes": "gpu[001-002]"} if state else None)
    return runner, info, cluster.commands


def job_of(requeue, fails):
    runs = [{"run": i, "fail_at": f, "node_index": 1 if f is not None else None} for i, f in enumerate(fails)]
    return {"index": 0, "name": "hist-000", "kind": "sleep", "seconds": 3.0, "exit_code": 0, "requeue": requeue,
            "runs": runs}


def test_a_job_without_failure_just_ends():
    runner, info, commands = drive(job_of(False, [None]), [(0, "PENDING"), (1, "RUNNING"), (4, "COMPLETING"),
                                                           (4.2, "COMPLETED")])
    assert info["phase"] == "done" and [r["state"] for r in info["runs"]] == ["COMPLETED"]
    assert commands == [] and runner.failures == []


def test_a_failure_sets_the_node_down_on_time_and_resumes_it_after_the_job():
    script = [(0, "PENDING"), (1, "RUNNING"), (2.0, "RUNNING"), (2.2, "RUNNING"), (2.3, "COMPLETING"),
              (2.4, "NODE_FAIL")]
    runner, info, commands = drive(job_of(False, [1.1]), script)
    assert ["scontrol", "update", "nodename=gpu002", "state=down", "reason=sim node failure"] in commands
    down = commands.index(["scontrol", "update", "nodename=gpu002", "state=down", "reason=sim node failure"])
    assert commands[down + 1] == ["scontrol", "update", "nodename=gpu002", "state=resume"]
    assert info["phase"] == "done" and info["runs"][0]["state"] == "NODE_FAIL"
    assert runner.failures[0]["hit"] is True and runner.failures[0]["at"] == pytest.approx(1.2)


def test_a_requeued_job_is_released_after_the_restart_delay_and_runs_again():
    script = [(0, "RUNNING"), (0.5, "RUNNING"), (0.6, "PENDING"), (1.0, "PENDING"), (1.6, "PENDING"),
              (2.0, "RUNNING"), (5.0, "COMPLETED")]
    runner, info, commands = drive(job_of(True, [0.4, None]), script, restart_delay=1.0)
    releases = [c for c in commands if c[:2] == ["scontrol", "update"] and c[2].startswith("jobid=")]
    assert releases == [["scontrol", "update", "jobid=7", "StartTime=now"]]
    assert [r["state"] for r in info["runs"]] == ["NODE_FAIL", "COMPLETED"] and info["phase"] == "done"
    assert runner.requeued[0]["run"] == 1 and "restart_s_observed" in runner.requeued[0]


def test_a_failure_after_the_job_ended_is_missed_not_counted():
    script = [(0, "RUNNING"), (2.0, "RUNNING"), (2.1, "COMPLETED")]
    runner, info, commands = drive(job_of(True, [1.5, None]), script)
    assert commands[-1] == ["scontrol", "update", "nodename=gpu002", "state=resume"]
    assert info["phase"] == "done" and info["runs"][0]["state"] == "COMPLETED"
    assert runner.failures[0]["hit"] is False
