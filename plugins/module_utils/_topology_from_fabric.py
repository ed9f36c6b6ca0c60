# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Slurm topology/tree model from the measured fabric (``ibnetdiscover``).

Private to the collection. Standard library only; pure functions.

``model_from_fabric(parsed_ibnetdiscover, ...)``: leaf switches are the ones with HCAs, named
from their description (``MF0;leaf01:MQM9700/U1`` -> ``leaf01``); each HCA's host comes from its
node description (``gpu001 mlx5_0``). Leaves that share hosts (rail-optimized fabrics: every node
has one NIC on each rail leaf of its scalable unit) are merged into one Slurm switch ``su-<first
leaf>``, so every node hangs off exactly one switch. Upper level: groups that share a spine form
a pod; one root switch joins the pods that are connected through switches (one per connected
fabric).

It is apart from the model from inventory labels (_topology_from_labels) because it reads a
different source; build_topology (_topology_model) picks one, renders and checks it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import (
    parse_ibnetdiscover)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import MAX_SWITCH_NAME
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import new_result
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_common import (
    DEFAULT_ROOT, _NAME_OK, _expand_nodes, _problem, _short, _sorted)

_MANAGED = re.compile(r"^MF0;([^:;]+):")
_DEFAULT_SWITCH_DESC = re.compile(r"^\s*$|Mellanox Technologies|^MT\d+\b|^Quantum\b|^SwitchX\b|^Infiniscale",
                                  re.IGNORECASE)


def switch_names(switches):
    """{guid: Slurm switch name} from ibnetdiscover switch descriptions, unique, <= 64 chars."""
    names = {}
    for switch in switches:
        desc = switch.get("name") or ""
        managed = _MANAGED.match(desc)
        if managed:
            name = _NAME_OK.sub("_", managed.group(1).strip()).strip("_")
        elif not _DEFAULT_SWITCH_DESC.search(desc):
            name = _NAME_OK.sub("_", desc.strip()).strip("_")
        else:
            name = ""
        if not name:
            name = "sw-%s" % switch["guid"][2:]
        names[switch["guid"]] = name[:MAX_SWITCH_NAME]
    counts = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    for guid, name in list(names.items()):
        if counts[name] > 1:
            suffix = "-" + guid[-6:]
            names[guid] = name[:MAX_SWITCH_NAME - len(suffix)] + suffix
    return names


class _Groups(object):
    """Union-find over hashable keys."""

    def __init__(self):
        self.parent = {}

    def add(self, key):
        self.parent.setdefault(key, key)

    def find(self, key):
        self.add(key)
        root = key
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[key] != root:
            self.parent[key], key = root, self.parent[key]
        return root

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def components(self):
        out = {}
        for key in self.parent:
            out.setdefault(self.find(key), []).append(key)
        return list(out.values())


def _node_name(host, host_map, strip_domain, known):
    """Slurm node name of an HCA host (mapped, domain stripped, matched case-insensitively)."""
    if host is None:
        return None
    for candidate in (host, host.split(".")[0] if strip_domain else host):
        if candidate in host_map:
            return host_map[candidate]
    name = host.split(".")[0] if strip_domain else host
    if known is not None and name not in known:
        lowered = dict((node.lower(), node) for node in known)
        return lowered.get(name.lower(), name)
    return name


