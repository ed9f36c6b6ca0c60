# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text that nccl-tests (all_reduce_perf, all_gather_perf, ...) prints.

Handles every output generation seen in public logs, from 2017 to today:

* pre-2019: ``nThread ...`` without ``#``, ``#   Rank  0 on host device 0 [0x04] name``, table header
  ``bytes N type op time algbw busbw res`` with times in milliseconds, no units row, float ``res``;
* 2019-2022: ``# nThread``, ``Rank N Pid P on host``, header ``size count type redop time algbw
  busbw error`` with a float ``error`` (largest rounding deviation, not a count) and no ``root``;
* 2022 on: ``Group`` in rank lines, ``root`` and ``#wrong`` (count, ``N/A`` when not checked,
  ``%g`` so large counts come in scientific notation); long ``[0000:0f:00]`` bus ids since 2025;
* 2025 on: ``# nccl-tests version X nccl-headers=H nccl-library=L``, ``# Collective test
  starting/concluded: <program>``, ``unalign:``, optional per-iteration and timestamp columns.

Lines may carry launcher prefixes (``[1,0]<stdout>:``, `` 0: ``, ``[0] ``), shell prompts and
command echoes, NCCL INFO/WARN lines, MPI help text and failure or crash messages anywhere: the
noise is dropped with a warning, failures and table rows that cannot be read become ``errors``
next to what the rest of the output shows. Tables are read by splitting on whitespace; the
column header, when present, names the columns.

Values are never NaN or infinite in the result: a cell reading ``inf``, ``nan`` or a number too
large for a float (``1e309``), a negative time, bandwidth or count, and a ``#wrong`` that is not
a whole count are ``errors`` (``implausible value``) and listed in the row's ``problems``.

Several independent runs in one output (nccl-tests built without MPI=1 and started as N
processes) are recognised from repeated headers, tables, summaries or rank numberings, and,
without any header, from the size sequence repeating; ``runs`` names each run's hosts.

Private to the collection; standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    finite_number, is_crash_line, is_non_finite_word, is_shell_echo, launcher_prefix, lines_of,
    new_result)

GIB = 1 << 30
# Most failure or warning lines reported one by one; the rest are counted.
_MAX_LISTED = 10

# "[0] " from MPICH/Intel MPI -prepend-rank / -l; it can also appear glued inside a row.
_RANK_LABEL = re.compile(r"^\[\d+\]\s?")
_INLINE_LABEL = re.compile(r"\[\d+\]")
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
_INT = re.compile(r"^[-+]?\d+$")
_NUMBERISH = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_PROGRAM_SUFFIX = re.compile(r"_perf(?:_mpi)?$")

# Column header names across nccl-tests generations, mapped to one vocabulary.
_COLUMN_NAMES = {
    "bytes": "size", "size": "size", "n": "count", "count": "count", "type": "type",
    "op": "redop", "redop": "redop", "root": "root",
    "time": "time", "cputime": "time", "algbw": "algbw", "busbw": "busbw",
    "#wrong": "wrong", "wrong": "wrong", "error": "error", "res": "error",
    "i_min": "i_min_us", "i_max": "i_max_us", "i_p99": "i_p99_us", "i_cv%": "i_cv_pct",
    "timestamp": "timestamp",
}
_LEAD_COLUMNS = frozenset(("size", "count", "type", "redop", "root"))
_DEFAULT_PERF = ("time", "algbw", "busbw", "wrong")
_CELL_LABEL = {"time": "time", "algbw": "algbw", "busbw": "busbw", "wrong": "#wrong",
               "error": "error", "i_min_us": "i_min", "i_max_us": "i_max", "i_p99_us": "i_p99",
               "i_cv_pct": "i_cv%"}


class _Table(object):
    """What one column header line says about the rows under it."""

    def __init__(self, names, old_style):
        self.has_root = "root" in names
        self.perf = [n for n in names if n not in _LEAD_COLUMNS and n != "timestamp"]
        # Before 2019 ('bytes N type op ...') times were milliseconds and no units row followed;
        # a '(us)' units row, when one follows, sets this back to 1.
        self.time_scale = 1000.0 if old_style else 1.0


