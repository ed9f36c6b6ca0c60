# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse, check and write Slurm's topology.conf (topology/tree, topology/block, topology/ring).

Private to the collection. The grammar follows Slurm's config parser (parse_config.c) and the
topology plugins:

* Key names are case-insensitive; values are not. ``#`` starts a comment (``\\#`` is a literal
  ``#``); a line ending in an odd number of backslashes continues on the next line (joined with
  no space in between); a backslash escapes the next character.
* Each line is ``Key=Value`` pairs, values unquoted without whitespace or ``"quoted"``. The first
  key of a line picks its kind: ``SwitchName`` (with ``Switches``, ``Nodes``, ``LinkSpeed``),
  ``BlockName`` (with ``Nodes``), ``BlockSizes`` (alone) or ``RingName`` (with ``Nodes``).
* slurmctld stops (fatal) on an unrecognized key or any text it cannot read as Key=Value, so
  both are errors here. A file serves one plugin: lines of another kind are unrecognized keys
  for it.

``parse_slurm_topology`` reports what the file says and what slurmctld would refuse line by
line; ``validate_slurm_topology`` adds the whole-file checks (undefined child switches, loops,
nodes under two leaf switches, nodes missing from the topology or from the cluster);
``render_slurm_topology`` writes a file from a model with compressed hostlists.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    MAX_HOSTLIST_NAMES, compress_hostlist, expand_hostlist, hostlist_text)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    lines_of, new_result)

# slurmctld rejects longer switch names (HOST_NAME_MAX on Linux).
MAX_SWITCH_NAME = 64
# topology/ring holds at most this many nodes per ring (MAX_RING_SIZE).
MAX_RING_SIZE = 16
# BlockSizes may aggregate up to 2**15 base blocks (MAX_BLOCK_LEVELS 16).
MAX_BLOCK_LEVEL = 15

_PAIR = re.compile(r'\s*([A-Za-z0-9_.]+)\s*([-*+/]?)=\s*(?:"([^"]*)"|(\S+))(?=\s|$)')
_RECORD_KEYS = {"switchname": "switch", "blockname": "block", "ringname": "ring",
                "blocksizes": "block_sizes"}
_CANONICAL = {"switchname": "SwitchName", "switches": "Switches", "nodes": "Nodes",
              "linkspeed": "LinkSpeed", "blockname": "BlockName", "blocksizes": "BlockSizes",
              "ringname": "RingName"}
_SUB_KEYS = {"switch": ("switches", "nodes", "linkspeed"), "block": ("nodes",),
             "ring": ("nodes",), "block_sizes": ()}
_FAMILY = {"switch": "topology/tree", "block": "topology/block", "block_sizes": "topology/block",
           "ring": "topology/ring"}
_FAMILY_KEYS = {"topology/tree": "SwitchName", "topology/block": "BlockName/BlockSizes",
                "topology/ring": "RingName"}
_LACK_ACCESS = {"switch": "switches", "block": "Blocks", "ring": "Rings"}
_BAD_NAME_CHARS = frozenset(" \t\r\n\f\v#\"\\=[],")


# ----------------------------------------------------------------------------------- reading

def _strip_comment(line):
    """Cut at the first '#' not escaped by an odd run of backslashes."""
    backslashes = 0
    for index, char in enumerate(line):
        if char == "#" and backslashes % 2 == 0:
            return line[:index]
        backslashes = backslashes + 1 if char == "\\" else 0
    return line


def _unescape(line):
    out = []
    index = 0
    while index < len(line):
        if line[index] == "\\":
            index += 1
            if index >= len(line):
                break
        out.append(line[index])
        index += 1
    return "".join(out)


