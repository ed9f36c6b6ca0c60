# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""from_slurm_topology filter: topology.conf text -> switches/blocks plus the problems found."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_slurm_topology
version_added: 0.1.0
short_description: Parse and check a Slurm topology.conf
description:
  - Parses the text of a Slurm C(topology.conf) (topology/tree C(SwitchName) lines,
    topology/block C(BlockName) and C(BlockSizes) lines, topology/ring C(RingName) lines), with
    hostlists expanded.
  - Reports, line by line, what slurmctld would refuse (unrecognized keys, unreadable text, a
    switch with both or neither of C(Nodes=) and C(Switches=), duplicate names, invalid
    C(BlockSizes), lines of two plugins in one file) in C(errors).
  - Adds C(problems), the whole-file checks (child switches that are not defined, loops, nodes
    under two leaf switches, more than one root switch, an empty file) and, when O(nodes) is
    given, cluster nodes missing from the topology and topology nodes missing from the cluster.
  - Empty or garbled text gives a result with non-empty C(errors); it never fails. Only input
    that is not a string (a whole registered result instead of its C(.stdout)) or a malformed
    O(nodes) list fails.
positional: nodes
options:
  _input:
    description: The content of topology.conf, for example from C(ansible.builtin.slurp) (decoded)
      or the C(stdout) of C(cat /etc/slurm/topology.conf).
    type: string
    required: true
  nodes:
    description:
      - The cluster's node names, as a list or a hostlist expression (for example the output of
        C(sinfo -h -o %N)). When given, every node must be under a leaf switch (or in a block or
        ring) and every topology node must be a cluster node.
    type: raw
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Read topology.conf
  ansible.builtin.command: cat /etc/slurm/topology.conf
  register: topology_conf
  changed_when: false

- name: Check it against the cluster's nodes
  ansible.builtin.assert:
    that: topology.problems | selectattr('severity', 'equalto', 'fatal') | list | length == 0
    fail_msg: "{{ topology.problems | map(attribute='message') | list }}"
  vars:
    topology: >-
      {{ topology_conf.stdout
         | gpucluster.acceptance.from_slurm_topology(nodes=groups['gpu_nodes']) }}
"""

RETURN = r"""
_value:
  description: The parsed file and the problems found.
  type: dict
  contains:
    switches:
      description: One entry per SwitchName line slurmctld would keep, in file order.
      type: list
      elements: dict
      contains:
        name:
          description: The switch name.
          type: string
        nodes:
          description: Expanded C(Nodes=) hostlist (leaf switches); empty for upper switches.
          type: list
          elements: string
        switches:
          description: Expanded C(Switches=) hostlist (child switches); empty for leaf switches.
          type: list
          elements: string
        link_speed:
          description: C(LinkSpeed=) as an integer, or null when absent or not a number.
          type: int
        line:
          description: Line number of the entry in the file.
          type: int
    blocks:
      description: One entry per BlockName line, with C(name), expanded C(nodes) and C(line).
      type: list
      elements: dict
    block_sizes:
      description: C(BlockSizes=) as integers; empty when not set.
      type: list
      elements: int
    rings:
      description: One entry per RingName line, with C(name), expanded C(nodes) and C(line).
      type: list
      elements: dict
    plugin:
      description: The topology plugin the file is written for (C(topology/tree),
        C(topology/block), C(topology/ring)); null when empty or mixed.
      type: string
    errors:
      description: What slurmctld would refuse, each starting with its line number, for
        example C(line 12).
      type: list
      elements: string
    warnings:
      description: What slurmctld accepts but may not be intended.
      type: list
      elements: string
    problems:
      description: The parser's errors and warnings plus the whole-file checks.
      type: list
      elements: dict
      contains:
        severity:
          description: C(fatal) (slurmctld refuses it, or the topology misdescribes the cluster)
            or C(warning).
          type: string
        code:
          description: Short identifier of the check, for example C(undefined_child),
            C(node_multiple_leaves), C(node_not_in_topology), C(parse_error).
          type: string
        message:
          description: A sentence a person can act on.
          type: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import validate_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


def _parse_and_check(text, nodes=None):
    result = parse_slurm_topology(text)
    try:
        result["problems"] = validate_slurm_topology(result, nodes=nodes)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("from_slurm_topology: nodes: %s" % exc)
    return result


from_slurm_topology = text_filter("from_slurm_topology", _parse_and_check)


class FilterModule(object):
    """Ansible filter plugin entry point."""

    def filters(self):
        return guarded_filters({"from_slurm_topology": from_slurm_topology})
