# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: goodput
short_description: The useful share of wall time for a checkpoint interval
version_added: 0.3.0
description:
  - First order (the default) 1 - C/T - (T/2 + R)/M, at least 0; or Daly's exponential model
    T / (M e^(R/M) (e^((T+C)/M) - 1)), which stays meaningful when C, R or T are not small against M.
  - At T = 1,859 s, C = 60 s, M = 28,800 s and R = 600 s the first-order goodput is about 0.915.
options:
  _input:
    description: T, the compute time between checkpoints in seconds (> 0).
    type: float
    required: true
  write_s:
    description: C, the checkpoint write time in seconds (>= 0).
    type: float
    required: true
  mtbf_s:
    description: M, the job's mean time between job-killing failures in seconds (> 0).
    type: float
    required: true
  restart_s:
    description: R, seconds from a failure until the job runs again (>= 0).
    type: float
    required: true
  model:
    description: C(first_order) or C(exponential).
    type: str
    default: first_order
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Goodput of the seed article's example
  ansible.builtin.debug:
    msg: "{{ 1859 | gpucluster.acceptance.goodput(60, 28800, 600) | round(3) }}"   # 0.915
"""

RETURN = r"""
_value:
  description: The goodput, 0 to 1.
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_plan import goodput
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _goodput(interval_s, write_s, mtbf_s, restart_s, model="first_order"):
    try:
        return goodput(interval_s, write_s, mtbf_s, restart_s, model)
    except ValueError as exc:
        raise AnsibleFilterError("goodput: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"goodput": _goodput})
