"""acceptance.yml with ``acceptance_transport: srun``: one Slurm step per stage on real Slurm.

RUN_A of the fault matrix (tests/integration/fault_matrix.py: one fault a node, and one node whose
own inventory points topology at a missing tool) over srun, compared with the session's run of it
over Ansible's local connections (tests/conftest.py fault_matrix_local): the same faults with the
same messages, the same verdict, from one task per stage instead of one per node; a replay of the
srun run's artifacts judges the same. A 4-node cluster then shows what only srun has: a node
Slurm cannot reach is a transport error of that node (and, as Ansible drops an unreachable host,
not tried again), a hung tool is killed at its timeout inside the step, and nothing of the steps
is left behind.
"""
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from harness import Run, SimRun, playbook, playbook_started, poll, spec, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_faults import RUN_A, SKIP, expected, faults  # noqa: E402  pylint: disable=wrong-import-position
from fault_matrix import HANG_TIMEOUT, MISSING_TOOL, OVERRIDE_NODE, write_host_vars  # noqa: E402  pylint: disable=wrong-import-position
from test_ssh_transport import _key  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration

SRUN = ("-e", "acceptance_transport=srun")


@pytest.fixture(scope="module")
def both(fault_matrix_local, tmp_path_factory):
    """(the session's local run of RUN_A, its srun run on a cluster of its own, that cluster)."""
    work = tmp_path_factory.mktemp("fsr")
    with SimRun(spec("fsr", faults(RUN_A)), work) as sim:
        write_host_vars(sim.inventory)
        srun = playbook(sim.inventory, work / "art-srun", "--skip-tags", SKIP, *SRUN)
        yield fault_matrix_local, srun, sim


def _expected():
    return expected(RUN_A)


def test_srun_finds_the_same_faults_with_the_same_messages_as_ssh(both):
    ssh, srun, _sim = both
    assert srun.rc != 0, srun.output[-3000:]
    assert ssh.bad() == _expected(), ssh.output[-3000:]
    assert srun.bad() == _expected(), srun.output[-3000:]
    assert srun.junit_bad() == _expected()
    assert _key(srun.results["checks"]) == _key(ssh.results["checks"])
    assert srun.results["verdict"] == ssh.results["verdict"]


def test_a_nodes_own_inventory_value_is_rendered_for_that_node_only(both):
    _ssh, srun, _sim = both
    (check,) = [c for c in srun.bad_checks(OVERRIDE_NODE) if c["stage"] == "topology"]
    assert check["status"] == "error" and MISSING_TOOL in check["message"], check
    # Its SDC probe's Python dies inside the srun step: the probe's own words, as over local connections.
    (crash,) = [c for c in srun.bad_checks(OVERRIDE_NODE) if c["stage"] == "sdc" and c["check"] == "collect"]
    assert crash["message"].startswith("sdc-probe exited with status 1") and "MemoryError" in crash["message"]
    others = [c for c in srun.results["checks"] if c["stage"] == "topology" and c["node"] in ("gpu001", "gpu016")]
    assert others and all(c["status"] == "pass" for c in others), others


def test_srun_runs_one_task_per_stage_not_one_per_node(both):
    ssh, srun, _sim = both
    stages = ("preflight", "topology", "gpu_health", "dcgm", "sdc", "infiniband", "nccl_single_node")
    for stage in stages:
        assert srun.output.count("Stage %s over srun: " % stage) == 1, stage
    # no per-node results of the stage tasks: only the one task, on the controller
    assert "ok: [gpu007]" not in srun.output and "ok: [gpu007]" in ssh.output
    assert "ok: [gpu001 -> localhost]" in srun.output
    # the callback still prints one line per node as its stage is judged
    assert "gpu002 topology FAIL: GPU2" in srun.output, srun.output[-3000:]
    # every tool's output kept per node, as over ssh
    for node in ("gpu001", "gpu016"):
        assert set(srun.results["raw"][node]) == set(ssh.results["raw"][node])


def test_replay_of_the_srun_run_judges_the_same(both, tmp_path):
    _ssh, srun, sim = both
    replay = playbook(sim.inventory, tmp_path / "art", "--skip-tags", SKIP, *SRUN,
                      "-e", "acceptance_replay_dir=%s" % srun.dir)
    assert _key(replay.results["checks"]) == _key(srun.results["checks"])
    assert replay.results["verdict"] == srun.results["verdict"]


# ---------------------------------------------------------------------------------------------
# Four nodes: gpu002's dcgmi hangs, gpu004's slurmd is not running.
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def four(tmp_path_factory):
    data = spec("fsu", [{"kind": "hang", "node": "gpu002", "tool": "dcgmi"}], unreachable=["gpu004"], count=4,
                fabric={"leaves": 1, "spines": 1, "rails": 8, "oversubscription": 1.0})
    with SimRun(data, tmp_path_factory.mktemp("fsu")) as sim:
        short = '{"check_preflight_timeout": %d, "check_dcgm_timeouts": {"3": %d}}' % (HANG_TIMEOUT, HANG_TIMEOUT)
        sim.run = sim.acceptance("--tags", "preflight,dcgm", "-e", short, *SRUN)
        yield sim


