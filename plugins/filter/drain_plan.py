# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: drain_plan
short_description: Decide which nodes a health-check run drains and resumes, with a blast-radius cap
version_added: 0.1.0
description:
  - "Turns the per-node states of one run (from P(gpucluster.acceptance.node_states#filter)) into
    a plan. A failing node gets the reason C(<stage>: <first failing check's message>), trimmed.
    Nodes that passed are the resume candidates."
  - "Timeouts are not hardware: a stage whose finding has C(timeout: true) drains only when its
    retry timed out again (C(retry: timed out again)) or failed for real (C(retry: failed))."
  - When more nodes fail than the cap allows, the plan drains nothing and its message says so.
    The cap is O(max_nodes) nodes and O(max_fraction) of the checked nodes (at least one). Nodes
    outside the run that Slurm shows drained with O(tag) count against O(max_nodes).
options:
  _input:
    description: Node name to state (a dict with C(failed_stages)) or None (never reported).
    type: dict
    required: true
  findings:
    description: Per node, per stage, the first failing check C({check, message}).
    type: dict
    default: {}
  max_fraction:
    description: Largest fraction of the checked nodes one run may drain.
    type: float
    default: 0.10
  max_nodes:
    description: Largest number of nodes drained by this collection at once.
    type: int
    default: 2
  slurm_reasons:
    description: Output of C(sinfo -R -N -h -o '%N|%E') (a string), or a node to reason mapping.
    type: raw
    default: {}
  tag:
    description: Reason prefix that marks this collection's drains.
    type: str
    default: "gpucluster:"
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Plan the drains of this run
  ansible.builtin.set_fact:
    plan: "{{ hostvars | gpucluster.acceptance.node_states(targets)
              | gpucluster.acceptance.drain_plan(findings=findings, max_fraction=0.1, max_nodes=2) }}"
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    drain:
      description: Node to reason to drain with (empty when refused).
      type: dict
    resume:
      description: Nodes that passed this run.
      type: list
      elements: str
    refused:
      description: Whether the cap refused to drain.
      type: bool
    message:
      description: One sentence saying what the run found and, when refused, why nothing is drained.
      type: str
    failing:
      description: Every failing node with its reason, drained or not.
      type: dict
    evidence:
      description: Per failing node, its failing stages with check and message.
      type: dict
    limit:
      description: How many nodes this run could drain.
      type: int
    errored:
      description:
        - "Node to why, for nodes whose only bad results are tool timeouts that were not retried
          (an error of the tool, not hardware): neither drained nor resumed."
        - A finding with C(timeout) true and C(retry) C(passed) is not a failure; C(retry)
          C(timed out again) (a repeated timeout) or C(failed) may drain.
      type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._drain_policy import (
    DEFAULT_TAG, parse_sinfo_reasons, plan_drains)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _drain_plan(states, findings=None, max_fraction=0.10, max_nodes=2, slurm_reasons=None, tag=DEFAULT_TAG):
    if isinstance(slurm_reasons, str):
        slurm_reasons = parse_sinfo_reasons(slurm_reasons)
    try:
        return plan_drains(states, findings or {}, float(max_fraction), int(max_nodes), slurm_reasons or {}, tag)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("drain_plan: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"drain_plan": _drain_plan})
