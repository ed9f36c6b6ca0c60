# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and judge the per-rank step timings of a data-parallel training run.

The reference workload (roles/check_workload/files/gpucluster_ddp_train.py) prints, per rank and
step (docs/workload.md):

    GPUCLUSTER_WORKLOAD rank=0 local_rank=0 world=8 node=gpu001 gpu=0 device=cuda backend=nccl ...
    GPUCLUSTER_STEP rank=3 local_rank=3 node=gpu002 gpu=3 step=17 compute_ms=83.2 sync_ms=12.9 step_ms=96.1
    GPUCLUSTER_GPU node=gpu001 gpu=0 t=1.0 sm_mhz=1980 sm_max_mhz=1980 temp_c=45 power_w=310.2
    GPUCLUSTER_ERROR rank=3 local_rank=3 node=gpu002 gpu=3 message="RuntimeError: ..."
    GPUCLUSTER_DONE rank=3 local_rank=3 node=gpu002 gpu=3 steps=20 loss=3.1 elapsed_s=4.2 status=ok

parse_workload_log() turns such a log (or any training log, through a regular expression with
named groups) into per-rank series; judge_workload() compares the ranks with each other: the
rank that computes longest while waiting least in the all-reduce holds the others back.

Standard library only; Python 2.7/3.8 compatible (module_utils may run on managed nodes).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import bisect
import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    lines_of, new_result, strip_launcher_prefix)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, join_names, mad, median, robust_z,
    warning_result)

