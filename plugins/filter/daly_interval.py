# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: daly_interval
short_description: Daly's higher-order checkpoint interval
version_added: 0.3.0
description:
  - Daly (2006) sqrt(2 C M) (1 + sqrt(C/2M)/3 + (C/2M)/9) - C for C < 2M, else M. A little shorter
    than P(gpucluster.acceptance.young_interval#filter) when C is not small against M.
options:
  _input:
    description: C, the checkpoint write time in seconds (> 0).
    type: float
    required: true
  mtbf_s:
    description: M, the job's mean time between job-killing failures in seconds (> 0).
    type: float
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Daly's interval for C = 60 s and M = 8 h
  ansible.builtin.debug:
    msg: "{{ 60 | gpucluster.acceptance.daly_interval(28800) | round }}"   # 1819.0
"""

RETURN = r"""
_value:
  description: The interval in seconds.
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_plan import daly_interval
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _daly_interval(write_s, mtbf_s):
    try:
        return daly_interval(write_s, mtbf_s)
    except ValueError as exc:
        raise AnsibleFilterError("daly_interval: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"daly_interval": _daly_interval})
