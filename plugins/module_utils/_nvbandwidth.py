# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvbandwidth: GPU-to-GPU copy bandwidth inside a node, parsed and judged per GPU pair.

The format (v0.2-v0.10; one block per test)::

    nvbandwidth Version: v0.8
    ...
    Device 0: NVIDIA A100-SXM4-80GB (00000000:34:00)
    Running device_to_device_memcpy_read_ce.
    memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)
               0         1
     0       N/A     26.34
     1     26.34       N/A

    SUM device_to_device_memcpy_read_ce 715.53

v0.8-v0.9 print the host's name on a line of its own before the devices; v0.9 adds
``COEFFICIENT_OF_VARIATION <test> <x>`` after a SUM; v0.10 prints ``CUDA Driver Version (API):`` and
no device list; bidirectional tests print three matrices (Read1/Read2/Total, ``SUM <test>_read1`` ...).

parse_nvbandwidth(text) -> {version, hostname, devices, tests: {name: {title, columns, matrix: {row: {col:
GB/s or None}}, sum, cv, waived}}, errors}: a matrix whose ``Running`` line is missing takes its name
from its SUM line; a test without its SUM line did not finish (an ASSERT, a CUDA error): it stays
in ``tests`` with ``sum`` None and its lines in ``errors``.

judge_nvbandwidth(parsed, profile) -> ``nvlink.bandwidth`` checks on ``device_to_device_memcpy_read_ce``:
a test that did not run or finish is an error; an off-diagonal N/A (no peer access) fails; a pair
below ``nvlink.d2d_read_ce_gb_s_min`` (null: no floor) or below 0.85 x the node's best pair (on an
NVSwitch board every pair reads alike: one far below the best is a slow link; the best, not the
median, because links down on one GPU slow most of a 4-GPU tray's pairs) fails, naming the pair. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, fmt_num, profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import median_or_none
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

CHECK = "nvlink.bandwidth"
TOOL = "nvbandwidth"
TEST = "device_to_device_memcpy_read_ce"
PEER_FRACTION = 0.85
# v0.10 prints "CUDA Runtime Version: 13.3 (13030)" and "CUDA Driver Version (API): 13.3 (13030)".
_HEADER = re.compile(r"^(nvbandwidth Version:|Built from Git version:|NOTE:|Additional system-specific|"
                     r"Performance can vary|CUDA Runtime Version:|CUDA Driver Version( \(API\))?:|Driver Version:|"
                     r"MPI version:|Process \d+ |\.\.\.$)")
# v0.8-v0.9 print the host's name alone on a line before the device list.
_HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
# v0.9+: the spread of a test's result after its SUM (v0.10: run to run), e.g.
# "COEFFICIENT_OF_VARIATION device_to_device_memcpy_read_ce 0.00".
_CV = re.compile(r"^COEFFICIENT_OF_VARIATION (\w+) (\d+(?:\.\d+)?)$")
_DEVICE = re.compile(r"^Device (\d+): (.+?)(?: \(([0-9a-fA-F:.]+)\))?$")
_RUNNING = re.compile(r"^Running (\w+)\.$")
_TITLE = re.compile(r"^memcpy (CE|SM) .*bandwidth \(GB/s\)$")
_COLUMNS = re.compile(r"^\d+(\s+\d+)*$")
_ROW = re.compile(r"^(\d+)((?:\s+(?:\d+(?:\.\d+)?|N/A))+)$")
_SUM = re.compile(r"^SUM (\w+) (\d+(?:\.\d+)?)$")


def _new_test():
    return {"title": None, "columns": [], "matrix": {}, "sum": None, "cv": None, "waived": False, "lines": []}


