# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and judge the per-rank step timings of a data-parallel training run.

The reference workload (roles/check_workload/files/gpucluster_ddp_train.py) prints, per rank and
step (docs/workload.md):

    GPUCLUSTER_WORKLOAD rank=0 local_rank=0 world=8 node=gpu001 gpu=0 device=cuda backend=nccl ...
    GPUCLUSTER_STEP rank=3 local_rank=3 node=gpu002 gpu=3 step=17 compute_ms=83.2 sync_ms=12.9 step_ms=96.1 loss=4.91
    GPUCLUSTER_PARAMS rank=3 local_rank=3 node=gpu002 gpu=3 device=cuda:3 step=19 tensors=28 checksum=ffffd1ecd0afb314
    GPUCLUSTER_GPU node=gpu001 gpu=0 t=1.0 sm_mhz=1980 sm_max_mhz=1980 temp_c=45 power_w=310.2
    GPUCLUSTER_ERROR rank=3 local_rank=3 node=gpu002 gpu=3 message="RuntimeError: ..."
    GPUCLUSTER_DONE rank=3 local_rank=3 node=gpu002 gpu=3 steps=20 loss=3.1 elapsed_s=4.2 status=ok

parse_workload_log() turns such a log (or any training log, through a regular expression with
named groups) into per-rank series; judge_workload() compares the ranks with each other: the
rank that computes longest while waiting least in the all-reduce holds the others back, and a rank
whose parameters differ from the others' after the all-reduce, or whose loss is NaN, is named.

Standard library only; Python 2.7/3.8 compatible (module_utils may run on managed nodes).

This module judges the run as a whole (launcher, ranks, steps); the parts live next to it:
_workload_log (parse_workload_log), _workload_ranks (the ranks' step times compared with each
other, percentile, the shape of every workload result) and _workload_integrity (parameters
identical on every rank, non-finite losses and loss spikes).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, is_number, join_names)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload_integrity import _integrity_checks
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload_log import (
    REGEX_OPTIONAL, REGEX_REQUIRED, _label, parse_workload_log)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload_ranks import _rank_checks, _result, percentile

# The interface other modules import from here.
__all__ = ["DEFAULT_OPTIONS", "REGEX_OPTIONAL", "REGEX_REQUIRED", "judge_workload", "parse_workload_log",
           "percentile"]


DEFAULT_OPTIONS = {
    "warmup_steps": 3,          # first steps of each rank left out (step number < warmup_steps)
    "min_steps": 5,             # measured steps a rank needs to be judged
    "expected_steps": 0,        # > 0: every rank must report exactly this many steps
    "straggler_ratio": 1.25,    # compute p50 at least this times the other ranks' median ...
    "straggler_k": 3.5,         # ... and a robust z-score at least this against them ...
    "straggler_min_ms": 2.0,    # ... and at least this many ms above it
    "tail_ratio": 2.0,          # compute p95 at least this times the others' median p95: intermittent
    "tail_min_steps": 20,       # measured steps every rank needs before p95s are compared
    "spread_warn": 1.25,        # unflagged ranks' compute p50 max/min above this: a warning
    "max_step_ms": 0,           # > 0: the median step p50 above this fails the run
    "sm_clock_drop": 0.10,      # a GPU this fraction below the others' SM clock is named as slow
    "temp_c_high": 85,          # a GPU at or above this temperature is named as hot
    "param_check_every": 0,     # > 0: parameter checksums were asked for every N steps (their absence is an error)
    "loss_spike_ratio": 2.0,    # a loss above this times the median of the rank's previous losses: a warning (0: off)
    "loss_spike_window": 10,    # ... of this many previous steps
    "nodes": [],                # the nodes in rank order (Slurm block distribution) ...
    "ranks_per_node": 0,        # ... and ranks per node: where a missing rank should have run
    "rc": None,                 # the launcher's exit status
    "timed_out": False,         # the launcher was killed at its timeout
    "timeout": None,            # that timeout, in seconds, for the message
    "stderr": "",               # the launcher's standard error (its last lines go into messages)
}


_NUMERIC = ("warmup_steps", "min_steps", "expected_steps", "straggler_ratio", "straggler_k", "straggler_min_ms",
            "tail_ratio", "tail_min_steps", "spread_warn", "max_step_ms", "sm_clock_drop", "temp_c_high",
            "ranks_per_node", "param_check_every", "loss_spike_ratio", "loss_spike_window")


# The most ranks a run may have (a world size above is garbled) and the missing ranks named one by one.
MAX_RANKS = 1 << 20
MAX_MISSING_LISTED = 64


