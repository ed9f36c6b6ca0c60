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
  run_id:
    description: This run's id (C(acceptance_run_id)); states of other runs are ignored. Empty accepts any.
    type: str
    default: ""
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

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _node_states(hostvars, nodes, run_id=""):
    if not isinstance(nodes, (list, tuple)):
        raise AnsibleFilterError("node_states: nodes must be a list, got %s" % type(nodes).__name__)
    return _run_state.node_states(hostvars, nodes, run_id=run_id)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"node_states": _node_states})
