# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: judge_stage
short_description: Parse and judge one acceptance stage's tool outputs for one node
version_added: 0.1.0
description:
  - Splits the collector's output into tools, turns tools that timed out, are missing or were
    cut off into C(error) results naming the node, stage and tool, parses each output with the
    collection's parsers and judges it against the hardware profile.
  - Returns the node's state with this stage folded in, C(failed_stages), C(stages) (status and
    metrics per stage) and C(last) (this stage's checks and raw outputs, read by the report callback).
options:
  _input:
    description: The node's state so far (an empty dict for the first stage).
    type: dict
    required: true
  stage:
    description: Stage name, one of preflight, topology, gpu_health, dcgm, infiniband, nccl_single_node.
    type: str
    required: true
  collected:
    description: The collector's stdout, or a replayed C({tools, errors}) dict.
    type: raw
    required: true
  profile:
    description: The merged hardware profile.
    type: dict
    required: true
  options:
    description: Stage options (for example the DCGM level run, required tools).
    type: dict
  node:
    description: The node's name, used in messages.
    type: str
  run_id:
    description:
      - This run's id. A state that carries another run's id (left by an earlier run in a
        persistent fact cache) is dropped instead of folded in; the new state carries this id.
    type: str
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Judge the topology stage
  ansible.builtin.set_fact:
    collect_node_state: >-
      {{ collect_node_state | default({}) | gpucluster.acceptance.judge_stage('topology', collected.stdout,
         acceptance_profile_data, node=inventory_hostname) }}
"""

RETURN = r"""
_value:
  description: The node's state.
  type: dict
  contains:
    failed_stages:
      description: Stages with a failed or errored check.
      type: list
      elements: str
    stages:
      description: Per stage, C(status) (worst check) and C(metrics) used by the cluster-wide checks.
      type: dict
    last:
      description: This stage's C(checks) and C(raw) tool outputs.
      type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import judge_stage
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _judge_stage(state, stage, collected, profile, options=None, node="node", run_id=None):
    if not isinstance(collected, (str, dict)):
        raise AnsibleFilterError("judge_stage: collected must be the collector's stdout (a string), got %s"
                                 % type(collected).__name__)
    try:
        return judge_stage(state, stage, collected, profile, options=options, node=node, run_id=run_id)
    except ValueError as exc:
        raise AnsibleFilterError("judge_stage: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"judge_stage": _judge_stage})
