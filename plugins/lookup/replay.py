# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: replay
short_description: Read a node's captured tool outputs for re-judging without touching the node
version_added: 0.1.0
description:
  - Returns the same structure the collector's output parses into, read from files, so a stage
    judges a past run (or a provider's acceptance logs) exactly as it would judge a live one.
  - Layout, one folder per node and one file per tool, C(<dir>/<node>/<tool>.txt). The artifact
    directory of a past run is such a directory (its files are under C(raw/)); its
    C(results.json) supplies each tool's exit code and duration.
  - A tool whose file is missing is left out, so the stage reports it as not collected.
options:
  _terms:
    description: The node (inventory hostname).
    required: true
  dir:
    description: The replay directory.
    type: path
    required: true
  tools:
    description: The tool names the stage expects.
    type: list
    elements: str
    required: true
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Judge a past run's topology outputs for this node
  ansible.builtin.set_fact:
    outputs: "{{ lookup('gpucluster.acceptance.replay', inventory_hostname, dir='artifacts/20261129T120000Z-ab12cd', tools=['nvidia-smi-topo']) }}"
"""

RETURN = r"""
_raw:
  description: One dict per node, C(tools) (name to output, rc, seconds, complete) and C(errors).
  type: list
  elements: dict
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._replay import read_node


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        directory = self.get_option("dir")
        if not os.path.isdir(directory):
            raise AnsibleLookupError("replay directory %s does not exist" % directory)
        return [read_node(directory, str(node), self.get_option("tools")) for node in terms]
