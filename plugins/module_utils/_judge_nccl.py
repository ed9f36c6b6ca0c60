# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge an nccl-tests run (parse_nccl_tests result) against the profile's bus-bandwidth floors.

- judge_nccl_single_node(nccl, profile): one node, all its GPUs (floor nccl.single_node_busbw_min,
  bound nccl.busbw_max_single_node)
- judge_nccl_pair(nccl, profile, nodes=2): several nodes over the network
  (floor nccl.multi_node_pair_busbw_min, bound nccl.busbw_max_multi_node)

Checks (each with evidence: the output lines it rests on):
- nccl.parse        output missing, or parts of it unreadable (garbled rows, missing summaries,
                    header, rank lines); reported next to the findings of the readable rest
- nccl.run          the test reported a failure (Test NCCL/CUDA failure, a crash, a launcher
                    reporting a dead rank, Avg bus bandwidth FAILED)
- nccl.correctness  fail: #wrong > 0 in any row, Out of bounds values > 0; error: validation off
                    (-c 0), #wrong N/A where nccl-tests checks (both out-of-place and in-place;
                    alltoall, alltoallv and sendrecv never check in-place), a #wrong that is not
                    a whole count >= 0; pass only when every row was checked and the output is
                    complete
- nccl.plausibility error: a negative or non-finite time or bandwidth, a busbw above the profile's
                    physical bound (implausible value)
- nccl.ranks        ranks in the run vs GPUs expected (one rank per GPU); several independent
                    runs in one output (nccl-tests built without MPI=1)
- nccl.busbw        large-message bus bandwidth vs the floor; error when values are implausible
                    or the largest messages are missing
A finding (fail) is reported even when other parts of the output are unreadable; a pass only
when the output is complete. For the comparison between nodes use
_judge_uniformity.judge_peers on the busbw values.

Parts, each a module of its own: _judge_nccl_correctness (nccl.correctness),
_judge_nccl_plausibility (the implausible values: plausibility_errors(parsed, max_busbw), which the
fabric stage calls for its multi-node runs, and ABSOLUTE_MAX_BUSBW), _judge_nccl_rows (how a row is
read and quoted).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, join_names, is_number, profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_correctness import _correctness
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_plausibility import (
    ABSOLUTE_MAX_BUSBW, _implausible)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_rows import _row_text, _rows, _size_text
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import (
    FAILURE_WORDS, GIB, parse_nccl_tests)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import is_crash_line
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvbandwidth import (
    TOOL as NVBANDWIDTH, judge_nvbandwidth, parse_nvbandwidth)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_errors import (
    TOOL_AFTER, TOOL_BEFORE, judge_nvlink_errors, parse_nvlink_errors)

_LINE = re.compile(r"^line (\d+): (?:incomplete or garbled table row: )?(.*)$")
_IMPLAUSIBLE = re.compile(r"implausible value|is not a whole count")
_CORRECTNESS = re.compile(r"^#wrong is nonzero|^line \d+: Out of bounds values: ")
# The parser's failure lines, and the summary lines it writes about them.
_RUN = re.compile(FAILURE_WORDS + r"|srun: error:|reported FAILED|more failure lines")


def _tool(nccl):
    program = nccl.get("program") if isinstance(nccl, dict) else None
    return program or "nccl-tests"


def _error_lines(errors, nccl=None):
    """The output lines parser errors point at ('line 14: <the line>')."""
    printed = {}
    for summary in (nccl or {}).get("summaries") or []:
        if isinstance(summary, dict) and summary.get("text"):
            printed[summary.get("line")] = summary["text"]
    found = []
    for error in errors:
        match = _LINE.match(error)
        if match:
            found.append(printed.get(int(match.group(1)), match.group(2)))
    return found


def _classify(errors):
    """(run failures, implausible values, unreadable parts) among the parser's errors."""
    run, implausible, unreadable = [], [], []
    for error in errors:
        body = _LINE.match(error)
        if _IMPLAUSIBLE.search(error):
            implausible.append(error)
        elif _CORRECTNESS.search(error):
            continue   # judged from the rows and the summary themselves
        elif _RUN.search(error) or (body and is_crash_line(body.group(2))):
            run.append(error)
        else:
            unreadable.append(error)
    return run, implausible, unreadable


