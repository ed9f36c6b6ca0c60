# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostlist_expand filter: Slurm hostlist expression -> list of host names."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: hostlist_expand
version_added: 0.1.0
short_description: Expand a Slurm hostlist expression into host names
description:
  - Expands a Slurm hostlist expression such as C(gpu[001-004,010]) into the list of host names
    it stands for, the way C(scontrol show hostnames) does.
  - Zero padding follows the low bound of each range (C([01-10]) gives C(01) to C(10)); text may
    follow the brackets (C(n[1-2]-ib)); several bracket groups expand as a cartesian product
    (C(rack[1-2]-n[01-02])); commas and whitespace outside brackets separate elements.
  - Duplicates and order are kept.
  - A malformed expression (unbalanced or nested brackets, empty brackets, a backwards range,
    anything but numbers and C(lo-hi) ranges inside brackets), or one that would expand to more
    than 1,000,000 names, fails with a message naming the problem.
options:
  _input:
    description:
      - A hostlist expression, or a list of expressions whose expansions are concatenated.
    type: raw
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Expand a node range
  ansible.builtin.debug:
    msg: "{{ 'gpu[001-003,010],login1' | gpucluster.acceptance.hostlist_expand }}"
  # => ['gpu001', 'gpu002', 'gpu003', 'gpu010', 'login1']

- name: Several bracket groups
  ansible.builtin.debug:
    msg: "{{ 'rack[1-2]-n[01-02]' | gpucluster.acceptance.hostlist_expand }}"
  # => ['rack1-n01', 'rack1-n02', 'rack2-n01', 'rack2-n02']

- name: Nodes of a partition as inventory-style names
  ansible.builtin.set_fact:
    partition_nodes: "{{ sinfo_nodelist.stdout | trim | gpucluster.acceptance.hostlist_expand }}"
"""

RETURN = r"""
_value:
  description: The host names, in the order the expression lists them, duplicates kept.
  type: list
  elements: string
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    expand_hostlist)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def hostlist_expand(data):
    """Expand a hostlist expression (or a list of them) into host names."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if isinstance(data, string_types):
        expressions = [data]
    elif isinstance(data, (list, tuple)):
        expressions = list(data)
    else:
        raise AnsibleFilterError("hostlist_expand expects a hostlist string or a list of them, "
                                 "got %s" % type(data).__name__)
    names = []
    for expression in expressions:
        if not isinstance(expression, string_types):
            raise AnsibleFilterError("hostlist_expand expects hostlist strings, got %s in the list"
                                     % type(expression).__name__)
        try:
            names.extend(expand_hostlist(str(expression)))
        except ValueError as exc:
            raise AnsibleFilterError("hostlist_expand: %s" % exc)
    return names


class FilterModule(object):
    """Ansible filter plugin entry point."""

    def filters(self):
        return guarded_filters({"hostlist_expand": hostlist_expand})
