# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The implausible values of an nccl-tests run: a negative or non-finite time or bandwidth, a busbw
above the physical bound of the link, an Out of bounds count below 0 (plausibility_errors), and the
bound used when a profile sets none (ABSOLUTE_MAX_BUSBW).

Apart from the single-node and pair judges (_judge_nccl, its nccl.plausibility check): the fabric
stage (_fabric_judge) asks the same question of its multi-node runs. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import fmt_num, is_number
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_rows import (
    _row_text, _rows, _sides, _where)

# Bound used when a profile sets none: ten times the 1.8 TB/s (both directions together) that
# NVLink 5, the fastest GPU interconnect of 2026, gives one GPU. No busbw can come near it.
ABSOLUTE_MAX_BUSBW = 18000.0


def _implausible(parsed, max_busbw):
    """[(sentence, evidence line)] for every implausible value of a run."""
    found = []
    if not isinstance(parsed, dict):
        return found
    bound = max_busbw if is_number(max_busbw) and max_busbw > 0 else None
    for row in _rows(parsed):
        problems = row.get("problems")
        for problem in problems or ():
            if "#wrong" not in problem and " error " not in problem:
                found.append(("%s: %s" % (_where(row), problem), _row_text(row)))
        for label, side in _sides(row):
            for name in ("time_us", "algbw", "busbw"):
                value = side.get(name)
                if value is None:
                    continue
                if not is_number(value):
                    found.append(("%s: %s %s %r is not a finite number" % (
                        _where(row), label, name, value), _row_text(row)))
                elif value < 0 and problems is None:
                    found.append(("%s: %s %s %s is negative" % (_where(row), label, name,
                                                                fmt_num(value)), _row_text(row)))
            busbw = side.get("busbw")
            if bound is not None and is_number(busbw) and busbw > bound:
                found.append(("%s: %s busbw %s GB/s exceeds the physical bound of %s GB/s"
                              % (_where(row), label, fmt_num(busbw), fmt_num(bound)),
                              _row_text(row)))
    avg = parsed.get("avg_busbw")
    if avg is not None and not is_number(avg):
        found.append(("Avg bus bandwidth %r is not a finite number" % (avg,), "Avg bus bandwidth"))
    elif bound is not None and is_number(avg) and avg > bound:
        line = [s.get("text") for s in parsed.get("summaries") or []
                if isinstance(s, dict) and s.get("kind") == "avg"]
        found.append(("Avg bus bandwidth %s GB/s exceeds the physical bound of %s GB/s"
                      % (fmt_num(avg), fmt_num(bound)), (line or ["Avg bus bandwidth"])[0]))
    for summary in parsed.get("summaries") or []:
        if isinstance(summary, dict) and summary.get("kind") == "oob":
            value = summary.get("value")
            if value is not None and (not is_number(value) or value < 0):
                found.append(("line %s: Out of bounds values %r is not a count >= 0"
                              % (summary.get("line"), value), summary.get("text") or ""))
    return found


def plausibility_errors(parsed, max_busbw):
    """Sentences naming each implausible value of a parse_nccl_tests result; [] when none.

    Implausible: a time, algbw or busbw that is negative or not a finite number (the parser
    turns inf/nan/overflowing cells into None and names them in the row's problems), a busbw
    (any row, or the Avg line) above max_busbw GB/s (the physical bound of the link; None or
    <= 0: no bound), an Out of bounds count below 0.
    """
    return ["%s: implausible value" % sentence for sentence, _line in _implausible(parsed, max_busbw)]