def _options(options):
    """(options merged over the defaults, problems); a non-numeric threshold keeps its default."""
    merged, problems = dict(DEFAULT_OPTIONS), []
    if options is not None and not isinstance(options, dict):
        return merged, ["options must be a dict, got %s" % type(options).__name__]
    for key, value in (options or {}).items():
        if value is None and key != "rc":
            continue
        if key in _NUMERIC:
            try:
                number = float(value)
            except (TypeError, ValueError):
                problems.append("option %s: %r is not a number" % (key, value))
                continue
            if math.isnan(number) or number < 0:
                problems.append("option %s: %r must be a number >= 0" % (key, value))
                continue
            value = number
        merged[key] = value
    return merged, problems


def _ranks_of(parsed):
    """{int rank: record}; keys may have become strings on their way through Ansible."""
    ranks = {}
    for key, record in ((parsed or {}).get("ranks") or {}).items():
        try:
            rank = int(key)
        except (TypeError, ValueError):
            continue
        if isinstance(record, dict):
            ranks[rank] = record
    return ranks


def _measured(record, warmup):
    """(compute, sync, step) series with the warm-up steps left out."""
    numbers = record.get("step_numbers") or list(range(len(record.get("compute_ms") or [])))
    keep = [i for i, n in enumerate(numbers) if n >= warmup]
    series = []
    for key in ("compute_ms", "sync_ms", "step_ms"):
        values = record.get(key) or []
        series.append([values[i] for i in keep if i < len(values) and is_number(values[i])])
    return series


