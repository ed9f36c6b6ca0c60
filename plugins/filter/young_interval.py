# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: young_interval
short_description: Young's checkpoint interval sqrt(2 C M)
version_added: 0.3.0
description:
  - The first-order optimum compute time between checkpoints (Young 1974) for a checkpoint that
    takes C seconds to write and a mean time between job-killing failures of M seconds.
  - With C = 60 s and M = 8 h (28,800 s) it is about 1,859 s; halving M shrinks it by a factor of
    sqrt(2). See docs/checkpoint-plan.md.
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
- name: Interval for C = 60 s and M = 8 h
  ansible.builtin.debug:
    msg: "{{ 60 | gpucluster.acceptance.young_interval(28800) | round }}"   # 1859.0
"""

RETURN = r"""
_value:
  description: The interval in seconds.
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_plan import young_interval
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _young_interval(write_s, mtbf_s):
    try:
        return young_interval(write_s, mtbf_s)
    except ValueError as exc:
        raise AnsibleFilterError("young_interval: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"young_interval": _young_interval})