def _logical_lines(text, warnings):
    """[(first physical line number, text)] with comments cut and continuations joined."""
    logical = []
    pending = None
    start = None
    for number, raw in enumerate(lines_of(text), 1):
        line = _strip_comment(raw)
        trimmed = line.rstrip()
        backslashes = len(trimmed) - len(trimmed.rstrip("\\"))
        if start is None:
            start = number
            pending = ""
        if backslashes % 2 == 1:
            pending += trimmed[:-1]
            continue
        logical.append((start, _unescape(pending + line)))
        start = None
    if start is not None:
        warnings.append("line %d: the file ends in a continuation backslash" % start)
        logical.append((start, _unescape(pending)))
    return logical


def _pairs(line):
    """Key=Value pairs from the start of line, and whatever text follows them."""
    pairs = []
    pos = 0
    while True:
        match = _PAIR.match(line, pos)
        if not match:
            break
        value = match.group(3) if match.group(3) is not None else match.group(4)
        pairs.append((match.group(1), match.group(2), value))
        pos = match.end()
    return pairs, line[pos:].strip()


def _short(text, keep=60):
    return text if len(text) <= keep else text[:keep - 3] + "..."


# ----------------------------------------------------------------------------------- parsing

class _Reader(object):
    """State of one parse: the result under construction plus bookkeeping."""

    def __init__(self, result):
        self.result = result
        self.budget = MAX_HOSTLIST_NAMES
        self.defined = {"switch": {}, "block": {}, "ring": {}}
        self.families = {}
        self.block_sizes_line = None

    def error(self, number, message):
        self.result["errors"].append("line %d: %s" % (number, message))

    def warning(self, number, message):
        self.result["warnings"].append("line %d: %s" % (number, message))

    def expand(self, number, key, value):
        try:
            names = expand_hostlist(value, limit=self.budget)
        except ValueError as exc:
            self.error(number, "%s=%s is not a valid hostlist (%s); slurmctld stops on it"
                       % (key, _short(value), exc))
            return None
        self.budget -= len(names)
        odd = [name for name in names if "=" in name]
        if odd:
            self.error(number, "%s=%s holds '%s', which looks like another Key=Value: is a value "
                               "missing before it?" % (key, _short(value), _short(odd[0])))
        return names

    def line(self, number, text):
        stripped = text.strip()
        if stripped[:7].lower() == "include" and stripped[7:8].isspace():
            self.warning(number, "'%s' is not followed: switches or blocks in the included "
                                 "file are not checked" % _short(stripped))
            return
        pairs, rest = _pairs(text)
        if not pairs:
            if not stripped:
                return
            self.error(number, "cannot read '%s' as Key=Value pairs (slurmctld stops with "
                               "'Parse error in file')" % _short(stripped))
            return
        key, operator, value = pairs[0]
        kind = _RECORD_KEYS.get(key.lower())
        if kind is None:
            self.error(number, "unrecognized key '%s' (slurmctld stops with 'Parsing error at "
                               "unrecognized key: %s'); a line starts with SwitchName, BlockName, "
                               "BlockSizes or RingName" % (key, key))
            return
        self.families.setdefault(_FAMILY[kind], number)
        if operator:
            self.warning(number, "'%s%s=' is read as '%s='" % (key, operator, key))
        fields = {}
        for sub_key, sub_operator, sub_value in pairs[1:]:
            lowered = sub_key.lower()
            if lowered not in _SUB_KEYS[kind]:
                if kind == "block_sizes":
                    self.error(number, "unexpected '%s=' after BlockSizes (slurmctld stops with "
                                       "'Parse error in file'); BlockSizes stands on its own line"
                               % sub_key)
                else:
                    self.error(number, "unrecognized key '%s' on a %s line (slurmctld stops with "
                                       "'Parsing error at unrecognized key: %s'); allowed: %s"
                               % (sub_key, key, sub_key,
                                  ", ".join(_CANONICAL[k] for k in _SUB_KEYS[kind])))
                rest = ""  # slurmctld stops reading the line here: one error is enough
                break
            if sub_operator:
                self.warning(number, "'%s%s=' is read as '%s='" % (sub_key, sub_operator, sub_key))
            if lowered in fields:
                self.warning(number, "%s= is given twice; slurmctld uses the last value"
                             % _CANONICAL[lowered])
            fields[lowered] = sub_value
        if rest:
            self.error(number, "cannot read '%s' as Key=Value pairs (slurmctld stops with "
                               "'Parse error in file')" % _short(rest))
        getattr(self, "_" + kind)(number, value, fields)

    def _check_duplicate(self, kind, number, name, label):
        first = self.defined[kind].get(name)
        if first is not None:
            self.error(number, duplicate_message(label, name, first))
            return
        self.defined[kind][name] = number

    def _switch(self, number, name, fields):
        if len(name) > MAX_SWITCH_NAME:
            self.error(number, "SwitchName %s is longer than %d characters; slurmctld drops "
                               "this switch" % (_short(name), MAX_SWITCH_NAME))
            return
        if set(name) & set("[],"):
            self.warning(number, "SwitchName=%s is taken literally (switch names are not "
                                 "hostlists), so Switches= lists cannot refer to it" % name)
        has_nodes = "nodes" in fields
        has_switches = "switches" in fields
        if has_nodes and has_switches:
            self.error(number, "switch %s has both Nodes= and Switches= (slurmctld: 'switch %s "
                               "has both child switches and nodes'); it drops this switch"
                       % (name, name))
            return
        if not has_nodes and not has_switches:
            self.error(number, "switch %s has neither Nodes= nor Switches= (slurmctld: 'switch "
                               "%s has neither child switches nor nodes'); it drops this switch"
                       % (name, name))
            return
        link_speed = None
        if "linkspeed" in fields:
            raw = fields["linkspeed"]
            if re.match(r"^[0-9]+\Z", raw) and int(raw) < 2 ** 32:
                link_speed = int(raw)
            else:
                self.warning(number, "LinkSpeed=%s of switch %s is not a whole number below 2^32; "
                                     "slurmctld logs an error and ignores it" % (_short(raw), name))
        nodes = self.expand(number, "Nodes", fields["nodes"]) if has_nodes else []
        switches = self.expand(number, "Switches", fields["switches"]) if has_switches else []
        if nodes == [] and has_nodes:
            self.warning(number, "switch %s has an empty Nodes= list" % name)
        if switches == [] and has_switches:
            self.warning(number, "switch %s has an empty Switches= list" % name)
        self._check_duplicate("switch", number, name, "switch")
        self.result["switches"].append({"name": name, "nodes": nodes or [],
                                        "switches": switches or [],
                                        "link_speed": link_speed, "line": number})

    def _named_nodes(self, kind, number, name, fields):
        label = kind
        if "nodes" not in fields:
            self.error(number, "%s %s has no Nodes= (slurmctld: '%s %s hasn't got nodes')"
                       % (label, name, label, name))
            nodes = []
        else:
            nodes = self.expand(number, "Nodes", fields["nodes"])
            if nodes == []:
                self.warning(number, "%s %s has an empty Nodes= list" % (label, name))
            nodes = nodes or []
        self._check_duplicate(kind, number, name, label)
        return {"name": name, "nodes": nodes, "line": number}

    def _block(self, number, name, fields):
        self.result["blocks"].append(self._named_nodes("block", number, name, fields))

    def _ring(self, number, name, fields):
        ring = self._named_nodes("ring", number, name, fields)
        if len(ring["nodes"]) > MAX_RING_SIZE:
            self.error(number, "ring %s has %d nodes; slurmctld stops with 'Ring (%s) is bigger "
                               "than %d'" % (name, len(ring["nodes"]), name, MAX_RING_SIZE))
        self.result["rings"].append(ring)

    def _block_sizes(self, number, value, _fields):
        if self.block_sizes_line is not None:
            self.warning(number, "BlockSizes is set again (first on line %d); slurmctld uses "
                                 "the last value" % self.block_sizes_line)
        self.block_sizes_line = number
        items = [item for item in value.split(",") if item != ""]
        if not items or not all(re.match(r"^[0-9]+\Z", item) for item in items):
            self.error(number, "BlockSizes=%s is not a comma-separated list of whole numbers "
                               "(slurmctld stops with 'Invalid BlockSizes value')" % _short(value))
            self.result["block_sizes"] = []
            return
        sizes = [int(item) for item in items]
        self.result["block_sizes"] = sizes
        problem = block_sizes_problem(sizes)
        if problem:
            self.error(number, "BlockSizes=%s: %s (slurmctld stops with 'Invalid BlockSizes "
                               "value')" % (_short(value), problem))

    def finish(self):
        result = self.result
        if len(self.families) > 1:
            ordered = sorted(self.families.items(), key=lambda item: item[1])
            first_family, first_line = ordered[0]
            for family, number in ordered[1:]:
                self.error(number, "%s lines (%s) in a file that starts with %s lines (line %d): "
                                   "slurm.conf picks one TopologyPlugin and slurmctld stops on the "
                                   "other's keys as unrecognized"
                           % (_FAMILY_KEYS[family], family, _FAMILY_KEYS[first_family],
                              first_line))
        elif self.families:
            result["plugin"] = list(self.families)[0]
        if not (result["switches"] or result["blocks"] or result["rings"]):
            result["errors"].append(EMPTY_MESSAGE)
        return result


