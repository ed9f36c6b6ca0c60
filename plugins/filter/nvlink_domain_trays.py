# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: nvlink_domain_trays
short_description: The trays of each NVLink domain that passed every per-node stage, from their own outputs
version_added: 0.3.0
description:
  - Rack-scale profiles (GB200/GB300 NVL72). Each tray's gpu_health stage reports the NVLink domain its
    GPUs registered in (C(<ClusterUUID>.<CliqueId>), nvidia-smi -q's Fabric section); this groups the
    trays that passed every per-node stage by it - what M(gpucluster.acceptance.nvlink_burnin) measures.
    Never from labels.
options:
  _input:
    description: Per node, its state (P(gpucluster.acceptance.node_states#filter)); None for a node that never reported.
    type: dict
    required: true
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: The trays each NVLink domain's multi-node NVLink runs test
  ansible.builtin.set_fact:
    domains: "{{ states | gpucluster.acceptance.nvlink_domain_trays }}"
"""

RETURN = r"""
_value:
  description: NVLink domain -> sorted tray names.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import domain_trays
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _nvlink_domain_trays(states):
    if not isinstance(states, dict):
        raise AnsibleFilterError("nvlink_domain_trays: expected a dict of node states, got %s" % type(states).__name__)
    return domain_trays(states)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"nvlink_domain_trays": _nvlink_domain_trays})