def _is_int(token):
    return bool(_INT.match(token))


def _is_value(token):
    """A table cell: a number (1.5, -1, 2e+06), the N/A placeholder, or inf/nan (read, then refused)."""
    return token.upper() == "N/A" or bool(_NUMBERISH.match(token)) or is_non_finite_word(token)


def _as_count(value):
    """Counts printed with %g come back as floats (1.04858e+06); keep them integral."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


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


def _column_header(body):
    """A _Table when body is a table header line ('size count type redop ...'), else None."""
    tokens = body.lower().split()
    if "busbw" not in tokens or not ("size" in tokens or "bytes" in tokens):
        return None
    return _Table([_COLUMN_NAMES[t] for t in tokens if t in _COLUMN_NAMES], tokens[0] == "bytes")


def _looks_like_deviation(token, number):
    """Without a header: is this cell the 2017-2022 float error column rather than #wrong?

    #wrong is printed with %g (0, 96, 1e+06 for a million); the old error column with %.0le
    (0e+00, 2e-07, 1e+00), always with an exponent. An exponent below 6, or a fraction written
    with one, means a deviation.
    """
    mantissa, sep, exponent = token.lower().partition("e")
    if not sep:
        return False
    return not float(number).is_integer() or (_is_int(exponent) and int(exponent) < 6)


def _measure(side, name, token, where, problems):
    """One time/bandwidth/per-iteration cell into side[name]; False when the cell is N/A."""
    value, why = finite_number(token)
    label = "%s %s" % (where, _CELL_LABEL[name])
    if why == "missing":
        side[name] = None
        return False
    if why is not None:
        problems.append("%s %r is %s" % (label, token, "not a finite number" if why == "not finite"
                                         else "not a number"))
        side[name] = None
        return True
    if value < 0:
        problems.append("%s %s is negative" % (label, token))
    side[name] = float(value)
    return True


def _count_cell(side, token, where, guess, problems):
    """The #wrong cell (or, without a header, the 2017-2022 deviation in its place)."""
    value, why = finite_number(token)
    if why == "missing":
        return
    if why is not None:
        problems.append("%s #wrong %r is %s" % (where, token, "not a finite number"
                                                if why == "not finite" else "not a number"))
        return
    if guess and _looks_like_deviation(token, value):
        _deviation(side, token, where, problems)
        return
    if not float(value).is_integer():
        problems.append("%s #wrong %s is not a whole count" % (where, token))
        return
    if value < 0:
        problems.append("%s #wrong %s is negative" % (where, token))
        return
    side["wrong"] = _as_count(value)


def _deviation(side, token, where, problems):
    value, why = finite_number(token)
    if why == "missing":
        return
    if why is not None:
        problems.append("%s error %r is %s" % (where, token, "not a finite number"
                                               if why == "not finite" else "not a number"))
        return
    if value < 0:
        problems.append("%s error %s is negative" % (where, token))
        return
    side["error"] = float(value)


def _side(cells, time_scale, where, problems, guess=False):
    """One out-of-place or in-place group of cells -> dict, or None when unreadable.

    guess: no column header named the last cell, so tell #wrong from error by its look.
    Values that are not finite numbers become None and a sentence in problems.
    """
    side = {"time_us": None, "algbw": None, "busbw": None, "wrong": None, "error": None}
    for name in ("time", "algbw", "busbw"):
        if not _measure(side, name, cells.get(name, ""), where, problems):
            return None   # these three are always printed: N/A here means a damaged row
    time = side.pop("time")
    side["time_us"] = round(time * time_scale, 3) if time is not None else None
    if cells.get("wrong") is not None:
        _count_cell(side, cells["wrong"], where, guess, problems)
    if cells.get("error") is not None:
        _deviation(side, cells["error"], where, problems)
    for name in ("i_min_us", "i_max_us", "i_p99_us", "i_cv_pct"):
        if name in cells:
            _measure(side, name, cells[name], where, problems)
    return side


