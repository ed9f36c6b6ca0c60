# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_nvidia_smi_csv
short_description: Parse C(nvidia-smi --query-gpu=... --format=csv) output
version_added: 0.1.0
author: gpucluster.acceptance maintainers (@gpucluster)
positional: fields
description:
  - Turns the CSV printed by C(nvidia-smi --query-gpu=FIELDS --format=csv) (with or without
    C(nounits)) into one dict per GPU row, keyed by field name without the unit suffix
    (C(memory.total [MiB]) becomes C(memory.total)).
  - Numbers become ints or floats with their unit dropped (V(81559 MiB), V(700.00 W), V(35 %)).
    Versions and identifiers (C(driver_version), C(vbios_version), C(serial), C(uuid),
    C(pci.bus_id), ...) stay text. V(N/A), V([N/A]), V([Not Supported]), V([Unknown Error]) and
    any other bracketed status become null.
  - The header line is required, unless O(fields) gives the query's field names (output made
    with C(noheader)).
  - Never fails on garbled text; problems are listed in C(errors), each naming its line, next to
    the rows that could be read - a ragged row is skipped, a value that cannot be real (a negative
    or non-finite temperature or error count, a count that is not a whole number, V(1e309), a
    C(pci.bus_id) that is not a PCI bus id) is dropped and its row's C(invalid) entry names the
    area. Shell prompts and echoed commands above the header are dropped with a warning; srun and
    mpirun line prefixes are removed.
options:
  _input:
    description: The standard output of C(nvidia-smi --query-gpu=... --format=csv).
    type: string
    required: true
  fields:
    description:
      - The field names of the query, as a list or as the comma-separated C(--query-gpu) value.
      - Only needed for output made with C(--format=csv,noheader).
    type: raw
    required: false
"""

EXAMPLES = r"""
- name: Query GPU state
  ansible.builtin.command: >-
    nvidia-smi --query-gpu=index,name,memory.total,power.draw,temperature.gpu --format=csv
  register: smi
  changed_when: false

- name: Every GPU has its 80 GB
  ansible.builtin.assert:
    that: item['memory.total'] >= 81000
  loop: "{{ (smi.stdout | gpucluster.acceptance.from_nvidia_smi_csv).gpus }}"

- name: Read noheader output by naming the fields
  ansible.builtin.debug:
    msg: "{{ smi_noheader.stdout | gpucluster.acceptance.from_nvidia_smi_csv('index,power.draw') }}"
"""

RETURN = r"""
_value:
  description: The parsed query result.
  type: dict
  contains:
    gpus:
      description: One dict per data row, field name to value (int, float, text or null).
      type: list
      elements: dict
    fields:
      description: The field names in column order, without unit suffixes.
      type: list
      elements: str
    units:
      description: Unit of each field from the header (V(MiB), V(W), V(%)), null when none.
      type: dict
    header_line:
      description: The header line as printed (null for C(noheader) output).
      type: str
    row_lines:
      description: Each GPU row as printed, in the order of C(gpus).
      type: list
      elements: str
    invalid:
      description: One dict per GPU row, area (C(ecc), C(temperature), C(bus_id), ...) to the problems of its impossible values.
      type: list
      elements: dict
    errors:
      description: Problems that make the result untrustworthy (no header, ragged rows, no rows).
      type: list
      elements: str
    warnings:
      description: Oddities worth a look (repeated GPU index, unusual bracketed statuses).
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_csv,
)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_nvidia_smi_csv."""

    def filters(self):
        return guarded_filters({"from_nvidia_smi_csv": text_filter("from_nvidia_smi_csv", parse_nvidia_smi_csv)})
