# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: ib_counter_deltas
version_added: 0.1.0
short_description: Subtract two InfiniBand counter snapshots
description:
  - Computes C(after - before) per CA, port and counter, typically around a burn-in run, to see
    which error counters grew while the fabric was loaded.
  - Each snapshot may be a P(gpucluster.acceptance.from_ib_counters#filter) result, its
    C(counters) mapping, or the raw text (which is parsed first).
  - A counter lower after than before was reset in between (C(perfquery -R), driver reload,
    reboot); its delta is taken as the after value, it is listed in C(resets) and a warning says so.
  - A counter at the maximum of its width in the after snapshot no longer counts; its delta is a
    lower bound and it is listed in C(saturated).
  - Problems are reported in the result, never raised; only a wrong input type raises.
options:
  _input:
    description: The snapshot taken before.
    type: raw
    required: true
  after:
    description: The snapshot taken after.
    type: raw
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Counters before the burn-in
  ansible.builtin.shell: grep -H . /sys/class/infiniband/*/ports/*/counters/*
  register: before
  changed_when: false

# ... load the fabric ...

- name: Counters after
  ansible.builtin.shell: grep -H . /sys/class/infiniband/*/ports/*/counters/*
  register: after
  changed_when: false

- name: No new symbol errors on any port
  ansible.builtin.assert:
    that: deltas.deltas | dict2items | map(attribute='value') | map('dict2items') | flatten
          | map(attribute='value.symbol_error') | max == 0
  vars:
    deltas: "{{ before.stdout | gpucluster.acceptance.ib_counter_deltas(after.stdout) }}"
"""

RETURN = r"""
_value:
  description: The differences.
  type: dict
  contains:
    deltas:
      description: >-
        C({ca: {port: {counter_name: int}}}) for every CA and port present in both snapshots.
      type: dict
    resets:
      description: C(ca/port/name) of counters that went backwards (reset between the snapshots).
      type: list
      elements: str
    saturated:
      description: C(ca/port/name) of counters at their maximum in the after snapshot.
      type: list
      elements: str
    missing_before:
      description: C(ca/port) or C(ca/port/name) present after but not before (no delta).
      type: list
      elements: str
    missing_after:
      description: C(ca/port) or C(ca/port/name) present before but not after.
      type: list
      elements: str
    errors:
      description: >-
        Errors of either snapshot (prefixed C(before:) / C(after:)), or no CA/port in common.
      type: list
      elements: str
    warnings:
      description: Resets, saturated counters, ports missing on one side.
      type: list
      elements: str
"""

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_deltas import counter_deltas
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _snapshot(value, label):
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, string_types):
        return str(value)
    if isinstance(value, Mapping):
        return value
    raise AnsibleFilterError(
        "ib_counter_deltas expects the %s snapshot as the tool's text, a from_ib_counters result or its "
        "counters mapping, got %s" % (label, type(value).__name__))


def ib_counter_deltas(before, after):
    """Counter increases between two snapshots."""
    return counter_deltas(_snapshot(before, "before"), _snapshot(after, "after"))


class FilterModule(object):
    """Ansible filter: ib_counter_deltas."""

    def filters(self):
        return guarded_filters({"ib_counter_deltas": ib_counter_deltas})