def model_from_fabric(parsed, nodes=None, host_map=None, strip_domain=True, root_name=DEFAULT_ROOT):
    """topology/tree model from parse_ibnetdiscover's result (or the raw text).

    Returns {model: {switches}, leaves: {switch: [nodes]}, node_leaf: {node: switch},
    leaf_groups: {switch: [fabric leaf names]}, problems, errors, warnings}.
    """
    if isinstance(parsed, str):
        parsed = parse_ibnetdiscover(parsed)
    result = new_result(model={"switches": []}, leaves={}, node_leaf={}, leaf_groups={}, problems=[])
    host_map = dict(host_map or {})
    known = None if nodes is None else set(_expand_nodes(nodes))
    for message in parsed.get("errors") or []:
        result["problems"].append(_problem("fatal", "fabric_parse_error", "ibnetdiscover: %s" % message))
    for message in parsed.get("warnings") or []:
        result["warnings"].append("ibnetdiscover: %s" % message)
    switches = parsed.get("switches") or []
    names = switch_names(switches)
    leaf_guids = [guid for guid in parsed.get("leaf_switches") or [] if guid in names]
    if not leaf_guids:
        result["problems"].append(_problem(
            "fatal", "no_leaf_switches", "the fabric shows no leaf switch (no switch with a host adapter): "
                                         "is this ibnetdiscover's topology output of the compute fabric?"))
        return result
    leaf_set = set(leaf_guids)

    # host -> leaves it has a cable to
    hca_hosts = parsed.get("hca_hosts") or {}
    host_leaves = {}
    ignored = set()
    for link in parsed.get("links") or []:
        if link.get("kind") != "switch-hca" or link.get("a_guid") not in leaf_set:
            continue
        node = _node_name(hca_hosts.get(link.get("b_guid")), host_map, strip_domain, known)
        if node is None:
            continue
        if known is not None and node not in known:
            ignored.add(node)
            continue
        host_leaves.setdefault(node, set()).add(link["a_guid"])
    if ignored:
        result["warnings"].append("hosts on the fabric that are not cluster nodes, left out: %s" % _short(ignored))
    unnamed = sorted(g for g, h in hca_hosts.items() if h is None)
    if unnamed:
        result["warnings"].append("%d host adapter(s) with a default description (no host name) are left out; set "
                                  "their node description (e.g. /sys/class/infiniband/*/node_desc)" % len(unnamed))

    # leaves sharing a host -> one Slurm switch (rail groups)
    groups = _Groups()
    for guid in leaf_guids:
        groups.add(guid)
    for leaves in host_leaves.values():
        leaves = sorted(leaves)
        for other in leaves[1:]:
            groups.union(leaves[0], other)
    group_of = {}
    group_names = {}
    used_leaves = set()
    for guids in host_leaves.values():
        used_leaves |= guids
    for members in groups.components():
        if not used_leaves.intersection(members):
            continue  # a leaf whose hosts are all left out
        members = sorted(members, key=lambda g: natural_key(names[g]))
        name = names[members[0]] if len(members) == 1 else ("su-" + names[members[0]])[:MAX_SWITCH_NAME]
        group_names[name] = members
        for guid in members:
            group_of[guid] = name
    for name, members in group_names.items():
        result["leaf_groups"][name] = [names[g] for g in members]

    leaves = {}
    for node, guids in host_leaves.items():
        group = group_of[sorted(guids)[0]]
        leaves.setdefault(group, []).append(node)
        result["node_leaf"][node] = group
        width = len(group_names[group])
        if width > 1 and len(guids) < width:
            missing = [names[g] for g in group_names[group] if g not in guids]
            result["warnings"].append(
                "%s reaches %d of the %d leaves of %s (not %s): a rail link down or miscabled?"
                % (node, len(guids), width, group, ", ".join(missing)))
    # Upper levels: spines per group, pods of groups sharing a spine, one root per connected fabric.
    adjacency = {}
    for link in parsed.get("links") or []:
        if link.get("kind") == "switch-switch":
            adjacency.setdefault(link["a_guid"], set()).add(link["b_guid"])
            adjacency.setdefault(link["b_guid"], set()).add(link["a_guid"])
    fabric = _Groups()
    for guid in names:
        fabric.add(guid)
    for guid, peers in adjacency.items():
        for peer in peers:
            fabric.union(guid, peer)
    pods = _Groups()
    uplinks = {}
    for group, members in group_names.items():
        if group not in leaves:
            continue
        pods.add(group)
        ups = set()
        for guid in members:
            ups |= set(peer for peer in adjacency.get(guid, ()) if peer not in leaf_set)
        uplinks[group] = ups
    by_spine = {}
    for group, ups in uplinks.items():
        for spine in ups:
            by_spine.setdefault(spine, []).append(group)
    for spine, members in by_spine.items():
        for other in members[1:]:
            pods.union(members[0], other)

    switches_out = []
    for group in _sorted(leaves):
        leaves[group] = _sorted(leaves[group])
        switches_out.append({"name": group, "nodes": leaves[group]})
    pod_list = [_sorted(members) for members in pods.components()]
    pod_list.sort(key=lambda members: natural_key(members[0]))
    by_fabric = {}
    for members in pod_list:
        by_fabric.setdefault(fabric.find(group_names[members[0]][0]), []).append(members)
    fabrics = sorted(by_fabric.values(), key=lambda pods_: natural_key(pods_[0][0]))
    if len(fabrics) > 1:
        result["warnings"].append("the switches form %d separate fabrics (no switch path between them): %s; "
                                  "Slurm cannot place a job across them" % (
                                      len(fabrics), "; ".join(_short([g for pod in pods_ for g in pod])
                                                              for pods_ in fabrics)))
    used = set(s["name"] for s in switches_out)

    def fresh(name):
        name = name[:MAX_SWITCH_NAME]
        while name in used:
            name = name[:MAX_SWITCH_NAME - 1] + "_"
        used.add(name)
        return name

    for index, pods_ in enumerate(fabrics):
        root = root_name if index == 0 else "%s%d" % (root_name, index + 1)
        if len(pods_) == 1:
            # One pod: its spines are the top of this fabric (nothing above a single leaf group).
            if len(pods_[0]) > 1:
                switches_out.append({"name": fresh(root), "switches": pods_[0]})
            continue
        tops = []
        for members in pods_:
            if len(members) == 1:
                tops.append(members[0])
                continue
            spines = set()
            for group in members:
                spines |= uplinks[group]
            top = fresh("pod-" + _sorted(names[g] for g in spines)[0])
            switches_out.append({"name": top, "switches": members})
            tops.append(top)
        switches_out.append({"name": fresh(root), "switches": _sorted(tops)})
    result["model"]["switches"] = switches_out
    result["leaves"] = leaves
    return result
