# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_ibstat
version_added: 0.1.0
short_description: Parse the output of C(ibstat) into CAs and ports
description:
  - Reads the text printed by C(ibstat) (infiniband-diags, rdma-core) and returns one entry per
    channel adapter with its ports.
  - >-
    Tabs, spaces or no indentation; the single-port form C(ibstat mlx5_0 1); C(Rate: 40 (FDR10)),
    C(Rate: 2.5) and the C(Effective speed) line of recent releases; InfiniBand and Ethernet (RoCE)
    link layers.
  - >-
    Problems are reported in the result, never raised. C(errors) is not empty when the output
    cannot be trusted, for example an C(ibpanic:) line (a device that could not be read), no CA
    at all, a port block without C(State), C(Physical state) or C(Rate), or a CA with no or fewer
    C(Port) blocks than it announces (truncated output, or C(ibstat -s)). The CAs and ports
    read from the rest of the output are still returned (an C(ibpanic) or C(iberror) line before
    or after the blocks loses nothing). Shell prompts and echoed commands are dropped with a
    warning; srun and mpirun line prefixes are removed.
options:
  _input:
    description: The standard output of C(ibstat).
    type: string
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Read the HCAs
  ansible.builtin.command: ibstat
  register: ibstat
  changed_when: false

- name: Every InfiniBand port must be Active/LinkUp at 400 Gb/s
  ansible.builtin.assert:
    that:
      - parsed.errors | length == 0
      - item.state == 'Active' and item.physical_state == 'LinkUp' and item.rate == 400
  loop: "{{ parsed.cas | map(attribute='ports') | flatten | selectattr('link_layer', 'equalto', 'InfiniBand') }}"
  vars:
    parsed: "{{ ibstat.stdout | gpucluster.acceptance.from_ibstat }}"
"""

RETURN = r"""
_value:
  description: The parsed output.
  type: dict
  contains:
    cas:
      description:
        - One entry per adapter, in the order printed. Keys C(name) (mlx5_0), C(node_type) (CA),
          C(type) (MT4129), C(nports), C(firmware), C(hardware_version), C(node_guid),
          C(system_guid), C(line), C(text) (the C(CA '...') line as printed) and C(ports).
        - >-
          Each port has C(port) (int), C(state) (Down, Initializing, Armed, Active),
          C(physical_state) (Sleep, Polling, Disabled, LinkUp, ...), C(rate) (Gb/s, int, or 2.5),
          C(rate_note) (FDR10 or null), C(effective_speed), C(lid), C(lmc), C(sm_lid),
          C(capability_mask), C(guid), C(link_layer) (InfiniBand or Ethernet), C(line), C(text)
          (the C(Port N:) line) and C(lines) (the port's printed lines as
          C(CA 'mlx5_0' > Port 1: > State: Active), for evidence).
          Values not printed are null.
      type: list
      elements: dict
    failed_cas:
      description: Devices named in C(ibpanic) lines (stat of IB device ... failed).
      type: list
      elements: str
    errors:
      description: Why the output cannot be trusted, with line numbers; empty when it can.
      type: list
      elements: str
    warnings:
      description: Oddities worth a look that do not invalidate the output.
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_ibstat."""

    def filters(self):
        return guarded_filters({"from_ibstat": text_filter("from_ibstat", parse_ibstat)})
