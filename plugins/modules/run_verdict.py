#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: run_verdict
version_added: 0.2.0
short_description: Fail or pass the playbook on this run's validated results.json
description:
  - Reads the run's C(results.json), which the C(gpucluster.acceptance.acceptance_report) callback
    validates and writes just before a task whose name starts with C(Verdict:) runs, and fails when
    its verdict is C(fail). The message is the document's own verdict sentence, so it counts the
    same failed nodes as the console summary, C(junit.xml) and C(report.html).
  - Fails with the setting to add when the results callback is not enabled.
  - This is an action plugin; it runs on the controller.
options:
  results:
    description: A results.json to read instead of this run's (C($GPUCLUSTER_RUN_DIR/results.json)).
    type: path
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
    details: Only reads the run's results.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: "Verdict: every node passed every stage"
  gpucluster.acceptance.run_verdict:
"""

RETURN = r"""
verdict:
  description: The verdict's status, node counts, failed nodes and whether the cluster itself failed.
  returned: when the results could be read
  type: dict
results:
  description: The results.json read.
  returned: when the results could be read
  type: str
"""
