# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_nvidia_topo
short_description: Parse the connectivity matrix printed by C(nvidia-smi topo -m)
version_added: 0.1.0
author: gpucluster.acceptance maintainers (@gpucluster)
description:
  - Turns the text printed by C(nvidia-smi topo -m) into the GPU and NIC lists, the connectivity
    matrix, CPU and NUMA affinity per GPU and the closest GPUs of each NIC.
  - Reads tab- and space-separated output, C(mlx5_N) NIC columns (older drivers) as well as
    C(NICN) columns with a C(NIC Legend) block, optional C(CPU Affinity), C(NUMA Affinity) and
    C(GPU NUMA ID) columns and ANSI escape codes. The legend block is never read as matrix rows.
  - Never fails on garbled text; problems are listed in C(errors) (that part of the result cannot
    be trusted), each naming its line, next to the rows that could be read, and C(warnings).
    Shell prompts and echoed commands are dropped with a warning, srun and mpirun line prefixes
    removed.
options:
  _input:
    description: The standard output of C(nvidia-smi topo -m).
    type: string
    required: true
"""

EXAMPLES = r"""
- name: Read the GPU topology of the node
  ansible.builtin.command: nvidia-smi topo -m
  register: topo
  changed_when: false

- name: Check that GPU0 and GPU1 are joined by 18 NVLinks
  ansible.builtin.assert:
    that:
      - parsed.errors | length == 0
      - parsed.matrix.GPU0.GPU1 == 'NV18'
  vars:
    parsed: "{{ topo.stdout | gpucluster.acceptance.from_nvidia_topo }}"

- name: Show which GPUs sit closest to each NIC
  ansible.builtin.debug:
    msg: "{{ (topo.stdout | gpucluster.acceptance.from_nvidia_topo).nic_affinity }}"
"""

RETURN = r"""
_value:
  description: The parsed topology.
  type: dict
  contains:
    gpus:
      description: GPUs that have a matrix row, in column order (V(GPU0), V(GPU1), ...).
      type: list
      elements: str
    nics:
      description: NIC column names (V(NIC0) ... or V(mlx5_0) ...).
      type: list
      elements: str
    devices:
      description: All devices that have a matrix row, GPUs then NICs in column order.
      type: list
      elements: str
    matrix:
      description: >-
        Relation between every pair of devices, C(matrix[row][column]), for example
        V(NV18), V(PIX), V(SYS); V(X) on the diagonal.
      type: dict
    cpu_affinity:
      description: CPU list per GPU (V(0-55,112-167)), null when not printed or N/A.
      type: dict
    numa_affinity:
      description: NUMA node per GPU, an int when it is one number, text otherwise, null when N/A.
      type: dict
    gpu_numa_id:
      description: >-
        NUMA node of the GPU's own memory (Grace Hopper/Blackwell), only when the column exists;
        null when N/A.
      type: dict
    nic_names:
      description: >-
        The NIC legend, NIC column to device name (V(NIC0) to V(mlx5_0)); empty without a legend.
      type: dict
    nic_devices:
      description: Device name of every NIC column (legend name, or the column name itself).
      type: dict
    nic_affinity:
      description: >-
        For each NIC, C(gpus) with the closest PCIe relation (PIX, then PXB, PHB, NODE, SYS),
        that C(relation) and the device C(name).
      type: dict
    columns:
      description: Every device column of the header, whether its row could be read or not.
      type: list
      elements: str
    header_line:
      description: The header line as printed (escape codes removed).
      type: str
    row_lines:
      description: Each device's matrix row as printed, device to line.
      type: dict
    errors:
      description: Problems that make the result untrustworthy (missing rows, short rows, no header).
      type: list
      elements: str
    warnings:
      description: Oddities worth a look (no NIC legend, asymmetric matrix, glued cells).
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import (
    parse_nvidia_topo,
)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_nvidia_topo."""

    def filters(self):
        return guarded_filters({"from_nvidia_topo": text_filter("from_nvidia_topo", parse_nvidia_topo)})
