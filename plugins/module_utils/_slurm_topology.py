# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse Slurm's topology.conf (topology/tree, topology/block, topology/ring).

Private to the collection. The grammar follows Slurm's config parser (parse_config.c) and the
topology plugins:

* Key names are case-insensitive; values are not. Comments, escapes, continuation lines and
  the Key=Value pairs are read by _slurm_topology_syntax.
* The first key of a line picks its kind: ``SwitchName`` (with ``Switches``, ``Nodes``,
  ``LinkSpeed``), ``BlockName`` (with ``Nodes``), ``BlockSizes`` (alone) or ``RingName`` (with
  ``Nodes``).
* slurmctld stops (fatal) on an unrecognized key or any text it cannot read as Key=Value, so
  both are errors here. A file serves one plugin: lines of another kind are unrecognized keys
  for it.

``parse_slurm_topology`` reports what the file says and what slurmctld would refuse line by
line. The whole-file checks (undefined child switches, loops, nodes under two leaf switches,
nodes missing from the topology or from the cluster) are validate_slurm_topology in
_slurm_topology_validate; writing a file from a model is render_slurm_topology in
_slurm_topology_render.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    MAX_HOSTLIST_NAMES, expand_hostlist)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_syntax import (
    _logical_lines, _pairs)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped, new_result

# slurmctld rejects longer switch names (HOST_NAME_MAX on Linux).
MAX_SWITCH_NAME = 64
# topology/ring holds at most this many nodes per ring (MAX_RING_SIZE).
MAX_RING_SIZE = 16
# BlockSizes may aggregate up to 2**15 base blocks (MAX_BLOCK_LEVELS 16).
MAX_BLOCK_LEVEL = 15

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
