# -*- coding: utf-8 -*-
"""Workload rank consistency: parameter checksums across ranks, NaN/Inf losses, loss spikes.

The logs are the reference workload's own output (tests/fixtures/workload/SOURCES.md): four CPU
ranks on two simulated nodes (two GPU slots each) or two ranks on two nodes, gloo, 12 steps,
parameter checksums every 4 steps (after steps 3, 7 and 11), one rank perturbed on purpose with
--perturb-rank/--perturb-step. Damaged variants are made from them in the tests.
"""
from __future__ import absolute_import, division, print_function

import importlib.util
import json
import re

import pytest
from hypothesis import given, strategies as st

from conftest import FIXTURES, REPO

from ansible_collections.gpucluster.acceptance.plugins.filter.from_workload_log import FilterModule as ParseFilters
from ansible_collections.gpucluster.acceptance.plugins.filter.judge_workload import FilterModule as JudgeFilters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import worst_status
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload import (
    judge_workload, parse_workload_log)

LOGS = FIXTURES / "workload"
CLEAN = (LOGS / "clean_2x2.txt").read_text()                  # 4 ranks, all consistent
PERTURBED = (LOGS / "perturbed_rank3_2x2.txt").read_text()    # rank 3 (gpu002 GPU1) perturbed after step 5
NAN = (LOGS / "nan_rank1_2x2.txt").read_text()                # rank 1 (gpu001 GPU1) made NaN after step 5
TWO_RANKS = (LOGS / "perturbed_rank1_2x1.txt").read_text()    # 2 ranks, rank 1 perturbed after step 2
CHECKS = ("workload.param_consistency", "workload.loss")


def bad(results):
    return [r for r in results if r["status"] in ("fail", "error")]


def of(results, check):
    return [r for r in results if r["check"] == check]


def judged(text, expected=4, options=None):
    results = judge_workload(parse_workload_log(text), expected, options)
    json.dumps(results, allow_nan=False)  # no NaN or Infinity reaches a result
    return results


def edit_line(text, pattern, change):
    """The log with change(line) for the one line matching pattern (a regex)."""
    lines = text.splitlines()
    found = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert len(found) == 1, (pattern, found)
    replaced = change(lines[found[0]])
    if replaced is None:
        del lines[found[0]]
    else:
        lines[found[0]] = replaced
    return "\n".join(lines) + "\n", found[0] + 1


# ---------------------------------------------------------------------------------------------
# The real logs
# ---------------------------------------------------------------------------------------------
def test_the_checksum_lines_are_read():
    parsed = parse_workload_log(CLEAN)
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert parsed["param_check_every"] == 4
    for rank, record in parsed["ranks"].items():
        assert record["log_format"] == 2
        assert [c["step"] for c in record["param_checks"]] == [3, 7, 11]
        assert all(c["device"] == "cpu" and c["tensors"] == 28 and re.match(r"^[0-9a-f]{16}$", c["checksum"])
                   for c in record["param_checks"])
        assert record["param_checks"][0]["line"].startswith("GPUCLUSTER_PARAMS rank=%d " % rank)
        assert len(record["loss"]) == 12 and all(isinstance(v, float) for v in record["loss"])
        assert record["nonfinite_loss"] == []
    sums = set(c["checksum"] for record in parsed["ranks"].values() for c in record["param_checks"])
    assert len(sums) == 3  # one value per check step, the same on every rank; training changed it


def test_consistent_ranks_pass():
    results = judged(CLEAN)
    assert bad(results) == []
    passes = of(results, "workload.param_consistency")
    assert [(r["status"], r["node"], r["component"]) for r in passes] == [
        ("pass", "gpu001", "gpu001"), ("pass", "gpu002", "gpu002")]
    assert passes[0]["message"] == ("gpu001: its 2 ranks held bitwise the same parameters as every other rank "
                                    "(4 ranks) at each of the 3 checks (steps 3, 7, 11)")
    assert passes[0]["metrics"]["steps"] == [3, 7, 11] and passes[0]["metrics"]["all_ranks_agree"] is True
    loss = of(results, "workload.loss")
    assert len(loss) == 1 and loss[0]["status"] == "pass" and loss[0]["node"] is None
    assert loss[0]["message"].startswith("all 4 ranks logged a finite loss at every step (12 steps each); "
                                         "median loss 5.")
    assert loss[0]["metrics"]["loss_last"] < loss[0]["metrics"]["loss_first"]  # it trained
    assert not [r for r in results if r["metrics"].get("warning")]


