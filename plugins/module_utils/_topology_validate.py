# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A provider's topology.conf checked against the fabric it describes and the bandwidth measured on it.

validate_against_fabric(conf_text, fabric_text, nodes=None, pair_busbw=None, ...) compares the
leaf switches of the file with the leaves ``ibnetdiscover`` shows. Switch names differ between a
provider's file (``s1``, ``ib-leaf-07``) and the fabric's descriptions, so each file switch is
matched with the fabric leaf that holds most of its nodes; then:

- ``misplaced``: a node under a file switch whose fabric leaf is another one: the file puts it with
  the wrong nodes, and Slurm's ``--switches`` and topology-aware placement go wrong for it;
- ``missing``: cluster nodes the fabric shows but no file switch holds;
- ``not_on_fabric``: nodes of the file the fabric does not show (adapter down, wrong name);
- ``unknown_leaves``: fabric leaves (with nodes) that no file switch matches: switches Slurm does
  not know; ``split``: a fabric leaf whose nodes the file spreads over several switches;
- evidence per misplaced node from the measured pair bandwidth (the fabric stage's
  ``fabric.matrix`` in results.json): its pairs with the nodes the file puts it with against its
  pairs with the nodes of its own fabric leaf; and the file's same-switch pairs that measured at a
  cross-spine level (_topology_slurm_view.check_pair_bandwidth).

Standard library only; nothing raises on odd input (unreadable parts are ``problems``).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import median_or_none
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_fabric import model_from_fabric
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    DEFAULT_CROSS_LEAF_RATIO, check_pair_bandwidth, leaves_of)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key


def _sorted(names):
    return sorted(names, key=natural_key)


def _measured(pair_busbw):
    """{frozenset((a, b)): GB/s} from {a: {b: GB/s}} (the lower of both directions)."""
    out = {}
    for a, row in (pair_busbw or {}).items():
        if not isinstance(row, dict):
            continue
        for b, value in row.items():
            if a == b or isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                continue
            key = frozenset((a, b))
            out[key] = min(float(value), out.get(key, float(value)))
    return out


def _pairs_with(node, others, measured):
    return [(other, measured[frozenset((node, other))]) for other in _sorted(others)
            if other != node and frozenset((node, other)) in measured]


def _show_pairs(node, pairs, limit=4):
    return ", ".join("%s-%s %.1f GB/s" % (node, other, value) for other, value in pairs[:limit]) + \
        (" (+%d more)" % (len(pairs) - limit) if len(pairs) > limit else "")


def _bandwidth_evidence(node, file_peers, fabric_peers, measured):
    """Sentences on what node measured with the file's switch-mates and with its fabric leaf's nodes."""
    with_file = _pairs_with(node, file_peers, measured)
    with_fabric = _pairs_with(node, fabric_peers, measured)
    lines = []
    if with_file:
        lines.append("measured with the nodes topology.conf puts it with: %s (median %.1f GB/s)"
                     % (_show_pairs(node, with_file), median_or_none([v for _o, v in with_file])))
    if with_fabric:
        lines.append("measured with the nodes of its fabric leaf: %s (median %.1f GB/s)"
                     % (_show_pairs(node, with_fabric), median_or_none([v for _o, v in with_fabric])))
    if with_file and with_fabric:
        ratio = median_or_none([v for _o, v in with_file]) / max(median_or_none([v for _o, v in with_fabric]), 1e-9)
        lines.append("its pairs with its topology.conf switch-mates run at %d %% of its pairs on its fabric leaf: "
                     "the path to them crosses a spine" % int(round(ratio * 100)) if ratio < 0.9 else
                     "its pairs with its topology.conf switch-mates run at %d %% of its pairs on its fabric leaf "
                     "(no oversubscription to show the spine)" % int(round(ratio * 100)))
    if not lines:
        lines.append("no measured pair bandwidth includes it")
    return lines


