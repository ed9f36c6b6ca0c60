# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_ibnetdiscover
version_added: 0.1.0
short_description: Parse the InfiniBand fabric topology printed by C(ibnetdiscover)
description:
  - Reads the topology file printed by C(ibnetdiscover) (infiniband-diags) and returns the
    switches, HCAs and routers with their connected ports, the deduplicated list of cables, which
    switches are leaves and which are spines, and the host each HCA belongs to.
  - GUIDs are returned as C(0x) followed by 16 hexadecimal digits, the form C(ibstat) prints, so
    the two can be joined. Link rates are in Gb/s (4xNDR is 400, 4xHDR 200, 4xEDR 100).
  - A leaf is a switch with at least one HCA other than the SHARP C(Aggregation Node) every Quantum
    switch carries; the other switches are spines.
  - The host of an HCA is the first word of its node description (C(gpu001 mlx5_0) gives C(gpu001));
    it is null when the description is the adapter's default (C(MT4129 ConnectX7 Mellanox Technologies)).
  - Problems are reported in the result, never raised. C(errors) is not empty when no node is
    found, a line is cut short, an HCA seen on a switch port has no block of its own (truncated
    output), or the input is the C(-p)/C(-l) listing instead of the topology file.
options:
  _input:
    description: The standard output of C(ibnetdiscover) (no options, C(-g) or C(-f) also read).
    type: string
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Discover the fabric from one node
  ansible.builtin.command: ibnetdiscover
  register: ibnd
  changed_when: false
  run_once: true

- name: Every cable runs at 4xNDR
  ansible.builtin.assert:
    that: fabric.links | rejectattr('rate', 'equalto', 400) | list | length == 0
  vars:
    fabric: "{{ ibnd.stdout | gpucluster.acceptance.from_ibnetdiscover }}"

- name: Hosts per leaf switch
  ansible.builtin.debug:
    msg: "{{ fabric.switches | selectattr('leaf') | map(attribute='name') | list }}"
  vars:
    fabric: "{{ ibnd.stdout | gpucluster.acceptance.from_ibnetdiscover }}"
"""

RETURN = r"""
_value:
  description: The parsed topology.
  type: dict
  contains:
    switches:
      description:
        - One entry per switch, C({guid, node_id, name, nports, lid, lmc, port0, vendid, devid,
          sysimgguid, leaf, ports, line}); C(name) is the node description, for example
          C(MF0;sw-leaf01:MQM9700/U1).
        - Each port is C({port, ext_port, port_guid, lid, lmc, peer_guid, peer_node_id, peer_type,
          peer_port, peer_ext_port, peer_port_guid, peer_name, peer_lid, width, speed, rate, line});
          C(width) like C(4x), C(speed) like C(NDR), C(rate) in Gb/s, C(peer_type) switch, hca or router.
      type: list
      elements: dict
    hcas:
      description: One entry per CA block, same keys as switches plus C(host) and C(aggregation_node);
        C(lid) is the LID of its first connected port.
      type: list
      elements: dict
    routers:
      description: One entry per router (C(Rt)) block, same keys as hcas.
      type: list
      elements: dict
    links:
      description: One entry per cable, C({a_type, a_guid, a_name, a_port, b_type, b_guid, b_name,
        b_port, kind, width, speed, rate}); the switch end is C(a); C(kind) is switch-switch,
        switch-hca, hca-hca, ...; when the ends disagree on width/speed the slower one is kept.
      type: list
      elements: dict
    leaf_switches:
      description: GUIDs of the switches with at least one HCA (aggregation nodes aside).
      type: list
      elements: str
    spine_switches:
      description: GUIDs of the other switches.
      type: list
      elements: str
    hca_hosts:
      description: HCA GUID to host name guessed from the description's first word (null when unknown).
      type: dict
    generated:
      description: The C(generated on) date of the topology file header, if printed.
      type: str
    initiated_from:
      description: GUID of the node ibnetdiscover ran from, if printed.
      type: str
    errors:
      description: Why the output cannot be trusted, with line numbers; empty when it can.
      type: list
      elements: str
    warnings:
      description: Oddities worth a look (ends of a link that disagree, ports without speed, default descriptions).
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import parse_ibnetdiscover
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_ibnetdiscover."""

    def filters(self):
        return guarded_filters({"from_ibnetdiscover": text_filter("from_ibnetdiscover", parse_ibnetdiscover)})
