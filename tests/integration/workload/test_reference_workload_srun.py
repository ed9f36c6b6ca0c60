"""The reference workload under real srun on a 4-node simulated cluster, parsed and judged.

gloo on CPU, one rank per node, the tiny model, 20 steps; one rank slowed on purpose must be named
with its node and GPU, and nothing else may fail; an unslowed run passes with a tight distribution.
The last test launches the same through the check_workload role and ansible-playbook.

The four ranks share two (busy) cores, so elapsed compute times mostly measure the scheduler
(healthy ranks' p50s differ by up to 2.5x here); the runs use --compute-clock cpu (each rank's CPU
time; the slowdown is busy work), which keeps healthy ranks within ~10 %.
"""
import json
import subprocess
import sys
import time

import pytest

from conftest import REPO
from harness import Run, ansible_env, free_port, torch_sim

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import worst_status
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload import (
    judge_workload, parse_workload_log)

pytestmark = pytest.mark.integration

SCRIPT = REPO / "roles" / "check_workload" / "files" / "gpucluster_ddp_train.py"
PLAYBOOK = REPO / "tests" / "integration" / "workload" / "workload_stage_playbook.yml"
NODES = ["gpu001", "gpu002", "gpu003", "gpu004"]
# CPU time still varies more between processes on a shared machine than GPU kernels do: a margin
# over the defaults (1.25); the slowed rank computes ~10x longer than the others.
CPU_OPTIONS = {"straggler_ratio": 1.5, "spread_warn": 1.5}
SLOW_MS = 100


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    with torch_sim(tmp_path_factory, "wlsrun", 3) as running:
        yield running


def srun_workload(sim, env=None, args=()):
    extra = {"OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    extra.update(env or {})
    cmd = ["srun", "-N4", "--ntasks-per-node=1", "--kill-on-bad-exit=1", sys.executable, str(SCRIPT),
           "--steps", "20", "--gpu-sample-s", "0", "--compute-clock", "cpu"] + list(args)
    started = time.monotonic()
    proc = sim.cluster.run(cmd, timeout=180, env=extra)
    return proc, time.monotonic() - started


def test_slowed_rank_is_named_with_its_node_and_gpu(sim):
    proc, seconds = srun_workload(sim, env={"GPUCLUSTER_WORKLOAD_SLOW_RANK": "2",
                                            "GPUCLUSTER_WORKLOAD_SLOW_MS": str(SLOW_MS)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    parsed = parse_workload_log(proc.stdout)
    assert parsed["errors"] == [], parsed["errors"]
    assert (parsed["world"], parsed["backend"], parsed["device"], parsed["model"], parsed["compute_clock"]) == (
        4, "gloo", "cpu", "tiny", "cpu")
    assert dict((r, v["node"]) for r, v in parsed["ranks"].items()) == dict(enumerate(NODES))
    assert all(v["steps"] == 20 and v["done"] for v in parsed["ranks"].values())
    results = judge_workload(parsed, 4, dict(CPU_OPTIONS, rc=proc.returncode, expected_steps=20))
    bad = [r for r in results if r["status"] in ("fail", "error")]
    assert len(bad) == 1, [r["message"] for r in bad]
    straggler = bad[0]
    assert (straggler["check"], straggler["node"], straggler["component"]) == (
        "workload.rank", "gpu003", "rank 2 (gpu003 GPU0)")
    assert straggler["message"].startswith("rank 2 (gpu003 GPU0) compute p50 ")
    assert "this rank holds the others back" in straggler["message"]
    assert straggler["metrics"]["compute_p50_ms"] >= SLOW_MS
    assert straggler["metrics"]["sync_p50_ms"] < straggler["metrics"]["sync_p50_others_ms"]
    assert seconds < 90, "the slowed run took %.0f s" % seconds


def test_unslowed_run_passes_with_a_tight_distribution(sim):
    proc, seconds = srun_workload(sim)
    assert proc.returncode == 0, proc.stderr[-3000:]
    parsed = parse_workload_log(proc.stdout)
    assert parsed["errors"] == []
    results = judge_workload(parsed, 4, dict(CPU_OPTIONS, rc=proc.returncode, expected_steps=20))
    assert [r["message"] for r in results if r["status"] in ("fail", "error")] == []
    assert worst_status(results) == "pass"
    assert sorted(r["node"] for r in results if r["check"] == "workload.node") == NODES   # one summary per node
    dist = [r for r in results if r["check"] == "workload.distribution"]
    assert len(dist) == 1 and dist[0]["status"] == "pass"
    assert dist[0]["message"].startswith("all 4 ranks compute p50 "), dist[0]["message"]
    assert dist[0]["message"].endswith(": a tight distribution")
    assert dist[0]["metrics"]["compute_spread"] < CPU_OPTIONS["straggler_ratio"]
    assert seconds < 90, "the clean run took %.0f s" % seconds


def test_role_launches_through_srun_and_fails_only_the_slowed_node(sim):
    settings = {
        "check_workload_python": sys.executable,
        "check_workload_master_addr": "127.0.0.1",
        "check_workload_master_port": free_port(),
        "check_workload_steps": 20,
        "check_workload_compute_clock": "cpu",
        "check_workload_slow_rank": 1,
        "check_workload_slow_ms": SLOW_MS,
        "check_workload_gpu_sample_s": 2.0,  # the fake nvidia-smi is on the inventory's PATH
        "check_workload_environment": {"OMP_NUM_THREADS": "1"},
        "check_workload_judge_options": CPU_OPTIONS,
        "check_workload_timeout": 150,
        "check_workload_script_dir": str(sim.workdir / "script"),
    }
    cmd = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(sim.inventory), str(PLAYBOOK),
           "-e", json.dumps(settings)]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=str(REPO), env=ansible_env(sim.artifacts), capture_output=True, text=True,
                          timeout=300, check=False)
    seconds = time.monotonic() - started
    run = Run(proc, sim.artifacts)
    assert run.results is not None, run.output[-3000:]
    assert run.bad() == {("gpu002", "workload")}, (run.bad_checks(), run.output[-3000:])
    straggler = run.bad_checks("gpu002")
    assert len(straggler) == 1 and straggler[0]["component"] == "rank 1 (gpu002 GPU0)"
    assert "this rank holds the others back" in straggler[0]["message"]
    assert run.junit_bad() == {("gpu002", "workload")}
    for node in NODES:  # each node keeps its own lines of the log, with its GPU samples
        raw = (run.dir / "raw" / node / "workload.txt").read_text()
        assert "GPUCLUSTER_DONE" in raw and ("node=%s " % node) in raw
        assert all(" node=%s " % node in line for line in raw.splitlines() if "GPUCLUSTER_" in line)
        assert "GPUCLUSTER_GPU node=%s gpu=0 " % node in raw
    assert seconds < 150, "the role run took %.0f s" % seconds
