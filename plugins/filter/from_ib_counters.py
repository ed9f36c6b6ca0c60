# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_ib_counters
version_added: 0.1.0
short_description: Parse InfiniBand port counters from C(perfquery) or sysfs
description:
  - Reads C(perfquery) output (C(perfquery -x), plain C(perfquery), C(-a), C(-C mlx5_0 -P 1)) and/or
    a dump of the sysfs counters as printed by
    C(grep -H . /sys/class/infiniband/*/ports/*/counters/* /sys/class/infiniband/*/ports/*/hw_counters/*).
  - perfquery counter names are normalised to the sysfs file names (C(SymbolErrorCounter) becomes
    C(symbol_error), C(LinkDownedCounter) C(link_downed), C(PortXmitData) C(port_xmit_data),
    C(VL15Dropped) C(VL15_dropped), ...), so both sources can be compared and subtracted with
    P(gpucluster.acceptance.ib_counter_deltas#filter).
  - perfquery does not print the device name; it is taken from the O(ca) argument, from the
    C(-C <ca>) of an echoed perfquery command line, or from a line holding only the device name
    (C(mlx5_0), C(### mlx5_0), C([mlx5_0])) before each block; else the key is C(lid-<LID>).
  - Data counters (C(port_xmit_data), C(port_rcv_data)) count 4-octet words; multiply by 4 for bytes.
  - Problems are reported in the result, never raised; an C(iberror) line, a garbled or truncated
    line is reported with its line number next to every counter read from the rest. Shell prompts
    are dropped with a warning.
options:
  _input:
    description: perfquery output and/or C(grep -H) output of the sysfs counter files.
    type: string
    required: true
  ca:
    description: Device name to file perfquery blocks under (perfquery does not print it).
    type: string
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Read the port counters of every HCA
  ansible.builtin.shell: grep -H . /sys/class/infiniband/*/ports/*/counters/*
  register: counters
  changed_when: false

- name: No symbol errors anywhere
  ansible.builtin.assert:
    that: item.value['1'].symbol_error == 0
  loop: "{{ (counters.stdout | gpucluster.acceptance.from_ib_counters).counters | dict2items }}"

- name: perfquery on one port
  ansible.builtin.command: perfquery -x -C mlx5_0 -P 1
  register: pq
  changed_when: false

- name: Its counters, filed under mlx5_0
  ansible.builtin.debug:
    msg: "{{ (pq.stdout | gpucluster.acceptance.from_ib_counters(ca='mlx5_0')).counters.mlx5_0['1'] }}"
"""

RETURN = r"""
_value:
  description: The parsed counters.
  type: dict
  contains:
    counters:
      description: >-
        C({ca: {port: {counter_name: int}}}); ports are strings (C("1"); C("255") is perfquery -a's
        aggregate of all ports).
      type: dict
    names:
      description: Every perfquery name met, mapped to the name used in C(counters).
      type: dict
    sources:
      description: >-
        One entry per block read, C({ca, port, lid, capmask, format, line}); format is perfquery,
        perfquery_extended, sysfs_counters or sysfs_hw_counters.
      type: list
      elements: dict
    unavailable:
      description: C(ca/port/name) of counters the device cannot provide (sysfs prints C(N/A (no PMA))).
      type: list
      elements: str
    saturated:
      description: C(ca/port/name) of counters stuck at the maximum of their width (for example link_downed at 255); they no longer count.
      type: list
      elements: str
    lines:
      description: C(ca/port/name) to the line its value was read from (evidence).
      type: dict
    errors:
      description: Why the output cannot be trusted (no counters, truncated block, iberror), with line numbers.
      type: list
      elements: str
    warnings:
      description: Oddities worth a look that do not invalidate the output.
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_ib_counters."""

    def filters(self):
        return guarded_filters({"from_ib_counters": text_filter("from_ib_counters", parse_ib_counters)})
