# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl.correctness check of an nccl-tests run: fail on #wrong > 0 in any row or Out of bounds
values > 0; error when validation was off (-c 0), when #wrong is N/A where nccl-tests checks, or
when a #wrong is not a whole count >= 0; pass only when every row was checked and the output is
complete.

Apart from the other checks of the run (_judge_nccl): what counts as checked depends on the
collective (alltoall, alltoallv and sendrecv never check in-place), which is this check's alone.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, fmt_num, is_number)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_rows import (
    _row_text, _sides, _size_text, _where)

# nccl-tests sets reportErrors = 0 for the in-place run of these (src/alltoall.cu, alltoallv.cu,
# sendrecv.cu): N/A there is by design, not validation switched off.
_INPLACE_UNCHECKED = frozenset(("alltoall", "alltoallv", "sendrecv"))


def _inplace_exempt(nccl, rows):
    """Whether in-place N/A is nccl-tests' own choice for this collective."""
    collective = nccl.get("collective")
    if collective:
        return collective in _INPLACE_UNCHECKED
    # Before 2025 the output does not name the collective: accept the by-design pattern only,
    # every in-place #wrong N/A while the out-of-place ones are counts.
    inplace = [row["ip"] for row in rows if isinstance(row.get("ip"), dict)]
    return bool(inplace) and all(side.get("wrong") is None and side.get("error") is None
                                 for side in inplace) \
        and all(is_number(row["oop"].get("wrong")) for row in rows if isinstance(row.get("oop"), dict))


def _scan_rows(rows, exempt):
    """(rows with wrong values and their count, row sides not checked, rows with an impossible
    #wrong and its problems); exempt: the in-place side is unchecked by nccl-tests' design."""
    wrong, unchecked, invalid = [], [], []
    for row in rows:
        problems = [p for p in row.get("problems") or () if "#wrong" in p or " error " in p]
        if problems:
            invalid.append((row, problems))
        total = 0
        for label, side in _sides(row):
            count, deviation = side.get("wrong"), side.get("error")
            if is_number(count) and count > 0:
                total += count
            checked = (is_number(count) and count >= 0) or (is_number(deviation) and deviation >= 0)
            named = any(p.startswith(label + " ") for p in problems)
            if not checked and not named and not (label == "in-place" and exempt):
                unchecked.append((row, label))
        if total:
            wrong.append((row, total))
    return wrong, unchecked, invalid


def _correctness(nccl, tool, rows, complete):
    results = []
    exempt = _inplace_exempt(nccl, rows)
    wrong, unchecked, invalid = _scan_rows(rows, exempt)
    oob = nccl.get("out_of_bounds")
    oob_lines = [s.get("text") for s in nccl.get("summaries") or []
                 if isinstance(s, dict) and s.get("kind") == "oob" and s.get("text")]
    if wrong:
        total = sum(n for _row, n in wrong)
        sizes = ", ".join(_size_text(row.get("size")) for row, _n in wrong[:4])
        results.append(check_result(
            "nccl.correctness", FAIL, "%s found %s wrong values in %d message sizes (%s%s): "
            "data corruption on a GPU or link" % (tool, fmt_num(total), len(wrong), sizes,
                                                  ", ..." if len(wrong) > 4 else ""),
            {"wrong_rows": len(wrong), "wrong_values": total},
            evidence=[_row_text(row) for row, _n in wrong]))
    flagged = [s for s in nccl.get("summaries") or [] if isinstance(s, dict)
               and s.get("kind") == "oob" and (s.get("status") or "OK") != "OK"]
    if is_number(oob) and oob > 0:
        results.append(check_result("nccl.correctness", FAIL, "%s reports %d out-of-bounds values"
                                    % (tool, oob), {"out_of_bounds": oob}, evidence=oob_lines))
    elif flagged:
        results.append(check_result("nccl.correctness", FAIL, "%s marks its Out of bounds values "
                                    "check %s" % (tool, flagged[0].get("status")),
                                    {"out_of_bounds": oob}, evidence=oob_lines))
    validation = nccl.get("validation")
    if validation == 0:
        results.append(check_result(
            "nccl.correctness", ERROR, "%s ran with validation off (validation: 0, -c 0): "
            "#wrong was not checked, correctness not proven" % tool, {"validation": 0},
            evidence=[nccl.get("header_text")]))
    elif unchecked:
        shown = ", ".join("%s %s" % (_where(row), label) for row, label in unchecked[:4])
        results.append(check_result(
            "nccl.correctness", ERROR, "%s: #wrong is N/A in %d row sides (%s%s)%s: the results "
            "were not checked, correctness not proven"
            % (tool, len(unchecked), shown, ", ..." if len(unchecked) > 4 else "",
               " although validation is on" if validation else ""),
            {"unchecked": len(unchecked), "validation": validation},
            evidence=[_row_text(row) for row, _label in unchecked]))
    if invalid:
        shown = "; ".join("%s: %s" % (_where(row), ", ".join(problems))
                          for row, problems in invalid[:3])
        results.append(check_result(
            "nccl.correctness", ERROR, "%s: #wrong is not a whole count >= 0 in %d rows (%s%s): "
            "implausible value, correctness not proven"
            % (tool, len(invalid), shown, "; ..." if len(invalid) > 3 else ""),
            {"invalid_rows": len(invalid)}, evidence=[_row_text(row) for row, _p in invalid]))
    if not results and complete and rows and is_number(oob) and oob == 0:
        results.append(check_result(
            "nccl.correctness", PASS, "%s checked every row (validation on): no wrong or "
            "out-of-bounds values in %d rows" % (tool, len(rows)),
            {"out_of_bounds": oob, "rows": len(rows)},
            evidence=[nccl.get("header_text")] + oob_lines))
    return results
