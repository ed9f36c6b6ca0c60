"""The fabric stage against a broken scheduler, and re-judged from its captured outputs alone."""
import json
import os
import shutil
import signal
import types

import pytest

from harness import Run, SimRun, playbook, playbook_started, run_dirs, spec, wait_for

pytestmark = pytest.mark.integration


def fabric_checks(run, status=("fail", "error")):
    return [c for c in run.results["checks"] if c["stage"] == "fabric" and c["status"] in status]


def _step_running(run_dir, tool, argument="8M"):
    """A process of a running Slurm step of this cluster (its parent is slurmstepd, its environment
    names the cluster's run directory: another test's cluster may run the same tool at the same
    time) whose command names the tool and the argument (8M: a bandwidth run, not the launcher
    preflight's 8-byte one)."""
    marker = b"\0GPUCLUSTER_SIM_RUN=%s\0" % str(run_dir).encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace")
            environ = b"\0" + open("/proc/%s/environ" % pid, "rb").read()
            ppid = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1]
            parent = open("/proc/%s/comm" % ppid).read().strip()
        except OSError:
            continue
        if tool in argv and argument in argv and parent == "slurmstepd" and marker in environ:
            return pid
    return None


def test_slurmctld_killed_mid_fabric_is_a_scheduler_error_and_blames_no_node(tmp_path):
    # slurmctld dies while the full-allocation step runs (it finishes without it); every group of
    # the first localisation round then fails to get an allocation, and so does its retry.
    data = spec("fkill", count=8, tool_times={"all_reduce_perf": 3})
    with SimRun(data, tmp_path) as sim:
        proc = playbook_started(sim.inventory, sim.artifacts, "--tags", "fabric")
        try:
            wait_for(lambda: _step_running(sim.run_dir, "all_reduce_perf"), 240, "the full-allocation step running")
            pid = int((sim.run_dir / "pid" / "slurmctld.pid").read_text())
            os.kill(pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
        first = run_dirs(sim.artifacts)
        run = Run(types.SimpleNamespace(returncode=proc.returncode, stdout=out, stderr=err), sim.artifacts)
    assert run.dir == first[0]
    assert run.rc != 0
    bad = fabric_checks(run)
    assert [(c["check"], c["node"], c["component"]) for c in bad] == [("fabric.run", None, "scheduler")], bad
    assert "Unable to contact slurm controller" in bad[0]["message"]
    assert run.results["fabric"]["status"] == "error"
    assert run.results["fabric"]["error"]["component"] == "scheduler"
    assert run.results["fabric"]["pinned"] == {"nodes": [], "uplinks": []}
    assert not [c for c in run.results["checks"] if c["check"] in ("leaf_uplink", "pair_bandwidth")
                and c["status"] in ("fail", "error")]
    assert run.results["verdict"]["failed_nodes"] == [] and run.results["verdict"]["cluster_failed"]
    # the retry was made and kept with the first attempt
    assert any(key.endswith(".retry1") for key in run.results["raw"]["_fabric"])


def test_fabric_replays_from_captured_outputs_without_launching(tmp_path):
    faults = [{"kind": "slow_node", "node": "gpu006", "factor": 0.5}]
    with SimRun(spec("freplay", faults=faults), tmp_path) as sim:
        live = sim.acceptance("--tags", "fabric")
        inventory = sim.inventory
    # The cluster is stopped: a replay that launched srun would fail, not pin gpu006 again.
    replay = playbook(inventory, tmp_path / "replayed", "--tags", "fabric", "-e", "acceptance_replay_dir=%s" % live.dir)
    for run in (live, replay):
        assert run.rc != 0
        assert run.results["fabric"]["pinned"] == {"nodes": ["gpu006"], "uplinks": []}

    def view(run):
        return sorted((c["check"], c["node"], c["status"], c["message"]) for c in fabric_checks(run, ("pass", "fail", "error", "skip")))
    assert view(replay) == view(live)
    assert [len(r["groups"]) for r in replay.results["fabric"]["rounds"]] == \
        [len(r["groups"]) for r in live.results["fabric"]["rounds"]]
    assert replay.results["run"]["replay_of"] == str(live.dir)
    assert replay.results["verdict"] == live.results["verdict"]


def test_a_round_missing_from_the_capture_is_not_replayable_never_slow(tmp_path):
    with SimRun(spec("fpartial", count=8), tmp_path) as sim:
        live = sim.acceptance("--tags", "fabric")
        inventory = sim.inventory
    assert live.rc == 0, live.output[-3000:]
    captured = tmp_path / "captured"
    shutil.copytree(str(live.dir), str(captured))
    dropped = sorted((captured / "raw" / "_fabric").glob("round1-*.txt"))[0]
    dropped.unlink()
    replay = playbook(inventory, tmp_path / "replayed", "--tags", "fabric", "-e", "acceptance_replay_dir=%s" % captured)
    groups = [g for r in replay.results["fabric"]["rounds"] for g in r["groups"]]
    missing = [g for g in groups if g["status"] == "not_replayable"]
    # The planner asks again for the nodes it could not judge, and its confirmation round then
    # pairs others than the live run did: groups never captured, never replayable, never slow.
    assert missing[0]["raw"] + ".txt" == dropped.name
    assert set(n for g in missing for n in g["nodes"]) >= set(dropped.stem.split("-")[1:])
    assert not [c for c in fabric_checks(replay) if c["status"] == "fail"]
    for node in set(n for g in missing for n in g["nodes"]):
        (check,) = [c for c in replay.results["checks"] if c["stage"] == "fabric" and c["node"] == node
                    and c["check"] == "pair_bandwidth"]
        assert check["status"] in ("skip", "pass") and "slow" not in check["message"]


def test_a_node_built_without_mpi_is_named_with_the_cause(tmp_path):
    with SimRun(spec("fnompi2", count=8, faults=[{"kind": "no_mpi", "node": "gpu005"}]), tmp_path) as sim:
        run = sim.acceptance("--tags", "fabric")
    assert run.rc != 0
    (node_check,) = [c for c in fabric_checks(run) if c["node"]]
    assert node_check["node"] == "gpu005" and node_check["component"] == "nccl-tests build"
    assert "built without MPI=1" in node_check["message"]
    full = [c for c in fabric_checks(run) if c["check"] == "full_allocation"]
    assert full and "built without MPI=1" in full[0]["message"]
    assert "one-rank runs" in full[0]["message"] or "independent" in full[0]["message"]
    assert "slow" not in node_check["message"] and "GB/s" not in node_check["message"]
    assert json.dumps(run.results["fabric"]["pinned"]) == json.dumps({"nodes": ["gpu005"], "uplinks": []})


def test_a_missing_pmix_plugin_is_a_launcher_error_before_any_bandwidth(tmp_path):
    # Real srun on the simulated cluster offers pmix and pmix_v4, not pmix_v5: the preflight's
    # srun --mpi=list says so and the stage stops there, launching no nccl-tests at all.
    with SimRun(spec("fpmix", count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "fabric", "-e", "check_fabric_mpi=pmix_v5")
    assert run.rc != 0
    fabric = [c for c in run.results["checks"] if c["stage"] == "fabric"]
    assert [(c["check"], c["status"], c["component"]) for c in fabric] == [("launcher", "error", "launcher")], fabric
    assert fabric[0]["message"].startswith("launcher preflight: srun has no MPI plugin pmix_v5 (PMIx is missing)")
    assert "pmix_v4" in fabric[0]["message"]
    assert run.results["fabric"]["error"]["component"] == "launcher"
    assert run.results["fabric"]["preflight"]["steps"][0]["step"] == "mpi_list"
    assert sorted(run.results["raw"]["_fabric"]) == ["counters-before", "preflight-mpi-list"]
    assert run.results["verdict"]["failed_nodes"] == [] and run.results["verdict"]["cluster_failed"]
    assert "MPI plugin types are..." in (run.dir / "raw" / "_fabric" / "preflight-mpi-list.txt").read_text()


def test_every_node_in_one_rank_runs_is_the_launcher_not_the_nodes(tmp_path):
    # What Open MPI does under a PMI it cannot use (singletons) looks like nccl-tests built without
    # MPI=1; on every node at once no node is to blame.
    faults = [{"kind": "no_mpi", "node": "gpu00%d" % i} for i in range(1, 5)]
    with SimRun(spec("fsingle", count=4, faults=faults), tmp_path) as sim:
        run = sim.acceptance("--tags", "fabric")
    assert run.rc != 0
    bad = fabric_checks(run)
    assert not [c for c in bad if c["node"]], bad
    (stop,) = [c for c in bad if c["check"] == "fabric.run"]
    assert stop["component"] == "launcher" and "MPI singletons" in stop["message"]
    launcher = [c for c in run.results["checks"] if c["check"] == "launcher"]
    assert launcher[0]["status"] == "skip" and "independent one-rank runs" in launcher[0]["message"]
    assert run.results["fabric"]["pinned"] == {"nodes": [], "uplinks": []}
    assert run.results["verdict"]["failed_nodes"] == []
