# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge an nccl-tests run (parse_nccl_tests result) against the profile's bus-bandwidth floors.

- judge_nccl_single_node(nccl, profile): one node, all its GPUs (floor nccl.single_node_busbw_min)
- judge_nccl_pair(nccl, profile, nodes=2): several nodes over the network
  (floor nccl.multi_node_pair_busbw_min)

Checks:
- nccl.parse        output missing, or unreadable for a reason other than a wrong result
- nccl.correctness  #wrong > 0 in any row, Out of bounds values > 0
- nccl.run          the test reported a failure (Test NCCL/CUDA failure, Avg bus bandwidth FAILED)
- nccl.ranks        ranks in the run vs GPUs expected (one rank per GPU)
- nccl.busbw        large-message bus bandwidth vs the floor
For the comparison between nodes use _judge_uniformity.judge_peers on the busbw values.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests

# Parser errors that describe a wrong or failed result (judged as fail), not unreadable output.
_RESULT_ERRORS = re.compile(
    r"#wrong is nonzero|Out of bounds values|Test (?:NCCL|CUDA) failure|Test failure|NCCL failure"
    r"|Cuda failure|CUDA failure|reported FAILED|Avg bus bandwidth .* reported|more failure lines")


def _tool(nccl):
    program = nccl.get("program") if isinstance(nccl, dict) else None
    return program or "nccl-tests"


def _size_text(size):
    if not is_number(size):
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return "%s %s" % (fmt_num(size / float(scale)), unit)
    return "%d B" % size