_MARKER = re.compile(r"\bGPUCLUSTER_(WORKLOAD|STEP|GPU|DONE|ERROR)\b(.*)$")
_MESSAGE = re.compile(r'\bmessage="(.*?)"?\s*$')
_INT = re.compile(r"^\d+$")
REGEX_REQUIRED = ("rank", "compute_ms", "sync_ms")
REGEX_OPTIONAL = ("node", "gpu", "step", "step_ms", "local_rank")
_PERCENTILES = (50, 95, 99)

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
    "nodes": [],                # the nodes in rank order (Slurm block distribution) ...
    "ranks_per_node": 0,        # ... and ranks per node: where a missing rank should have run
    "rc": None,                 # the launcher's exit status
    "timed_out": False,         # the launcher was killed at its timeout
    "timeout": None,            # that timeout, in seconds, for the message
    "stderr": "",               # the launcher's standard error (its last lines go into messages)
}


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------
def _number(text):
    """Finite non-negative float from text, else None."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or math.isinf(value) or value < 0:
        return None
    return value


def _int(text):
    text = (text or "").strip()
    return int(text) if _INT.match(text) else None


def _fields(rest, lineno, kind):
    """key=value tokens after the marker; (fields, problem)."""
    fields = {}
    message = None
    if kind == "ERROR":
        match = _MESSAGE.search(rest)
        if match:
            message = match.group(1)
            rest = rest[:match.start()]
    for token in rest.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            return None, "line %d: GPUCLUSTER_%s: %r is not key=value (line garbled or cut off)" % (
                lineno, kind, token[:40])
        fields[key] = value
    if message is not None:
        fields["message"] = message
    return fields, None


def _label(rank, node=None, gpu=None):
    """'rank 5 (gpu003 GPU1)', 'rank 5 (gpu003)', 'rank 5'."""
    where = [str(node)] if node not in (None, "") else []
    if gpu not in (None, ""):
        where.append("GPU%s" % gpu)
    return "rank %s (%s)" % (rank, " ".join(where)) if where else "rank %s" % rank


def _new_rank(rank):
    return {"rank": rank, "node": None, "gpu": None, "local_rank": None, "steps": 0, "step_numbers": [],
            "compute_ms": [], "sync_ms": [], "step_ms": [], "header": False, "done": None,
            "done_steps": None, "errors": []}


def _compile(regex, result):
    try:
        compiled = re.compile(regex)
    except (re.error, TypeError) as exc:
        result["errors"].append("regex %r does not compile: %s" % (regex, exc))
        return None
    missing = [g for g in REGEX_REQUIRED if g not in compiled.groupindex]
    if missing:
        result["errors"].append("regex %r lacks the named group(s) %s; it needs (?P<rank>...), "
                                "(?P<compute_ms>...) and (?P<sync_ms>...)" % (regex, ", ".join(missing)))
        return None
    return compiled


def _note_identity(record, fields, lineno, result):
    """Keep node / gpu / local_rank of a rank; a rank seen on two nodes is an error."""
    for key in ("node", "gpu", "local_rank"):
        value = fields.get(key)
        if value in (None, ""):
            continue
        if key == "local_rank":
            value = _int(value)
            if value is None:
                continue
        if record[key] is None:
            record[key] = value
        elif str(record[key]) != str(value) and key != "local_rank":
            problem = "line %d: rank %s reports %s %s, earlier %s (two runs in one log?)" % (
                lineno, record["rank"], key, value, record[key])
            record["errors"].append(problem)
            result["errors"].append(problem)


def _add_step(ranks, fields, lineno, result, seen, source):
    """One step record from fields (strings); returns nothing, records problems."""
    rank = _int(fields.get("rank"))
    if rank is None:
        result["errors"].append("line %d: %s: rank %r is not a non-negative integer"
                                % (lineno, source, fields.get("rank")))
        return
    record = ranks.setdefault(rank, _new_rank(rank))
    values = {}
    for key in ("compute_ms", "sync_ms"):
        if fields.get(key) in (None, ""):
            problem = "line %d: %s of rank %d has no %s (line garbled or cut off)" % (lineno, source, rank, key)
            record["errors"].append(problem)
            result["errors"].append(problem)
            return
        values[key] = _number(fields[key])
        if values[key] is None:
            problem = "line %d: %s of rank %d: %s=%s is not a non-negative number" % (
                lineno, source, rank, key, fields[key])
            record["errors"].append(problem)
            result["errors"].append(problem)
            return
    step_ms = fields.get("step_ms")
    if step_ms not in (None, ""):
        values["step_ms"] = _number(step_ms)
        if values["step_ms"] is None:
            problem = "line %d: %s of rank %d: step_ms=%s is not a non-negative number" % (
                lineno, source, rank, step_ms)
            record["errors"].append(problem)
            result["errors"].append(problem)
            return
    if fields.get("step") not in (None, ""):
        step = _int(fields["step"])
        if step is None:
            problem = "line %d: %s of rank %d: step=%s is not a non-negative integer" % (
                lineno, source, rank, fields["step"])
            record["errors"].append(problem)
            result["errors"].append(problem)
            return
    else:
        step = record["step_numbers"][-1] + 1 if record["step_numbers"] else 0
    if (rank, step) in seen:
        problem = "line %d: rank %d step %d appears twice (line %d too): two runs in one log?" % (
            lineno, rank, step, seen[(rank, step)])
        record["errors"].append(problem)
        result["errors"].append(problem)
        return
    seen[(rank, step)] = lineno
    _note_identity(record, fields, lineno, result)
    record["steps"] += 1
    record["step_numbers"].append(step)
    record["compute_ms"].append(values["compute_ms"])
    record["sync_ms"].append(values["sync_ms"])
    if "step_ms" in values:
        record["step_ms"].append(values["step_ms"])


def _gpu_sample(fields, lineno, result):
    node, gpu = fields.get("node"), fields.get("gpu")
    if not node or gpu in (None, ""):
        result["errors"].append("line %d: GPUCLUSTER_GPU without node or gpu (line garbled or cut off)" % lineno)
        return
    sample = {"node": node, "gpu": gpu, "t": _number(fields.get("t"))}
    present = 0
    for key in ("sm_mhz", "sm_max_mhz", "temp_c", "power_w"):
        raw = fields.get(key)
        if raw is None:
            continue
        present += 1
        sample[key] = _number(raw)  # NA (not supported) -> None
        if sample[key] is None and raw.upper() not in ("NA", "N/A", "[N/A]"):
            result["errors"].append("line %d: GPUCLUSTER_GPU %s=%s is not a number" % (lineno, key, raw))
            return
    if not present or "power_w" not in fields:
        result["errors"].append("line %d: GPUCLUSTER_GPU of %s GPU%s is incomplete (cut off?)" % (lineno, node, gpu))
        return
    result["gpu_samples"].append(sample)


def parse_workload_log(text, regex=None):
    """Per-rank step timings (ms) and GPU samples from a training log.

    regex: optional pattern with named groups rank, compute_ms, sync_ms (and optionally node,
    gpu, step, step_ms, local_rank) matched against every line to read step records from a
    training script of your own; GPUCLUSTER_* lines other than GPUCLUSTER_STEP are still read.

    Returns {ranks: {rank (int): {node, gpu, local_rank, steps, step_numbers, compute_ms,
    sync_ms, step_ms, done, done_steps, errors}}, gpu_samples: [{node, gpu, t, sm_mhz,
    sm_max_mhz, temp_c, power_w}], world, backend, device, model, compute_clock, format, errors,
    warnings}.
    Never raises; anything missing, garbled or cut off is a sentence in errors.
    """
    result = new_result(ranks={}, gpu_samples=[], world=None, backend=None, device=None, model=None,
                        compute_clock=None, format="regex" if regex else "reference")
    if not isinstance(text, str):
        result["errors"].append("expected the log as text, got %s" % type(text).__name__)
        return result
    compiled = _compile(regex, result) if regex else None
    if regex and compiled is None:
        return result
    if not text.strip():
        result["errors"].append("empty output: the workload printed nothing")
        return result
    ranks, seen, worlds, markers = result["ranks"], {}, {}, {"WORKLOAD": 0, "DONE": 0, "STEP": 0}
    for lineno, raw_line in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw_line)
        match = _MARKER.search(line)
        if compiled is not None and (match is None or match.group(1) == "STEP"):
            found = compiled.search(line)
            if found:
                fields = dict((k, v) for k, v in found.groupdict().items() if v is not None)
                markers["STEP"] += 1
                _add_step(ranks, fields, lineno, result, seen, "step line")
            continue
        if match is None:
            continue
        kind, rest = match.group(1), match.group(2)
        if rest and not rest[0].isspace():
            continue  # GPUCLUSTER_STEPS..., not ours
        fields, problem = _fields(rest, lineno, kind)
        if problem:
            result["errors"].append(problem)
            continue
        if kind == "STEP":
            markers["STEP"] += 1
            _add_step(ranks, fields, lineno, result, seen, "GPUCLUSTER_STEP")
            continue
        if kind == "GPU":
            _gpu_sample(fields, lineno, result)
            continue
        rank = _int(fields.get("rank"))
        if rank is None:
            result["errors"].append("line %d: GPUCLUSTER_%s without a valid rank (line garbled or cut off)"
                                    % (lineno, kind))
            continue
        record = ranks.setdefault(rank, _new_rank(rank))
        _note_identity(record, fields, lineno, result)
        if kind == "WORKLOAD":
            markers["WORKLOAD"] += 1
            record["header"] = True
            world = _int(fields.get("world"))
            if world is None or world < 1:
                result["errors"].append("line %d: GPUCLUSTER_WORKLOAD of rank %d without a valid world size"
                                        % (lineno, rank))
            else:
                worlds[world] = worlds.get(world, 0) + 1
            for key in ("backend", "device", "model", "compute_clock"):
                if fields.get(key) and result[key] is None:
                    result[key] = fields[key]
        elif kind == "ERROR":
            problem = "%s failed: %s" % (_label(rank, record["node"], record["gpu"]),
                                         fields.get("message") or "(no message)")
            record["errors"].append(problem)
            result["errors"].append(problem)
            record["done"] = False
        elif kind == "DONE":
            markers["DONE"] += 1
            steps = _int(fields.get("steps"))
            if fields.get("status") != "ok" or steps is None:
                problem = "line %d: GPUCLUSTER_DONE of rank %d is incomplete (cut off?)" % (lineno, rank)
                record["errors"].append(problem)
                result["errors"].append(problem)
                continue
            record["done"] = True
            record["done_steps"] = steps
    if len(worlds) > 1:
        result["errors"].append("ranks disagree on the world size (%s): two runs in one log?"
                                % ", ".join(str(w) for w in sorted(worlds)))
    elif worlds:
        result["world"] = list(worlds)[0]
        for rank in sorted(ranks):
            if rank >= result["world"]:
                result["errors"].append("rank %d reported, but the world size is %d" % (rank, result["world"]))
    if not markers["STEP"]:
        if compiled is not None:
            result["errors"].append("no line matches the step regex %r" % regex)
        else:
            result["errors"].append("no GPUCLUSTER_STEP lines: the workload did not train (see its errors)")
    _check_completion(result, markers)
    return result


def _check_completion(result, markers):
    """Every rank of a reference-format log ends with GPUCLUSTER_DONE reporting its step count."""
    if not markers["WORKLOAD"] and not markers["DONE"]:
        if markers["STEP"]:
            result["warnings"].append("no GPUCLUSTER_WORKLOAD or GPUCLUSTER_DONE lines: whether each rank "
                                      "finished cannot be told; ranks with fewer steps are reported")
        return
    for rank in sorted(result["ranks"]):
        record = result["ranks"][rank]
        label = _label(rank, record["node"], record["gpu"])
        if record["done"] is None and not record["errors"]:
            last = record["step_numbers"][-1] if record["step_numbers"] else None
            problem = "%s: no GPUCLUSTER_DONE line %s: the rank crashed, was killed or the log is cut off" % (
                label, "after step %d" % last if last is not None else "and no step")
            record["errors"].append(problem)
            result["errors"].append(problem)
        elif record["done"] and record["done_steps"] != record["steps"] and not record["errors"]:
            problem = "%s: GPUCLUSTER_DONE says %d steps, the log has %d step lines (lines lost)" % (
                label, record["done_steps"], record["steps"])
            record["errors"].append(problem)
            result["errors"].append(problem)


# ---------------------------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------------------------
def percentile(values, pct):
    """Linear-interpolated percentile (as numpy's default) of a non-empty list."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of an empty sequence")
    pos = (len(ordered) - 1) * pct / 100.0
    low = int(math.floor(pos))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


_NUMERIC = ("warmup_steps", "min_steps", "expected_steps", "straggler_ratio", "straggler_k", "straggler_min_ms",
            "tail_ratio", "tail_min_steps", "spread_warn", "max_step_ms", "sm_clock_drop", "temp_c_high",
            "ranks_per_node")


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


def _stats(values, prefix):
    if not values:
        return {}
    out = dict(("%s_p%d_ms" % (prefix, p), round(percentile(values, p), 3)) for p in _PERCENTILES)
    out["%s_mean_ms" % prefix] = round(sum(values) / len(values), 3)
    return out


def _result(check, status, message, metrics=None, rank=None, node=None, gpu=None, warning=False):
    component = _label(rank, node, gpu) if rank is not None else "cluster"
    if warning:
        out = warning_result(check, message, metrics, component)
    else:
        out = check_result(check, status, message, metrics, component)
    out["node"] = node if node not in ("",) else None
    return out


def _expected_node(rank, opts):
    nodes, per_node = opts.get("nodes") or [], opts.get("ranks_per_node") or 0
    try:
        per_node = int(per_node)
    except (TypeError, ValueError):
        per_node = 0
    if nodes and per_node > 0 and rank // per_node < len(nodes):
        return str(nodes[rank // per_node])
    return None


def _gpu_medians(samples):
    """{(node, gpu): {sm_mhz, sm_max_mhz, temp_c, power_w}} medians over the run."""
    grouped = {}
    for sample in samples or []:
        if not isinstance(sample, dict):
            continue
        key = (str(sample.get("node")), str(sample.get("gpu")))
        entry = grouped.setdefault(key, {})
        for field in ("sm_mhz", "sm_max_mhz", "temp_c", "power_w"):
            if is_number(sample.get(field)):
                entry.setdefault(field, []).append(sample[field])
    return dict((key, dict((f, median(v)) for f, v in fields.items())) for key, fields in grouped.items())


class _GpuPeers(object):
    """The other GPUs' median SM clock and temperature, for each GPU, computed once for all.

    The GPUs compared are those that ran ranks (all sampled GPUs when none of those was sampled).
    """

    def __init__(self, gpus, used=None):
        chosen = dict((k, v) for k, v in gpus.items() if not used or k in used) or dict(gpus)
        if len(chosen) < 2 and len(gpus) > len(chosen):
            chosen = dict(gpus)
        self.chosen = chosen
        self.sm = _Peers(dict((k, v["sm_mhz"]) for k, v in chosen.items() if "sm_mhz" in v))
        self.temp = _Peers(dict((k, v["temp_c"]) for k, v in chosen.items() if "temp_c" in v))

    @staticmethod
    def _without(peers, key):
        if key in peers.values:
            return peers.of(key)[0] if len(peers.values) > 1 else None
        return median(peers.ordered) if peers.ordered else None

    def sm_of_others(self, key):
        return self._without(self.sm, key)

    def temp_of_others(self, key):
        return self._without(self.temp, key)


def _gpu_note(record, gpus, opts, peers, flagged=False):
    """(sentence about this rank's GPU, metrics, is_bad) or (None, {}, False) without samples.

    The GPU is compared with the other GPUs (peers: _GpuPeers); a flagged rank's GPU is also
    compared with its own maximum SM clock.
    """
    key = (str(record.get("node")), str(record.get("gpu")))
    own = gpus.get(key)
    if not own:
        return None, {}, False
    metrics = dict(("gpu_%s" % k, v) for k, v in own.items())
    drop = float(opts["sm_clock_drop"])
    notes, bad = [], False
    other_sm = peers.sm_of_others(key)
    if "sm_mhz" in own and other_sm and other_sm > 0 and own["sm_mhz"] <= other_sm * (1 - drop):
        notes.append("its GPU's SM clock was %s MHz against %s MHz on the other GPUs (throttled?)"
                     % (fmt_num(own["sm_mhz"]), fmt_num(other_sm)))
        bad = True
    elif flagged and "sm_mhz" in own and own.get("sm_max_mhz") and own["sm_mhz"] <= own["sm_max_mhz"] * (1 - drop):
        notes.append("its GPU's SM clock was %s MHz of %s MHz max (throttled?)"
                     % (fmt_num(own["sm_mhz"]), fmt_num(own["sm_max_mhz"])))
        bad = True
    if "temp_c" in own and own["temp_c"] >= float(opts["temp_c_high"]):
        other_t = peers.temp_of_others(key)
        notes.append("it ran at %s C%s" % (fmt_num(own["temp_c"]), " (the others %s C)" % fmt_num(other_t)
                                           if other_t is not None else ""))
        bad = True
    if notes:
        return "; ".join(notes), metrics, bad
    return ("its GPU looks normal (SM %s MHz, %s C): look at the host (CPU, memory, PCIe, data loading)"
            % (fmt_num(own.get("sm_mhz", "?")), fmt_num(own.get("temp_c", "?"))), metrics, False)


def _launcher_checks(opts):
    stderr = str(opts.get("stderr") or "")
    stderr_lines = [l.strip() for l in stderr.splitlines() if l.strip()]
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
        if record.get("errors"):
            message = "; ".join(record["errors"])
            if record.get("done") is None and last[rank] == min(last.values()) < reached:
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
    return results


def _rank_count_checks(ranks, expected, opts):
    reported = sorted(r for r in ranks if ranks[r].get("steps"))
    if expected <= 0:
        return [_result("workload.ranks", ERROR, "the number of ranks launched is unknown (no world size "
                        "in the log and none expected); %d rank(s) reported" % len(reported),
                        {"reported": len(reported)})]
    results = []
    missing = [r for r in range(expected) if r not in reported]
    for rank in missing:
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


class _Peers(object):
    """Median and MAD of the other ranks' values, for each rank, without an O(n^2) loop.

    Up to EXACT_PEERS ranks each rank's peers are the others exactly (leave one out); above, the
    median leaves the rank out by index arithmetic on one sorted list and the MAD is the whole
    group's (one rank moves the MAD of thousands by nothing measurable).
    """
    EXACT_PEERS = 64

    def __init__(self, values):
        self.values = values
        self.ordered = sorted(values.values())
        self.exact = len(values) <= self.EXACT_PEERS
        if not self.exact:
            self.spread = mad(self.ordered)

    def _median_without(self, value):
        ordered, n = self.ordered, len(self.ordered) - 1
        at = bisect.bisect_left(ordered, value)

        def nth(i):  # the i-th of the list with the element at index `at` removed
            return ordered[i] if i < at else ordered[i + 1]
        return nth(n // 2) if n % 2 else (nth(n // 2 - 1) + nth(n // 2)) / 2.0

    def of(self, rank):
        """(median, MAD) of the values of every rank but this one."""
        if self.exact:
            others = [v for r, v in self.values.items() if r != rank]
            center = median(others)
            return center, mad(others, center)
        return self._median_without(self.values[rank]), self.spread


# What the per-rank step-time chart draws (a rank flagged, or warned, has its own result with all
# of its numbers): at 8 ranks a node these rows are a large part of a big cluster's results.
_ROW_FIELDS = ("steps", "compute_p50_ms", "compute_p95_ms", "compute_p99_ms", "sync_p50_ms", "sync_p95_ms",
               "step_p50_ms")


def _node_summaries(rows, flagged):
    """One workload.node check per node: its ranks' step-time rows (what the report draws) and the
    numbers the cluster-wide comparisons use; a flagged rank also has its own workload.rank check."""
    by_node = {}
    for row in rows:
        by_node.setdefault(row["node"], []).append(row)
    results = []
    for node in sorted(by_node, key=lambda n: (n is None, str(n))):
        ranks = by_node[node]
        compute = [r["compute_p50_ms"] for r in ranks if is_number(r.get("compute_p50_ms"))]
        sync = [r["sync_p50_ms"] for r in ranks if is_number(r.get("sync_p50_ms"))]
        step = [r["step_p50_ms"] for r in ranks if is_number(r.get("step_p50_ms"))]
        metrics = {"rank_count": len(ranks), "ranks": ranks}
        if compute:
            metrics["compute_p50_ms"] = max(compute)   # its slowest rank
        if sync:
            metrics["sync_p50_ms"] = min(sync)         # its least sync wait
        if step:
            metrics["step_p50_ms"] = max(step)
        bad = [r["rank"] for r in ranks if r["rank"] in flagged]
        message = "%s: %d rank(s) over %d steps, compute p50 %s-%s ms, sync p50 %s-%s ms" % (
            node or "unknown node", len(ranks), min(r["steps"] for r in ranks),
            fmt_num(min(compute)) if compute else "?", fmt_num(max(compute)) if compute else "?",
            fmt_num(min(sync)) if sync else "?", fmt_num(max(sync)) if sync else "?")
        if bad:
            message += "; flagged: rank %s (see its own result)" % ", ".join(str(r) for r in bad)
        result = check_result("workload.node", PASS, message, metrics, node or "cluster")
        result["node"] = node
        results.append(result)
    return results


def _rank_checks(usable, samples, opts):
    results = []
    if not usable:
        return results
    gpus = _gpu_medians(samples)
    used = set((str(v[0].get("node")), str(v[0].get("gpu"))) for v in usable.values())
    p50 = dict((r, percentile(v[1], 50)) for r, v in usable.items())
    p95 = dict((r, percentile(v[1], 95)) for r, v in usable.items())
    sync50 = dict((r, percentile(v[2], 50)) for r, v in usable.items())
    peers50, peers95, sync_peers = _Peers(p50), _Peers(p95), _Peers(sync50)
    gpu_peers = _GpuPeers(gpus, used)
    rows = []
    ratio_limit, k = float(opts["straggler_ratio"]), float(opts["straggler_k"])
    min_ms, tail_limit = float(opts["straggler_min_ms"]), float(opts["tail_ratio"])
    tails = min(len(v[1]) for v in usable.values()) >= int(opts["tail_min_steps"] or 0)
    flagged = set()
    for rank in sorted(usable):
        record, compute, sync, step = usable[rank]
        node, gpu = record.get("node"), record.get("gpu")
        label = _label(rank, node, gpu)
        metrics = {"rank": rank, "steps": len(compute)}
        metrics.update(_stats(compute, "compute"))
        metrics.update(_stats(sync, "sync"))
        metrics.update(_stats(step, "step"))
        message = None
        if len(usable) >= 2:
            center, spread = peers50.of(rank)
            tail_center, tail_spread = peers95.of(rank)
            sync_center = sync_peers.of(rank)[0]
            ratio = p50[rank] / center if center > 0 else float("inf")
            z = robust_z(p50[rank], center, spread)
            tail_ratio = p95[rank] / tail_center if tail_center > 0 else float("inf")
            tail_z = robust_z(p95[rank], tail_center, tail_spread)
            metrics.update({"compute_p50_others_ms": round(center, 3), "compute_ratio": round(ratio, 3)
                            if is_number(ratio) else None, "compute_z": round(z, 2) if is_number(z) else None,
                            "sync_p50_others_ms": round(sync_center, 3)})
            if ratio >= ratio_limit and z >= k and p50[rank] - center >= min_ms:
                waits = ("its sync wait %s ms vs %s ms: this rank holds the others back"
                         % (fmt_num(sync50[rank]), fmt_num(sync_center)) if sync50[rank] < sync_center
                         else "its sync wait %s ms (others %s ms)" % (fmt_num(sync50[rank]), fmt_num(sync_center)))
                message = "%s compute p50 %s ms is %sx the median %s ms of the other ranks; %s" % (
                    label, fmt_num(p50[rank]), fmt_num(round(ratio, 1)), fmt_num(center), waits)
            elif tails and tail_ratio >= tail_limit and tail_z >= k and p95[rank] - tail_center >= min_ms:
                message = ("%s compute p95 %s ms is %sx the median p95 %s ms of the other ranks (its p50 %s ms "
                           "is normal): it stalls intermittently and holds the others back in those steps" % (
                               label, fmt_num(p95[rank]), fmt_num(round(tail_ratio, 1)), fmt_num(tail_center),
                               fmt_num(p50[rank])))
        note, gpu_metrics, gpu_bad = _gpu_note(record, gpus, opts, gpu_peers, flagged=bool(message))
        metrics.update(gpu_metrics)
        row = dict((k, metrics[k]) for k in _ROW_FIELDS if k in metrics)
        row.update({"rank": rank, "gpu": gpu, "node": node})
        rows.append(row)
        if message:
            flagged.add(rank)
            row["flagged"] = True
            if note:
                message += "; " + note
            results.append(_result("workload.rank", FAIL, message, metrics, rank, node, gpu))
        elif gpu_bad:
            summary = "%s compute p50 %s ms p99 %s ms, sync p50 %s ms over %d steps" % (
                label, fmt_num(metrics["compute_p50_ms"]), fmt_num(metrics["compute_p99_ms"]),
                fmt_num(metrics["sync_p50_ms"]), len(compute))
            results.append(_result("workload.rank", PASS, "%s; %s" % (summary, note), metrics, rank, node, gpu,
                                   warning=True))
    results.extend(_node_summaries(rows, flagged))
    results.extend(_distribution(usable, p50, sync50, flagged, opts))
    return results


def _distribution(usable, p50, sync50, flagged, opts):
    rest = [r for r in sorted(usable) if r not in flagged]
    if len(rest) < 2:
        return [_result("workload.distribution", SKIP, "fewer than 2 ranks to compare (%d usable, %d flagged)"
                        % (len(usable), len(flagged)))]
    low, high = min(p50[r] for r in rest), max(p50[r] for r in rest)
    spread = high / low if low > 0 else float("inf")
    steps = [percentile(usable[r][3], 50) for r in rest if usable[r][3]]
    metrics = {"ranks": len(rest), "compute_p50_min_ms": round(low, 3), "compute_p50_max_ms": round(high, 3),
               "compute_spread": round(spread, 3) if is_number(spread) else None,
               "sync_p50_median_ms": round(median([sync50[r] for r in rest]), 3)}
    if steps:
        metrics["step_p50_median_ms"] = round(median(steps), 3)
    what = "the other %d ranks" % len(rest) if flagged else "all %d ranks" % len(rest)
    message = "%s compute p50 %s-%s ms (max/min %s), sync p50 median %s ms%s" % (
        what, fmt_num(low), fmt_num(high), fmt_num(round(spread, 2)) if is_number(spread) else "inf",
        fmt_num(metrics["sync_p50_median_ms"]),
        ", step p50 median %s ms" % fmt_num(metrics["step_p50_median_ms"]) if steps else "")
    results = []
    if is_number(spread) and spread <= float(opts["spread_warn"]):
        results.append(_result("workload.distribution", PASS, message + ": a tight distribution", metrics))
    else:
        results.append(_result("workload.distribution", PASS, message + ": wider than %s, though no single rank "
                               "stands out" % fmt_num(float(opts["spread_warn"])), metrics, warning=True))
    limit = float(opts["max_step_ms"] or 0)
    if limit > 0 and steps:
        step_med = median(steps)
        status = FAIL if step_med > limit else PASS
        results.append(_result("workload.step_time", status, "the median step takes %s ms, limit %s ms"
                               % (fmt_num(step_med), fmt_num(limit)), {"step_p50_ms": step_med, "limit_ms": limit}))
    return results
