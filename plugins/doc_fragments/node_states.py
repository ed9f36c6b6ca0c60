# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    # The input of the filters that read the nodes' variables or acceptance states from hostvars.
    DOCUMENTATION = r"""
options:
  _input:
    description: C(hostvars).
    type: raw
    required: true
  nodes:
    description: The nodes to look at (the nodes the acceptance play targeted, or C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
"""

    # The states of this run only (gpucluster.acceptance.node_states.run_id).
    RUN_ID = r"""
options:
  run_id:
    description: This run's id (C(acceptance_run_id)); states of other runs are ignored. Empty accepts any.
    type: str
    default: ""
"""