def _ranks(nccl, tool, expected_ranks, complete, single_host=False):
    """The nccl.ranks results; a single-node run that spans hosts, or several independent runs,
    measured no one node's bandwidth (the caller then does not judge busbw)."""
    results = []
    nranks = nccl.get("nranks")
    ranks = [r for r in nccl.get("ranks") or [] if isinstance(r, dict)]
    rank_lines = [r.get("text") for r in ranks if r.get("text")]
    runs = nccl.get("independent_runs")
    if is_number(runs) and runs > 1:
        listed = [run for run in nccl.get("runs") or [] if isinstance(run, dict)]
        one_rank = listed and all(run.get("nranks") == 1 for run in listed)
        hosts = []
        for run in listed:
            for host in run.get("hosts") or []:
                if host not in hosts:
                    hosts.append(host)
        results.append(check_result(
            "nccl.ranks", FAIL, "%s output holds %d independent runs (%s%s): the ranks did not "
            "form one communicator; nccl-tests built without MPI=1?"
            % (tool, runs, "%d one-rank runs" % runs if one_rank else "%d runs" % runs,
               " on %s" % join_names(hosts) if hosts else ""),
            {"runs": runs, "hosts": hosts, "one_rank_runs": bool(one_rank)},
            evidence=[run.get("text") for run in listed if run.get("text")]
            or [row.get("text") for row in _rows(nccl)[:4]]))
        return results
    hosts = []
    for rank in ranks:
        if rank.get("host") and rank["host"] not in hosts:
            hosts.append(rank["host"])
    if single_host and len(hosts) > 1 and nranks == expected_ranks:
        # The right number of ranks, on several hosts: it would pass as one node's run.
        results.append(check_result(
            "nccl.ranks", FAIL, "%s ran across %d hosts (%s): not a single-node run, so its bus "
            "bandwidth is the network's, not this node's" % (tool, len(hosts), join_names(hosts)),
            {"hosts": hosts, "found": nranks, "not_single_node": True},
            evidence=rank_lines[:1] + rank_lines[-1:]))
        return results
    if expected_ranks is None or not (ranks or _rows(nccl)):
        return results   # nothing printed at all: nccl.parse says so
    if not is_number(nranks) or nranks == 0:
        results.append(check_result("nccl.ranks", ERROR, "%s: the number of ranks is unknown "
                                    "(no rank lines)" % tool, {"expected": expected_ranks}))
    elif nranks != expected_ranks:
        results.append(check_result(
            "nccl.ranks", FAIL, "%s ran on %d ranks, expected %d (one per GPU)"
            % (tool, nranks, expected_ranks), {"found": nranks, "expected": expected_ranks},
            evidence=rank_lines))
    elif complete:
        results.append(check_result("nccl.ranks", PASS, "%s ran on %d ranks" % (tool, nranks),
                                    {"found": nranks, "expected": expected_ranks},
                                    evidence=rank_lines[:1] + rank_lines[-1:]))
    return results


