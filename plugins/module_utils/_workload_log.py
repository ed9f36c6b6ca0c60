# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for a training run's log: the reference workload's GPUCLUSTER_* lines, or a regex's.

Public through _workload (parse_workload_log; the line format is in _workload's docstring and
docs/workload.md). Standard library only; Python 2.7/3.8 compatible; never raises.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    lines_of, new_result, strip_launcher_prefix)


_MARKER = re.compile(r"\bGPUCLUSTER_(WORKLOAD|STEP|PARAMS|GPU|DONE|ERROR)\b(.*)$")
_MESSAGE = re.compile(r'\bmessage="(.*?)"?\s*$')
_INT = re.compile(r"^\d+$")
_CHECKSUM = re.compile(r"^[0-9a-f]{16}$")
REGEX_REQUIRED = ("rank", "compute_ms", "sync_ms")
REGEX_OPTIONAL = ("node", "gpu", "step", "step_ms", "local_rank", "loss")


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


def _loss(text):
    """(finite float, None), (None, 'nan' / 'inf' / '-inf') for a non-finite loss, or (None, None)
    when the text is not a number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None, None
    if math.isnan(value):
        return None, "nan"
    if math.isinf(value):
        return None, "inf" if value > 0 else "-inf"
    return value, None


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
            "compute_ms": [], "sync_ms": [], "step_ms": [], "loss": [], "nonfinite_loss": [], "header": False,
            "log_format": None, "done": None, "done_steps": None, "param_checks": [], "param_errors": [],
            "errors": []}


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


def _add_step(ranks, fields, lineno, result, seen, source, text=""):
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
    loss, nonfinite = None, None
    if fields.get("loss") not in (None, ""):
        loss, nonfinite = _loss(fields["loss"])
        if loss is None and nonfinite is None:
            problem = "line %d: %s of rank %d: loss=%s is not a number" % (lineno, source, rank, fields["loss"])
            record["errors"].append(problem)
            result["errors"].append(problem)
            return
    elif (record["log_format"] or 0) >= 2:  # the reference workload logs a loss in every step line
        problem = "line %d: %s of rank %d step %d has no loss (line cut off)" % (lineno, source, rank, step)
        record["errors"].append(problem)
        result["errors"].append(problem)
        return
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
    record["loss"].append(loss)
    if nonfinite:
        record["nonfinite_loss"].append({"step": step, "loss": nonfinite, "line": text.strip()})


def _param_check(ranks, fields, lineno, result, seen, line):
    """One GPUCLUSTER_PARAMS line: a rank's parameter checksum after a step.

    A line that cannot be read is an error of its rank (param_errors) and of the log, beside the
    checksums of the other lines; it does not make the rank's step times untrusted.
    """
    rank = _int(fields.get("rank"))
    if rank is None:
        result["errors"].append("line %d: GPUCLUSTER_PARAMS without a valid rank (line garbled or cut off)" % lineno)
        return
    record = ranks.setdefault(rank, _new_rank(rank))
    step, checksum = _int(fields.get("step")), fields.get("checksum")
    problem = None
    if step is None:
        problem = "line %d: GPUCLUSTER_PARAMS of rank %d: step %r is not a non-negative integer (line garbled)" % (
            lineno, rank, fields.get("step"))
    elif checksum is None or not _CHECKSUM.match(checksum):
        problem = "line %d: GPUCLUSTER_PARAMS of rank %d step %d: checksum %r is not 16 hex digits (line garbled " \
                  "or cut off)" % (lineno, rank, step, (checksum or "")[:40])
    elif (rank, step) in seen:
        problem = "line %d: GPUCLUSTER_PARAMS of rank %d step %d appears twice (line %d too): two runs in one " \
                  "log?" % (lineno, rank, step, seen[(rank, step)])
    if problem:
        record["param_errors"].append(problem)
        result["errors"].append(problem)
        return
    seen[(rank, step)] = lineno
    _note_identity(record, fields, lineno, result)
    record["param_checks"].append({"step": step, "checksum": checksum, "device": fields.get("device") or None,
                                   "tensors": _int(fields.get("tensors")), "line": line.strip()})


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


# The whole job's log: a 4,096-node run of the reference workload (8 ranks a node, 30 steps, a GPU
# sample line per GPU and second) prints about 170 MB; the 32 MB cap this had refused every run
# past ~800 nodes (bench/results_scale.py at 1,024 nodes found it).
@capped(256)
def parse_workload_log(text, regex=None):
    """Per-rank step timings (ms) and GPU samples from a training log.

    regex: optional pattern with named groups rank, compute_ms, sync_ms (and optionally node,
    gpu, step, step_ms, local_rank) matched against every line to read step records from a
    training script of your own; GPUCLUSTER_* lines other than GPUCLUSTER_STEP are still read.

    Returns {ranks: {rank (int): {node, gpu, local_rank, steps, step_numbers, compute_ms,
    sync_ms, step_ms, loss (per step: a finite float, or None when not logged or not finite),
    nonfinite_loss ([{step, loss: nan|inf|-inf, line}]), param_checks ([{step, checksum, device,
    tensors, line}]), param_errors, log_format, done, done_steps, errors}}, gpu_samples: [{node,
    gpu, t, sm_mhz, sm_max_mhz, temp_c, power_w}], world, backend, device, model, compute_clock,
    param_check_every (from the GPUCLUSTER_WORKLOAD lines, None when they do not say), format,
    errors, warnings}.
    Never raises; anything missing, garbled or cut off is a sentence in errors.
    """
    result = new_result(ranks={}, gpu_samples=[], world=None, backend=None, device=None, model=None,
                        compute_clock=None, param_check_every=None, format="regex" if regex else "reference")
    if not isinstance(text, str):
        result["errors"].append("expected the log as text, got %s" % type(text).__name__)
        return result
    compiled = _compile(regex, result) if regex else None
    if regex and compiled is None:
        return result
    if not text.strip():
        result["errors"].append("empty output: the workload printed nothing")
        return result
    ranks, seen, seen_params, worlds = result["ranks"], {}, {}, {}
    markers = {"WORKLOAD": 0, "DONE": 0, "STEP": 0}
    for lineno, raw_line in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw_line)
        match = _MARKER.search(line)
        if compiled is not None and (match is None or match.group(1) == "STEP"):
            found = compiled.search(line)
            if found:
                fields = dict((k, v) for k, v in found.groupdict().items() if v is not None)
                markers["STEP"] += 1
                _add_step(ranks, fields, lineno, result, seen, "step line", line)
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
            _add_step(ranks, fields, lineno, result, seen, "GPUCLUSTER_STEP", line)
            continue
        if kind == "GPU":
            _gpu_sample(fields, lineno, result)
            continue
        if kind == "PARAMS":
            _param_check(ranks, fields, lineno, result, seen_params, line)
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
            record["log_format"] = _int(fields.get("format"))
            every = _int(fields.get("param_check_every"))
            if every is not None:
                result["param_check_every"] = max(every, result["param_check_every"] or 0)
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
