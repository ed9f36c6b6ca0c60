# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_nvidia_smi_q
short_description: Parse the full C(nvidia-smi -q) report
version_added: 0.1.0
author: gpucluster.acceptance maintainers (@gpucluster)
description:
  - Turns the text printed by C(nvidia-smi -q) into driver and CUDA versions and one dict per GPU
    with identity, ECC counters, retired pages, remapped rows, clock event (throttle) reasons,
    temperatures, power, clocks, PCIe link and fabric state.
  - Reads the layouts of old and new drivers alike, for example C(Clocks Throttle Reasons) and
    C(Clocks Event Reasons), C(Power Readings) and C(GPU Power Readings), Single/Double Bit ECC
    counters and SRAM/DRAM counters (with the SRAM Parity/SEC-DED split).
  - Reads the whole report and C(nvidia-smi -q -d SECTION) fragments; fragments of the same GPU
    pasted one after the other are merged into one GPU.
  - Never fails on garbled text. A line or value that cannot be read is listed in C(errors) with
    its line number next to what the rest of the report shows (a section cut short, a GPU
    section header whose bus id is unreadable, a value that cannot be real - a negative or
    non-finite temperature or error count, a count that is not a whole number, a PCI bus id that
    is not one); such a value is dropped and its GPU's C(invalid) names the area. Shell prompts,
    echoed commands and srun/mpirun line prefixes are dropped (a warning for prompts).
options:
  _input:
    description: The standard output of C(nvidia-smi -q).
    type: string
    required: true
"""

EXAMPLES = r"""
- name: Read the full GPU report
  ansible.builtin.command: nvidia-smi -q
  register: smi_q
  changed_when: false

- name: No GPU has a row remap pending
  ansible.builtin.assert:
    that: not item.remapped_rows.pending
    fail_msg: "GPU {{ item.index }} ({{ item.bus_id }}) needs a reset to apply a row remap"
  loop: "{{ (smi_q.stdout | gpucluster.acceptance.from_nvidia_smi_q).gpus }}"

- name: List GPUs that are throttling
  ansible.builtin.debug:
    msg: "{{ (smi_q.stdout | gpucluster.acceptance.from_nvidia_smi_q).gpus
             | selectattr('active_throttle') | map(attribute='bus_id') | list }}"
"""

RETURN = r"""
_value:
  description: The parsed report.
  type: dict
  contains:
    driver_version:
      description: Driver version, for example V(565.57.01).
      type: str
    cuda_version:
      description: CUDA version the driver supports, null when not printed or V(Not Found).
      type: str
    attached_gpus:
      description: The C(Attached GPUs) count.
      type: int
    timestamp:
      description: The report's timestamp as printed.
      type: str
    gpus:
      description: >-
        One dict per GPU section in output order, with C(bus_id), C(index), C(product_name),
        C(serial), C(uuid), C(vbios_version), C(persistence_mode), C(ecc) (C(volatile) and
        C(aggregate) counters C(sram_correctable), C(sram_uncorrectable),
        C(dram_correctable), C(dram_uncorrectable), C(correctable_total),
        C(uncorrectable_total)), C(retired_pages) (C(single_bit), C(double_bit), C(pending)),
        C(remapped_rows) (C(correctable), C(uncorrectable), C(pending), C(failure)),
        C(clocks_event_reasons) (reason to bool), C(active_throttle), C(temperature),
        C(power), C(clocks), C(max_clocks), C(pcie) and C(fabric) (when printed); C(line) (of
        the section header), C(evidence) (the printed lines of each judged area, such as
        C(ECC Errors > Volatile > DRAM Uncorrectable : 2), keyed C(header), C(product),
        C(bus_id), C(ecc_uncorrectable), C(ecc_correctable), C(retired_pages),
        C(remapped_rows), C(temperature), C(throttle), C(reset)) and C(invalid) (area to the
        problems of values that cannot be real; empty when all are readable).
      type: list
      elements: dict
    attached_line:
      description: The C(Attached GPUs) line as printed, null when absent.
      type: str
    errors:
      description: >-
        Problems that make (part of) the result untrustworthy, each naming its line (no GPU
        sections, truncated report, unreadable or impossible values).
      type: list
      elements: str
    warnings:
      description: Oddities worth a look (fewer GPU sections than Attached GPUs, unknown states).
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_q,
)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_nvidia_smi_q."""

    def filters(self):
        return guarded_filters({"from_nvidia_smi_q": text_filter("from_nvidia_smi_q", parse_nvidia_smi_q)})
