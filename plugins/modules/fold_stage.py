#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: fold_stage
version_added: 0.2.0
short_description: Fold a stage's checks, judged once for all nodes, into a node's acceptance state
description:
  - Takes one node's share of a stage that was judged once for the whole allocation (the workload
    stage) and folds it into the node's C(collect_node_state) fact with the same bookkeeping as the
    per-node stages (M(gpucluster.acceptance.collect_stage)) - the stage's status, its metrics, its
    checks and raw outputs, and C(failed_stages).
  - A state that carries another O(run_id) (left by an earlier run in a persistent fact cache) is
    dropped, never folded in. No checks for the node is an C(error) check, never a pass.
  - This is an action plugin; it runs on the controller and changes nothing on the node.
options:
  stage:
    description: The stage.
    type: str
    required: true
  checks:
    description: The node's checks, dicts with C(check), C(status), C(message), C(metrics) and C(component).
    type: list
    elements: dict
    required: true
  metrics:
    description: The node's stage metrics for the cluster-wide comparisons.
    type: dict
    default: {}
  raw:
    description: The node's raw outputs of the stage, by name, each with C(output), C(rc), C(seconds) and C(complete).
    type: dict
    default: {}
  run_id:
    description: This run's id, stored in the state. Empty keeps whatever state the node has.
    type: str
    default: ""
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Only sets a fact.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Fold each node's workload results into its acceptance state
  gpucluster.acceptance.fold_stage:
    stage: workload
    checks: "{{ my_checks }}"
    metrics: "{{ my_metrics }}"
    raw: "{{ my_raw }}"
    run_id: "{{ acceptance_run_id }}"
"""

RETURN = r"""
status:
  description: The node's status in the stage (pass, fail, error or skip).
  returned: always
  type: str
raw_outputs:
  description: The outputs given in O(raw), by name, for the C(acceptance_report) callback (beside the fact, not in it).
  returned: always
  type: dict
ansible_facts:
  description: C(collect_node_state), the node's new state.
  returned: always
  type: dict
"""
