# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of Slurm's view of the topology: what a running slurmctld uses, against the file and the bandwidth.

Private to the collection. Standard library only; pure functions.

* ``parse_scontrol_show_topology(text)``, ``compare_topology(shown, expected)``: what a running
  slurmctld uses against what was written; ``leaves_of`` gives its leaf switches and their nodes.
* ``check_pair_bandwidth(leaves, pair_busbw, ratio)``: node pairs Slurm puts on one leaf whose
  measured bandwidth is below ``ratio`` x the median intra-leaf pair bandwidth (the path looks
  cross-spine: the topology or the cabling is wrong).

It is apart from building a topology (_topology_model and its sources) because it checks one
that Slurm already runs with.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _stats
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import lines_of, new_result
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_common import (
    _expand_nodes, _short, _sorted)

DEFAULT_CROSS_LEAF_RATIO = 0.8

_SHOWN = re.compile(r"(\w+)=(\S*)")


def _block_entry(line, number, result):
    """One topology/block line of ``scontrol show topology`` (topology_block.c _print_topo_record):
    ``BlockName=b1 BlockIndex=0 Nodes=gpu[001-018] BlockSize=18`` (24.11+; 23.11/24.05 print no
    BlockSize; 25.05+ leave Nodes out of an empty block), and from 24.11 the aggregated levels after
    the base blocks, ``AggregatedBlock=b[1-2] BlockIndex=2 Nodes=... BlockSize=36``."""
    fields = dict((key.lower(), value) for key, value in _SHOWN.findall(line))
    aggregated = "aggregatedblock" in fields
    entry = {"name": fields.get("aggregatedblock" if aggregated else "blockname"), "aggregated": aggregated,
             "index": int(fields["blockindex"]) if fields.get("blockindex", "").isdigit() else None,
             "size": int(fields["blocksize"]) if fields.get("blocksize", "").isdigit() else None,
             "nodes": [], "line": number}
    try:
        entry["nodes"] = expand_hostlist(fields["nodes"]) if fields.get("nodes") not in (None, "", "(null)") else []
    except ValueError as exc:
        result["errors"].append("line %d: %s" % (number, exc))
    result["blocks"].append(entry)


