"""acceptance.yml's per-node pipeline (``acceptance_pipeline``, ssh): each node moves to its next
stage as soon as its last one is judged, instead of waiting at every stage for the slowest node.

A 4-node simulated cluster on real Slurm whose gpu001 DCGM diagnostic is held (a slow_tool fault
released by a file, so nothing here depends on timing): while gpu001 is still in dcgm, the other
three finish every per-node stage; released, gpu001 finishes too and the run passes with the same
checks as the same cluster run in step. Fail-fast and srun run in step (one play, every node
together), which the play the nodes land in shows.
"""
import subprocess
import types

import pytest

from harness import REPO, VENV_BIN, Run, SimRun, ansible_env, playbook, poll, run_dirs, spec

pytestmark = pytest.mark.integration

HELD = "gpu001"
OTHERS = ("gpu002", "gpu003", "gpu004")
IN_STEP = "PLAY [Acceptance, per-node stages in step]"
PIPELINED = "PLAY [Acceptance, per-node stages, each node at its own pace]"
# The per-node stages' last tool on a node: its nccl_single_node run.
LAST_TOOL = "all_reduce_perf.txt"
PLAYBOOK = [str(VENV_BIN / "ansible-playbook"), str(REPO / "playbooks" / "acceptance.yml")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    work = tmp_path_factory.mktemp("fpl")
    release = work / "release-dcgm"
    held = {"kind": "slow_tool", "node": HELD, "tool": "dcgmi_diag_r3", "seconds": 900,
            "release_file": str(release)}
    fabric = {"leaves": 1, "spines": 1, "rails": 8, "oversubscription": 1.0}
    with SimRun(spec("fpl", [held], count=4, fabric=fabric), work) as sim:
        yield sim, work, release


def _key(checks):
    return sorted((c["node"], c["stage"], c["check"], c["status"]) for c in checks)


def _plays_with_hosts(output):
    """The per-node plays that ran tasks (a play with no node prints 'skipping: no hosts matched')."""
    ran = set()
    for title in (IN_STEP, PIPELINED):
        if title not in output:
            continue
        play = output.split(title, 1)[1].split("\nPLAY [", 1)[0]  # up to the next play's banner
        if "skipping: no hosts matched" not in play:
            ran.add(title)
    return ran


@pytest.fixture(scope="module")
def pipelined(cluster):
    sim, work, release = cluster
    artifacts = work / "art-pipelined"
    log = work / "pipelined.log"  # a file, not a pipe: a pipe nobody reads while we wait fills up
    with open(log, "w") as out:
        proc = subprocess.Popen(PLAYBOOK + ["-i", str(sim.inventory), "--skip-tags", "workload,fabric"],
                                cwd=str(REPO), env=ansible_env(artifacts), stdout=out, stderr=subprocess.STDOUT)
    try:
        def others_done():
            dirs = run_dirs(artifacts)
            return dirs and all((dirs[-1] / "raw" / node / LAST_TOOL).exists() for node in OTHERS) and dirs[-1]

        run_dir = poll(others_done, timeout=600, what="gpu002-gpu004 to finish their per-node stages")
        # gpu001 is still held in dcgm: it has no output of that stage, nor of any stage after it
        held_raw = sorted(p.name for p in (run_dir / "raw" / HELD).iterdir())
        release.write_text("")
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text()
    return Run(types.SimpleNamespace(returncode=proc.returncode, stdout=output, stderr=""), artifacts), held_raw


def test_the_other_nodes_finish_every_stage_while_one_is_held_in_dcgm(pipelined):
    run, held_raw = pipelined
    assert "dcgmi-diag.txt" not in held_raw and LAST_TOOL not in held_raw, held_raw
    assert "nvidia-smi-topo.txt" in held_raw  # its stages before dcgm were judged
    assert run.rc == 0, run.output[-3000:]
    assert run.results["verdict"]["status"] == "pass"
    stages = set((c["node"], c["stage"]) for c in run.results["checks"])
    for node in (HELD,) + OTHERS:
        for stage in ("preflight", "topology", "gpu_health", "dcgm", "sdc", "infiniband", "nccl_single_node"):
            assert (node, stage) in stages, (node, stage)
    assert _plays_with_hosts(run.output) == {PIPELINED}, run.output[-3000:]
    # each node's line as it finishes a stage: the others' last stage before gpu001's dcgm
    assert run.output.index("gpu002 nccl_single_node pass") < run.output.index("gpu001 dcgm pass")


def test_in_step_gives_the_same_checks(cluster, pipelined):
    sim, work, release = cluster
    release.write_text("")
    step = playbook(sim.inventory, work / "art-in-step", "--skip-tags", "workload,fabric",
                    "-e", "acceptance_pipeline=false")
    assert step.rc == 0, step.output[-3000:]
    assert _plays_with_hosts(step.output) == {IN_STEP}, step.output[-3000:]
    assert _key(step.results["checks"]) == _key(pipelined[0].results["checks"])
    # in step, no node starts a stage before every node finished the one before
    assert step.output.index("gpu001 dcgm pass") < step.output.index("gpu002 sdc pass")


@pytest.mark.parametrize("option", ["acceptance_fail_fast=true", "acceptance_transport=srun"])
def test_fail_fast_and_srun_run_in_step(cluster, option):
    sim, work, _release = cluster
    checked = playbook(sim.inventory, work / ("art-check-" + option.split("=")[0]), "--check",
                       "--skip-tags", "workload,fabric", "-e", option)
    assert checked.rc == 0, checked.output[-3000:]
    assert _plays_with_hosts(checked.output) == {IN_STEP}, checked.output[-3000:]


def test_check_mode_tells_each_pipelined_stage_once_for_all_nodes(cluster):
    sim, work, _release = cluster
    checked = playbook(sim.inventory, work / "art-check", "--check", "--skip-tags", "workload,fabric")
    assert checked.rc == 0, checked.output[-3000:]
    assert _plays_with_hosts(checked.output) == {PIPELINED}
    for stage in ("preflight", "topology", "dcgm", "nccl_single_node"):
        lines = [line for line in checked.output.splitlines() if line.startswith("check mode: %s would run" % stage)]
        assert len(lines) == 1 and lines[0].endswith(" on gpu[001-004]"), lines
