# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: effective_gpu_hour_cost
short_description: What a useful GPU-hour costs, given goodput and availability
version_added: 0.3.0
description:
  - The list price per GPU-hour divided by goodput x availability. A cheaper rate on a cluster that
    loses ten percent of its time is the more expensive cluster.
  - Returns None when goodput x availability is 0 (nothing useful is bought).
options:
  _input:
    description: The list price per GPU-hour (>= 0).
    type: float
    required: true
  goodput:
    description: The useful share of wall time, 0 to 1 (P(gpucluster.acceptance.goodput#filter)).
    type: float
    required: true
  availability:
    description: The share of paid node time in service, 0 to 1.
    type: float
    default: 1.0
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: A $2.00 GPU-hour at 91.5 % goodput and 98 % availability
  ansible.builtin.debug:
    msg: "{{ 2.00 | gpucluster.acceptance.effective_gpu_hour_cost(0.915, 0.98) | round(2) }}"   # 2.23
"""

RETURN = r"""
_value:
  description: The effective price of a useful GPU-hour, or None.
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_plan import effective_gpu_hour_cost
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _effective_gpu_hour_cost(price, goodput, availability=1.0):
    try:
        return effective_gpu_hour_cost(price, goodput, availability)
    except ValueError as exc:
        raise AnsibleFilterError("effective_gpu_hour_cost: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"effective_gpu_hour_cost": _effective_gpu_hour_cost})
