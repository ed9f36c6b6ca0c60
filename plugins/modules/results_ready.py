#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: results_ready
version_added: 0.2.0
short_description: At a run's start, fail unless the run's results will be recorded
description:
  - Fails, naming the exact setting to add, when the C(gpucluster.acceptance.acceptance_report)
    results callback is not enabled (it exports C(GPUCLUSTER_RUN_DIR) once the run id is set, so
    this task must come after the task that sets C(acceptance_run_id)).
  - Fails, naming the pip command, when the controller's Python lacks C(junit-xml) or C(jsonschema),
    without which the callback writes no C(results.json) or C(junit.xml).
  - Runs in the acceptance and health-check playbooks' shared start (C(playbooks/tasks/start_run.yml)),
    so an installed collection or an execution environment without them stops before any node is touched.
  - This is an action plugin; it runs on the controller.
options: {}
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
    details: Only reads the controller's environment.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Check that the results callback records this run
  gpucluster.acceptance.results_ready:
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
run_dir:
  description: This run's directory (C(GPUCLUSTER_RUN_DIR)); null when the results callback is off.
  returned: always
  type: str
"""