def _parse_row(tokens, table):
    """Split data-row tokens into a row dict; None when the row is incomplete or garbled."""
    row = {"size": int(tokens[0]), "count": int(tokens[1]), "type": tokens[2], "redop": None,
           "root": None}
    rest = tokens[3:]
    if rest and not _is_value(rest[0]):
        row["redop"] = rest[0]
        rest = rest[1:]
    if table is not None and table.perf:
        if table.has_root and rest and _is_int(rest[0]):
            row["root"] = int(rest[0])
            rest = rest[1:]
        names = table.perf
        scale = table.time_scale
    else:
        if len(rest) % 4 == 1 and _is_int(rest[0]):
            row["root"] = int(rest[0])
            rest = rest[1:]
        names = list(_DEFAULT_PERF) * min(2, len(rest) // 4)
        scale = 1.0
    guess = table is None or not table.perf
    if not names or len(rest) < len(names) or not all(_is_value(t) for t in rest[:len(names)]):
        return None
    groups = []
    for name, token in zip(names, rest):
        if name == "time":
            groups.append({})
        if groups:
            groups[-1][name] = token
    problems = []
    sides = [_side(group, scale, where, problems, guess)
             for group, where in zip(groups[:2], ("out-of-place", "in-place"))]
    if not sides or any(side is None for side in sides):
        return None
    row["oop"] = sides[0]
    row["ip"] = sides[1] if len(sides) > 1 else None
    row["problems"] = problems
    return row


def _row_tokens(body):
    """Tokens of a candidate data row (two integers then a type name), else None."""
    tokens = _INLINE_LABEL.sub(" ", body).split()
    if len(tokens) < 3 or not (tokens[0].isdigit() and tokens[1].isdigit()):
        return None
    if _is_value(tokens[2]):
        return None
    return tokens


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


def _sweep(config, reduced_max):
    """(number of sizes, last size) of one sweep from minBytes to maxBytes; (None, None) when
    unknowable."""
    low, high = config["min_bytes"], config["max_bytes"]
    factor, step = config["step_factor"], config["step_bytes"]
    if low is None or high is None or (factor is None and step is None):
        return None, None
    if reduced_max is not None and reduced_max < high:
        high = reduced_max
        low = min(low, high)
    steps, size, last = 0, low, None
    while size <= high:
        steps += 1
        last = size
        if steps > 100000:
            return None, None
        size = size * factor if factor and factor > 1 else size + (step or 0)
        if (factor and factor > 1 and size == 0) or (not (factor and factor > 1) and not step):
            return None, None
    return steps, last


def _sweep_steps(config, reduced_max):
    """How many sizes one sweep from minBytes to maxBytes prints; None when unknowable."""
    return _sweep(config, reduced_max)[0]


def _sweep_last(config, reduced_max):
    """The largest size one sweep asks for (rows of all_gather/alltoall print it rounded down)."""
    return _sweep(config, reduced_max)[1]


def _check_sweep(result, state):
    """Every (type, redop, root) block must hold whole sweeps: a missing row breaks that."""
    configs = state["configs"]
    if not configs or not result["rows"]:
        return
    keyed = [(c["min_bytes"], c["max_bytes"], c["step_factor"], c["step_bytes"]) for c in configs]
    if len(set(keyed)) != 1:
        return  # several different runs in one output: no single sweep to check against
    steps = _sweep_steps(configs[0], state["reduced_max"])
    if not steps:
        return
    blocks = {}
    for row in result["rows"]:
        key = (row["type"], row["redop"], row["root"])
        blocks[key] = blocks.get(key, 0) + 1
    for key, count in sorted(blocks.items(), key=lambda item: str(item[0])):
        if count % steps:
            result["errors"].append(
                "%d rows for %s/%s but each sweep from minBytes to maxBytes has %d sizes: "
                "rows missing (run incomplete or output damaged)"
                % (count, key[0], key[1] if key[1] is not None else "-", steps))
    # Several runs of one configuration (the MPI=0 symptom, or logs appended) each print
    # whole sweeps, so the total must be a multiple of runs x sizes as well.
    runs = result["independent_runs"]
    total = len(result["rows"])
    if runs > 1 and total % (steps * runs) and not any(count % steps for count in blocks.values()):
        result["errors"].append(
            "%d rows but %d independent runs of %d sizes each: rows missing "
            "(run incomplete or output damaged)" % (total, runs, steps))


def _apply_config(result, state):
    result["header_text"] = state["header_line"]
    if not state["configs"]:
        return
    config = state["configs"][0]
    for key, value in config.items():
        result[key] = value
    if config["validation"] == 0:
        result["warnings"].append("validation disabled (-c 0): results were not checked, "
                                  "#wrong is N/A")


def _apply_summaries(result, state):
    oobs = [s for s in state["summaries"] if s["kind"] == "oob"]
    avgs = [s for s in state["summaries"] if s["kind"] == "avg"]
    result["summaries"] = state["summaries"]
    result["errors"].extend(state["summary_errors"])
    if oobs:
        counts = [s["value"] for s in oobs if s["value"] is not None]
        result["out_of_bounds"] = int(sum(counts)) if len(counts) == len(oobs) else None
    for oob in oobs:
        if oob["value"] is not None and (oob["value"] != 0 or (oob["status"] or "OK") != "OK"):
            result["errors"].append("line %d: Out of bounds values: %s %s"
                                    % (oob["line"], oob["value"], oob["status"] or ""))
    values = [s["value"] for s in avgs if s["value"] is not None]
    if values:
        result["avg_busbw"] = float(min(values))
    statuses = [s["status"] for s in avgs if s["status"]]
    result["avg_busbw_status"] = ("FAILED" if any(st != "OK" for st in statuses)
                                  else ("OK" if statuses else None))
    for avg in avgs:
        if avg["status"] and avg["status"] != "OK":
            result["errors"].append(
                "line %d: Avg bus bandwidth %s reported %s (below 90%% of NCCL_TESTS_MIN_BW)"
                % (avg["line"], avg["raw"], avg["status"]))
    _check_completeness(result, state, oobs, avgs)


def _check_completeness(result, state, oobs, avgs):
    if not avgs:
        result["errors"].append("no Avg bus bandwidth summary: run incomplete?")
    elif len(avgs) < state["tables"]:
        result["errors"].append("%d result tables but %d Avg bus bandwidth summaries: "
                                "run incomplete?" % (state["tables"], len(avgs)))
    elif state["last_row_line"] > state["last_avg_line"]:
        result["errors"].append("line %d: table rows after the last Avg bus bandwidth summary: "
                                "run incomplete?" % state["last_row_line"])
    if avgs and not oobs:
        result["errors"].append("no Out of bounds values summary line")


def _check_rows(result):
    if not result["rows"]:
        result["errors"].append("no data rows")
        return
    wrong = []
    for row in result["rows"]:
        counts = [side["wrong"] for side in (row["oop"], row["ip"]) if side and side["wrong"]]
        if counts:
            wrong.append(row)
    if wrong:
        shown = ", ".join("line %d size %d: %s/%s" % (
            r["line"], r["size"], r["oop"]["wrong"], r["ip"]["wrong"] if r["ip"] else "-")
            for r in wrong[:5])
        result["errors"].append("#wrong is nonzero in %d rows (out-of-place/in-place): %s%s"
                                % (len(wrong), shown, ", ..." if len(wrong) > 5 else ""))


def _metrics(result):
    rows = result["rows"]
    busbws = [side["busbw"] for row in rows for side in (row["oop"], row["ip"])
              if side and side["busbw"] is not None]
    result["max_busbw"] = max(busbws) if busbws else None
    if not rows:
        return
    large = [row for row in rows if row["size"] >= GIB]
    if not large:
        # A sweep that stops short of 1 GiB: its plateau, the sizes within 8x of the largest (as
        # 1-8 GiB is for the usual -e 8G); a quarter of a long sweep would reach into the ramp-up.
        largest = max(row["size"] for row in rows)
        large = [row for row in rows if row["size"] * 8 >= largest]
    values = [row["oop"]["busbw"] for row in large if row["oop"]["busbw"] is not None]
    if values:
        result["large_msg_busbw"] = round(sum(values) / len(values), 4)
    result["large_msg_min_bytes"] = min(row["size"] for row in large)


def _apply_ranks(result, state):
    ranks = result["ranks"]
    seen = set(r["rank"] for r in ranks)
    result["nranks"] = len(seen)
    hosts = []
    for rank in ranks:
        if rank["host"] and rank["host"] not in hosts:
            hosts.append(rank["host"])
    result["hosts"] = hosts
    if not ranks:
        result["errors"].append("no '#  Rank N ... on HOST device D [BUS] NAME' lines: "
                                "device list missing")
    elif seen != set(range(len(seen))):
        result["warnings"].append("rank numbers are not contiguous from 0 (%d seen, highest %d): "
                                  "rank lines missing?" % (len(seen), max(seen)))


def _rank_runs(result, state):
    """Group the rank lines into runs: a 'Rank 0' starts one, rank k joins the run that has k-1.

    Processes of an MPI=0 launch print their own rank lists, possibly interleaved line by line;
    a run prefers the next rank on a host it already has.
    """
    runs = []
    for rank, (lineno, text) in zip(result["ranks"], state["rank_lines"]):
        number, target = rank["rank"], None
        if number != 0:
            waiting = [run for run in reversed(runs) if run["_last"] == number - 1]
            here = [run for run in waiting if rank["host"] in run["hosts"]]
            target = (here or waiting or runs[-1:] or [None])[0]
        if target is None:
            target = {"hosts": [], "_ranks": set(), "_last": -1, "line": lineno, "text": text}
            runs.append(target)
        target["_ranks"].add(number)
        target["_last"] = max(target["_last"], number)
        if rank["host"] and rank["host"] not in target["hosts"]:
            target["hosts"].append(rank["host"])
    return runs


def _repeated_sizes(result):
    """How often the size sweep repeats when no header says so: the largest repeat of a size."""
    counts = {}
    for row in result["rows"]:
        key = (row["type"], row["redop"], row["root"], row["size"])
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values()) if counts else 0