def parse_scontrol_show_topology(text):
    """``scontrol show topology`` -> {switches: [{name, level, link_speed, nodes, switches}], blocks: [...]}.

    topology/tree: ``nodes`` of an upper switch are all nodes below it (Slurm prints them so);
    ``leaf`` tells switches without child switches. topology/block: ``blocks`` [{name, index, nodes,
    size, aggregated}] (_block_entry).
    """
    result = new_result(switches=[], blocks=[])
    for number, line in enumerate(lines_of(text or ""), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith(("BlockName=", "AggregatedBlock=")):
            _block_entry(line, number, result)
            continue
        if not line.startswith("SwitchName="):
            result["warnings"].append("line %d: not a switch or block line: %r" % (number, line[:120]))
            continue
        fields = dict((key.lower(), value) for key, value in _SHOWN.findall(line))
        entry = {"name": fields.get("switchname"), "level": None, "link_speed": None,
                 "nodes": [], "switches": [], "line": number}
        for key, target in (("level", "level"), ("linkspeed", "link_speed")):
            if fields.get(key, "").isdigit():
                entry[target] = int(fields[key])
        try:
            entry["nodes"] = expand_hostlist(fields.get("nodes", "")) if fields.get("nodes") not in (None, "(null)") else []
            entry["switches"] = expand_hostlist(fields.get("switches", "")) \
                if fields.get("switches") not in (None, "(null)") else []
        except ValueError as exc:
            result["errors"].append("line %d: %s" % (number, exc))
        entry["leaf"] = not entry["switches"]
        result["switches"].append(entry)
    if not result["switches"] and not result["blocks"] and not result["errors"]:
        result["errors"].append("no SwitchName= line: is TopologyPlugin=topology/tree set?")
    return result


def tree_errors(shown):
    """The errors of a parse_scontrol_show_topology result for a caller that needs a tree (leaf
    switches): its own, and ``scontrol`` showing topology/block instead."""
    errors = list(shown.get("errors") or [])
    if shown.get("blocks") and not shown.get("switches"):
        errors.append("scontrol show topology printed topology/block lines (BlockName=), no SwitchName= line: "
                      "TopologyPlugin is topology/block, not topology/tree (no leaf switches to read)")
    return errors


def shown_blocks(shown):
    """{base block: [nodes]} of a parse_scontrol_show_topology result (aggregated levels left out:
    they are unions of the base blocks)."""
    out = {}
    for block in shown.get("blocks") or []:
        if not block["aggregated"] and block["name"]:
            out.setdefault(block["name"], []).extend(block["nodes"])
    return out


def compare_topology(shown, expected):
    """Differences between Slurm's view and the expected model (or topology.conf text).

    ``shown``: parse_scontrol_show_topology result (or its text). Returns [sentence, ...]; [] when
    every switch has the same leaf nodes / child switches.
    """
    if isinstance(shown, str):
        shown = parse_scontrol_show_topology(shown)
    if isinstance(expected, str):
        expected = parse_slurm_topology(expected)
    want = dict((s["name"], s) for s in expected.get("switches") or [])
    have = dict((s["name"], s) for s in shown.get("switches") or [])
    problems = []
    for name in _sorted(want):
        if name not in have:
            problems.append("switch %s is in the file but not in Slurm's view" % name)
            continue
        w_switches = set(_expand_nodes(want[name].get("switches") or []))
        h_switches = set(have[name].get("switches") or [])
        if w_switches != h_switches:
            problems.append("switch %s: Slurm has child switches %s, the file %s"
                            % (name, _short(h_switches) or "none", _short(w_switches) or "none"))
        if not w_switches:
            w_nodes = set(_expand_nodes(want[name].get("nodes") or []))
            h_nodes = set(have[name].get("nodes") or [])
            if w_nodes != h_nodes:
                extra, missing = h_nodes - w_nodes, w_nodes - h_nodes
                problems.append("switch %s: Slurm's nodes differ from the file (%s%s)" % (
                    name, "only in Slurm: %s" % _short(extra) if extra else "",
                    ("; " if extra and missing else "") + ("missing in Slurm: %s" % _short(missing) if missing else "")))
    for name in _sorted(have):
        if name not in want:
            problems.append("switch %s is in Slurm's view but not in the file" % name)
    return problems


def leaves_of(shown):
    """{leaf switch: [nodes]} from a parse_scontrol_show_topology result or a model."""
    out = {}
    for switch in shown.get("switches") or []:
        if switch.get("switches"):
            continue
        out[switch["name"]] = _expand_nodes(switch.get("nodes") or [])
    return out


# ------------------------------------------------------------------------------ bandwidth

def _number(value):
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def check_pair_bandwidth(leaves, pair_busbw, ratio=DEFAULT_CROSS_LEAF_RATIO, min_pairs=3):
    """Pairs that Slurm places on one leaf but whose measured bandwidth looks cross-spine.

    ``leaves``: {leaf: [nodes]} (Slurm's view); ``pair_busbw``: {nodeA: {nodeB: GB/s}} (either
    direction; with both, the lower counts). Returns {median, threshold, pairs_checked, low_pairs:
    [{leaf, nodes: [a, b], busbw}], suspects: [nodes], warnings}. ``median`` is over all measured
    intra-leaf pairs; a pair below ``ratio`` x median is low. A node in low pairs with most of its
    measured leaf peers is named a suspect (probably on another leaf than Slurm thinks).
    """
    result = {"median": None, "threshold": None, "pairs_checked": 0, "low_pairs": [], "suspects": [],
              "warnings": []}
    if not pair_busbw:
        return result
    if not isinstance(pair_busbw, dict):
        raise TypeError("pair_busbw must be a mapping {nodeA: {nodeB: GB/s}}, got %s" % type(pair_busbw).__name__)
    ratio = _number(ratio)
    if ratio is None or not 0 < ratio <= 1:
        raise ValueError("cross_leaf_ratio must be a number in (0, 1], got %r" % (ratio,))
    measured = {}
    bad = 0
    for a, row in pair_busbw.items():
        if not isinstance(row, dict):
            bad += 1
            continue
        for b, value in row.items():
            number = _number(value)
            if number is None or a == b:
                bad += number is None
                continue
            key = tuple(sorted((str(a), str(b))))
            measured[key] = min(number, measured.get(key, number))
    if bad:
        result["warnings"].append("%d pair bandwidth value(s) are not numbers >= 0 and were ignored" % bad)
    pairs = []
    for leaf in _sorted(leaves):
        members = _sorted(set(leaves[leaf]))
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                key = (a, b) if (a, b) in measured else tuple(sorted((a, b)))
                if key in measured:
                    pairs.append((leaf, key, measured[key]))
    result["pairs_checked"] = len(pairs)
    if len(pairs) < min_pairs:
        result["warnings"].append("only %d measured node pair(s) share a leaf in Slurm's topology: too few to "
                                  "compare with the fabric (need %d)" % (len(pairs), min_pairs))
        return result
    median = _stats.median([value for _leaf, _key, value in pairs])
    threshold = ratio * median
    result["median"] = round(median, 3)
    result["threshold"] = round(threshold, 3)
    low_count = {}
    all_count = {}
    for leaf, (a, b), value in pairs:
        for node in (a, b):
            all_count[node] = all_count.get(node, 0) + 1
        if value < threshold:
            result["low_pairs"].append({"leaf": leaf, "nodes": [a, b], "busbw": value})
            for node in (a, b):
                low_count[node] = low_count.get(node, 0) + 1
            result["warnings"].append(
                "%s and %s are on leaf %s in Slurm's topology, but measured %.1f GB/s between them, below "
                "%.2f x the median intra-leaf %.1f GB/s: the path looks cross-spine (wrong leaf in "
                "topology.conf, or miscabled)" % (a, b, leaf, value, ratio, median))
    suspects = [node for node in _sorted(low_count) if low_count[node] * 2 > all_count[node]]
    result["suspects"] = suspects
    if suspects:
        result["warnings"].append("nodes slow to most of their leaf peers, probably placed on the wrong leaf: %s"
                                  % ", ".join(suspects))
    return result
