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
  _input:
    description: C(hostvars).
    type: raw
    required: true
  nodes:
    description: The nodes to look at (for example C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
  stage:
    description: The stage.
    type: str
    required: true
  run_id:
    description: This run's id; states of other runs are ignored. Empty accepts any.
    type: str
    default: ""
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

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _stage_failed_nodes(hostvars, nodes, stage, run_id=""):
    if not isinstance(nodes, (list, tuple)):
        raise AnsibleFilterError("stage_failed_nodes: nodes must be a list, got %s" % type(nodes).__name__)
    return _run_state.stage_failed_nodes(_run_state.node_states(hostvars, nodes, run_id=run_id), str(stage))


class FilterModule(object):
    def filters(self):
        return guarded_filters({"stage_failed_nodes": _stage_failed_nodes})
