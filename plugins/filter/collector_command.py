# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: collector_command
short_description: Build the quoted command line that runs a stage's tools on a node
version_added: 0.1.0
description:
  - Turns a list of tools (name, timeout, argv) into one shell command running the collector
    script, each tool under its own timeout, with an optional environment.
  - Every argument and environment value is quoted on its own; nothing from inventory reaches
    the shell unquoted.
options:
  _input:
    description: Tools, each a dict with C(name), C(timeout) (seconds), C(argv) (list) and optional C(pause_before) (seconds).
    type: list
    elements: dict
    required: true
  script:
    description: The collector script's text.
    type: str
    required: true
  environment:
    description: Environment variables for the tools.
    type: dict
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Run nvidia-smi topo -m under a 60 s timeout
  ansible.builtin.raw: >-
    {{ [{'name': 'nvidia-smi-topo', 'timeout': 60, 'argv': ['nvidia-smi', 'topo', '-m']}]
       | gpucluster.acceptance.collector_command(script=lookup('ansible.builtin.file', 'gpucluster-collect.sh')) }}
"""

RETURN = r"""
_value:
  description: The command line, every word shell-quoted.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import collector_command
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _collector_command(tools, script=None, environment=None):
    if not isinstance(script, str) or not script:
        raise AnsibleFilterError("collector_command: script (the collector's text) is required")
    try:
        return collector_command(tools, script, environment)
    except ValueError as exc:
        raise AnsibleFilterError("collector_command: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"collector_command": _collector_command})