def test_perturbed_rank_is_named_with_node_gpu_and_step():
    results = judged(PERTURBED)
    failed = bad(results)
    assert [(r["check"], r["status"], r["node"], r["component"]) for r in failed] == [
        ("workload.param_consistency", "fail", "gpu002", "rank 3 (gpu002 GPU1)")]
    check = failed[0]
    # perturbed after step 5: the check after step 3 matched, the ones after steps 7 and 11 did not
    assert check["message"].startswith("rank 3 (gpu002 GPU1, local rank 1, device cpu) holds parameters different "
                                       "from the other ranks' from step 7 on: checksum ")
    assert "3 of 4 ranks hold " in check["message"]
    assert "it diverged in 2 of its 3 checks (steps 7, 11); it matched at step 3, so it diverged between steps 3 " \
           "and 7" in check["message"]
    metrics = check["metrics"]
    assert (metrics["rank"], metrics["local_rank"], metrics["device"], metrics["first_step"], metrics["steps"],
            metrics["last_matched_step"], metrics["majority_ranks"]) == (3, 1, "cpu", 7, [7, 11], 3, 3)
    assert metrics["checksum"] != metrics["majority_checksum"]
    assert check["evidence"][0].startswith("GPUCLUSTER_PARAMS rank=3 local_rank=1 node=gpu002 gpu=1 device=cpu "
                                           "step=7 ")
    assert check["evidence"][0].endswith("checksum=" + metrics["checksum"])
    assert check["evidence"][1].endswith("checksum=" + metrics["majority_checksum"])
    # the healthy node passes; the perturbed rank's node has only its failure
    passes = of(results, "workload.param_consistency")[1:]
    assert [(r["node"], r["status"]) for r in passes] == [("gpu001", "pass")]
    assert "as the majority of the 4 ranks" in passes[0]["message"]
    # a 0.1 % change of one value leaves the loss finite and without a spike
    assert [r["status"] for r in of(results, "workload.loss")] == ["pass"]


def test_nan_loss_is_named_on_the_rank_where_it_appeared():
    results = judged(NAN)
    failed = bad(results)
    assert [(r["check"], r["status"], r["node"], r["component"]) for r in failed] == [
        ("workload.loss", "fail", "gpu001", "rank 1 (gpu001 GPU1)")]
    check = failed[0]
    assert check["message"] == (
        "rank 1 (gpu001 GPU1, local rank 1) loss was nan at step 6, the first non-finite loss of the run "
        "(non-finite in 6 of its 12 steps, steps 6, 7, 8, 9, 10, 11); every other rank followed from step 7 on "
        "(through the gradient all-reduce): its GPU (or host) computed a NaN/Inf the other ranks did not")
    assert (check["metrics"]["step"], check["metrics"]["loss"], check["metrics"]["followers"]) == (6, "nan", 3)
    assert check["evidence"] == [l for l in NAN.splitlines() if l.startswith("GPUCLUSTER_STEP rank=1 ")
                                 and " step=6 " in l]
    assert check["evidence"][0].endswith(" loss=nan")
    parsed = parse_workload_log(NAN)
    assert parsed["errors"] == []
    assert [e["step"] for e in parsed["ranks"][1]["nonfinite_loss"]] == list(range(6, 12))
    assert parsed["ranks"][1]["loss"][6:] == [None] * 6


def test_every_rank_non_finite_at_once_is_an_error_not_one_rank():
    text = "\n".join(re.sub(r"loss=\S+$", "loss=inf", l) if l.startswith("GPUCLUSTER_STEP") and
                     int(l.split(" step=")[1].split()[0]) >= 8 else l for l in CLEAN.splitlines())
    loss = of(judged(text), "workload.loss")
    assert [(r["status"], r["node"]) for r in loss] == [("error", None)]
    assert loss[0]["message"].startswith("every rank's loss (4 ranks) became inf at step 8 at once: it cannot be "
                                         "pinned to one rank")