EMPTY_MESSAGE = ("no switches, blocks or rings defined (slurmctld stops with 'No switches "
                 "configured' or 'No blocks configured')")


def duplicate_message(label, name, first_line):
    """Shared by the parser and the validator so a duplicate is reported once."""
    capital = label.capitalize()
    return ("%s %s is already defined on line %d (slurmctld stops with '%s (%s) has already "
            "been defined')" % (label, name, first_line, capital, name))


def block_sizes_problem(sizes):
    """Why slurmctld rejects these BlockSizes, or None. The first size is the base block."""
    base = sizes[0] if sizes else 0
    for size in sizes:
        if size <= 0:
            return "%d is not a positive size" % size
        if size % base:
            return "%d is not a multiple of the base size %d" % (size, base)
        ratio = size // base
        if ratio & (ratio - 1):
            return "%d is not the base size %d times a power of two" % (size, base)
        if ratio > 2 ** MAX_BLOCK_LEVEL:
            return "%d is more than 2^%d times the base size %d" % (size, MAX_BLOCK_LEVEL, base)
    return None


@capped(2)
def parse_slurm_topology(text):
    """Parse topology.conf text.

    Returns {switches: [{name, nodes, switches, link_speed, line}], blocks: [{name, nodes,
    line}], block_sizes: [int], rings: [{name, nodes, line}], plugin: 'topology/tree' |
    'topology/block' | 'topology/ring' | None, errors, warnings}. nodes and switches are expanded
    hostlists; link_speed is an int or None. Lines slurmctld drops (a switch with both or neither
    of Nodes=/Switches=, a name over 64 characters) are reported in errors and left out.
    """
    result = new_result(switches=[], blocks=[], block_sizes=[], rings=[], plugin=None)
    reader = _Reader(result)
    for number, line in _logical_lines(text, result["warnings"]):
        reader.line(number, line)
    return reader.finish()


