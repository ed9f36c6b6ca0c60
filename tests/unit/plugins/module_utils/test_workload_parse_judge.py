# -*- coding: utf-8 -*-
"""Workload log parser and judge: real srun output, stragglers, damaged logs, custom regex."""
from __future__ import absolute_import, division, print_function

import random

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.filter.from_workload_log import FilterModule as ParseFilters
from ansible_collections.gpucluster.acceptance.plugins.filter.judge_workload import FilterModule as JudgeFilters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import worst_status
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload import (
    judge_workload, parse_workload_log, percentile)

# Captured on the simulated 4-node cluster (real Slurm, tests/integration/workload):
# srun -N4 --ntasks-per-node=1 python gpucluster_ddp_train.py --steps 8 --slow-rank 2 --slow-ms 200
# with OMP_NUM_THREADS=1 on a loaded 2-core machine (hence the noisy compute times).
REAL_SLOW_RANK2 = "\n".join([
    "GPUCLUSTER_WORKLOAD rank=1 local_rank=0 world=4 node=gpu002 gpu=0 device=cpu backend=gloo model=tiny params=104064 steps=8 duration_s=0.0"
    " launcher=slurm torch=2.13.0+cpu format=1",
    "GPUCLUSTER_WORKLOAD rank=3 local_rank=0 world=4 node=gpu004 gpu=0 device=cpu backend=gloo model=tiny params=104064 steps=8 duration_s=0.0"
    " launcher=slurm torch=2.13.0+cpu format=1",
    "GPUCLUSTER_WORKLOAD rank=0 local_rank=0 world=4 node=gpu001 gpu=0 device=cpu backend=gloo model=tiny params=104064 steps=8 duration_s=0.0"
    " launcher=slurm torch=2.13.0+cpu format=1",
    "GPUCLUSTER_WORKLOAD rank=2 local_rank=0 world=4 node=gpu003 gpu=0 device=cpu backend=gloo model=tiny params=104064 steps=8 duration_s=0.0"
    " launcher=slurm torch=2.13.0+cpu format=1",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=0 compute_ms=94.829 sync_ms=262.688 step_ms=359.737",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=0 compute_ms=325.496 sync_ms=11.278 step_ms=338.7",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=0 compute_ms=60.175 sync_ms=299.348 step_ms=361.47",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=0 compute_ms=96.308 sync_ms=270.118 step_ms=370.926",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=1 compute_ms=55.571 sync_ms=298.883 step_ms=356.232",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=1 compute_ms=101.186 sync_ms=251.449 step_ms=354.126",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=1 compute_ms=341.539 sync_ms=9.2 step_ms=355.526",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=1 compute_ms=74.614 sync_ms=276.869 step_ms=352.85",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=2 compute_ms=50.592 sync_ms=267.416 step_ms=319.517",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=2 compute_ms=67.542 sync_ms=258.598 step_ms=327.684",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=2 compute_ms=84.427 sync_ms=225.915 step_ms=317.857",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=2 compute_ms=308.065 sync_ms=8.69 step_ms=329.263",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=3 compute_ms=148.531 sync_ms=217.254 step_ms=367.056",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=3 compute_ms=328.564 sync_ms=22.64 step_ms=352.983",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=3 compute_ms=135.699 sync_ms=234.544 step_ms=371.507",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=3 compute_ms=147.594 sync_ms=214.701 step_ms=363.641",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=4 compute_ms=226.609 sync_ms=7.222 step_ms=235.122",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=4 compute_ms=75.689 sync_ms=151.058 step_ms=228.154",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=4 compute_ms=120.747 sync_ms=97.525 step_ms=219.584",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=4 compute_ms=99.037 sync_ms=127.545 step_ms=227.937",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=5 compute_ms=291.32 sync_ms=12.987 step_ms=305.643",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=5 compute_ms=125.26 sync_ms=163.787 step_ms=290.438",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=5 compute_ms=97.378 sync_ms=204.904 step_ms=308.566",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=5 compute_ms=67.326 sync_ms=228.987 step_ms=297.682",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=6 compute_ms=80.307 sync_ms=279.848 step_ms=361.593",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=6 compute_ms=327.223 sync_ms=24.944 step_ms=353.604",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=6 compute_ms=110.73 sync_ms=230.789 step_ms=342.869",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=6 compute_ms=104.125 sync_ms=238.621 step_ms=344.246",
    "GPUCLUSTER_STEP rank=3 local_rank=0 node=gpu004 gpu=0 step=7 compute_ms=103.168 sync_ms=194.333 step_ms=299.087",
    "GPUCLUSTER_STEP rank=1 local_rank=0 node=gpu002 gpu=0 step=7 compute_ms=89.405 sync_ms=226.838 step_ms=317.559",
    "GPUCLUSTER_STEP rank=0 local_rank=0 node=gpu001 gpu=0 step=7 compute_ms=41.744 sync_ms=267.617 step_ms=326.221",
    "GPUCLUSTER_STEP rank=2 local_rank=0 node=gpu003 gpu=0 step=7 compute_ms=292.131 sync_ms=25.197 step_ms=351.512",
    "GPUCLUSTER_DONE rank=2 local_rank=0 node=gpu003 gpu=0 steps=8 loss=4.9694 elapsed_s=2.656 status=ok",
    "GPUCLUSTER_DONE rank=1 local_rank=0 node=gpu002 gpu=0 steps=8 loss=5.0342 elapsed_s=2.669 status=ok",
    "GPUCLUSTER_DONE rank=3 local_rank=0 node=gpu004 gpu=0 steps=8 loss=5.078 elapsed_s=2.673 status=ok",
    "GPUCLUSTER_DONE rank=0 local_rank=0 node=gpu001 gpu=0 steps=8 loss=5.0253 elapsed_s=2.675 status=ok",
]) + "\n"

