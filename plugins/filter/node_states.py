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
  - Reads the C(collect_node_state) fact that the stages leave on each node. A node that was
    unreachable or dropped out before its first stage has none and maps to None, so the verdict
    can count it as bad.
options:
  _input:
    description: C(hostvars).
    type: raw
    required: true
  nodes:
    description: The nodes the acceptance play targeted.
    type: list
    elements: str
    required: true
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Node states for the cluster-wide checks
  ansible.builtin.set_fact:
    states: "{{ hostvars | gpucluster.acceptance.node_states(acceptance_targets) }}"
"""

RETURN = r"""
_value:
  description: Node name to its state (a dict) or None.
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _node_states(hostvars, nodes):
    if not isinstance(nodes, (list, tuple)):
        raise AnsibleFilterError("node_states: nodes must be a list, got %s" % type(nodes).__name__)
    states = {}
    for node in nodes:
        try:
            state = hostvars[node].get("collect_node_state")
        except KeyError:
            state = None
        states[node] = state if isinstance(state, dict) else None
    return states


class FilterModule(object):
    def filters(self):
        return {"node_states": _node_states}