def _sim_processes(run_dir, word):
    """Processes of this simulated cluster's fake tools whose command line holds ``word``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            environ = Path("/proc/%s/environ" % pid).read_bytes()
            argv = Path("/proc/%s/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ("GPUCLUSTER_SIM_RUN=%s" % run_dir).encode() in environ and word in argv:
            found.append(int(pid))
    return found


def test_a_node_srun_cannot_reach_is_a_transport_error_and_the_others_go_on(four):
    run = four.run
    (check,) = run.bad_checks("gpu004")  # preflight only: not tried again, as ssh drops the host
    assert check["status"] == "error" and check["component"] == "transport", check
    assert check["stage"] == "preflight"
    assert "srun could not run the preflight stage there: Slurm reports it" in check["message"], check
    for node in ("gpu001", "gpu003"):
        mine = [c for c in run.results["checks"] if c["node"] == node]
        assert {c["stage"] for c in mine} == {"preflight", "dcgm"}
        assert all(c["status"] in ("pass", "skip") for c in mine), [c for c in mine if c["status"] != "pass"]


def test_a_hung_tool_inside_the_step_is_an_error_at_its_timeout_and_nothing_is_left(four):
    run = four.run
    (check,) = [c for c in run.bad_checks("gpu002") if c["stage"] == "dcgm"]
    assert check["status"] == "error" and "timed out" in check["message"], check
    raw = run.results["raw"]["gpu002"]["dcgmi-diag"]
    assert raw["rc"] in (124, 137) and raw["seconds"] < HANG_TIMEOUT + 10
    assert run.bad() == {("gpu002", "preflight"), ("gpu002", "dcgm"), ("gpu004", "preflight")}
    poll(lambda: not _sim_processes(four.run_dir, "dcgmi"), 30, "no fake dcgmi of the run left")
    env = dict(os.environ, SLURM_CONF=str(four.run_dir / "etc" / "slurm.conf"))
    poll(lambda: subprocess.run(["squeue", "--noheader"], env=env, capture_output=True, text=True, timeout=30,
                                check=False).stdout.strip() == "", 60, "no job of the stages left in squeue")


def test_check_mode_under_srun_lists_every_node_and_runs_nothing(four):
    run = four.acceptance("--check", "--tags", "topology,dcgm", *SRUN)
    assert "topology on gpu[001-004] (4 node(s)): nvidia-smi topo -m" in run.output, run.output[-2000:]
    assert "dcgm on gpu[001-004] (4 node(s)): dcgmi diag -r 3 -j" in run.output
    assert "Stage topology over srun" in run.output
    assert not _sim_processes(four.run_dir, "dcgmi")


AFTER_DCGM = ("sdc", "infiniband", "nccl_single_node")


def test_slurmctld_killed_mid_run_is_a_scheduler_error_of_every_later_stage_and_blames_no_node(tmp_path):
    """slurmctld dies while the dcgm step runs: every later per-node stage is a scheduler error of
    every node (the nodes stay in the run, each stage records them), no node has a measured fault,
    no advice sends hardware back, and the headline says why the nodes were not judged."""
    with SimRun(spec("sctl", count=4, tool_times={"dcgmi_diag_r3": 4}), tmp_path) as sim:
        proc = playbook_started(sim.inventory, sim.artifacts, "--skip-tags", "fabric,workload,rdma", *SRUN)
        try:
            wait_for(lambda: _sim_processes(sim.run_dir, "diag"), 300, "the dcgm step running")
            os.kill(int((sim.run_dir / "pid" / "slurmctld.pid").read_text()), signal.SIGKILL)
            out, err = proc.communicate(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
        run = Run(types.SimpleNamespace(returncode=proc.returncode, stdout=out, stderr=err), sim.artifacts)
    assert run.rc != 0
    nodes = ["gpu%03d" % i for i in range(1, 5)]
    for node in nodes:
        for stage in AFTER_DCGM:
            mine = [c for c in run.results["checks"] if c["node"] == node and c["stage"] == stage]
            assert len(mine) == 1, (node, stage, mine)
            assert mine[0]["status"] == "error" and mine[0]["component"] == "scheduler", mine[0]
            assert "Unable to contact slurm controller" in mine[0]["message"], mine[0]
        assert run.results["nodes"][node]["stages"]["sdc"] == "error"
    assert not [c for c in run.results["checks"] if c["status"] == "fail"]
    assert run.results["verdict"]["message"] == (
        "4 of 4 node(s) failed acceptance: gpu001, gpu002, gpu003, gpu004 "
        "(0 with a measured fault; 4 not judged \u2014 scheduler error: 4)")
    summary = run.output[run.output.index("gpucluster.acceptance verdict:"):]
    steps = summary[summary.index("next steps:"):]
    assert "fix Slurm (controller, partition, node state)" in steps, steps
    assert not any(word in steps for word in ("RMA", "reseat", "replace")), steps