def judge_nccl(nccl, profile, floor_key, expected_ranks, what):
    """Common body: floor_key names the profile floor, what describes the run in messages."""
    tool = _tool(nccl)
    if nccl is None:
        return [check_result("nccl.parse", ERROR, "nccl-tests: no output was collected",
                             {"tool": "nccl-tests"})]
    if not isinstance(nccl, dict):
        return [check_result("nccl.parse", ERROR, "nccl-tests: expected a parsed result (dict), "
                             "got %s" % type(nccl).__name__, {"tool": "nccl-tests"})]
    errors = [str(e) for e in nccl.get("errors") or []]
    other = [e for e in errors if not _RESULT_ERRORS.search(e)]
    result_errors = [e for e in errors if _RESULT_ERRORS.search(e)]
    rows = nccl.get("rows") or []
    results = []

    # Correctness first: a wrong result is a failure even when the rest is unreadable.
    wrong_rows = []
    for row in rows:
        counts = [side.get("wrong") for side in (row.get("oop"), row.get("ip"))
                  if isinstance(side, dict) and is_number(side.get("wrong"))]
        if any(c > 0 for c in counts):
            wrong_rows.append((row.get("size"), sum(c for c in counts if c > 0)))
    oob = nccl.get("out_of_bounds")
    if wrong_rows:
        total = sum(n for _s, n in wrong_rows)
        sizes = ", ".join(_size_text(s) for s, _n in wrong_rows[:4])
        results.append(check_result(
            "nccl.correctness", FAIL, "%s found %d wrong values in %d message sizes (%s%s): "
            "data corruption on a GPU or link" % (tool, total, len(wrong_rows), sizes,
                                                  ", ..." if len(wrong_rows) > 4 else ""),
            {"wrong_rows": len(wrong_rows), "wrong_values": total}))
    if is_number(oob) and oob > 0:
        results.append(check_result("nccl.correctness", FAIL, "%s reports %d out-of-bounds values"
                                    % (tool, oob), {"out_of_bounds": oob}))
    run_errors = [e for e in result_errors if not re.search(r"#wrong|Out of bounds", e)]
    if run_errors:
        shown = "; ".join(run_errors[:2])
        if len(run_errors) > 2:
            shown += "; and %d more" % (len(run_errors) - 2)
        results.append(check_result("nccl.run", FAIL, "%s failed: %s" % (tool, shown),
                                    {"errors": run_errors}))
    if other:
        results.append(check_result("nccl.parse", ERROR, "%s: output unreadable: %s"
                                    % (tool, "; ".join(other)), {"tool": tool, "errors": other}))
        return results
    if not rows:
        results.append(check_result("nccl.parse", ERROR, "%s: no result rows" % tool,
                                    {"tool": tool}))
        return results
    if not any(r["check"] == "nccl.correctness" for r in results):
        results.append(check_result("nccl.correctness", PASS, "%s: no wrong or out-of-bounds "
                                    "values" % tool, {"out_of_bounds": oob}))

    nranks = nccl.get("nranks")
    if expected_ranks is not None:
        if not is_number(nranks) or nranks == 0:
            results.append(check_result("nccl.ranks", ERROR, "%s: the number of ranks is unknown"
                                        % tool, {"expected": expected_ranks}))
        elif nranks != expected_ranks:
            results.append(check_result(
                "nccl.ranks", FAIL, "%s ran on %d ranks, expected %d (one per GPU)"
                % (tool, nranks, expected_ranks), {"found": nranks, "expected": expected_ranks}))
        else:
            results.append(check_result("nccl.ranks", PASS, "%s ran on %d ranks" % (tool, nranks),
                                        {"found": nranks, "expected": expected_ranks}))
    runs = nccl.get("independent_runs")
    if is_number(runs) and runs > 1:
        results.append(check_result(
            "nccl.ranks", FAIL, "%s output holds %d independent runs: the ranks did not form one "
            "communicator (nccl-tests built without MPI=1?)" % (tool, runs), {"runs": runs}))

    floor = profile_get(profile, floor_key)
    busbw = nccl.get("large_msg_busbw")
    if floor is None:
        results.append(check_result("nccl.busbw", SKIP, "profile sets no %s floor" % floor_key,
                                    {"busbw": busbw}))
    elif not is_number(busbw):
        results.append(check_result("nccl.busbw", ERROR, "%s: no large-message bus bandwidth in "
                                    "the output" % tool, {"floor": floor}))
    else:
        metrics = {"busbw": busbw, "floor": floor, "min_bytes": nccl.get("large_msg_min_bytes"),
                   "unit": "GB/s"}
        sizes = nccl.get("large_msg_min_bytes")
        at = " (messages of %s and up)" % _size_text(sizes) if is_number(sizes) else ""
        if busbw < floor:
            results.append(check_result(
                "nccl.busbw", FAIL, "%s%s busbw %s GB/s%s is below the %s GB/s floor"
                % (tool, what, fmt_num(busbw), at, fmt_num(floor)), metrics))
        else:
            results.append(check_result(
                "nccl.busbw", PASS, "%s%s busbw %s GB/s%s meets the %s GB/s floor"
                % (tool, what, fmt_num(busbw), at, fmt_num(floor)), metrics))
    return results


def judge_nccl_single_node(nccl, profile):
    """One node, one rank per GPU: correctness, ranks == gpus_per_node, busbw vs the floor."""
    gpus = profile_get(profile, "gpus_per_node")
    return judge_nccl(nccl, profile, "nccl.single_node_busbw_min", gpus, " single-node")


def judge_nccl_pair(nccl, profile, nodes=2):
    """nodes nodes over the network: ranks == nodes * gpus_per_node, busbw vs the pair floor."""
    gpus = profile_get(profile, "gpus_per_node")
    expected = gpus * nodes if gpus is not None else None
    return judge_nccl(nccl, profile, "nccl.multi_node_pair_busbw_min", expected,
                      " %d-node" % nodes)


def judge_nccl_single_node_stage(outputs, profile, options):
    """The nccl_single_node stage: (checks, metrics); busbw and NCCL version feed the peers."""
    parsed = parse_nccl_tests(outputs["all_reduce_perf"])
    metrics = {}
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    if not parsed.get("errors") and busbw is not None:
        metrics["busbw"] = busbw
    if parsed.get("version"):
        metrics["nccl_version"] = parsed.get("nccl_library") or parsed.get("version")
    return judge_nccl_single_node(parsed, profile), metrics