def validate_against_fabric(conf_text, fabric_text, nodes=None, pair_busbw=None, host_map=None,
                            cross_leaf_ratio=DEFAULT_CROSS_LEAF_RATIO):
    """{misplaced, missing, not_on_fabric, unknown_leaves, split, switch_map, bandwidth, problems, warnings, ok}."""
    out = {"misplaced": [], "missing": [], "not_on_fabric": [], "unknown_leaves": [], "split": [],
           "switch_map": {}, "bandwidth": {}, "problems": [], "warnings": [], "ok": False}
    conf = parse_slurm_topology(conf_text or "")
    out["problems"].extend("topology.conf: %s" % e for e in conf.get("errors") or [])
    out["warnings"].extend("topology.conf: %s" % w for w in conf.get("warnings") or [])
    file_leaves = leaves_of(conf)
    fabric = model_from_fabric(fabric_text or "", nodes=nodes, host_map=host_map)
    out["problems"].extend(p["message"] for p in fabric.get("problems") or [] if p.get("severity") == "fatal")
    out["warnings"].extend(fabric.get("warnings") or [])
    if not file_leaves:
        out["problems"].append("topology.conf has no leaf switch (SwitchName=... Nodes=...): nothing to compare")
    if not fabric.get("node_leaf"):
        out["problems"].append("the fabric shows no cluster node under a leaf switch: nothing to compare")
    if out["problems"]:
        return out
    node_fabric = fabric["node_leaf"]
    wanted = set(nodes) if nodes is not None else None
    node_file = {}
    for switch, members in file_leaves.items():
        for node in members:
            if wanted is None or node in wanted:
                node_file.setdefault(node, switch)
    # Match each file switch with the fabric leaf holding most of its nodes.
    for switch in _sorted(file_leaves):
        counts = {}
        for node in file_leaves[switch]:
            if node in node_fabric:
                counts[node_fabric[node]] = counts.get(node_fabric[node], 0) + 1
        if counts:
            out["switch_map"][switch] = sorted(counts, key=lambda leaf: (-counts[leaf], natural_key(leaf)))[0]
    by_leaf = {}
    for switch, leaf in out["switch_map"].items():
        by_leaf.setdefault(leaf, []).append(switch)
    for leaf in _sorted(by_leaf):
        if len(by_leaf[leaf]) > 1:
            out["split"].append({"leaf": leaf, "switches": _sorted(by_leaf[leaf])})
    fabric_members = {}
    for node, leaf in node_fabric.items():
        fabric_members.setdefault(leaf, []).append(node)
    for leaf in _sorted(fabric_members):
        if leaf not in by_leaf:
            out["unknown_leaves"].append({"leaf": leaf, "nodes": _sorted(fabric_members[leaf])})
    measured = _measured(pair_busbw)
    switch_of_leaf = dict((leaf, switches[0]) for leaf, switches in by_leaf.items())
    for node in _sorted(node_file):
        switch = node_file[node]
        if node not in node_fabric:
            out["not_on_fabric"].append({"node": node, "switch": switch})
            continue
        expected_leaf = out["switch_map"].get(switch)
        actual = node_fabric[node]
        if expected_leaf is None or actual == expected_leaf:
            continue
        file_peers = [n for n in file_leaves[switch] if node_fabric.get(n) == expected_leaf]
        entry = {"node": node, "switch": switch, "switch_leaf": expected_leaf, "fabric_leaf": actual,
                 "fabric_switch": switch_of_leaf.get(actual),
                 "evidence": _bandwidth_evidence(node, file_peers, fabric_members[actual], measured)}
        entry["message"] = "%s: topology.conf puts it under %s with %s (fabric leaf %s), the fabric has it on %s%s; %s" % (
            node, switch, compress_hostlist(_sorted(file_peers)) or "nobody", expected_leaf, actual,
            " (the file's %s)" % entry["fabric_switch"] if entry["fabric_switch"] else " (no switch in the file)",
            "; ".join(entry["evidence"]))
        out["misplaced"].append(entry)
    for node in _sorted(node_fabric):
        if node not in node_file:
            out["missing"].append({"node": node, "fabric_leaf": node_fabric[node],
                                   "fabric_switch": switch_of_leaf.get(node_fabric[node])})
    if measured:
        out["bandwidth"] = check_pair_bandwidth(file_leaves, dict(
            (a, dict((b, v) for b, v in row.items())) for a, row in (pair_busbw or {}).items() if isinstance(row, dict)),
            ratio=cross_leaf_ratio)
    out["ok"] = not (out["misplaced"] or out["missing"] or out["not_on_fabric"] or out["unknown_leaves"]
                     or out["split"])
    out["messages"] = summary_messages(out)
    return out


def summary_messages(out):
    """One sentence per finding, misplaced nodes first."""
    lines = [m["message"] for m in out["misplaced"]]
    if out["missing"]:
        lines.append("not in topology.conf, on the fabric: %s" % "; ".join(
            "%s (fabric leaf %s%s)" % (m["node"], m["fabric_leaf"], ", the file's %s" % m["fabric_switch"]
                                       if m["fabric_switch"] else "") for m in out["missing"][:20]))
    if out["not_on_fabric"]:
        lines.append("in topology.conf but not on the fabric (adapter down or another name?): %s" % ", ".join(
            "%s (%s)" % (m["node"], m["switch"]) for m in out["not_on_fabric"][:20]))
    for entry in out["unknown_leaves"]:
        lines.append("fabric leaf %s (%s) has no switch in topology.conf: a switch Slurm does not know"
                     % (entry["leaf"], compress_hostlist(entry["nodes"])))
    for entry in out["split"]:
        lines.append("topology.conf splits the nodes of fabric leaf %s over %s" % (entry["leaf"], ", ".join(entry["switches"])))
    return lines
