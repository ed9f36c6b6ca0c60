# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: hostvar_map
short_description: One variable of many hosts as a dict, hosts without it omitted
version_added: 0.1.0
description:
  - "Reads O(var) from each node's hostvars and returns C({node: value}), leaving out nodes that
    do not define it (unlike C(map('extract')), which fails on them)."
options:
  var:
    description: Variable name.
    type: str
    required: true
extends_documentation_fragment:
  - gpucluster.acceptance.node_states
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Leaf switch of every node, from inventory labels
  ansible.builtin.set_fact:
    leaves: "{{ hostvars | gpucluster.acceptance.hostvar_map(groups['gpu_nodes'], 'slurm_topology_leaf') }}"
"""

RETURN = r"""
_value:
  description: Node to value, for nodes that define the variable.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _hostvar_map(hostvars, nodes, var):
    if not isinstance(nodes, (list, tuple)):
        raise AnsibleFilterError("hostvar_map: nodes must be a list, got %s" % type(nodes).__name__)
    found = {}
    for node in nodes:
        try:
            value = hostvars[node].get(var)
        except KeyError:
            continue
        if value is not None:
            found[node] = value
    return found


class FilterModule(object):
    def filters(self):
        return guarded_filters({"hostvar_map": _hostvar_map})