# -------------------------------------------------------------------------------- validation

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


# ---------------------------------------------------------------------------------- rendering

def _check_render_name(kind, name):
    if not isinstance(name, str) or not name:
        raise ValueError("every %s needs a non-empty string name, got %r" % (kind, name))
    bad = sorted(set(name) & _BAD_NAME_CHARS)
    if bad:
        raise ValueError("%s name %r contains %s, which topology.conf cannot hold"
                         % (kind, name, " and ".join(repr(char) for char in bad)))
    if kind == "switch" and len(name) > MAX_SWITCH_NAME:
        raise ValueError("switch name %r is longer than %d characters" % (name, MAX_SWITCH_NAME))


def _render_list(kind, name, key, value):
    names = _names(value)
    if not names:
        raise ValueError("%s %s has an empty %s list" % (kind, name, key))
    for item in names:
        if set(item) & set('#"\\='):
            raise ValueError("%s %s: name %r in %s cannot be written to topology.conf"
                             % (kind, name, item, key))
    return compress_hostlist(names)


DEFAULT_HEADER = ("topology.conf written by gpucluster.acceptance "
                  "(see 'man topology.conf'); edits are overwritten")


def render_slurm_topology(model, header=DEFAULT_HEADER):
    """Write topology.conf text from {switches: [{name, nodes | switches, link_speed?}],
    blocks: [{name, nodes}], block_sizes: [int], rings: [{name, nodes}]}.

    nodes and switches are lists of names or hostlist strings; they are written as compressed
    hostlists. One plugin per file: a model with switches and blocks (or rings) is a ValueError,
    as are names topology.conf cannot hold, a switch with both or neither of nodes/switches and
    an empty list. parse_slurm_topology(render_slurm_topology(model)) gives the model back.
    """
    if not isinstance(model, dict):
        raise TypeError("render_slurm_topology expects a mapping, got %s" % type(model).__name__)
    switches = model.get("switches") or []
    blocks = model.get("blocks") or []
    rings = model.get("rings") or []
    block_sizes = model.get("block_sizes") or []
    families = [name for name, present in (("switches", switches),
                                           ("blocks/block_sizes", blocks or block_sizes),
                                           ("rings", rings)) if present]
    if len(families) > 1:
        raise ValueError("a topology.conf serves one plugin; the model has %s"
                         % " and ".join(families))
    lines = []
    if header:
        lines.extend("# " + line if line else "#" for line in str(header).splitlines())
    for switch in switches:
        if not isinstance(switch, dict):
            raise TypeError("each switch must be a mapping, got %s" % type(switch).__name__)
        name = switch.get("name")
        _check_render_name("switch", name)
        has_nodes = bool(switch.get("nodes"))
        has_switches = bool(switch.get("switches"))
        if has_nodes == has_switches:
            raise ValueError("switch %s needs exactly one of nodes or switches" % name)
        if has_nodes:
            line = "SwitchName=%s Nodes=%s" % (name, _render_list("switch", name, "nodes",
                                                                  switch["nodes"]))
        else:
            line = "SwitchName=%s Switches=%s" % (name, _render_list("switch", name, "switches",
                                                                     switch["switches"]))
        speed = switch.get("link_speed")
        if speed is not None:
            if isinstance(speed, bool) or not isinstance(speed, int) or not 0 <= speed < 2 ** 32:
                raise ValueError("switch %s: link_speed must be a whole number below 2^32, got %r"
                                 % (name, speed))
            line += " LinkSpeed=%d" % speed
        lines.append(line)
    for kind, records in (("Block", blocks), ("Ring", rings)):
        for record in records:
            if not isinstance(record, dict):
                raise TypeError("each %s must be a mapping" % kind.lower())
            _check_render_name(kind.lower(), record.get("name"))
            lines.append("%sName=%s Nodes=%s" % (
                kind, record["name"],
                _render_list(kind.lower(), record["name"], "nodes", record.get("nodes"))))
    if block_sizes:
        if not isinstance(block_sizes, (list, tuple)) or not all(
                isinstance(size, int) and not isinstance(size, bool) and size > 0
                for size in block_sizes):
            raise ValueError("block_sizes must be a list of positive integers, got %r"
                             % (block_sizes,))
        lines.append("BlockSizes=%s" % ",".join(str(size) for size in block_sizes))
    return "\n".join(lines) + "\n"
