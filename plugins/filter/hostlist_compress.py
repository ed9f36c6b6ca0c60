# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostlist_compress filter: host names -> sorted Slurm hostlist expression."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: hostlist_compress
version_added: 0.1.0
short_description: Compress host names into a Slurm hostlist expression
description:
  - Turns a list of host names into a compact, sorted Slurm hostlist expression, the way
    C(scontrol show hostlistsorted) does, for example C(gpu001,gpu002,gpu003,gpu010,vm) into
    C(gpu[001-003,010],vm).
  - Names sort by their text (numbers inside it compared by value), then by their trailing
    number; duplicates are dropped; consecutive numbers merge into C(lo-hi) ranges.
  - Zero padding is kept apart (C(gpu01) and C(gpu1) are different hosts); a single name stays
    without brackets.
  - Names a hostlist cannot hold (empty, or containing brackets, commas or whitespace) fail with
    a message naming them.
options:
  _input:
    description:
      - A list of host names, or a hostlist expression string (expanded first, then compressed).
    type: raw
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Compress inventory hosts into a Slurm node list
  ansible.builtin.debug:
    msg: "{{ groups['gpu_nodes'] | gpucluster.acceptance.hostlist_compress }}"
  # ['gpu003', 'gpu001', 'gpu002', 'gpu010'] => 'gpu[001-003,010]'

- name: Name the failed nodes in a drain reason
  ansible.builtin.set_fact:
    drain_nodes: "{{ failed_hosts | gpucluster.acceptance.hostlist_compress }}"
"""

RETURN = r"""
_value:
  description: The hostlist expression; an empty string for an empty list.
  type: string
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    compress_hostlist)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def hostlist_compress(data):
    """Compress a list of host names (or a hostlist string) into a sorted hostlist expression."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if isinstance(data, string_types):
        data = str(data)
    elif isinstance(data, (list, tuple, set, frozenset)):
        data = [str(name) if isinstance(name, string_types) else name for name in data]
    else:
        raise AnsibleFilterError("hostlist_compress expects a list of host names, got %s"
                                 % type(data).__name__)
    try:
        return compress_hostlist(data)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("hostlist_compress: %s" % exc)


class FilterModule(object):
    """Ansible filter plugin entry point."""

    def filters(self):
        return guarded_filters({"hostlist_compress": hostlist_compress})
