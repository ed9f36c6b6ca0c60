# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whole-file checks of a Slurm topology.conf: what slurmctld would refuse, and what does not fit the cluster.

Private to the collection. ``validate_slurm_topology(parsed, nodes)`` takes parse_slurm_topology's
result (or a model shaped like it) and adds the checks no single line can show: undefined child
switches, loops, nodes under two leaf switches (or in two blocks or rings), blocks smaller than the
base block, more than one top of the tree, nodes missing from the topology or from the cluster.

It is apart from the parser (_slurm_topology) because it judges a whole topology, parsed or built
as a model, and from _topology_validate, which compares a file with the fabric it describes.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    expand_hostlist, hostlist_text)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import (
    EMPTY_MESSAGE, MAX_RING_SIZE, duplicate_message)

_LACK_ACCESS = {"switch": "switches", "block": "Blocks", "ring": "Rings"}


def _problem(severity, code, message):
    return {"severity": severity, "code": code, "message": message}


def _located(item, message):
    line = item.get("line") if isinstance(item, dict) else None
    if isinstance(line, int):
        return "line %d: %s" % (line, message)
    return message


def _names(value):
    """A list of names or a hostlist string -> list of names (ValueError when malformed)."""
    if value is None:
        return []
    if isinstance(value, str):
        return expand_hostlist(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        names = []
        for item in value:
            if not isinstance(item, str):
                raise TypeError("expected host names as strings, got %s" % type(item).__name__)
            names.extend(expand_hostlist(item) if set(item) & set("[],") else [item])
        return names
    raise TypeError("expected a list of names or a hostlist string, got %s" % type(value).__name__)


def _compressed(names):
    return hostlist_text(names)


def _records(parsed, key):
    items = parsed.get(key) or []
    if not isinstance(items, (list, tuple)):
        raise TypeError("%s must be a list, got %s" % (key, type(items).__name__))
    records = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise TypeError("each entry of %s must be a mapping with a string name" % key)
        records.append(item)
    return records


def _check_duplicates(records, label, code, problems):
    first = {}
    for record in records:
        name = record["name"]
        if name in first:
            line = first[name].get("line")
            if isinstance(line, int) and isinstance(record.get("line"), int):
                message = _located(record, duplicate_message(label, name, line))
            else:
                message = ("%s %s is defined more than once (slurmctld stops with '%s (%s) has "
                           "already been defined')" % (label, name, label.capitalize(), name))
            problems.append(_problem("fatal", code, message))
        else:
            first[name] = record


def _find_loops(children, problems):
    """Report each cycle in the child-switch graph once."""
    state = {}
    reported = set()
    for root in sorted(children):
        if state.get(root):
            continue
        stack = [(root, iter(children.get(root, ())))]
        path = [root]
        state[root] = 1
        while stack:
            node, child_iter = stack[-1]
            advanced = False
            for child in child_iter:
                if child not in children:
                    continue
                if state.get(child) == 1:
                    loop = path[path.index(child):] + [child]
                    key = frozenset(loop)
                    if key not in reported:
                        reported.add(key)
                        problems.append(_problem(
                            "fatal", "switch_loop",
                            "switches %s form a loop (slurmctld stops with 'Switch configuration "
                            "is not a tree')" % " -> ".join(loop)))
                    continue
                if not state.get(child):
                    state[child] = 1
                    path.append(child)
                    stack.append((child, iter(children.get(child, ()))))
                    advanced = True
                    break
            if not advanced:
                state[node] = 2
                path.pop()
                stack.pop()


def _reach(name, children, leaf_nodes):
    """Nodes under a switch through all its descendants (iterative: deep trees, loops)."""
    nodes = set()
    seen = set([name])
    todo = [name]
    while todo:
        current = todo.pop()
        nodes |= leaf_nodes.get(current, set())
        for child in children.get(current, ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return nodes


def _tree_problems(switches, problems):
    """Checks on switches alone; returns the set of nodes under any leaf switch."""
    _check_duplicates(switches, "switch", "duplicate_switch", problems)
    children = {}
    leaf_nodes = {}
    for switch in switches:
        children.setdefault(switch["name"], [])
        leaf_nodes.setdefault(switch["name"], set())
    for switch in switches:
        name = switch["name"]
        kids = list(switch.get("switches") or [])
        nodes = list(switch.get("nodes") or [])
        if kids and nodes:
            problems.append(_problem("fatal", "switch_both_children", _located(
                switch, "switch %s has both nodes and child switches (slurmctld drops it)" % name)))
        if name in kids:
            problems.append(_problem("fatal", "self_child", _located(
                switch, "switch %s lists itself as a child (slurmctld stops with 'Switch "
                        "configuration %s has invalid child (%s)')" % (name, name, name))))
        missing = [kid for kid in kids if kid not in children]
        if missing:
            problems.append(_problem("fatal", "undefined_child", _located(
                switch, "switch %s lists child switch%s %s, not defined by any SwitchName line "
                        "(slurmctld stops with 'Switch configuration %s has invalid child (%s)')"
                        % (name, "es" if len(set(missing)) > 1 else "", _compressed(missing), name,
                           missing[0]))))
        children[name].extend(kid for kid in kids if kid in children and kid != name)
        leaf_nodes[name].update(nodes)
    _find_loops(children, problems)

    owners = {}
    for switch in switches:
        if switch.get("switches"):
            continue
        for node in set(switch.get("nodes") or []):
            leaves = owners.setdefault(node, [])
            if switch["name"] not in leaves:  # a duplicate definition is reported on its own
                leaves.append(switch["name"])
    shared = {}
    for node, leaves in owners.items():
        if len(leaves) > 1:
            shared.setdefault(tuple(leaves), []).append(node)
    for leaves, nodes in sorted(shared.items()):
        problems.append(_problem(
            "fatal", "node_multiple_leaves",
            "node%s %s %s under more than one leaf switch (%s); a node hangs off one leaf "
            "(slurmctld only warns 'Multiple leaf switches contain nodes' and places jobs on a "
            "wrong tree)" % ("s" if len(nodes) > 1 else "", _compressed(nodes),
                             "are" if len(nodes) > 1 else "is", ", ".join(leaves))))

    all_nodes = set(owners)
    parents = set()
    for kids in children.values():
        parents.update(kids)
    roots = [switch["name"] for switch in switches if switch["name"] not in parents]
    roots = sorted(set(roots), key=roots.index)
    if len(roots) > 1 and all_nodes:
        complete = [root for root in roots if _reach(root, children, leaf_nodes) >= all_nodes]
        if complete:
            problems.append(_problem(
                "warning", "multiple_roots",
                "%d switches have no parent switch (%s); Slurm sees more than one top of the tree"
                % (len(roots), _compressed(roots))))
        else:
            problems.append(_problem(
                "warning", "multiple_roots",
                "no switch reaches all %d nodes: the top-level switches %s have no common parent, "
                "so no job can span them (slurmctld warns 'TOPOLOGY: no switch can reach all "
                "nodes through its descendants')" % (len(all_nodes), _compressed(roots))))
    return all_nodes


def _grouped_problems(records, label, code, problems):
    """Blocks and rings: duplicates and nodes in two of them; returns all their nodes."""
    _check_duplicates(records, label, code, problems)
    owners = {}
    for record in records:
        for node in set(record.get("nodes") or []):
            groups = owners.setdefault(node, [])
            if record["name"] not in groups:
                groups.append(record["name"])
    shared = {}
    for node, groups in owners.items():
        if len(groups) > 1:
            shared.setdefault(tuple(groups), []).append(node)
    for groups, nodes in sorted(shared.items()):
        problems.append(_problem(
            "fatal", "node_multiple_%ss" % label,
            "node%s %s %s in more than one %s (%s)" % (
                "s" if len(nodes) > 1 else "", _compressed(nodes),
                "are" if len(nodes) > 1 else "is", label, ", ".join(groups))))
    return set(owners)


def _block_size_problems(blocks, block_sizes, problems):
    if not isinstance(block_sizes, (list, tuple)) or not all(
            isinstance(size, int) and not isinstance(size, bool) for size in block_sizes):
        raise TypeError("block_sizes must be a list of integers")
    if block_sizes:
        base = block_sizes[0]
        origin = "the base block size %d (first of BlockSizes)" % base
    elif blocks:
        base = len(set(blocks[0].get("nodes") or []))
        origin = ("the base block size %d (taken from the first block, %s, as BlockSizes is not "
                  "set)" % (base, blocks[0]["name"]))
    else:
        return
    for block in blocks:
        count = len(set(block.get("nodes") or []))
        if 0 < count < base:
            problems.append(_problem("fatal", "block_too_small", _located(
                block, "block %s has %d nodes, fewer than %s: older slurmctld stops with 'children "
                       "count lower than bblock_node_cnt', newer ones cannot place a base-size job "
                       "in it" % (block["name"], count, origin))))
        elif count == 0:
            problems.append(_problem("warning", "empty_block", _located(
                block, "block %s has no nodes" % block["name"])))


def validate_slurm_topology(parsed, nodes=None):
    """Problems slurmctld would have with a parsed topology.conf, and mismatches with the cluster.

    `parsed` is parse_slurm_topology's result (or a model shaped like it); `nodes` is the
    cluster's node names (a list, or a hostlist string) or None to skip the coverage checks.
    Returns [{severity: 'fatal'|'warning', code, message}]: the parser's errors (fatal) and
    warnings first, then whole-file checks. 'fatal' means slurmctld refuses the file or the
    topology does not describe the cluster correctly (a node under two leaf switches, a cluster
    node under none); 'warning' means it runs but something may not be intended.
    Raises TypeError/ValueError for input that is not a topology or a malformed node list.
    """
    if not isinstance(parsed, dict):
        raise TypeError("validate_slurm_topology expects the parsed topology (a dict), got %s"
                        % type(parsed).__name__)
    cluster = None if nodes is None else set(_names(nodes))
    switches = _records(parsed, "switches")
    blocks = _records(parsed, "blocks")
    rings = _records(parsed, "rings")

    structural = []
    covered = set()
    if switches:
        covered |= _tree_problems(switches, structural)
    if blocks:
        covered |= _grouped_problems(blocks, "block", "duplicate_block", structural)
    if blocks or parsed.get("block_sizes"):
        _block_size_problems(blocks, list(parsed.get("block_sizes") or []), structural)
    if rings:
        covered |= _grouped_problems(rings, "ring", "duplicate_ring", structural)
        for ring in rings:
            count = len(ring.get("nodes") or [])
            if count > MAX_RING_SIZE:
                structural.append(_problem("fatal", "ring_too_big", _located(
                    ring, "ring %s has %d nodes; slurmctld stops with 'Ring (%s) is bigger than %d'"
                          % (ring["name"], count, ring["name"], MAX_RING_SIZE))))
    if not (switches or blocks or rings):
        structural.append(_problem("fatal", "empty", EMPTY_MESSAGE))

    if cluster is not None:
        kind = "switch" if switches else ("block" if blocks else "ring")
        missing = cluster - covered
        if missing and (switches or blocks or rings):
            structural.append(_problem(
                "fatal", "node_not_in_topology",
                "cluster node%s %s %s in no %s%s: the topology must cover every node (slurmctld "
                "warns '%s lack access to %d nodes' and cannot place multi-node jobs on them)"
                % ("s" if len(missing) > 1 else "", _compressed(missing),
                   "are" if len(missing) > 1 else "is", "leaf " if kind == "switch" else "",
                   kind, _LACK_ACCESS[kind], len(missing))))
        extra = covered - cluster
        if extra:
            structural.append(_problem(
                "warning", "node_not_in_cluster",
                "topology node%s %s %s not in the cluster's node list (slurmctld warns 'Invalid "
                "hostnames in %s configuration' and ignores them)"
                % ("s" if len(extra) > 1 else "", _compressed(extra),
                   "are" if len(extra) > 1 else "is", kind)))

    seen = set(problem["message"] for problem in structural)
    problems = []
    for message in parsed.get("errors") or []:
        if message not in seen:
            problems.append(_problem("fatal", "parse_error", message))
    for message in parsed.get("warnings") or []:
        problems.append(_problem("warning", "parse_warning", message))
    problems.extend(structural)
    return problems
