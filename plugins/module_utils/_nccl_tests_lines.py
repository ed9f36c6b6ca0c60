# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests output read line by line: noise, failures, the header, rank lines, summaries, rows.

Private to _nccl_tests: parse_nccl_tests feeds every line to _handle_line, which fills the
result and the parse state (_new_state) the finishing steps read. FAILURE_WORDS is public
through _nccl_tests. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests_rows import (
    _as_count, _column_header, _parse_row, _row_tokens)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    finite_number, is_crash_line, is_shell_echo, launcher_prefix)


# Most failure or warning lines reported one by one; the rest are counted.
_MAX_LISTED = 10

# "[0] " from MPICH/Intel MPI -prepend-rank / -l; it can also appear glued inside a row.
_RANK_LABEL = re.compile(r"^\[\d+\]\s?")
# nccl-tests' own failure messages, then the launchers' words for a rank that died.
FAILURE_WORDS = (r"Test (?:NCCL|CUDA) failure|Test failure|NCCL failure|Cuda failure|CUDA failure"
                 r"|Invalid number of GPUs|Incompatible NCCL versions|is not supported by this test"
                 r"|exited on signal \d+|Segmentation fault")
_FAILURE = re.compile("(%s)" % FAILURE_WORDS)
_SRUN_TASK = re.compile(r"\btask \d+|Exited with exit code")
_NCCL_LOG = re.compile(r"\bNCCL (INFO|WARN|TRACE|ABORT)\b")
_NCCL_VERSION = re.compile(r"(?:^|NCCL INFO )NCCL version (\S+)")
_TESTS_VERSION = re.compile(
    r"nccl-tests version (\S+)(?:\s+\(([^)]*)\))?(?:\s+nccl-headers=(\d+))?(?:\s+nccl-library=(\d+))?")
_STARTING = re.compile(r"Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"Collective test concluded:\s*(\S+)")
_NTHREAD = re.compile(r"\bnThread\s+(\d+)\s+nGpus\s+(\d+)")
_ITERS = re.compile(r"(?:\b(warmup|agg)\s+)?\biters:\s*(\d+)")
_CONFIG_FIELDS = (
    ("min_bytes", re.compile(r"\bminBytes\s+(\d+)")),
    ("max_bytes", re.compile(r"\bmaxBytes\s+(\d+)")),
    ("validation", re.compile(r"\bvalidation:\s*(\d+)")),
    ("graph", re.compile(r"\bgraph:\s*(\d+)")),
    ("unalign", re.compile(r"\bunalign:\s*(\d+)")),
)
_STEP = re.compile(r"\bstep:\s*(\d+)\((factor|bytes)\)")
_REDUCING = re.compile(r"Reducing maxBytes to (\d+)")
_RANK = re.compile(
    r"^Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?(?:Pid\s+(\d+)\s+)?on\s+(.*?)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*?)\s*$")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\S+)(?:\s+(\S+))?")
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)(?:\s+(\S+))?")
_ERROR_LINE = re.compile(r"^error:\s*(.*)$")


def _pci_bus(busid):
    """Bus number from '0x18' (before 2025) or '0000:0f:00' / '0000:63:00.0'."""
    text = busid.strip()
    try:
        if text.lower().startswith("0x"):
            return int(text, 16)
        parts = text.split(":")
        if len(parts) >= 2:
            return int(parts[1], 16)
    except ValueError:
        return None
    return None


def _clean_line(raw):
    """Remove launcher prefixes; return (text, body without leading '#', prefix removed)."""
    prefix = launcher_prefix(raw)
    text = raw[len(prefix):]
    label = _RANK_LABEL.match(text)
    if label:
        prefix += label.group(0)
        text = text[label.end():]
    body = text.strip()
    return text, body.lstrip("#").strip(), prefix


def _new_state():
    return {
        "table": None, "tables": 0, "configs": [], "rank0": 0, "reduced_max": None,
        "failures": [], "failure_count": 0, "nccl_warns": [], "nccl_warn_count": 0,
        "bad_rows": [], "bad_row_count": 0, "summaries": [], "last_avg_line": 0,
        "last_row_line": 0, "rank_lines": [], "prefixed": 0, "prefixes": [], "echoes": [],
        "programs": [], "concluded": 0, "header_line": None,
    }


def _note(state, key, count_key, message):
    state[count_key] += 1
    if len(state[key]) < _MAX_LISTED:
        state[key].append(message)


def _parse_header_line(text):
    """'# nThread 1 nGpus 8 minBytes 8 ...' -> config dict."""
    match = _NTHREAD.search(text)
    config = {"nthread": int(match.group(1)), "ngpus": int(match.group(2)), "min_bytes": None,
              "max_bytes": None, "step_factor": None, "step_bytes": None, "warmup_iters": None,
              "iters": None, "agg_iters": None, "validation": None, "graph": None, "unalign": None}
    for key, pattern in _CONFIG_FIELDS:
        found = pattern.search(text)
        if found:
            config[key] = int(found.group(1))
    step = _STEP.search(text)
    if step:
        config["step_factor" if step.group(2) == "factor" else "step_bytes"] = int(step.group(1))
    for found in _ITERS.finditer(text):
        key = {"warmup": "warmup_iters", "agg": "agg_iters"}.get(found.group(1), "iters")
        if config[key] is None:
            config[key] = int(found.group(2))
    return config


