# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric stage's sections of the report's view, read from results.json's ``fabric`` block:
fabric_view (node verdicts and how the heatmap marks them, the pair matrix made symmetric, the
reference level, uplinks, the full-allocation run) and rounds_view (every group of every
localisation round with its status and raw output).

Apart from the other sections (_report_view builds the whole view from these and its own): the
fabric block's verdicts, group statuses and heatmap marks are named here, next to the code that
reads them; the charts that draw them are _report_svg.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import median_or_none as median
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_read import (
    CHECK_STATUSES, _absent, check_kind, checks_of, is_number, need, need_enum, need_names, need_strings)

FABRIC_VERDICTS = ("pinned", "suspect", "cleared", "untested", "error", "intermittent", "leaf")
GROUP_STATUSES = ("pass", "low", "unstable", "marginal", "timeout", "error", "not_replayable")
# How the heatmap marks a node, by its fabric verdict: outlined solid, outlined dashed, named only.
MARK_SOLID, MARK_DASHED, MARK_NAMED = "solid", "dashed", "named"
_MARKS = {"pinned": MARK_SOLID, "leaf": MARK_SOLID, "suspect": MARK_DASHED, "intermittent": MARK_DASHED, "error": MARK_NAMED}


def _pairs(fabric, path):
    """fabric.matrix made symmetric: {(first, second) sorted: GB/s or None}, a measured value first."""
    pairs = {}
    for first, row in need(fabric, "matrix", "object", path).items():
        check_kind(row, "object", "fabric/matrix/%s" % first)
        for second, value in row.items():
            check_kind(value, "number|null", "fabric/matrix/%s/%s" % (first, second))
            key = tuple(sorted((first, second)))
            if first != second and (key not in pairs or pairs[key] is None):
                pairs[key] = value
    return pairs


def _marks(fabric, nodes, path, problems):
    """{node: mark} by fabric verdict, every node fabric.pinned lists outlined solid; a contradiction
    between fabric.pinned and fabric.nodes goes into problems."""
    marks = dict((n, _MARKS[e["verdict"]]) for n, e in nodes.items() if e["verdict"] in _MARKS)
    pinned = need(fabric, "pinned", "object", path, required=False)
    if pinned is not None:
        listed = need_names(pinned, "nodes", "fabric/pinned")
        for node in listed:
            verdict = (nodes.get(node) or {}).get("verdict")
            if verdict != "pinned":
                problems.append("fabric/pinned/nodes names %s, whose fabric/nodes verdict is %s"
                                % (node, verdict or "missing"))
            marks[node] = MARK_SOLID
        for node, entry in nodes.items():
            if entry["verdict"] == "pinned" and node not in listed:
                problems.append("fabric/nodes/%s is pinned but fabric/pinned/nodes does not list it" % node)
    return marks


def _uplinks(fabric, path):
    uplinks = {}
    for leaf, entry in (need(fabric, "uplinks", "object", path, required=False) or {}).items():
        where = "fabric/uplinks/%s" % leaf
        uplinks[leaf] = {"verdict": need_enum(entry if isinstance(entry, dict) else None, "verdict", FABRIC_VERDICTS, where),
                         "evidence": need_strings(entry, "evidence", where, required=False) or []}
    return uplinks