def _one_rank_rows(result):
    """Every row has busbw 0 and algbw > 0: a communicator of one rank ((n-1)/n = 0)."""
    sides = [side for row in result["rows"] for side in (row["oop"], row["ip"]) if side]
    return bool(sides) and all(side["busbw"] == 0 for side in sides) \
        and any((side["algbw"] or 0) > 0 for side in sides)


def _apply_runs(result, state):
    rank_runs = _rank_runs(result, state)
    counts = [result["headers"], state["rank0"], state["tables"], len(rank_runs),
              len([s for s in state["summaries"] if s["kind"] == "avg"]),
              1 if result["rows"] else 0]
    if not result["headers"] and not state["tables"]:
        counts.append(_repeated_sizes(result))   # no header: the repeating sweep is the sign
    runs = max(counts)
    one_rank = _one_rank_rows(result)
    listed = [{"hosts": run["hosts"], "nranks": len(run["_ranks"]), "line": run["line"],
               "text": run["text"]} for run in rank_runs]
    while len(listed) < runs:
        listed.append({"hosts": [], "nranks": 1 if one_rank else None, "line": None, "text": None})
    result["independent_runs"] = runs
    result["runs"] = listed
    if runs > 1:
        sizes = [run["nranks"] for run in listed]
        shape = ("%d one-rank runs" % runs if all(size == 1 for size in sizes)
                 else "%d runs" % runs)
        result["warnings"].append(
            "%d independent runs in one output (%s; header/rank numbering/size sweep restarts %d "
            "times): if this was one mpirun/srun launch, nccl-tests was built without MPI=1 and "
            "every process tested only its own GPUs" % (runs, shape, runs))