def _busbw(nccl, profile, floor_key, tool, what, rows, complete, implausible):
    floor = profile_get(profile, floor_key)
    busbw = nccl.get("large_msg_busbw")
    low = nccl.get("large_msg_min_bytes")
    large = [_row_text(row) for row in rows if is_number(low) and row.get("size", -1) >= low]
    metrics = {"busbw": busbw if is_number(busbw) else None, "floor": floor,
               "min_bytes": low if is_number(low) else None, "unit": "GB/s"}
    if implausible:
        return [check_result("nccl.busbw", ERROR, "%s: busbw not judged: implausible values in "
                             "the table (%s)" % (tool, implausible[0][0]), metrics,
                             evidence=[line for _s, line in implausible])]
    if floor is None:
        return [check_result("nccl.busbw", SKIP, "profile sets no %s floor" % floor_key, metrics)]
    if not is_number(busbw):
        if not rows:
            return []   # nccl.parse says why
        return [check_result("nccl.busbw", ERROR, "%s: no large-message bus bandwidth in the "
                             "output" % tool, metrics)]
    last = nccl.get("sweep_last_bytes")
    largest = max([row.get("size") for row in rows if is_number(row.get("size"))] or [0])
    if is_number(last) and largest < 0.75 * last:
        return [check_result(
            "nccl.busbw", ERROR, "%s: the rows of the largest messages are missing (largest "
            "read %s, the sweep goes to %s): busbw not judged" % (tool, _size_text(largest),
                                                                  _size_text(last)),
            metrics, evidence=large)]
    if not complete and not (is_number(low) and low >= GIB):
        return []   # a damaged output without its large messages says nothing about the floor
    at = " (messages of %s and up)" % _size_text(low) if is_number(low) else ""
    partial = "" if complete else ", from the rows that could be read"
    if busbw < floor:
        return [check_result("nccl.busbw", FAIL, "%s%s busbw %s GB/s%s is below the %s GB/s "
                             "floor%s" % (tool, what, fmt_num(busbw), at, fmt_num(floor), partial),
                             metrics, evidence=large)]
    if not complete:
        return []   # a pass needs the whole output
    return [check_result("nccl.busbw", PASS, "%s%s busbw %s GB/s%s meets the %s GB/s floor"
                         % (tool, what, fmt_num(busbw), at, fmt_num(floor)), metrics,
                         evidence=large)]


def judge_nccl(nccl, profile, floor_key, expected_ranks, what, bound_key=None, single_host=False):
    """Common body: floor_key names the profile floor, bound_key the physical busbw bound,
    what describes the run in messages; single_host: all ranks must be on one host."""
    tool = _tool(nccl)
    if nccl is None:
        return [check_result("nccl.parse", ERROR, "nccl-tests: no output was collected",
                             {"tool": "nccl-tests"})]
    if not isinstance(nccl, dict):
        return [check_result("nccl.parse", ERROR, "nccl-tests: expected a parsed result (dict), "
                             "got %s" % type(nccl).__name__, {"tool": "nccl-tests"})]
    errors = [str(e) for e in nccl.get("errors") or []]
    run_errors, _implausible_errors, unreadable = _classify(errors)
    rows = _rows(nccl)
    if run_errors:
        # A run that failed says why it has no table: that is nccl.run, not unreadable output.
        unreadable = [e for e in unreadable if e not in ("no data rows", "no Avg bus bandwidth summary: run incomplete?")]
    elif not rows and not unreadable:
        unreadable = ["no result rows"]
    complete = not unreadable
    bound = profile_get(profile, bound_key) if bound_key else None
    implausible = _implausible(nccl, bound if is_number(bound) else ABSOLUTE_MAX_BUSBW)
    results = []
    if run_errors:
        shown = "; ".join(run_errors[:2])
        if len(run_errors) > 2:
            shown += "; and %d more" % (len(run_errors) - 2)
        results.append(check_result("nccl.run", FAIL, "%s failed: %s" % (tool, shown),
                                    {"errors": run_errors}, evidence=_error_lines(run_errors, nccl)))
    results.extend(_correctness(nccl, tool, rows, complete))
    if implausible:
        shown = "; ".join(sentence for sentence, _line in implausible[:3])
        if len(implausible) > 3:
            shown += "; and %d more" % (len(implausible) - 3)
        results.append(check_result(
            "nccl.plausibility", ERROR, "%s: implausible value%s: %s"
            % (tool, "s" if len(implausible) > 1 else "", shown),
            {"implausible": len(implausible), "max_busbw": bound if is_number(bound) else None},
            evidence=[line for _sentence, line in implausible]))
    if unreadable:
        # Errors about something missing quote no line: show where the readable output ends.
        shown = _error_lines(unreadable, nccl) or [_row_text(row) for row in rows[-2:]] \
            or [r.get("text") for r in (nccl.get("ranks") or [])[-1:] if isinstance(r, dict)]
        results.append(check_result("nccl.parse", ERROR, "%s: output unreadable: %s"
                                    % (tool, "; ".join(unreadable)),
                                    {"tool": tool, "errors": unreadable}, evidence=shown))
    ranks = _ranks(nccl, tool, expected_ranks, complete, single_host)
    results.extend(ranks)
    apart = [r for r in ranks if r["status"] == FAIL and (r["metrics"].get("not_single_node")
                                                          or is_number(r["metrics"].get("runs")))]
    if apart:
        # Several independent runs, or one node's rank count spread over several hosts: no
        # number in it is this node's (an average over independent runs' rows is nobody's).
        results.append(check_result("nccl.busbw", SKIP, "%s: busbw not judged: the output is not one "
                                    "run on this node (see nccl.ranks)" % tool, {}, evidence=apart[0]["evidence"]))
    else:
        results.extend(_busbw(nccl, profile, floor_key, tool, what, rows, complete, implausible))
    return results


