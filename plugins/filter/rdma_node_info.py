# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: rdma_node_info
short_description: Each node's NICs in rail order, their ports and nearest GPUs, for the RDMA pair stage
version_added: 0.1.0
description:
  - "From the node states of this run (the C(node_states) filter): the ports ibstat showed in the
    infiniband stage and the GPU nearest each NIC in the topology stage, as C({node: {nics, ports,
    gpus}}). Rail k is the k-th compute NIC: the profile's C(nic_names) order where it names them,
    else the port names sorted naturally, else C(mlx5_0..) for C(nics_per_node)."
  - Without a topology stage NIC k serves GPU k, as on HGX boards.
options:
  _input:
    description: Node states (C(node_states) filter output).
    type: dict
    required: true
  nodes:
    description: Nodes to describe.
    type: list
    elements: str
    required: true
  profile:
    description: The hardware profile (C(nic_names), C(nics_per_node)).
    type: dict
    required: true
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: NICs per rail of the nodes that passed
  ansible.builtin.set_fact:
    rdma_nodes: "{{ states | gpucluster.acceptance.rdma_node_info(passed, acceptance_profile_data) }}"
"""

RETURN = r"""
_value:
  description: "Node to C({nics: [names in rail order], ports: {name: {state, rate, ...}}, gpus: {nic: GPU index}})."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._rdma_plan import nodes_info
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _rdma_node_info(states, nodes, profile):
    if not isinstance(nodes, (list, tuple)) or not isinstance(profile, dict):
        raise AnsibleFilterError("rdma_node_info: nodes must be a list and profile a dict")
    return nodes_info(list(nodes), states if isinstance(states, dict) else {}, profile)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"rdma_node_info": _rdma_node_info})