def test_two_ranks_that_disagree_cannot_be_told_apart():
    results = judged(TWO_RANKS, 2)
    failed = bad(results)
    assert [(r["check"], r["status"], r["node"]) for r in failed] == [("workload.param_consistency", "error", None)]
    message = failed[0]["message"]
    assert message.startswith("at step 3 rank 0 (gpu001 GPU0, local rank 0, device cpu) and rank 1 (gpu002 GPU0, "
                              "local rank 0, device cpu) hold different parameters (checksums ")
    assert "with two ranks, which of them diverged cannot be told (3 checks without a majority: steps 3, 7, 11)" \
        in message
    assert len(failed[0]["evidence"]) == 2
    assert not [r for r in results if r["status"] == "fail"]


def test_no_majority_among_four_ranks_is_an_error():
    # ranks 2 and 3 both changed, differently: 2 of 4 hold the old value, no value has a majority
    text = CLEAN
    for rank, checksum in ((2, "00000000000000aa"), (3, "00000000000000bb")):
        text = edit_line(text, r"^GPUCLUSTER_PARAMS rank=%d .* step=11 " % rank,
                         lambda l, c=checksum: l.rsplit("checksum=", 1)[0] + "checksum=" + c)[0]
    check = [r for r in bad(judged(text)) if r["check"] == "workload.param_consistency"]
    assert [(r["status"], r["node"]) for r in check] == [("error", None)]
    assert check[0]["message"].startswith("at step 11 no checksum is held by a majority of the 4 ranks (")
    assert check[0]["message"].endswith("which ranks diverged cannot be told")


# ---------------------------------------------------------------------------------------------
# What the log must show
# ---------------------------------------------------------------------------------------------
def test_no_checksum_lines_while_the_check_is_on_does_not_pass():
    stripped = "\n".join(l for l in CLEAN.splitlines() if not l.startswith("GPUCLUSTER_PARAMS"))
    for options in (None, {"param_check_every": 4}):
        results = judged(stripped, 4, options)
        check = of(results, "workload.param_consistency")
        assert [(r["status"], r["node"]) for r in check] == [("error", None)]
        assert check[0]["message"].startswith("parameter checks every 4 steps were asked for, but the log shows no "
                                              "GPUCLUSTER_PARAMS line: whether the ranks held identical parameters "
                                              "cannot be told")
        assert worst_status(results) == "error"


def test_the_check_asked_for_but_run_off_is_an_error():
    off = CLEAN.replace(" param_check_every=4 ", " param_check_every=0 ")
    off = "\n".join(l for l in off.splitlines() if not l.startswith("GPUCLUSTER_PARAMS"))
    check = of(judged(off, 4, {"param_check_every": 10}), "workload.param_consistency")
    assert check[0]["status"] == "error"
    assert "say param_check_every=0: it ran with them off" in check[0]["message"]
    # asked for by nobody: not judged, and said so
    check = of(judged(off, 4), "workload.param_consistency")
    assert [r["status"] for r in check] == ["skip"]
    assert "ran without parameter checks" in check[0]["message"]


def test_an_older_log_is_judged_only_when_the_check_was_asked_for():
    old = "\n".join(re.sub(r" (param_check_every=\d+ )?format=2$", " format=1", re.sub(r" loss=\S+$", "", l))
                    for l in CLEAN.splitlines() if not l.startswith("GPUCLUSTER_PARAMS"))
    parsed = parse_workload_log(old)
    assert parsed["errors"] == [] and parsed["param_check_every"] is None
    results = judged(old)
    assert [(r["check"], r["status"]) for r in results if r["check"] in CHECKS] == [
        ("workload.param_consistency", "skip"), ("workload.loss", "skip")]
    assert "no per-step loss" in of(results, "workload.loss")[0]["message"]
    assert of(judged(old, 4, {"param_check_every": 10}), "workload.param_consistency")[0]["status"] == "error"


def test_a_rank_missing_a_checksum_is_an_error_on_its_node():
    text = edit_line(PERTURBED, r"^GPUCLUSTER_PARAMS rank=0 .* step=7 ", lambda l: None)[0]
    parsed = parse_workload_log(text)
    assert parsed["errors"] == []
    failed = bad(judged(text))
    assert [(r["check"], r["status"], r["node"]) for r in failed] == [
        ("workload.param_consistency", "fail", "gpu002"), ("workload.param_consistency", "error", "gpu001")]
    assert failed[1]["message"] == ("rank 0 (gpu001 GPU0) logged no parameter checksum at step 7, where the other "
                                    "ranks did: its parameters there were not compared (lines lost?)")
    assert "2 of 3 ranks hold" in failed[0]["message"]  # step 7's majority among the ranks that logged it