def judge_nccl_single_node(nccl, profile):
    """One node, one rank per GPU: correctness, ranks == gpus_per_node, busbw vs the floor."""
    gpus = profile_get(profile, "gpus_per_node")
    return judge_nccl(nccl, profile, "nccl.single_node_busbw_min", gpus, " single-node",
                      "nccl.busbw_max_single_node", single_host=True)


def judge_nccl_pair(nccl, profile, nodes=2):
    """nodes nodes over the network: ranks == nodes * gpus_per_node, busbw vs the pair floor."""
    gpus = profile_get(profile, "gpus_per_node")
    expected = gpus * nodes if gpus is not None else None
    return judge_nccl(nccl, profile, "nccl.multi_node_pair_busbw_min", expected,
                      " %d-node" % nodes, "nccl.busbw_max_multi_node")


def judge_nccl_single_node_stage(outputs, profile, options):
    """The nccl_single_node stage: (checks, metrics); busbw and NCCL version feed the peers."""
    text = outputs.get("all_reduce_perf")
    if text is None:
        return [check_result("nccl.parse", SKIP, "all_reduce_perf was not captured: bus "
                             "bandwidth and correctness not judged", tool="all_reduce_perf")], {}
    parsed = parse_nccl_tests(text)
    checks = judge_nccl_single_node(parsed, profile)
    metrics = {}
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    trusted = not parsed.get("errors") and not any(
        c["check"] == "nccl.plausibility" or (c["check"] == "nccl.busbw" and c["status"] == SKIP) for c in checks)
    if trusted and is_number(busbw):
        metrics["busbw"] = busbw
        # The curve the report draws, kept by the judge that read it (nobody parses the raw again).
        curve = _curve(parsed)
        for check in checks:
            if check["check"] == "nccl.busbw" and curve:
                check["metrics"]["curve"] = curve
    if parsed.get("version"):
        metrics["nccl_version"] = parsed.get("nccl_library") or parsed.get("version")
    for check in checks:  # the all-reduce's own results (the stage has the counter tools besides)
        check.setdefault("tool", "all_reduce_perf")
    # NVLink error counters around the all-reduce: a link that errs or retrains under this traffic.
    before, after = outputs.get(TOOL_BEFORE), outputs.get(TOOL_AFTER)
    checks.extend(judge_nvlink_errors(None if before is None else parse_nvlink_errors(before),
                                      None if after is None else parse_nvlink_errors(after),
                                      profile, during="all_reduce_perf"))
    # GPU-to-GPU copy bandwidth per pair (rack profiles, where the role runs nvbandwidth).
    text = outputs.get(NVBANDWIDTH)
    checks.extend(judge_nvbandwidth(None if text is None else parse_nvbandwidth(text), profile))
    if text is None and profile_get(profile, "nvlink.fabric") == "rack":
        checks.append(check_result("nvlink.bandwidth", SKIP, "nvbandwidth was not collected or is not installed: "
                                   "the NVLink bandwidth per GPU pair was not measured", tool=NVBANDWIDTH))
    return checks, metrics


def _curve(parsed):
    """[[bytes, GB/s], ...] by message size: out-of-place busbw, else in-place."""
    curve = []
    for row in parsed.get("rows") or []:
        side = row.get("oop") if isinstance(row.get("oop"), dict) else row.get("ip")
        busbw = side.get("busbw") if isinstance(side, dict) else None
        if is_number(row.get("size")) and row["size"] > 0 and is_number(busbw) and busbw >= 0:
            curve.append([row["size"], busbw])
    return curve
