#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: run_resume
version_added: 0.2.0
short_description: Check that an interrupted run's directory can be resumed by this run
description:
  - Runs at the start of a run given C(-e acceptance_resume=artifacts/<run-id>) (C(playbooks/tasks/start_run.yml)),
    before any node is touched.
  - Fails, naming each difference, when the directory was made by another playbook, with another
    profile or for another node set, is a replay, has no C(results.json) yet, or is being written
    by a live run (the results callback holds C(<run>/.lock) while a run goes on).
  - Fails when the run is already complete, with its verdict; resuming it changes nothing.
  - Otherwise returns the run id to continue under; the per-node stages the interrupted run judged
    are judged again from their captured outputs (no tool runs for them), the rest run.
  - This is an action plugin; it runs on the controller.
options:
  dir:
    description: The run directory to resume.
    type: path
    required: true
  playbook:
    description: This playbook's file name, as results.json records it (C(acceptance.yml)).
    type: str
    required: true
  profile:
    description: This run's hardware profile name.
    type: str
    default: ""
  targets:
    description: This run's nodes.
    type: list
    elements: str
    required: true
  replay_dir:
    description: The run's C(acceptance_replay_dir); a replay cannot resume a run (refused).
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
    details: Only reads the directory.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Check the run to resume
  gpucluster.acceptance.run_resume:
    dir: "{{ acceptance_resume }}"
    playbook: acceptance.yml
    profile: "{{ acceptance_profile_data.name }}"
    targets: "{{ ansible_play_hosts_all }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
run_id:
  description: The interrupted run's id (its directory's name), which this run continues.
  returned: success
  type: str
directory:
  description: The run directory, absolute.
  returned: success
  type: str
judged:
  description: How many (node, stage) pairs are judged again from the captured outputs.
  returned: success
  type: int
"""