# ---------------------------------------------------------------------------------------------
# Damaged lines: errors beside the findings
# ---------------------------------------------------------------------------------------------
def test_a_garbled_checksum_line_is_an_error_beside_the_findings():
    text, lineno = edit_line(PERTURBED, r"^GPUCLUSTER_PARAMS rank=1 .* step=7 ", lambda l: l[:-5])
    parsed = parse_workload_log(text)
    assert len(parsed["errors"]) == 1
    assert parsed["errors"][0].startswith("line %d: GPUCLUSTER_PARAMS of rank 1 step 7: checksum " % lineno)
    assert parsed["errors"][0].endswith("is not 16 hex digits (line garbled or cut off)")
    assert parsed["ranks"][1]["param_errors"] == parsed["errors"] and parsed["ranks"][1]["errors"] == []
    results = judged(text)
    failed = bad(results)
    assert sorted((r["check"], r["status"], r["node"]) for r in failed) == [
        ("workload.param_consistency", "fail", "gpu002"), ("workload.parse", "error", "gpu001")]
    perturbed = [r for r in failed if r["check"] == "workload.param_consistency"][0]
    assert perturbed["component"] == "rank 3 (gpu002 GPU1)" and perturbed["metrics"]["first_step"] == 7
    parse = [r for r in failed if r["check"] == "workload.parse"][0]
    assert parse["component"] == "rank 1 (gpu001 GPU1)" and parse["message"] == parsed["errors"][0]
    # rank 1's step times are still judged (the checksum line is not one of them)
    rows = [row["rank"] for r in of(results, "workload.node") for row in r["metrics"]["ranks"]]
    assert sorted(rows) == [0, 1, 2, 3]


def test_a_checksum_line_cut_before_its_rank_is_a_cluster_error_beside_the_findings():
    text, lineno = edit_line(PERTURBED, r"^GPUCLUSTER_PARAMS rank=0 .* step=11 ", lambda l: "GPUCLUSTER_PARAMS ran")
    parsed = parse_workload_log(text)
    assert parsed["errors"] == ["line %d: GPUCLUSTER_PARAMS: 'ran' is not key=value (line garbled or cut off)"
                                % lineno]
    failed = bad(judged(text))
    # the unreadable line is the log's; rank 0 has no checksum at step 11 (its line is the lost one)
    assert sorted((r["check"], r["status"], r["node"]) for r in failed) == [
        ("workload.param_consistency", "error", "gpu001"), ("workload.param_consistency", "fail", "gpu002"),
        ("workload.parse", "error", None)]
    named = [r for r in failed if r["status"] == "fail"]
    assert named[0]["component"] == "rank 3 (gpu002 GPU1)" and named[0]["metrics"]["steps"] == [7, 11]


def test_a_duplicated_checksum_line_is_an_error():
    lines = CLEAN.splitlines()
    index = [i for i, l in enumerate(lines) if l.startswith("GPUCLUSTER_PARAMS rank=2 ")][0]
    lines.insert(index + 1, lines[index])
    parsed = parse_workload_log("\n".join(lines))
    assert len(parsed["errors"]) == 1 and "appears twice" in parsed["errors"][0]
    assert worst_status(judge_workload(parsed, 4)) == "error"


def test_a_garbled_or_missing_loss_is_an_error():
    garbled, lineno = edit_line(CLEAN, r"^GPUCLUSTER_STEP rank=2 .* step=4 ",
                                lambda l: re.sub(r"loss=\S+$", "loss=4.9x", l))
    parsed = parse_workload_log(garbled)
    assert parsed["errors"] == ["line %d: GPUCLUSTER_STEP of rank 2: loss=4.9x is not a number" % lineno]
    assert [(r["check"], r["node"]) for r in bad(judged(garbled))] == [("workload.parse", "gpu002")]
    cut, lineno = edit_line(CLEAN, r"^GPUCLUSTER_STEP rank=2 .* step=4 ", lambda l: l.split(" loss=")[0])
    assert parse_workload_log(cut)["errors"] == ["line %d: GPUCLUSTER_STEP of rank 2 step 4 has no loss (line cut "
                                                 "off)" % lineno]


