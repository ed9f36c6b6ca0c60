# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_topology_validate filter: a provider's topology.conf against the fabric and the measured pairs."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: slurm_topology_validate
version_added: 0.1.0
short_description: Check a provider's topology.conf against the discovered fabric and the measured pair bandwidth
description:
  - Matches each leaf switch of the file with the fabric leaf (from C(ibnetdiscover)) that holds
    most of its nodes (names differ between a provider's file and the switches' descriptions),
    then names the nodes under the wrong switch, the cluster nodes the file misses, the file's
    nodes the fabric does not show, the fabric leaves no switch of the file stands for (switches
    Slurm does not know), and leaves the file splits.
  - Each misplaced node gets the measured bandwidth as evidence - its pairs with the nodes the
    file puts it with against its pairs with the nodes of its fabric leaf - from O(pair_busbw) or
    the C(fabric.matrix) of an acceptance run's results.json (O(results)). No hand-typed matrix.
  - Unreadable input never raises; it is reported in C(problems).
options:
  _input:
    description: The topology.conf text to check.
    type: string
    required: true
  fabric:
    description: C(ibnetdiscover) output (topology format) of the fabric the file describes.
    type: string
    required: true
  nodes:
    description: The cluster's node names (list or hostlist expression); empty for every node found.
    type: raw
  pair_busbw:
    description: "Measured pair bandwidth, C({nodeA: {nodeB: GB/s}})."
    type: dict
    default: {}
  results:
    description: An acceptance run's results.json (a dict); its C(fabric.matrix) is used when O(pair_busbw) is empty.
    type: dict
    default: {}
  host_map:
    description: Host name in an adapter's description -> node name, where they differ.
    type: dict
    default: {}
  cross_leaf_ratio:
    description: A same-switch pair below this fraction of the median same-switch pair bandwidth looks cross-spine.
    type: float
    default: 0.8
author:
  - gpucluster.acceptance contributors
"""

EXAMPLES = r"""
- name: Check the provider's topology.conf against the fabric and the last acceptance run
  ansible.builtin.set_fact:
    topology_check: >-
      {{ lookup('ansible.builtin.file', '/etc/slurm/topology.conf')
         | gpucluster.acceptance.slurm_topology_validate(
             fabric=lookup('ansible.builtin.file', '/tmp/ibnetdiscover.txt'),
             results=lookup('ansible.builtin.file', 'artifacts/latest/results.json') | from_json) }}
"""

RETURN = r"""
_value:
  description: What differs between the file and the fabric, with the measured evidence.
  type: dict
  contains:
    ok:
      description: True when the file places every node as the fabric does.
      type: bool
    misplaced:
      description: Nodes under the wrong switch, each C({node, switch, switch_leaf, fabric_leaf, fabric_switch, evidence, message}).
      type: list
      elements: dict
    missing:
      description: Cluster nodes on the fabric that no file switch holds, each C({node, fabric_leaf, fabric_switch}).
      type: list
      elements: dict
    not_on_fabric:
      description: Nodes of the file the fabric does not show, each C({node, switch}).
      type: list
      elements: dict
    unknown_leaves:
      description: Fabric leaves with nodes that no file switch matches, each C({leaf, nodes}).
      type: list
      elements: dict
    split:
      description: Fabric leaves whose nodes the file spreads over several switches, each C({leaf, switches}).
      type: list
      elements: dict
    switch_map:
      description: File switch -> the fabric leaf it stands for.
      type: dict
    bandwidth:
      description: The file's same-switch pairs checked against the measured bandwidth (C(low_pairs), C(suspects), C(warnings)).
      type: dict
    messages:
      description: One sentence per finding.
      type: list
      elements: string
    problems:
      description: Input that could not be compared (unreadable file or fabric).
      type: list
      elements: string
    warnings:
      description: What was left out or looks odd.
      type: list
      elements: string
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import DEFAULT_CROSS_LEAF_RATIO
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_validate import validate_against_fabric
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def slurm_topology_validate(data, fabric=None, nodes=None, pair_busbw=None, results=None, host_map=None,
                            cross_leaf_ratio=DEFAULT_CROSS_LEAF_RATIO):
    """See DOCUMENTATION."""
    if not isinstance(data, string_types):
        raise AnsibleFilterError("slurm_topology_validate: the input must be topology.conf text, got %s"
                                 % type(data).__name__)
    if not isinstance(fabric, string_types):
        raise AnsibleFilterError("slurm_topology_validate: fabric must be ibnetdiscover output as a string")
    if results is not None and not isinstance(results, dict):
        raise AnsibleFilterError("slurm_topology_validate: results must be a results.json document (a dict)")
    pairs = pair_busbw or {}
    if not pairs and results:
        pairs = ((results.get("fabric") or {}).get("matrix")) or {}
    if isinstance(nodes, string_types):
        try:
            nodes = expand_hostlist(nodes)
        except ValueError as exc:
            raise AnsibleFilterError("slurm_topology_validate: nodes: %s" % exc)
    try:
        ratio = float(cross_leaf_ratio)
        return validate_against_fabric(str(data), str(fabric), nodes=list(nodes) if nodes else None,
                                       pair_busbw=pairs if isinstance(pairs, dict) else {},
                                       host_map=host_map or {}, cross_leaf_ratio=ratio)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("slurm_topology_validate: %s" % exc)


class FilterModule(object):
    """Ansible filter plugin entry point."""

    def filters(self):
        return guarded_filters({"slurm_topology_validate": slurm_topology_validate})
