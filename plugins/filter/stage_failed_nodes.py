# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: stage_failed_nodes
short_description: The nodes whose acceptance state says they failed (or errored in) a stage
version_added: 0.2.0
description:
  - Fail-fast's question, answered by the same bookkeeping as the verdict. It reads each node's
    C(collect_node_state) of this run (see M(gpucluster.acceptance.collect_stage)) and returns the
    sorted names of the nodes that failed the stage.
options:
  stage:
    description: The stage.
    type: str
    required: true
extends_documentation_fragment:
  - gpucluster.acceptance.node_states
  - gpucluster.acceptance.node_states.run_id
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Stop after this stage when a node failed it
  ansible.builtin.meta: end_play
  when: hostvars | gpucluster.acceptance.stage_failed_nodes(ansible_play_hosts, 'topology', run_id=acceptance_run_id) | length > 0
"""

RETURN = r"""
_value:
  description: Sorted node names.
  type: list
  elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, node_states_of


def _stage_failed_nodes(hostvars, nodes, stage, run_id=""):
    return _run_state.stage_failed_nodes(node_states_of("stage_failed_nodes", hostvars, nodes, run_id), str(stage))


class FilterModule(object):
    def filters(self):
        return guarded_filters({"stage_failed_nodes": _stage_failed_nodes})