# ---------------------------------------------------------------------------------------------
# Loss spikes: a warning
# ---------------------------------------------------------------------------------------------
def spiked(text, rank, step, factor):
    def bump(line):
        loss = float(line.rsplit("loss=", 1)[1])
        return line.rsplit("loss=", 1)[0] + "loss=%.6g" % (loss * factor)
    return edit_line(text, r"^GPUCLUSTER_STEP rank=%d .* step=%d " % (rank, step), bump)[0]


def test_a_loss_spike_is_a_warning_naming_rank_node_gpu_and_step():
    results = judged(spiked(CLEAN, 2, 9, 3.0))
    assert bad(results) == []
    warned = [r for r in of(results, "workload.loss") if r["metrics"].get("warning")]
    assert [(r["status"], r["node"], r["component"]) for r in warned] == [("pass", "gpu002", "rank 2 (gpu002 GPU0)")]
    assert re.match(r"^warning: rank 2 \(gpu002 GPU0, local rank 0\) loss 1[0-9.]+ at step 9 is 2\.\dx the median "
                    r"5\.[0-9]+ of its previous 9 steps \(a loss spike; 1 step\(s\) above 2x: steps 9\)$",
                    warned[0]["message"]), warned[0]["message"]
    assert warned[0]["metrics"]["step"] == 9 and warned[0]["metrics"]["spike_ratio"] > 2
    # the overall pass is still there: every loss was finite
    assert [r for r in of(results, "workload.loss") if not r["metrics"].get("warning")][0]["status"] == "pass"
    # below the ratio, or with the check off: no warning
    assert not [r for r in judged(spiked(CLEAN, 2, 9, 1.5)) if r["metrics"].get("warning")]
    assert not [r for r in judged(spiked(CLEAN, 2, 9, 3.0), 4, {"loss_spike_ratio": 0}) if r["metrics"].get("warning")]


def test_spike_needs_a_history():
    # the first steps have too few earlier losses to tell a spike from the start of training
    assert not [r for r in judged(spiked(CLEAN, 0, 1, 3.0)) if r["metrics"].get("warning")]


def test_bad_spike_options_are_an_error():
    results = judged(CLEAN, 4, {"loss_spike_ratio": "big", "param_check_every": -1})
    assert [r["message"] for r in results if r["check"] == "workload.options"] == [
        "judge options: option loss_spike_ratio: 'big' is not a number; option param_check_every: -1 must be a "
        "number >= 0"]


# ---------------------------------------------------------------------------------------------
# Your own script: a loss group in the regex; the filters
# ---------------------------------------------------------------------------------------------
def test_regex_loss_group_finds_a_nan():
    regex = r"\[rank(?P<rank>\d+)@(?P<node>[\w-]+)\] it (?P<step>\d+) c (?P<compute_ms>[\d.]+) s (?P<sync_ms>[\d.]+) " \
            r"loss (?P<loss>\S+)"
    lines = ["[rank%d@node-%d] it %d c 50.0 s 3.0 loss %s" % (r, r, step, "nan" if (r, step) == (2, 9) else "2.5")
             for step in range(12) for r in range(4)]
    results = judge_workload(parse_workload_log("\n".join(lines), regex=regex), 4)
    failed = bad(results)
    assert [(r["check"], r["node"], r["component"]) for r in failed] == [("workload.loss", "node-2", "rank 2 (node-2)")]
    assert failed[0]["message"].startswith("rank 2 (node-2) loss was nan at step 9, the first non-finite loss")
    assert [r["status"] for r in of(results, "workload.param_consistency")] == ["skip"]


def test_filters_carry_the_new_checks():
    parse = ParseFilters().filters()["from_workload_log"]
    judge = JudgeFilters().filters()["judge_workload"]
    failed = bad(judge(parse(PERTURBED), 4))
    assert [(r["check"], r["node"]) for r in failed] == [("workload.param_consistency", "gpu002")]


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------
PARAM_LINES = [i for i, l in enumerate(CLEAN.splitlines()) if l.startswith("GPUCLUSTER_PARAMS")]


