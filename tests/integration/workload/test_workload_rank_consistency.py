"""Rank consistency of the reference workload on a 4-node simulated cluster, through the role.

The check_workload role launches the workload with real srun (gloo on CPU, one rank per node, 16
steps, parameter checksums every 5 steps: after steps 4, 9, 14 and 15). With the perturb hook one
rank's parameters are changed after step 6, as silent data corruption would: results.json must
name that rank's node and GPU, the step it diverged at, and nothing else; a replay of the run's
artifacts (the captured log alone) must say the same. A clean run passes the new checks on every
node.
"""
import json
import subprocess
import sys
import time

import pytest

from conftest import REPO
from harness import Run, ansible_env, free_port, torch_sim

pytestmark = pytest.mark.integration

PLAYBOOK = REPO / "tests" / "integration" / "workload" / "workload_stage_playbook.yml"
NODES = ["gpu001", "gpu002", "gpu003", "gpu004"]
# CPU time on a shared 2-core machine: the straggler margins the other workload tests use.
CPU_OPTIONS = {"straggler_ratio": 1.5, "spread_warn": 1.5}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    with torch_sim(tmp_path_factory, "wlrank", 5) as running:
        yield running


def role_run(sim, artifacts, **settings):
    base = {
        "check_workload_python": sys.executable,
        "check_workload_master_addr": "127.0.0.1",
        "check_workload_master_port": free_port(),
        "check_workload_steps": 16,
        "check_workload_param_check_every": 5,
        "check_workload_compute_clock": "cpu",
        "check_workload_gpu_sample_s": 0,
        "check_workload_environment": {"OMP_NUM_THREADS": "1"},
        "check_workload_judge_options": CPU_OPTIONS,
        "check_workload_timeout": 150,
        "check_workload_script_dir": str(sim.workdir / "script"),
    }
    base.update(settings)
    cmd = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(sim.inventory), str(PLAYBOOK),
           "-e", json.dumps(base)]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=str(REPO), env=ansible_env(artifacts), capture_output=True, text=True,
                          timeout=300, check=False)
    run = Run(proc, artifacts)
    assert run.results is not None, run.output[-3000:]
    return run, time.monotonic() - started


def checks_of(run, check, node=None):
    return [c for c in run.results["checks"] if c["check"] == check and (node is None or c["node"] == node)]


def test_perturbed_rank_is_named_with_its_node_gpu_and_step_and_replay_agrees(sim, tmp_path):
    run, seconds = role_run(sim, sim.workdir / "artifacts-perturbed", check_workload_perturb_rank=2,
                            check_workload_perturb_step=6)
    assert run.bad() == {("gpu003", "workload")}, (run.bad_checks(), run.output[-3000:])
    failed = run.bad_checks("gpu003")
    assert [(c["check"], c["status"], c["component"]) for c in failed] == [
        ("workload.param_consistency", "fail", "rank 2 (gpu003 GPU0)")], failed
    check = failed[0]
    assert check["message"].startswith("rank 2 (gpu003 GPU0, local rank 0, device cpu) holds parameters different "
                                       "from the other ranks' from step 9 on: checksum ")
    assert "it matched at step 4, so it diverged between steps 4 and 9" in check["message"]
    assert (check["metrics"]["first_step"], check["metrics"]["steps"], check["metrics"]["majority_ranks"]) == (
        9, [9, 14, 15], 3)
    assert check["evidence"][0].startswith("GPUCLUSTER_PARAMS rank=2 local_rank=0 node=gpu003 gpu=0 device=cpu step=9 ")
    assert run.junit_bad() == {("gpu003", "workload")}
    for node in ("gpu001", "gpu002", "gpu004"):  # the other nodes pass the check, and the loss check
        passed = checks_of(run, "workload.param_consistency", node)
        assert [c["status"] for c in passed] == ["pass"], passed
        assert "as the majority of the 4 ranks at each of the 4 checks (steps 4, 9, 14, 15)" in passed[0]["message"]
        assert [c["status"] for c in checks_of(run, "workload.loss", node)] == ["pass"]
    raw = (run.dir / "raw" / "gpu003" / "workload.txt").read_text()
    assert raw.count("GPUCLUSTER_PARAMS rank=2 ") == 4 and " loss=" in raw
    assert seconds < 150, "the role run took %.0f s" % seconds

    # the captured log alone gives the same verdict: replay the run's artifacts
    replay = role_run(sim, tmp_path / "artifacts-replay", acceptance_replay_dir=str(run.dir))[0]
    assert replay.bad() == {("gpu003", "workload")}, replay.bad_checks()
    again = replay.bad_checks("gpu003")
    assert [(c["check"], c["component"], c["message"]) for c in again] == [
        (check["check"], check["component"], check["message"])]


def test_clean_run_passes_the_new_checks_on_every_node(sim):
    run, seconds = role_run(sim, sim.workdir / "artifacts-clean")
    assert run.bad() == set(), (run.bad_checks(), run.output[-3000:])
    for node in NODES:
        passed = checks_of(run, "workload.param_consistency", node)
        assert [c["status"] for c in passed] == ["pass"], passed
        assert passed[0]["message"] == ("rank %d (%s GPU0) held bitwise the same parameters as every other rank "
                                        "(4 ranks) at each of the 4 checks (steps 4, 9, 14, 15)"
                                        % (NODES.index(node), node))
        loss = checks_of(run, "workload.loss", node)
        assert [c["status"] for c in loss] == ["pass"]
        assert loss[0]["message"].startswith("all 4 ranks logged a finite loss at every step (16 steps each)")
    assert seconds < 150, "the role run took %.0f s" % seconds
