# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: node_states
short_description: Collect every node's acceptance state from hostvars, None for nodes that never reported
version_added: 0.1.0
description:
  - Reads the C(collect_node_state) fact that the stages leave on each node (at the top level, or
    under C(ansible_facts) when C(inject_facts_as_vars) is off). A node that was
    unreachable or dropped out before its first stage has none and maps to None, so the verdict
    can count it as bad.
  - With O(run_id), a state left by another run (a persistent fact cache or AWX fact storage
    keeps facts between runs) counts as none, so an old pass never stands in for this run.
extends_documentation_fragment:
  - gpucluster.acceptance.node_states
  - gpucluster.acceptance.node_states.run_id
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Node states for the cluster-wide checks
  ansible.builtin.set_fact:
    states: "{{ hostvars | gpucluster.acceptance.node_states(acceptance_targets, run_id=acceptance_run_id) }}"
"""

RETURN = r"""
_value:
  description: Node name to its state (a dict) or None.
  type: dict
"""

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, node_states_of


def _node_states(hostvars, nodes, run_id=""):
    return node_states_of("node_states", hostvars, nodes, run_id)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"node_states": _node_states})
