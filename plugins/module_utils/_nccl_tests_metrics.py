# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an nccl-tests run measured: its summary lines, #wrong rows and bus bandwidth metrics.

Private to _nccl_tests (GIB is public through it): _apply_summaries reads the Out of bounds and
Avg bus bandwidth lines, _check_rows the #wrong cells, _metrics the max and large-message busbw.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


GIB = 1 << 30


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