def _apply_program(result, state):
    programs = state["programs"]
    if programs:
        result["program"] = programs[0]
        result["collective"] = _PROGRAM_SUFFIX.sub("", programs[0])
        if len(set(programs)) > 1:
            result["warnings"].append("several collectives in one output: %s"
                                      % ", ".join(sorted(set(programs))))
        if state["concluded"] < len(programs):
            result["warnings"].append("%d 'Collective test starting' lines but %d "
                                      "'concluded' lines" % (len(programs), state["concluded"]))
    result["concluded"] = state["concluded"] > 0


def _apply_notes(result, state):
    result["errors"].extend(state["failures"])
    if state["failure_count"] > len(state["failures"]):
        result["errors"].append("... and %d more failure lines"
                                % (state["failure_count"] - len(state["failures"])))
    if not state["configs"]:
        result["errors"].append("no '# nThread ... nGpus ...' header line: cannot tell the run's "
                                "parameters or check that every size was tested")
    result["errors"].extend(state["bad_rows"])
    if state["bad_row_count"] > len(state["bad_rows"]):
        result["errors"].append("... and %d more incomplete or garbled table rows"
                                % (state["bad_row_count"] - len(state["bad_rows"])))
    result["warnings"].extend(state["echoes"])
    if state["prefixed"]:
        result["warnings"].append("launcher prefixes (%s) removed from %d lines"
                                  % (", ".join(repr(p) for p in state["prefixes"]),
                                     state["prefixed"]))
    result["warnings"].extend(state["nccl_warns"])
    if state["nccl_warn_count"] > len(state["nccl_warns"]):
        result["warnings"].append("... and %d more such lines"
                                  % (state["nccl_warn_count"] - len(state["nccl_warns"])))


