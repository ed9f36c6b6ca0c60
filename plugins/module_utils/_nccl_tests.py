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

This module runs the parse and applies what the lines showed; the parts live next to it:
_nccl_tests_lines (each line: noise, failures, header, ranks, summaries), _nccl_tests_rows (the
column header and data rows), _nccl_tests_runs (independent runs, whole sweeps) and
_nccl_tests_metrics (summaries, #wrong, bandwidth metrics).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests_lines import (
    FAILURE_WORDS, _handle_line, _new_state)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests_metrics import (
    GIB, _apply_summaries, _check_rows, _metrics)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests_runs import (
    _apply_runs, _check_sweep, _sweep_last)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    lines_of, new_result)

# The interface other modules import from here.
__all__ = ["FAILURE_WORDS", "GIB", "parse_nccl_tests"]


_PROGRAM_SUFFIX = re.compile(r"_perf(?:_mpi)?$")


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


@capped(4)
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