def _expected_node(rank, opts):
    nodes, per_node = opts.get("nodes") or [], opts.get("ranks_per_node") or 0
    try:
        per_node = int(per_node)
    except (TypeError, ValueError):
        per_node = 0
    if nodes and per_node > 0 and rank // per_node < len(nodes):
        return str(nodes[rank // per_node])
    return None


def _launcher_checks(opts):
    stderr = str(opts.get("stderr") or "")
    stderr_lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    tail = (": " + " | ".join(stderr_lines[-3:])) if stderr_lines else ""
    if opts.get("timed_out"):
        limit = opts.get("timeout")
        return [_result("workload.run", ERROR, "the workload did not finish %sand was killed%s"
                        % ("within its %s s timeout " % limit if limit else "in time ", tail),
                        {"timeout": limit, "rc": opts.get("rc")})]
    rc = opts.get("rc")
    if rc not in (None, "", 0, "0"):
        found = classify_failure(stderr, rc)
        if found:  # the launcher, scheduler or transport failed: no rank is slow, nothing was measured
            result = _result("workload.run", ERROR, "the workload could not run: %s (%s): %s"
                             % (found["cause"], found["component"], found["message"]), {"rc": rc})
            result["component"] = found["component"]
            result["evidence"] = [found["message"]]
            return [result]
        return [_result("workload.run", ERROR, "the workload exited with status %s%s" % (rc, tail), {"rc": rc})]
    return []


def judge_workload(parsed, expected_ranks=None, options=None):
    """Check results for a parsed workload log (see parse_workload_log).

    expected_ranks: how many ranks the run was launched with (0/None: the world size the log
    reports). options: see DEFAULT_OPTIONS. Every result carries node (the rank's node, or None
    for a cluster-wide result) and a component 'rank N (node GPU g)' or 'cluster'.
    """
    opts, problems = _options(options)
    results = _launcher_checks(opts)
    if problems:
        results.append(_result("workload.options", ERROR, "judge options: %s" % "; ".join(problems)))
    if not isinstance(parsed, dict):
        results.append(_result("workload.parse", ERROR, "workload log: expected a parsed result (dict), got %s"
                               % type(parsed).__name__))
        return results
    ranks = _ranks_of(parsed)
    attributed = set()
    last = dict((r, max(v.get("step_numbers") or [-1])) for r, v in ranks.items())
    reached = max(last.values()) if last else -1
    for rank in sorted(ranks):
        record = ranks[rank]
        for problem in record.get("errors") or []:
            attributed.add(problem)
        for problem in record.get("param_errors") or []:
            attributed.add(problem)
        problems = list(record.get("errors") or []) + list(record.get("param_errors") or [])
        if problems:
            message = "; ".join(problems)
            if record.get("errors") and record.get("done") is None and last[rank] == min(last.values()) < reached:
                message += " (it stopped first: other ranks reached step %d, waiting for it)" % reached
            results.append(_result("workload.parse", ERROR, message, rank=rank,
                                   node=record.get("node") or _expected_node(rank, opts), gpu=record.get("gpu")))
    loose = [str(e) for e in (parsed.get("errors") or []) if e not in attributed]
    if loose:
        results.append(_result("workload.parse", ERROR, "workload log unreadable: %s" % "; ".join(loose[:10])
                               + (" (and %d more)" % (len(loose) - 10) if len(loose) > 10 else ""),
                               {"errors": loose}))
    try:
        expected = int(expected_ranks or 0) or int(parsed.get("world") or 0)
    except (TypeError, ValueError):
        expected = 0
    results.extend(_rank_count_checks(ranks, expected, opts))
    usable, step_results = _step_checks(ranks, opts)
    results.extend(step_results)
    results.extend(_rank_checks(usable, parsed.get("gpu_samples"), opts))
    if not any(r["status"] in (FAIL, ERROR) for r in results) and not usable:
        results.append(_result("workload.parse", ERROR, "no rank has enough steps to judge"))
    results.extend(_integrity_checks(ranks, parsed, opts))
    return results


def _rank_count_checks(ranks, expected, opts):
    reported = sorted(r for r in ranks if ranks[r].get("steps"))
    if expected <= 0:
        return [_result("workload.ranks", ERROR, "the number of ranks launched is unknown (no world size "
                        "in the log and none expected); %d rank(s) reported" % len(reported),
                        {"reported": len(reported)})]
    if expected > MAX_RANKS:  # a garbled world size: a loop over 10**12 ranks would never end
        return [_result("workload.ranks", ERROR, "the world size %d is not a plausible rank count (at most %d): "
                        "the log or the launch is garbled; %d rank(s) reported" % (expected, MAX_RANKS, len(reported)),
                        {"expected": expected, "reported": len(reported)})]
    results = []
    done = set(reported)
    missing = [r for r in range(expected) if r not in done]
    if len(missing) > MAX_MISSING_LISTED:
        results.append(_result("workload.ranks", ERROR, "%d of the %d ranks reported no step (the first %d are "
                               "listed one by one)" % (len(missing), expected, MAX_MISSING_LISTED),
                               {"expected": expected, "reported": len(reported), "missing": len(missing)}))
    for rank in missing[:MAX_MISSING_LISTED]:
        node = (ranks.get(rank) or {}).get("node") or _expected_node(rank, opts)
        if ranks.get(rank, {}).get("errors"):
            continue  # its error is reported already
        results.append(_result("workload.ranks", ERROR, "%s reported no step of the %d-rank run"
                               % (_label(rank, node, (ranks.get(rank) or {}).get("gpu")), expected),
                               {"expected": expected, "reported": len(reported)}, rank=rank, node=node,
                               gpu=(ranks.get(rank) or {}).get("gpu")))
    extra = [r for r in reported if r >= expected]
    if extra:
        names = join_names(["rank %d" % r for r in extra])
        results.append(_result("workload.ranks", ERROR, "%s reported, but the run has %d ranks (0..%d): another "
                               "run's lines in this log?" % (names, expected, expected - 1),
                               {"expected": expected, "extra": extra}))
    if not missing and not extra:
        results.append(_result("workload.ranks", PASS, "all %d ranks reported" % expected,
                               {"expected": expected, "reported": len(reported)}))
    return results


def _step_checks(ranks, opts):
    """({rank: (record, compute, sync, step)} of the ranks with enough steps, results)."""
    warmup, min_steps = int(opts["warmup_steps"] or 0), max(1, int(opts["min_steps"] or 1))
    expected_steps = int(opts["expected_steps"] or 0)
    results, usable = [], {}
    counts = dict((r, ranks[r].get("steps") or len(ranks[r].get("compute_ms") or [])) for r in ranks)
    counts = dict((r, c) for r, c in counts.items() if c)
    most = max(counts.values()) if counts else 0
    short = []
    for rank in sorted(counts):
        record = ranks[rank]
        compute, sync, step = _measured(record, warmup)
        node, gpu = record.get("node"), record.get("gpu")
        label = _label(rank, node, gpu)
        if record.get("errors"):
            continue  # reported as a parse error; its numbers are not trusted
        if expected_steps and counts[rank] < expected_steps:
            short.append(rank)
            results.append(_result("workload.steps", ERROR, "%s reported %d of the %d steps the run was "
                                   "launched with" % (label, counts[rank], expected_steps),
                                   {"steps": counts[rank], "expected": expected_steps}, rank, node, gpu))
        elif counts[rank] < most and not record.get("done"):
            short.append(rank)
            results.append(_result("workload.steps", ERROR, "%s reported %d steps, other ranks %d: its log "
                                   "is cut off or it stopped early" % (label, counts[rank], most),
                                   {"steps": counts[rank], "most": most}, rank, node, gpu))
        elif len(compute) < min_steps:
            short.append(rank)
            results.append(_result("workload.steps", ERROR, "%s has %d step(s) after the %d warm-up step(s); "
                                   "at least %d are needed to judge it" % (label, len(compute), warmup, min_steps),
                                   {"measured": len(compute), "warmup": warmup, "min_steps": min_steps},
                                   rank, node, gpu))
        else:
            usable[rank] = (record, compute, sync, step)
    if usable and not short:
        measured = min(len(v[1]) for v in usable.values())
        results.append(_result("workload.steps", PASS, "every rank ran %d step(s); %d measured after %d warm-up "
                               "step(s)" % (most, measured, warmup), {"steps": most, "warmup": warmup,
                                                                      "measured": measured}))
    return usable, results