@capped(8)
def parse_nvbandwidth(text):
    """See the module docstring; never raises."""
    result = {"version": None, "hostname": None, "devices": {}, "tests": {}, "errors": []}
    current, name = None, None
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or _HEADER.match(line):
            if line.startswith("nvbandwidth Version:"):
                result["version"] = line.split(":", 1)[1].strip()
            continue
        if result["version"] and result["hostname"] is None and current is None and not result["tests"] \
                and not result["devices"] and _HOSTNAME.match(line):
            result["hostname"] = line
            continue
        match = _CV.match(line)
        if match and match.group(1) in result["tests"]:
            result["tests"][match.group(1)]["cv"] = float(match.group(2))
            continue
        match = _DEVICE.match(line)
        if match:
            result["devices"][int(match.group(1))] = {"name": match.group(2), "bus_id": match.group(3)}
            continue
        match = _RUNNING.match(line)
        if match:
            name, current = match.group(1), _new_test()
            result["tests"][name] = current
            continue
        if line == "Waived:" or line.startswith("Waived"):
            if current is not None and not current["matrix"]:
                current["waived"] = True
            continue
        if _TITLE.match(line):
            if current is None or current["title"] is not None:
                name, current = None, _new_test()  # a matrix whose Running line was elided
            current["title"] = line
            continue
        if current is not None and current["title"] and not current["columns"] and _COLUMNS.match(line):
            current["columns"] = [int(c) for c in line.split()]
            continue
        match = _ROW.match(line)
        if match and current is not None and current["columns"]:
            cells = match.group(2).split()
            current["matrix"][int(match.group(1))] = dict(
                (col, None if cell == "N/A" else float(cell)) for col, cell in zip(current["columns"], cells))
            current["lines"].append(line)
            continue
        match = _SUM.match(line)
        if match and current is not None:
            name = name or match.group(1)
            current["sum"] = float(match.group(2))
            result["tests"][match.group(1)] = current
            current = None
            continue
        result["errors"].append("line %d: %s" % (number, line[:160]))
    if not result["tests"] and not result["errors"]:
        result["errors"].append("no test ran: empty or not nvbandwidth output")
    return result


def _pairs(test):
    return [(row, col, value) for row, cols in sorted(test["matrix"].items())
            for col, value in sorted(cols.items()) if row != col]


def judge_nvbandwidth(parsed, profile, test=TEST):
    """nvlink.bandwidth checks for one node; [] when not collected (None)."""
    if parsed is None:
        return []
    block = parsed["tests"].get(test)
    if block is None or block["sum"] is None or not block["matrix"]:
        why = ("did not run" if block is None else "was waived" if block["waived"]
               else "did not finish (no SUM line)" if block["sum"] is None else "printed no matrix")
        return [check_result(CHECK, ERROR, "nvbandwidth %s %s%s: the NVLink bandwidth inside the node was not "
                             "measured" % (test, why, ": %s" % "; ".join(parsed["errors"][:2]) if parsed["errors"] else ""),
                             {"test": test}, component="nvbandwidth", evidence=parsed["errors"][:12], tool=TOOL)]
    pairs = _pairs(block)
    values = [v for _r, _c, v in pairs if v is not None]
    median = median_or_none(values)
    best = max(values) if values else None
    floor = profile_get(profile, "nvlink.d2d_read_ce_gb_s_min")
    results = []
    for row, col, value in pairs:
        problem = None
        if value is None:
            problem = "N/A (no peer access between them: NVLink/P2P unavailable)"
        elif floor and value < floor:
            problem = "%s GB/s, below the floor %s" % (fmt_num(value), fmt_num(floor))
        elif best and value < PEER_FRACTION * best:
            problem = "%s GB/s, below %.2f x the node's best pair %s GB/s" % (
                fmt_num(value), PEER_FRACTION, fmt_num(best))
        if problem:
            results.append(check_result(CHECK, FAIL, "GPU%d -> GPU%d %s: %s" % (row, col, test, problem),
                                        {"gb_s": value, "floor": floor, "best": best}, "GPU%d" % row,
                                        evidence=[block["title"], block["lines"][sorted(block["matrix"]).index(row)]],
                                        tool=TOOL))
    if parsed["errors"]:
        results.append(check_result(CHECK, ERROR, "nvbandwidth printed lines it does not print: %s (the rest is judged)"
                                    % "; ".join(parsed["errors"][:3]), {}, component="nvbandwidth",
                                    evidence=parsed["errors"][:12], tool=TOOL))
    if not values and not results:
        results.append(check_result(CHECK, ERROR, "nvbandwidth %s measured no GPU pair (one GPU, or a matrix of the "
                                    "diagonal only): the NVLink bandwidth inside the node was not measured" % test,
                                    {"test": test}, component="nvbandwidth", evidence=[block["title"]], tool=TOOL))
    if results:
        return results
    return [check_result(CHECK, PASS, "%s: %d GPU pairs, min %s, median %s GB/s%s (SUM %s)" % (
        test, len(pairs), fmt_num(min(values)), fmt_num(median), ", floor %s" % fmt_num(floor) if floor else "",
        fmt_num(block["sum"])), {"min": min(values), "median": median, "sum": block["sum"], "pairs": len(pairs)},
        evidence=[block["title"]] + block["lines"][:2] + ["SUM %s %s" % (test, block["sum"])], tool=TOOL)]
