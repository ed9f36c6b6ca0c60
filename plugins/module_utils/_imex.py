# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IMEX domain status (``nvidia-imex-ctl -N``) on rack-scale systems, parsed and judged per tray.

IMEX (the import/export daemon) shares GPU memory across the trays of a multi-node NVLink domain;
NCCL's multi-node NVLink needs it ("MNNVL ... is available but not working on this system. Check
the IMEX configuration (nvidia-imex-ctl -N)"). The format (driver 570, a legend, a time stamp, one
line per node of the IMEX domain, a connectivity matrix, the domain state)::

    Nodes:
    Node #0   - 172.31.48.81    - READY                - Version: 570.172
    ...
     Nodes From\\To  0   1
           0        C   C
           1        C   C

    Domain State: UP

parse_imex_status(text) -> {nodes: [{index, address, state, version}], matrix: {from: {to: code}},
domain_state, errors}. judge_imex(parsed) -> ``gpu.imex`` checks for the tray that ran it: output
without a domain state is an error (its own daemon did not answer: a daemon that is not running
prints an error instead), never a pass; a domain UP with every node READY and every cell C
(Connected) passes; a domain that is not (another node not READY, cells not C, ``node 2 -> node 5:
D (Disconnected)``) is a warning on the tray, not its failure: one stopped daemon degrades the
domain for all its trays, and failing (and draining) all of them for it would be wrong. The
domain's failure is the nvlink_domain stage's (``nvlink_domain.imex``), from imex_summary() of
each tray. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, PASS, check_result, join_names, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

CHECK = "gpu.imex"
TOOL = "imex-status"
CODES = {"C": "Connected", "I": "Invalid", "N": "Never Connected", "R": "Recovering", "D": "Disconnected",
         "A": "Authenticating", "!V!": "Version mismatch", "!M!": "Node map mismatch"}
_NODE = re.compile(r"^Node #(\d+)\s+-\s+(\S+)\s+-\s+(.+?)\s+-\s+Version:\s*(\S+)\s*$")
_HEADER = re.compile(r"^\s*Nodes From\\To\s+((?:\d+\s*)+)$")
_ROW = re.compile(r"^\s*(\d+)\s{2,}((?:(?:!?[A-Z]!?)\s*)+)$")
_STATE = re.compile(r"^Domain State:\s*(\S+)\s*$")
_LEGEND = re.compile(r"^(Connectivity Table Legend:|(?:!?[A-Z]!?) - |\d+/\d+/\d+ \d+:\d+:\d+(\.\d+)?$|Nodes:$)")


@capped(8)
def parse_imex_status(text):
    """{nodes, matrix, columns, domain_state, errors} (see the module docstring); never raises."""
    result = {"nodes": [], "matrix": {}, "columns": [], "domain_state": None, "errors": [], "lines": {}}
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or _LEGEND.match(line.strip()):
            continue
        match = _NODE.match(line.strip())
        if match:
            node = {"index": int(match.group(1)), "address": match.group(2), "state": match.group(3).strip(),
                    "version": match.group(4)}
            result["nodes"].append(node)
            result["lines"]["node%d" % node["index"]] = line.strip()
            continue
        match = _HEADER.match(line)
        if match:
            result["columns"] = [int(c) for c in match.group(1).split()]
            continue
        match = _ROW.match(line)
        if match and result["columns"]:
            cells = match.group(2).split()
            if len(cells) != len(result["columns"]):
                result["errors"].append("line %d: %d cells for %d columns: %s"
                                        % (number, len(cells), len(result["columns"]), line.strip()[:120]))
            result["matrix"][int(match.group(1))] = dict(zip(result["columns"], cells))
            continue
        match = _STATE.match(line.strip())
        if match:
            result["domain_state"] = match.group(1)
            result["lines"]["state"] = line.strip()
            continue
        result["errors"].append("line %d: not an nvidia-imex-ctl -N line: %s" % (number, line.strip()[:120]))
    if result["domain_state"] is None:
        result["errors"].append("no 'Domain State:' line: the IMEX daemon did not answer, or the output was cut off")
    return result


def _cells(parsed):
    bad = []
    for source in sorted(parsed["matrix"]):
        for target, code in sorted(parsed["matrix"][source].items()):
            if code != "C":
                bad.append("node %d -> node %d: %s (%s)" % (source, target, code, CODES.get(code, "unknown code")))
    return bad


def judge_imex(parsed, node_name=None):
    """gpu.imex checks for one tray's view of its IMEX domain; [] when not collected (None)."""
    if parsed is None:
        return []
    results = []
    if parsed["errors"]:
        results.append(check_result(CHECK, ERROR, "nvidia-imex-ctl -N: %s" % "; ".join(parsed["errors"][:3]),
                                    {"tool": TOOL}, component="imex", evidence=parsed["errors"][:12], tool=TOOL))
    if parsed["domain_state"] is None:
        return results
    not_ready = [n for n in parsed["nodes"] if n["state"] != "READY"]
    cells = _cells(parsed)
    missing_rows = sorted(set(n["index"] for n in parsed["nodes"]) - set(parsed["matrix"]))
    problems = []
    if parsed["domain_state"] != "UP":
        problems.append("IMEX Domain State %s" % parsed["domain_state"])
    if not_ready:
        problems.append("node(s) not READY: %s" % join_names(
            ["#%d %s %s" % (n["index"], n["address"], n["state"]) for n in not_ready], limit=12))
    if cells:
        problems.append("connections not C: %s" % join_names(cells, limit=12))
    if missing_rows:
        problems.append("no connectivity row for node(s) %s" % ", ".join(map(str, missing_rows)))
    if not parsed["nodes"]:
        problems.append("the IMEX domain lists no node")
    evidence = [parsed["lines"].get("state")] + [parsed["lines"]["node%d" % n["index"]] for n in not_ready]
    metrics = {"nodes": len(parsed["nodes"]), "domain_state": parsed["domain_state"]}
    if problems:
        results.append(warning_result(CHECK, "IMEX domain of %d node(s): %s: multi-node NVLink memory sharing "
                                      "(NCCL MNNVL) fails across it until it is UP (the domain fails in "
                                      "nvlink_domain.imex)" % (len(parsed["nodes"]), "; ".join(problems)),
                                      metrics, component="imex", evidence=[e for e in evidence if e] + cells[:8],
                                      tool=TOOL))
    elif not results:
        results.append(check_result(CHECK, PASS, "IMEX domain UP: %d node(s) READY, every connection C"
                                    % len(parsed["nodes"]), metrics,
                                    evidence=[parsed["lines"]["state"]] + [parsed["lines"]["node%d" % n["index"]]
                                                                           for n in parsed["nodes"][:2]], tool=TOOL))
    return results


def imex_summary(parsed):
    """{state, nodes, not_ready: ['#1 172.31.49.11 UNAVAILABLE'], bad_cells} of a readable output, else None."""
    if parsed is None or parsed["errors"] or parsed["domain_state"] is None:
        return None
    return {"state": parsed["domain_state"], "nodes": len(parsed["nodes"]),
            "not_ready": ["#%d %s %s" % (n["index"], n["address"], n["state"]) for n in parsed["nodes"]
                          if n["state"] != "READY"], "bad_cells": len(_cells(parsed))}
