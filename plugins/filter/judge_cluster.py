# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: judge_cluster
short_description: Cluster-wide acceptance checks, version uniformity and peer comparison
version_added: 0.1.0
description:
  - Driver, VBIOS, NIC firmware, DCGM and NCCL versions must match across the nodes; the
    majority value is the expected one, so no SKU file is needed.
  - A node far below the cluster median single-node bus bandwidth (by a robust measure) fails
    even above the profile's floor.
options:
  _input:
    description: Per node, the state built by P(gpucluster.acceptance.judge_stage#filter) (None for a node that never reported).
    type: dict
    required: true
  profile:
    description: The merged hardware profile.
    type: dict
  nvlink:
    description:
      - Rack-scale profiles, the multi-node NVLink stage's result (C(check_nvlink_domain_result), from
        M(gpucluster.acceptance.nvlink_burnin)) - its measured rows go into C(nvlink_domains.mnnvl) and its
        unusable trays out of the usable capacity.
    type: dict
  racks:
    description:
      - Rack-scale profiles, per node its rack as the inventory labels it (C(slurm_topology_block), else
        C(slurm_topology_rack)) - a rack whose every tray never reported is one rack-level fault.
    type: dict
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Compare nodes
  ansible.builtin.set_fact:
    gpucluster_stage_result: "{{ states | gpucluster.acceptance.judge_cluster(profile) }}"
"""

RETURN = r"""
_value:
  description: One result per compared field, each C(stage), C(checks) (with C(node)) and C(failed_nodes).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._cluster import judge_cluster
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _judge_cluster(states, profile=None, nvlink=None, racks=None):
    if not isinstance(states, dict):
        raise AnsibleFilterError("judge_cluster: expected a dict of node states, got %s" % type(states).__name__)
    for name, value in (("nvlink", nvlink), ("racks", racks)):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("judge_cluster: %s must be a dict, got %s" % (name, type(value).__name__))
    return judge_cluster(states, profile, nvlink=nvlink, racks=racks)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"judge_cluster": _judge_cluster})