@given(st.sampled_from(PARAM_LINES), st.text("0123456789abcdef", min_size=16, max_size=16))
def test_any_one_changed_checksum_names_that_rank_at_that_step(index, checksum):
    lines = CLEAN.splitlines()
    original = lines[index].rsplit("checksum=", 1)[1]
    lines[index] = lines[index].rsplit("checksum=", 1)[0] + "checksum=" + checksum
    rank = int(lines[index].split(" rank=")[1].split()[0])
    step = int(lines[index].split(" step=")[1].split()[0])
    failed = bad(judge_workload(parse_workload_log("\n".join(lines)), 4))
    if checksum == original:
        assert failed == []
    else:
        assert [(r["check"], r["metrics"]["rank"], r["metrics"]["first_step"], r["node"]) for r in failed] == [
            ("workload.param_consistency", rank, step, "gpu%03d" % (rank // 2 + 1))]


@given(st.randoms(use_true_random=False))
def test_the_order_of_the_lines_between_ranks_does_not_change_the_verdict(rng):
    # srun interleaves the ranks' lines arbitrarily; each rank's own lines stay in order
    by_rank = {}
    for line in PERTURBED.splitlines():
        by_rank.setdefault(int(line.split(" rank=")[1].split()[0]), []).append(line)
    queues, merged = [list(v) for v in by_rank.values()], []
    while queues:
        queue = rng.choice(queues)
        merged.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    results = judge_workload(parse_workload_log("\n".join(merged)), 4)
    assert [(r["check"], r["node"], r["metrics"]["first_step"]) for r in bad(results)] == [
        ("workload.param_consistency", "gpu002", 7)]


# ---------------------------------------------------------------------------------------------
# The checksum itself (the workload's function, with torch)
# ---------------------------------------------------------------------------------------------
def _workload_module():
    path = REPO / "roles" / "check_workload" / "files" / "gpucluster_ddp_train.py"
    spec = importlib.util.spec_from_file_location("gpucluster_ddp_train_integrity", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TORCH_WITHOUT_NUMPY = pytest.mark.filterwarnings("ignore:Failed to initialize NumPy")


@TORCH_WITHOUT_NUMPY
def test_checksum_is_bitwise_exact_and_order_independent():
    import torch
    workload = _workload_module()
    torch.manual_seed(0)
    params = [torch.randn(64, 33), torch.randn(1000), torch.randn(7).to(torch.bfloat16)]
    reference = workload.param_checksum(torch, params)
    assert re.match(r"^[0-9a-f]{16}$", reference)
    # the same bits in other tensors (a copy, a non-contiguous view's contents) give the same checksum
    assert workload.param_checksum(torch, [p.clone() for p in params]) == reference
    assert workload.param_checksum(torch, [params[0].t().contiguous().t(), params[1], params[2]]) == reference
    # elements summed in any order: the same; a change of the last bit of one value, -0.0 for 0.0: not
    shuffled = [params[0], params[1][torch.randperm(1000)], params[2]]
    assert workload.param_checksum(torch, shuffled) == reference
    changed = [p.clone() for p in params]
    changed[1][500] = torch.nextafter(changed[1][500], torch.tensor(float("inf")))
    assert workload.param_checksum(torch, changed) != reference
    zero, negative_zero = [p.clone() for p in params], [p.clone() for p in params]
    zero[0][0, 0], negative_zero[0][0, 0] = 0.0, -0.0
    assert workload.param_checksum(torch, zero) != workload.param_checksum(torch, negative_zero)
    # the tensors' order counts (each weighted by its position)
    assert workload.param_checksum(torch, [params[1], params[0], params[2]]) != reference


@TORCH_WITHOUT_NUMPY
def test_perturb_changes_one_value_by_a_little_or_to_nan():
    import torch
    workload = _workload_module()
    params = [torch.ones(3), torch.full((4,), 0.5)]
    before = workload.param_checksum(torch, params)
    workload.perturb(torch, params, "offset")
    assert abs(params[-1][0].item() - 0.5005) < 1e-6
    assert params[-1][1:].tolist() == [0.5] * 3 and workload.param_checksum(torch, params) != before
    workload.perturb(torch, params, "nan")
    assert params[-1][0].item() != params[-1][0].item()
    args = workload.parse_args(["--perturb-rank", "2", "--perturb-step", "5", "--param-check-every", "0"])
    assert (args.perturb_rank, args.perturb_step, args.param_check_every, args.perturb_kind) == (2, 5, 0, "offset")
    assert workload.parse_args([]).param_check_every == 10