def fabric_view(document):
    """The fabric block: node verdicts and marks, the pair matrix made symmetric, the reference."""
    if "fabric" not in document:
        return _absent(document, "fabric", "fabric block", "nothing to draw")
    fabric = need(document, "fabric", "object", "")
    path = "fabric"
    view = {"state": "ok", "status": need_enum(fabric, "status", CHECK_STATUSES, path), "problems": [],
            "mode": need(fabric, "mode", "string|null", path, required=False),
            "floor": need(fabric, "floor", "number|null", path, required=False),
            "warnings": need_strings(fabric, "warnings", path, required=False) or []}
    error = need(fabric, "error", "object|null", path, required=False)
    if error is not None:
        error = {"component": need(error, "component", "string", "fabric/error"),
                 "message": need(error, "message", "string", "fabric/error")}
    view["error"] = error
    preflight = need(fabric, "preflight", "object|null", path, required=False)
    view["preflight"] = None if preflight is None else {
        "status": need_enum(preflight, "status", CHECK_STATUSES, "fabric/preflight"),
        "message": need(preflight, "message", "string", "fabric/preflight")}
    nodes = {}
    for node, entry in need(fabric, "nodes", "object", path).items():
        where = "fabric/nodes/%s" % node
        nodes[node] = {"verdict": need_enum(entry if isinstance(entry, dict) else None, "verdict", FABRIC_VERDICTS, where),
                       "leaf": need(entry, "leaf", "string|null", where, required=False),
                       "evidence": need_strings(entry, "evidence", where, required=False) or []}
    view["nodes"] = nodes
    pairs = _pairs(fabric, path)
    names = set(nodes) | set(n for key in pairs for n in key)
    view["names"] = sorted(names, key=lambda n: (natural_key((nodes.get(n) or {}).get("leaf") or ""), natural_key(n)))
    view["leaf"] = dict((n, (nodes.get(n) or {}).get("leaf") or "") for n in names)
    view["pairs"] = pairs
    values = [v for v in pairs.values() if is_number(v)]
    reference = need(fabric, "reference", "number|null", path, required=False)
    if reference is not None and reference > 0:
        view["reference"], view["reference_source"] = reference, "the healthy level the judge used"
    elif values:
        view["reference"], view["reference_source"] = median(values), "the median of the pairs"
    else:
        view["reference"], view["reference_source"] = None, None
    marks = _marks(fabric, nodes, path, view["problems"])
    view["marks"] = marks
    view["pinned"] = sorted((n for n, m in marks.items() if m == MARK_SOLID), key=natural_key)
    view["per_node"] = dict((n, median([v for key, v in pairs.items() if n in key])) for n in names)
    view["per_node"] = dict((n, v) for n, v in view["per_node"].items() if v is not None)
    counts = {}
    for entry in nodes.values():
        counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1
    view["verdict_counts"] = counts
    view["uplinks"] = _uplinks(fabric, path)
    full = need(fabric, "full_allocation", "object|null", path, required=False)
    if full is not None:
        full = {"busbw": need(full, "busbw", "number|null", "fabric/full_allocation", required=False),
                "nodes": need(full, "nodes", "integer", "fabric/full_allocation", required=False),
                "status": need(full, "status", "string", "fabric/full_allocation", required=False)}
    view["full_allocation"] = full
    view["cluster_checks"] = [{"check": c.get("check"), "status": c["status"], "message": c.get("message", "")}
                              for c in checks_of(document) if c["stage"] == "fabric" and c["node"] is None]
    return view


def rounds_view(document):
    """fabric.rounds: every group of every round with its nodes, busbw, status and raw output."""
    if "fabric" not in document:
        return _absent(document, "fabric", "fabric block", "no localisation round to draw")
    fabric = need(document, "fabric", "object", "")
    raw = need(document, "raw", "object", "")
    stage_raw = raw.get("_fabric") if isinstance(raw.get("_fabric"), dict) else {}
    rounds = []
    for i, entry in enumerate(need(fabric, "rounds", "array", "fabric")):
        path = "fabric/rounds/%d" % i
        groups = []
        for j, group in enumerate(need(entry, "groups", "array", path)):
            where = "%s/groups/%d" % (path, j)
            key = need(group if isinstance(group, dict) else None, "raw", "string|null", where, required=False)
            raw_path = _results.raw_path("_fabric", key, stage_raw.get(key)) if key in stage_raw else None
            groups.append({"nodes": need_names(group, "nodes", where), "status": need_enum(group, "status", GROUP_STATUSES, where),
                           "busbw": need(group, "busbw", "number|null", where, required=False),
                           "note": need(group, "note", "string", where, required=False) or "",
                           "raw": raw_path if isinstance(raw_path, str) else None})
        rounds.append({"round": need(entry, "round", "integer", path), "groups": groups})
    view = {"state": "ok", "rounds": rounds, "groups": sum(len(r["groups"]) for r in rounds),
            "status": need_enum(fabric, "status", CHECK_STATUSES, "fabric")}
    counts = {}
    for entry in rounds:
        for group in entry["groups"]:
            counts[group["status"]] = counts.get(group["status"], 0) + 1
    view["status_counts"] = counts
    if not rounds:
        error = need(fabric, "error", "object|null", "fabric", required=False)
        why = [c.get("message", "") for c in checks_of(document) if c["stage"] == "fabric" and c["node"] is None
               and c["status"] != "pass"]
        view["state"] = "empty"
        view["text"] = "no localisation round ran%s" % (
            ": " + error["message"] if isinstance(error, dict) and error.get("message")
            else (": " + "; ".join(why)) if why else "")
    return view