def _parse_rank(body):
    if len(body) > 1000 or "device" not in body:   # rank lines are short; spare the regex
        return None
    match = _RANK.match(body)
    if not match:
        return None
    rank, group, pid, host, device, busid, name = match.groups()
    return {"rank": int(rank), "group": int(group) if group else None,
            "pid": int(pid) if pid else None, "host": host.strip(), "device": int(device),
            "busid": busid, "pci_bus": _pci_bus(busid), "gpu_name": name}


def _summary_value(state, lineno, kind, token):
    """A summary cell: a finite number, else None with an error naming the line."""
    value, why = finite_number(token)
    if why is not None:
        state["summary_errors"].append(
            "line %d: %s value %r is %s" % (lineno, kind, token, "not a finite number: implausible "
                                            "value" if why == "not finite" else "not a number"))
        return None
    if value < 0:
        state["summary_errors"].append("line %d: %s value %s is negative: implausible value"
                                       % (lineno, kind, token))
    return value


def _handle_summary(state, lineno, body):
    oob = _OOB.search(body)
    if oob:
        count = _summary_value(state, lineno, "Out of bounds values", oob.group(1))
        if isinstance(count, float) and not count.is_integer():
            state["summary_errors"].append("line %d: Out of bounds values %s is not a whole count"
                                           % (lineno, oob.group(1)))
            count = None
        state["summaries"].append({"kind": "oob", "line": lineno, "value": _as_count(count),
                                   "status": oob.group(2), "text": body})
        return True
    avg = _AVG.search(body)
    if avg:
        value = _summary_value(state, lineno, "Avg bus bandwidth", avg.group(1))
        state["summaries"].append({"kind": "avg", "line": lineno, "value": value,
                                   "status": avg.group(2), "raw": avg.group(1), "text": body})
        state["last_avg_line"] = lineno
        return True
    return False


def _handle_meta(result, state, lineno, body):
    """Version, program, header, rank and memory lines. True when the line was one of them."""
    match = _TESTS_VERSION.search(body)
    if match:
        if result["version"] is None:
            result["version"] = match.group(1)
            result["nccl_tests_commit"] = match.group(2)
            result["nccl_headers"] = int(match.group(3)) if match.group(3) else None
            result["nccl_library"] = int(match.group(4)) if match.group(4) else None
        return True
    for pattern, key in ((_STARTING, "programs"), (_CONCLUDED, None)):
        match = pattern.search(body)
        if match:
            if key:
                state["programs"].append(match.group(1))
            else:
                state["concluded"] += 1
            return True
    if _NTHREAD.search(body):
        result["headers"] += 1
        state["configs"].append(_parse_header_line(body))
        state["header_line"] = state["header_line"] or body
        return True
    match = _REDUCING.search(body)
    if match:
        state["reduced_max"] = int(match.group(1))
        result["warnings"].append("line %d: maxBytes reduced to %s due to GPU memory limitation"
                                  % (lineno, match.group(1)))
        return True
    rank = _parse_rank(body)
    if rank:
        rank["line"] = lineno
        rank["text"] = body
        result["ranks"].append(rank)
        state["rank_lines"].append((lineno, body))
        if rank["rank"] == 0:
            state["rank0"] += 1
        return True
    return False


def _handle_line(result, state, lineno, raw):
    text, body, prefix = _clean_line(raw)
    if prefix:
        state["prefixed"] += 1
        if prefix.strip() not in state["prefixes"] and len(state["prefixes"]) < 3:
            state["prefixes"].append(prefix.strip())
    if not body:
        return
    if _FAILURE.search(body) or ("srun: error:" in body and _SRUN_TASK.search(body)) \
            or is_crash_line(body):
        _note(state, "failures", "failure_count", "line %d: %s" % (lineno, body))
        return
    match = _NCCL_VERSION.search(body)
    if match:
        result["nccl_version"] = result["nccl_version"] or match.group(1)
        return
    log = _NCCL_LOG.search(body)
    if log:
        if log.group(1) in ("WARN", "ABORT"):
            _note(state, "nccl_warns", "nccl_warn_count", "line %d: %s" % (lineno, body))
        return
    if is_shell_echo(text):
        if len(state["echoes"]) < _MAX_LISTED:
            state["echoes"].append("line %d: shell prompt or command echo ignored: %s"
                                   % (lineno, text.strip()[:120]))
        return
    if _handle_meta(result, state, lineno, body) or _handle_summary(state, lineno, body):
        return
    match = _ERROR_LINE.match(body)
    if match and text.lstrip().startswith("#"):
        result["warnings"].append("line %d: nccl-tests reported: %s" % (lineno, match.group(1)))
        return
    table = _column_header(body)
    if table is not None:
        state["table"] = table
        state["tables"] += 1
        return
    if "(B)" in body.split() or "(us)" in body.split():
        if state["table"] is not None and "(us)" in body.split():
            state["table"].time_scale = 1.0
        return
    tokens = _row_tokens(body) if not text.lstrip().startswith("#") else None
    if tokens is None:
        return
    row = _parse_row(tokens, state["table"])
    if row is None:
        _note(state, "bad_rows", "bad_row_count",
              "line %d: incomplete or garbled table row: %s" % (lineno, body[:120]))
        return
    row["line"] = lineno
    row["text"] = body
    state["last_row_line"] = lineno
    result["rows"].append(row)
    for problem in row["problems"]:
        state["summary_errors"].append("line %d: implausible value in the table row (size %d): %s"
                                       % (lineno, row["size"], problem))
