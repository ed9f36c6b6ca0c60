# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: passed_nodes
short_description: The nodes that passed every per-node stage of this run, for the controller stages
version_added: 0.3.0
description:
  - The controller stages (RDMA pairs, the fabric) test only the nodes that passed every per-node
    stage. This reads each node's C(collect_node_state) of this run, as the verdict does, and
    returns those nodes sorted; when no node reported a per-node stage (a run with C(--tags rdma)
    or C(--tags fabric) alone) it returns every node given.
extends_documentation_fragment:
  - gpucluster.acceptance.node_states
  - gpucluster.acceptance.node_states.run_id
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: The nodes the fabric stage tests
  ansible.builtin.set_fact:
    fabric_nodes: "{{ hostvars | gpucluster.acceptance.passed_nodes(acceptance_targets, run_id=acceptance_run_id) }}"
"""

RETURN = r"""
_value:
  description: Sorted node names.
  type: list
  elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, node_states_of


def _passed_nodes(hostvars, nodes, run_id=""):
    return _run_state.passed_nodes(node_states_of("passed_nodes", hostvars, nodes, run_id), nodes)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"passed_nodes": _passed_nodes})
