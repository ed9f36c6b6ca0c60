# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a Slurm topology.conf from a model, with compressed hostlists.

Private to the collection. ``render_slurm_topology(model, header)`` writes switches (topology/tree),
blocks and block sizes (topology/block) or rings (topology/ring) and refuses what slurmctld could
not read back (names with blanks, '#', quotes, a model for two plugins); parsing its text gives
the model back.

It is apart from the parser (_slurm_topology) and the checks (_slurm_topology_validate) because
writing goes the other way: a model in, text out.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import MAX_SWITCH_NAME
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import _names

_BAD_NAME_CHARS = frozenset(" \t\r\n\f\v#\"\\=[],")


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