def _empty_result():
    return new_result(
        rows=[], avg_busbw=None, avg_busbw_status=None, out_of_bounds=None, summaries=[],
        ranks=[], nranks=0, hosts=[], headers=0, independent_runs=0, runs=[], version=None,
        nccl_tests_commit=None, nccl_headers=None, nccl_library=None, nccl_version=None,
        program=None, collective=None, concluded=False, nthread=None, ngpus=None, min_bytes=None,
        max_bytes=None, step_factor=None, step_bytes=None, warmup_iters=None, iters=None,
        agg_iters=None, validation=None, graph=None, unalign=None, max_busbw=None,
        large_msg_busbw=None, large_msg_min_bytes=None, header_text=None, sweep_last_bytes=None,
        passed=False)


def parse_nccl_tests(text):
    """Parse one nccl-tests run's stdout (any version, any launcher prefix) into a dict.

    ``passed`` is true only when nothing in ``errors``: rows present, every sweep complete,
    no nonzero ``#wrong``, no implausible value, ``Out of bounds values : 0 OK``, an ``Avg bus
    bandwidth`` line not marked FAILED, the ``# nThread`` header and rank lines present, and no
    failure or crash line. Several independent runs (the MPI=0 symptom) only warn; see ``runs``.
    """
    result = _empty_result()
    state = _new_state()
    state["summary_errors"] = []
    for lineno, raw in enumerate(lines_of(text or ""), 1):
        _handle_line(result, state, lineno, raw)
    _apply_config(result, state)
    _apply_program(result, state)
    _apply_notes(result, state)
    _check_rows(result)
    _apply_runs(result, state)
    _check_sweep(result, state)
    _apply_summaries(result, state)
    _apply_ranks(result, state)
    _metrics(result)
    if state["configs"]:
        result["sweep_last_bytes"] = _sweep_last(state["configs"][0], state["reduced_max"])
    result["passed"] = not result["errors"] and bool(result["rows"])
    return result