# Same run shape with the fake nvidia-smi on PATH and a thermal throttle fault on gpu003 GPU0:
# a few of the GPUCLUSTER_GPU lines it printed (idle GPUs report 345 MHz in the simulation).
REAL_GPU_LINES = """\
GPUCLUSTER_GPU node=gpu002 gpu=0 t=0.3 sm_mhz=345 sm_max_mhz=1980 temp_c=34 power_w=92.12
GPUCLUSTER_GPU node=gpu003 gpu=0 t=0.3 sm_mhz=1215 sm_max_mhz=1980 temp_c=89 power_w=437.70
GPUCLUSTER_GPU node=gpu003 gpu=1 t=0.3 sm_mhz=345 sm_max_mhz=1980 temp_c=30 power_w=97.92
GPUCLUSTER_GPU node=gpu001 gpu=0 t=0.3 sm_mhz=345 sm_max_mhz=1980 temp_c=31 power_w=86.66
GPUCLUSTER_GPU node=gpu004 gpu=0 t=0.3 sm_mhz=345 sm_max_mhz=1980 temp_c=30 power_w=90.02
"""

WARMUP2 = {"warmup_steps": 2}


def make_log(nodes=2, gpus=4, steps=20, slow=None, slow_ms=120.0, base=88.0, noise=1.5, seed=1,
             header=True, done=True, stall=None, gpu_lines=(), prefix=""):
    """A reference-format log (hand-made, same layout as the workload prints).

    slow: rank computing slow_ms longer every step; stall: (rank, every_n, ms) intermittent stalls.
    The other ranks wait for the slowest one in the all-reduce, as in a real synchronous run.
    """
    rng = random.Random(seed)
    world = nodes * gpus
    where = dict((r, ("gpu%03d" % (r // gpus + 1), r % gpus)) for r in range(world))
    lines = []
    if header:
        for r in range(world):
            lines.append("GPUCLUSTER_WORKLOAD rank=%d local_rank=%d world=%d node=%s gpu=%d device=cuda "
                         "backend=nccl model=medium params=1234 steps=%d duration_s=0.0 launcher=slurm "
                         "torch=2.13.0 format=1" % (r, where[r][1], world, where[r][0], where[r][1], steps))
    lines.extend(gpu_lines)
    for step in range(steps):
        compute = {}
        for r in range(world):
            c = base + rng.uniform(-noise, noise) + (40.0 if step == 0 else 0.0)
            if r == slow:
                c += slow_ms
            if stall and r == stall[0] and step % stall[1] == 1:
                c += stall[2]
            compute[r] = c
        slowest = max(compute.values())
        for r in range(world):
            sync = slowest - compute[r] + 3.0 + rng.uniform(0, 0.5)
            fields = (prefix, r, where[r][1], where[r][0], where[r][1], step, compute[r], sync, compute[r] + sync + 1.0)
            lines.append("%sGPUCLUSTER_STEP rank=%d local_rank=%d node=%s gpu=%d step=%d compute_ms=%.3f "
                         "sync_ms=%.3f step_ms=%.3f" % fields)
    if done:
        for r in range(world):
            lines.append("GPUCLUSTER_DONE rank=%d local_rank=%d node=%s gpu=%d steps=%d loss=3.2 elapsed_s=4.1 "
                         "status=ok" % (r, where[r][1], where[r][0], where[r][1], steps))
    return "\n".join(lines) + "\n"


def bad(results):
    return [r for r in results if r["status"] in ("fail", "error")]


# ---------------------------------------------------------------------------------------------
# The real capture
# ---------------------------------------------------------------------------------------------
def test_real_capture_parses_completely():
    parsed = parse_workload_log(REAL_SLOW_RANK2)
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert sorted(parsed["ranks"]) == [0, 1, 2, 3]
    assert parsed["world"] == 4 and parsed["backend"] == "gloo" and parsed["device"] == "cpu"
    rank2 = parsed["ranks"][2]
    assert (rank2["node"], rank2["gpu"], rank2["steps"], rank2["done"]) == ("gpu003", "0", 8, True)
    assert rank2["compute_ms"][0] == 325.496 and rank2["sync_ms"][0] == 11.278 and rank2["step_ms"][0] == 338.7
    assert rank2["step_numbers"] == list(range(8))


def test_real_capture_names_the_slowed_rank_only():
    results = judge_workload(parse_workload_log(REAL_SLOW_RANK2), 4, WARMUP2)
    failed = bad(results)
    assert len(failed) == 1, failed
    assert failed[0]["check"] == "workload.rank" and failed[0]["node"] == "gpu003"
    assert failed[0]["component"] == "rank 2 (gpu003 GPU0)"
    message = failed[0]["message"]
    assert message.startswith("rank 2 (gpu003 GPU0) compute p50 ")
    assert "the median" in message and "of the other ranks" in message
    assert "this rank holds the others back" in message
    metrics = failed[0]["metrics"]
    assert metrics["compute_p50_ms"] > 2 * metrics["compute_p50_others_ms"]
    assert metrics["sync_p50_ms"] < metrics["sync_p50_others_ms"]
    for key in ("compute_p95_ms", "compute_p99_ms", "sync_p95_ms", "sync_p99_ms", "step_p50_ms"):
        assert key in metrics
    # every node gets its summary with its ranks' rows; the flagged rank also has its own result
    nodes = dict((r["node"], r) for r in results if r["check"] == "workload.node")
    assert sorted(nodes) == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert all(r["status"] == "pass" for r in nodes.values())
    assert [row["rank"] for row in nodes["gpu003"]["metrics"]["ranks"]] == [2]
    assert nodes["gpu003"]["metrics"]["ranks"][0]["flagged"] is True
    assert "flagged: rank 2" in nodes["gpu003"]["message"]
    assert not any(r["check"] == "workload.rank" and r["status"] == "pass" for r in results)


def test_real_gpu_samples_explain_the_straggler():
    parsed = parse_workload_log(REAL_SLOW_RANK2 + REAL_GPU_LINES)
    assert parsed["errors"] == [] and len(parsed["gpu_samples"]) == 5
    assert parsed["gpu_samples"][1] == {"node": "gpu003", "gpu": "0", "t": 0.3, "sm_mhz": 1215.0,
                                        "sm_max_mhz": 1980.0, "temp_c": 89.0, "power_w": 437.7}
    failed = bad(judge_workload(parsed, 4, WARMUP2))
    assert len(failed) == 1
    assert "SM clock was 1215 MHz of 1980 MHz max" in failed[0]["message"]
    assert "it ran at 89 C" in failed[0]["message"]
    assert failed[0]["metrics"]["gpu_temp_c"] == 89.0


# ---------------------------------------------------------------------------------------------
# Generated logs: clean, slowed, intermittent, GPU correlation
# ---------------------------------------------------------------------------------------------
def test_clean_run_passes_with_a_tight_distribution():
    results = judge_workload(parse_workload_log(make_log()), 8)
    assert bad(results) == []
    # a log without checksum or loss fields (format 1): those checks are skipped, saying why
    assert [(r["check"], r["status"]) for r in results if r["status"] != "pass"] == [
        ("workload.param_consistency", "skip"), ("workload.loss", "skip")]
    assert not [r for r in results if r["check"] == "workload.rank"]   # nothing to single out
    summaries = [r for r in results if r["check"] == "workload.node"]
    assert sum(len(r["metrics"]["ranks"]) for r in summaries) == 8
    assert all(set(row) >= {"rank", "gpu", "node", "steps", "compute_p50_ms", "compute_p99_ms", "sync_p95_ms",
                            "step_p50_ms"}
               for r in summaries for row in r["metrics"]["ranks"])
    dist = [r for r in results if r["check"] == "workload.distribution"][0]
    assert dist["message"].startswith("all 8 ranks compute p50 ") and dist["message"].endswith("a tight distribution")
    assert dist["metrics"]["compute_spread"] < 1.05 and not dist["metrics"].get("warning")
    assert [r["message"] for r in results if r["check"] == "workload.ranks"] == ["all 8 ranks reported"]
    steps = [r for r in results if r["check"] == "workload.steps"][0]
    assert steps["metrics"] == {"steps": 20, "warmup": 3, "measured": 17}
    for r in results:
        assert r["node"] is None if r["component"] == "cluster" else r["node"].startswith("gpu00")


def test_slow_rank_message_names_node_gpu_and_the_wait():
    results = judge_workload(parse_workload_log(make_log(slow=5, slow_ms=124.0)), 8)
    failed = bad(results)
    assert len(failed) == 1
    check = failed[0]
    assert (check["node"], check["component"], check["check"]) == ("gpu002", "rank 5 (gpu002 GPU1)", "workload.rank")
    # e.g. 'rank 5 (gpu002 GPU1) compute p50 212 ms is 2.4x the median 88 ms of the other ranks;
    #       its sync wait 3.2 ms vs 127 ms: this rank holds the others back'
    assert check["message"].startswith("rank 5 (gpu002 GPU1) compute p50 212 ms is 2.4x the median 88")
    assert "ms of the other ranks; its sync wait 3." in check["message"]
    assert check["message"].endswith("ms: this rank holds the others back")
    dist = [r for r in results if r["check"] == "workload.distribution"][0]
    assert dist["status"] == "pass" and dist["message"].startswith("the other 7 ranks")


def test_small_differences_are_not_stragglers():
    # 15 % slower: below the 1.25 ratio although far outside the others' tiny spread
    results = judge_workload(parse_workload_log(make_log(slow=3, slow_ms=13.0)), 8)
    assert bad(results) == []
    strict = judge_workload(parse_workload_log(make_log(slow=3, slow_ms=13.0)), 8, {"straggler_ratio": 1.1})
    assert [r["node"] for r in bad(strict)] == ["gpu001"]


def test_warmup_steps_are_excluded():
    text = make_log(steps=12)
    slow_first = text.replace("rank=6 local_rank=2 node=gpu002 gpu=2 step=0 compute_ms=",
                              "rank=6 local_rank=2 node=gpu002 gpu=2 step=0 compute_ms=9")
    assert bad(judge_workload(parse_workload_log(slow_first), 8, {"warmup_steps": 1})) == []


def test_intermittent_stalls_are_named():
    text = make_log(steps=40, stall=(2, 3, 400.0))
    failed = bad(judge_workload(parse_workload_log(text), 8))
    assert len(failed) == 1 and failed[0]["node"] == "gpu001"
    assert "compute p95" in failed[0]["message"] and "stalls intermittently" in failed[0]["message"]
    # too few steps for a p95: not judged on its tail
    assert bad(judge_workload(parse_workload_log(make_log(steps=12, stall=(2, 3, 400.0))), 8)) == []


def test_gpu_clock_of_a_flagged_rank_against_busy_peers():
    gpu_lines = ["GPUCLUSTER_GPU node=gpu%03d gpu=%d t=%d sm_mhz=%d sm_max_mhz=1980 temp_c=%d power_w=650.1"
                 % (n, g, t, 1230 if (n, g) == (2, 1) else 1980, 62, ) for t in (1, 2) for n in (1, 2)
                 for g in range(4)]
    parsed = parse_workload_log(make_log(slow=5, gpu_lines=gpu_lines))
    failed = bad(judge_workload(parsed, 8))
    assert len(failed) == 1
    assert failed[0]["message"].endswith("its GPU's SM clock was 1230 MHz against 1980 MHz on the other GPUs "
                                         "(throttled?)")


def test_gpu_looks_normal_points_at_the_host():
    gpu_lines = ["GPUCLUSTER_GPU node=gpu%03d gpu=%d t=1 sm_mhz=1980 sm_max_mhz=1980 temp_c=60 power_w=650"
                 % (n, g) for n in (1, 2) for g in range(4)]
    failed = bad(judge_workload(parse_workload_log(make_log(slow=0, gpu_lines=gpu_lines)), 8))
    assert "its GPU looks normal (SM 1980 MHz, 60 C): look at the host" in failed[0]["message"]


def test_hot_gpu_of_an_unflagged_rank_is_a_warning():
    gpu_lines = ["GPUCLUSTER_GPU node=gpu%03d gpu=%d t=1 sm_mhz=1980 sm_max_mhz=1980 temp_c=%d power_w=650"
                 % (n, g, 91 if (n, g) == (1, 3) else 60) for n in (1, 2) for g in range(4)]
    results = judge_workload(parse_workload_log(make_log(gpu_lines=gpu_lines)), 8)
    assert bad(results) == []
    warned = [r for r in results if r["metrics"].get("warning")]
    assert [r["component"] for r in warned] == ["rank 3 (gpu001 GPU3)"]
    assert "it ran at 91 C (the others 60 C)" in warned[0]["message"]


def test_max_step_time_is_optional():
    parsed = parse_workload_log(make_log())
    failed = bad(judge_workload(parsed, 8, {"max_step_ms": 50}))
    assert [(r["check"], r["node"]) for r in failed] == [("workload.step_time", None)]
    assert [r["status"] for r in judge_workload(parsed, 8, {"max_step_ms": 500})
            if r["check"] == "workload.step_time"] == ["pass"]


def test_launcher_prefixes_are_tolerated():
    for prefix in ("3: ", "[1,3]<stdout>: ", "2026-01-01 12:00:00 INFO train.py: "):
        parsed = parse_workload_log(make_log(prefix=prefix))
        assert parsed["errors"] == [] and len(parsed["ranks"]) == 8


def test_string_rank_keys_from_ansible_are_accepted():
    parsed = parse_workload_log(make_log(slow=1))
    parsed["ranks"] = dict((str(k), v) for k, v in parsed["ranks"].items())
    assert [r["component"] for r in bad(judge_workload(parsed, 8))] == ["rank 1 (gpu001 GPU1)"]


def test_expected_ranks_default_to_the_logged_world():
    assert bad(judge_workload(parse_workload_log(make_log()), 0)) == []
    no_header = parse_workload_log(make_log(header=False, done=False))
    assert no_header["errors"] == [] and no_header["warnings"]
    assert [r["check"] for r in bad(judge_workload(no_header, None))] == ["workload.ranks"]


# ---------------------------------------------------------------------------------------------
# Damaged logs: garbled, truncated, missing ranks, crashes, launcher failures
# ---------------------------------------------------------------------------------------------
def test_garbled_number_is_an_error_for_that_rank():
    text = make_log().replace("rank=4 local_rank=0 node=gpu002 gpu=0 step=7 compute_ms=", "rank=4 local_rank=0 "
                              "node=gpu002 gpu=0 step=7 compute_ms=x")
    parsed = parse_workload_log(text)
    assert len(parsed["errors"]) == 1 and "compute_ms=x" in parsed["errors"][0]
    assert parsed["errors"][0].startswith("line %d: " % (8 + 7 * 8 + 4 + 1))
    results = judge_workload(parsed, 8)
    assert worst_status(results) == "error"
    assert [(r["check"], r["node"]) for r in bad(results)] == [("workload.parse", "gpu002")]


def test_truncated_log_is_an_error_naming_the_unfinished_ranks():
    text = make_log()
    cut = text[:text.index("step=12 compute_ms") + 30]
    parsed = parse_workload_log(cut)
    assert parsed["errors"]
    assert any("rank 7 (gpu002 GPU3): no GPUCLUSTER_DONE line after step 11" in e for e in parsed["errors"])
    results = judge_workload(parsed, 8)
    assert worst_status(results) == "error"
    assert set(r["node"] for r in bad(results)) == set(["gpu001", "gpu002", None])


def test_cut_inside_the_last_line_is_an_error():
    text = make_log().rstrip("\n")
    for cut in (1, 3, 9):
        parsed = parse_workload_log(text[:-cut])
        assert parsed["errors"], cut
        assert worst_status(judge_workload(parsed, 8)) == "error"


@pytest.mark.parametrize("text", ["", "   \n\n", "Traceback (most recent call last):\n  File x\nOSError: boom\n"])
def test_empty_or_unrelated_output_is_an_error(text):
    parsed = parse_workload_log(text)
    assert parsed["errors"]
    results = judge_workload(parsed, 4)
    assert worst_status(results) == "error"
    assert all(r["status"] != "pass" for r in results)


def test_not_text_and_not_parsed():
    assert parse_workload_log(None)["errors"] == ["expected the log as text, got NoneType"]
    results = judge_workload("GPUCLUSTER_STEP", 4)
    assert [r["status"] for r in results] == ["error"]


def test_crashed_rank_is_named():
    text = make_log(steps=6, done=False)
    text += "GPUCLUSTER_ERROR rank=6 local_rank=2 node=gpu002 gpu=2 message=\"RuntimeError: NCCL error: unhandled " \
            "system error (run with NCCL_DEBUG=INFO for details)\"\n"
    parsed = parse_workload_log(text)
    assert "rank 6 (gpu002 GPU2) failed: RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO " \
           "for details)" in parsed["errors"]
    results = judge_workload(parsed, 8, {"rc": 1, "stderr": "srun: error: gpu002: task 6: Exited with exit code 1\n"})
    run = [r for r in results if r["check"] == "workload.run"][0]
    assert run["status"] == "error" and run["message"] == (
        "the workload exited with status 1: srun: error: gpu002: task 6: Exited with exit code 1")
    rank6 = [r for r in results if r["component"] == "rank 6 (gpu002 GPU2)"]
    assert rank6 and rank6[0]["status"] == "error" and "NCCL error" in rank6[0]["message"]


def test_a_launcher_that_lost_slurmctld_is_a_scheduler_error_and_no_rank_is_slow():
    stderr = ("srun: error: Unable to allocate resources: Unable to contact slurm controller (connect failure)\n")
    results = judge_workload(parse_workload_log(stderr), 8, {"rc": 1, "stderr": stderr,
                                                             "nodes": ["gpu001", "gpu002"], "ranks_per_node": 4})
    run = [r for r in results if r["check"] == "workload.run"][0]
    assert run["status"] == "error" and run["component"] == "scheduler"
    assert run["message"] == ("the workload could not run: slurmctld cannot be reached (scheduler): srun: error: "
                              "Unable to allocate resources: Unable to contact slurm controller (connect failure)")
    assert run["evidence"] == [stderr.strip()]
    assert not [r for r in results if r["status"] == "fail"]


def test_timeout_is_an_error():
    results = judge_workload(parse_workload_log(make_log(done=False, steps=4)), 8,
                             {"rc": 124, "timed_out": True, "timeout": 600})
    assert results[0]["message"] == "the workload did not finish within its 600 s timeout and was killed"
    assert worst_status(results) == "error"


def test_missing_rank_is_placed_on_its_node():
    text = "\n".join(l for l in make_log().splitlines() if " rank=6 " not in l)
    results = judge_workload(parse_workload_log(text), 8,
                             {"nodes": ["gpu001", "gpu002"], "ranks_per_node": 4})
    missing = [r for r in results if r["check"] == "workload.ranks"]
    assert [(r["status"], r["node"], r["component"]) for r in missing] == [("error", "gpu002", "rank 6 (gpu002)")]
    assert missing[0]["message"] == "rank 6 (gpu002) reported no step of the 8-rank run"


def test_rank_outside_the_world_and_two_runs_in_one_log():
    parsed = parse_workload_log(make_log() + make_log(seed=2))
    assert any("appears twice" in e for e in parsed["errors"])
    assert worst_status(judge_workload(parsed, 8)) == "error"
    assert any("world size is 4" in e for e in parse_workload_log(make_log(nodes=1).replace(
        "rank=3 local_rank=3 node=gpu001 gpu=3 step=5", "rank=9 local_rank=3 node=gpu001 gpu=3 step=5"))["errors"])


def test_lost_step_lines_are_an_error():
    lines = make_log().splitlines()
    del lines[30]
    parsed = parse_workload_log("\n".join(lines))
    assert any("GPUCLUSTER_DONE says 20 steps, the log has 19 step lines" in e for e in parsed["errors"])


def test_short_rank_without_done_lines():
    text = make_log(header=False, done=False)
    text = "\n".join(l for l in text.splitlines() if not (" rank=1 " in l and int(l.split("step=")[1].split()[0]) > 9))
    results = judge_workload(parse_workload_log(text), 8)
    short = bad(results)
    assert [(r["check"], r["node"]) for r in short] == [("workload.steps", "gpu001")]
    assert short[0]["message"] == ("rank 1 (gpu001 GPU1) reported 10 steps, other ranks 20: its log is cut off or it "
                                   "stopped early")


def test_expected_steps_and_too_few_steps():
    results = judge_workload(parse_workload_log(make_log(steps=6)), 8, {"expected_steps": 20})
    assert sum(1 for r in bad(results) if r["check"] == "workload.steps") == 8
    few = judge_workload(parse_workload_log(make_log(steps=6)), 8)
    assert all(r["status"] == "error" for r in few if r["check"] == "workload.steps")
    assert "has 3 step(s) after the 3 warm-up step(s); at least 5 are needed" in bad(few)[0]["message"]


def test_garbled_gpu_line_is_an_error():
    parsed = parse_workload_log(make_log() + "GPUCLUSTER_GPU node=gpu001 gpu=0 t=3 sm_mhz=19\n")
    assert parsed["errors"] == ["line 177: GPUCLUSTER_GPU of gpu001 GPU0 is incomplete (cut off?)"]
    na = parse_workload_log(make_log() + "GPUCLUSTER_GPU node=gpu001 gpu=0 t=3 sm_mhz=NA sm_max_mhz=NA temp_c=40 "
                            "power_w=NA\n")
    assert na["errors"] == [] and na["gpu_samples"][0]["sm_mhz"] is None


# ---------------------------------------------------------------------------------------------
# Your own training script: the regex option
# ---------------------------------------------------------------------------------------------
USER_REGEX = (r"\[rank(?P<rank>\d+)@(?P<node>[\w-]+):cuda(?P<gpu>\d+)\] it (?P<step>\d+) "
              r"fwd\+bwd (?P<compute_ms>[\d.]+)ms allreduce (?P<sync_ms>[\d.]+)ms")


def user_log(slow=None):
    lines = ["Epoch 0 starting", "loading dataset shards..."]
    for step in range(15):
        for r in range(4):
            compute = 50.0 + (r * 0.3) + (100.0 if r == slow else 0)
            sync = (153.0 if slow is not None else 53.0) - compute + 2
            lines.append("[rank%d@node-%d:cuda%d] it %d fwd+bwd %.1fms allreduce %.1fms loss 2.31"
                         % (r, r // 2, r % 2, step, compute, sync))
    return "\n".join(lines)


def test_custom_regex_reads_a_user_log():
    parsed = parse_workload_log(user_log(), regex=USER_REGEX)
    assert parsed["format"] == "regex" and parsed["errors"] == []
    assert parsed["ranks"][3]["node"] == "node-1" and parsed["ranks"][3]["gpu"] == "1"
    assert bad(judge_workload(parsed, 4)) == []
    failed = bad(judge_workload(parse_workload_log(user_log(slow=2), regex=USER_REGEX), 4))
    assert [(r["node"], r["component"]) for r in failed] == [("node-1", "rank 2 (node-1 GPU0)")]


def test_custom_regex_minimal_groups_count_steps():
    parsed = parse_workload_log("r0 10 5\nr1 10 5\nr0 11 4\nr1 11 4\n" * 1,
                                regex=r"^r(?P<rank>\d+) (?P<compute_ms>\S+) (?P<sync_ms>\S+)$")
    assert parsed["ranks"][0]["step_numbers"] == [0, 1] and parsed["ranks"][1]["compute_ms"] == [10.0, 11.0]


@pytest.mark.parametrize("regex, expected", [
    (r"(?P<rank>\d+", "does not compile"),
    (r"rank (?P<rank>\d+) (?P<compute_ms>\S+)", "lacks the named group(s) sync_ms"),
])
def test_bad_regex_is_an_error(regex, expected):
    parsed = parse_workload_log(user_log(), regex=regex)
    assert expected in parsed["errors"][0]
    assert worst_status(judge_workload(parsed, 4)) == "error"


def test_regex_matching_nothing_is_an_error():
    parsed = parse_workload_log(user_log(), regex=r"rank=(?P<rank>\d+) c=(?P<compute_ms>\S+) s=(?P<sync_ms>\S+)")
    assert parsed["errors"] == ["no line matches the step regex %r" % r"rank=(?P<rank>\d+) c=(?P<compute_ms>\S+) "
                                r"s=(?P<sync_ms>\S+)"]


def test_percentile_interpolates():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 99) == 5
    assert percentile(list(range(101)), 95) == 95


# ---------------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------------
def test_filters_wrap_the_functions():
    parse = ParseFilters().filters()["from_workload_log"]
    judge = JudgeFilters().filters()["judge_workload"]
    parsed = parse(make_log(slow=2).encode())
    assert [r["node"] for r in bad(judge(parsed, 8, {"warmup_steps": 2}))] == ["gpu001"]
    with pytest.raises(AnsibleFilterError, match="pass the task result's .stdout"):
        parse({"stdout": "x"})
    with pytest.raises(AnsibleFilterError, match="from_workload_log first"):
        judge("GPUCLUSTER_STEP rank=0", 8)
    with pytest.raises(AnsibleFilterError, match="options must be a dict"):
        judge(parsed, 8, "warmup_steps=2")
    with pytest.raises(AnsibleFilterError, match="expected_ranks must be an integer"):
        judge(parsed, "eight")


# ---------------------------------------------------------------------------------------------
# Properties: damaged input never raises and never passes
# ---------------------------------------------------------------------------------------------
CLEAN = make_log(nodes=1, gpus=4, steps=8)
TOKENS = st.sampled_from(["GPUCLUSTER_STEP", "GPUCLUSTER_DONE", "GPUCLUSTER_WORKLOAD", "GPUCLUSTER_GPU",
                          "GPUCLUSTER_ERROR", "rank=1", "rank=-1", "step=3", "compute_ms=80", "sync_ms=nan",
                          "sync_ms=1e9", "step_ms=", "node=gpu001", "gpu=0", "world=4", "status=ok", "steps=8",
                          "message=\"x", "=", "3:", "compute_ms=inf", " ", "\t"])
GARBAGE_LINES = st.lists(st.one_of(st.text(max_size=60), st.lists(TOKENS, max_size=12).map(" ".join)), max_size=30)


@given(GARBAGE_LINES, st.integers(0, 8))
def test_garbage_never_passes(lines, expected):
    text = "\n".join(lines)
    parsed = parse_workload_log(text)
    results = judge_workload(parsed, expected)
    assert results and worst_status(results) in ("fail", "error")


@given(st.text(max_size=400))
def test_arbitrary_text_never_passes(text):
    results = judge_workload(parse_workload_log(text), 4)
    assert worst_status(results) in ("fail", "error")


@given(st.integers(0, len(CLEAN.rstrip("\n")) - 1))
def test_any_truncation_of_a_clean_log_is_an_error(cut):
    parsed = parse_workload_log(CLEAN[:cut])
    assert parsed["errors"]
    assert worst_status(judge_workload(parsed, 4)) == "error"


@given(st.integers(0, CLEAN.count("\n") - 1), st.sampled_from(["drop", "dup", "garble"]), st.text(max_size=8))
def test_damaged_lines_of_a_clean_log_never_pass_silently(index, how, noise):
    lines = CLEAN.splitlines()
    if how == "drop":
        del lines[index]
    elif how == "dup":
        lines.insert(index, lines[index])
    else:
        cut = len(lines[index]) // 2
        lines[index] = lines[index][:cut] + noise
    parsed = parse_workload_log("\n".join(lines))
    results = judge_workload(parsed, 4)
    if parsed["errors"]:
        assert worst_status(results) == "error"
    else:  # the damage left a complete, consistent log (e.g. a cut that only shortened a decimal)
        assert worst_status(results) in ("pass", "fail")


def test_hung_run_names_the_rank_that_stopped_first():
    def keep(line):
        if "GPUCLUSTER_STEP" not in line:
            return True
        step = int(line.split("step=")[1].split()[0])
        return step <= (6 if " rank=5 " in line else 7)

    lines = [l for l in make_log(steps=10, done=False).splitlines() if keep(l)]
    results = judge_workload(parse_workload_log("\n".join(lines)), 8, {"rc": 124, "timed_out": True, "timeout": 60})
    first = [r for r in results if "stopped first" in r["message"]]
    assert [(r["component"], r["status"]) for r in first] == [("rank 5 (gpu002 GPU1)", "error")]
    assert first[0]["message"].endswith("after step 6: the rank crashed, was killed or the log is cut off (it stopped "
                                        "first: other ranks reached step 7, waiting for it)")


def test_bad_judge_options_are_an_error_not_an_exception():
    results = judge_workload(parse_workload_log(make_log()), 8, {"straggler_ratio": "high", "warmup_steps": -1})
    errors = [r for r in results if r["check"] == "workload.options"]
    assert errors[0]["status"] == "error"
    assert errors[0]["message"] == ("judge options: option straggler_ratio: 'high' is not a number; "
                                    "option warmup_steps: -1 must be a number >= 0")
    assert [r["check"] for r in judge_workload(parse_workload_log(make_log()), 8, ["x"]) if r["status"] == "error"] \
        == ["workload.options"]
    assert bad(judge_workload(parse_workload_log(make_log()), 8, {"straggler_ratio": "1.25", "warmup_steps": "3"})) == []


# ---------------------------------------------------------------------------------------------
# The reference workload's launcher-facing helpers (no torch needed)
# ---------------------------------------------------------------------------------------------
def _workload_module():
    import importlib.util
    from conftest import REPO
    path = REPO / "roles" / "check_workload" / "files" / "gpucluster_ddp_train.py"
    spec = importlib.util.spec_from_file_location("gpucluster_ddp_train_under_test", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WORKLOAD = _workload_module()
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
               "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID",
               "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_CLUSTER_NAME",
               "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK")


@pytest.fixture
def launch_env(monkeypatch):
    for name in LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("nodelist, first", [
    ("gpu[003-004,007],cpu1", "gpu003"), ("node7", "node7"), ("a-b[01,05]", "a-b01"), ("", None)])
def test_first_host_of_a_slurm_hostlist(nodelist, first):
    assert WORKLOAD.first_host(nodelist) == first


def test_rank_and_rendezvous_from_slurm(launch_env):
    for name, value in (("SLURM_PROCID", "5"), ("SLURM_STEP_NUM_TASKS", "8"), ("SLURM_NTASKS", "99"),
                        ("SLURM_LOCALID", "1"), ("SLURM_STEP_TASKS_PER_NODE", "4(x2)"), ("SLURM_JOB_ID", "41"),
                        ("SLURM_STEP_ID", "2"), ("SLURM_STEP_NODELIST", "gpu[002-003]"),
                        ("SLURM_CLUSTER_NAME", "demo")):
        launch_env.setenv(name, value)
    args = WORKLOAD.parse_args([])
    rank, world, local, local_world, addr, port, source = WORKLOAD.distributed_env(args)
    assert (rank, world, local, local_world, addr, source) == (5, 8, 1, 4, "gpu002", "slurm")
    assert 10000 <= port < 17000
    assert WORKLOAD.distributed_env(WORKLOAD.parse_args([]))[5] == port  # every rank derives the same
    launch_env.setenv("SLURM_STEP_ID", "3")
    assert WORKLOAD.distributed_env(args)[5] != port  # the next step of the job: another port
    launch_env.setenv("MASTER_ADDR", "10.0.0.1")
    launch_env.setenv("MASTER_PORT", "29999")
    assert WORKLOAD.distributed_env(args)[4:6] == ("10.0.0.1", 29999)
    assert WORKLOAD.distributed_env(WORKLOAD.parse_args(["--master-port", "1234"]))[5] == 1234


def test_rank_from_torchrun_open_mpi_or_nothing(launch_env):
    assert WORKLOAD.distributed_env(WORKLOAD.parse_args([])) == (0, 1, 0, 1, "127.0.0.1", 29500, "single")
    launch_env.setenv("OMPI_COMM_WORLD_RANK", "3")
    launch_env.setenv("OMPI_COMM_WORLD_SIZE", "16")
    launch_env.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3")
    assert WORKLOAD.distributed_env(WORKLOAD.parse_args(["--master-addr", "gpu001"]))[:5] == (3, 16, 3, 1, "gpu001")
    for name, value in (("RANK", "7"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "7"), ("LOCAL_WORLD_SIZE", "8")):
        launch_env.setenv(name, value)
    assert WORKLOAD.distributed_env(WORKLOAD.parse_args([]))[:4] + (WORKLOAD.distributed_env(
        WORKLOAD.parse_args([]))[6],) == (7, 8, 7, 8, "torchrun")


def test_slow_rank_from_the_environment(launch_env):
    launch_env.setenv("GPUCLUSTER_WORKLOAD_SLOW_RANK", "3")
    launch_env.setenv("GPUCLUSTER_WORKLOAD_SLOW_MS", "150")
    args = WORKLOAD.parse_args([])
    assert (args.slow_rank, args.slow_ms) == (3, 150.0)
    assert WORKLOAD.parse_args(["--slow-rank", "1"]).slow_rank == 1


def test_emitted_lines_parse_back(capsys):
    WORKLOAD.emit("GPUCLUSTER_STEP", rank=1, local_rank=1, node="gpu 1", gpu=1, step=0, compute_ms=1.5, sync_ms=2,
                  step_ms=4)
    WORKLOAD.emit("GPUCLUSTER_ERROR", rank=1, local_rank=1, node="gpu_1", gpu=1,
                  message='RuntimeError: "x"\nsecond line')
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "GPUCLUSTER_STEP rank=1 local_rank=1 node=gpu_1 gpu=1 step=0 compute_ms=1.5 sync_ms=2 step_ms=4",
        "GPUCLUSTER_ERROR rank=1 local_rank=1 node=gpu_1 gpu=1 message=\"RuntimeError: 'x' | second line\""]
    parsed = parse_workload_log(out)
    assert parsed["ranks"][1]["compute_ms"] == [1.5]
    assert parsed["errors"] == ["rank 1 (gpu_1 GPU1) failed: RuntimeError: 'x' | second line"]


def test_cpu_clock_slowdown_is_busy_work():
    import time
    started = time.process_time()
    WORKLOAD.slow_down(0.05, "cpu")
    assert time.process_time() - started >= 0.05


def test_a_garbled_world_size_is_an_error_not_an_endless_loop():
    parsed = parse_workload_log(REAL_SLOW_RANK2)
    results = judge_workload(parsed, expected_ranks=10 ** 12)
    (ranks,) = [r for r in results if r["check"] == "workload.ranks"]
    assert ranks["status"] == "error" and "is not a plausible rank count" in ranks["message"]


def test_many_missing_ranks_are_counted_and_the_first_listed():
    results = judge_workload(parse_workload_log(REAL_SLOW_RANK2), expected_ranks=200)
    missing = [r for r in results if r["check"] == "workload.ranks"]
    assert missing[0]["message"] == "196 of the 200 ranks reported no step (the first 64 are listed one by one)"
    assert len(missing) == 1 + 64 and all(r["status"] == "error" for r in missing)
