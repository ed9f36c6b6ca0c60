# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: unknown_variables
author: gpucluster.acceptance maintainers (@gpucluster)
version_added: "0.2.0"
short_description: The collection's variables set in the inventory or extra vars that it does not know (typos)
description:
  - Reads the variable names the given hosts have (inventory, group and host vars, extra vars,
    cached facts) and returns those starting with C(acceptance_), C(check_), C(node_health_) or
    C(checkpoint_plan_) that no role argument spec, role default or role variable defines and no
    playbook or role task uses, each with the closest known name.
  - Values are never read (nothing is templated), only names.
options:
  _terms:
    description: The hosts whose variables to check (inventory host names).
    type: list
    elements: str
    required: true
  warn:
    description: Also show a warning naming each unknown variable and its closest known name.
    type: bool
    default: false
notes:
  - Runs on the controller; reads the collection's own roles and playbooks.
"""

EXAMPLES = r"""
- name: Report misspelled acceptance settings
  ansible.builtin.set_fact:
    unknown: "{{ lookup('gpucluster.acceptance.unknown_variables', groups['gpu_nodes'] + ['localhost'], warn=true) }}"
"""

RETURN = r"""
_raw:
  description: One entry per unknown variable name, sorted by name.
  type: list
  elements: dict
  contains:
    name:
      description: The variable set in the inventory or extra vars.
      type: str
    closest:
      description: The nearest known variable name, or null when none is close.
      type: str
    hosts:
      description: How many of the given hosts have it.
      type: int
"""

from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._variables import (
    describe, known_names, unknown_variables)

display = Display()


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        hostvars = variables.get("hostvars") or {}
        counts = {}
        hosts = []
        for term in terms:  # a list of host names, or several
            if isinstance(term, (list, tuple)):
                hosts.extend(str(t) for t in term)
            else:
                hosts.append(str(term))
        for host in hosts:
            try:
                names = list(hostvars[host].keys()) if host in hostvars else []
            except (KeyError, TypeError):
                names = []
            for name in set(names):
                counts[name] = counts.get(name, 0) + 1
        # This task's own variables (extra vars reach localhost too, even when not in inventory).
        for name in variables:
            counts.setdefault(name, 1)
        found = unknown_variables(counts, known_names())
        for entry in found:
            entry["hosts"] = counts.get(entry["name"], 0)
        if self.get_option("warn"):
            for line in describe(found):
                display.warning("unknown variable %s: it has no effect" % line)
        return [found]
