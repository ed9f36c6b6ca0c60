# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_perftest
version_added: 0.1.0
short_description: Parse the output of the perftest bandwidth tests (C(ib_write_bw), C(ib_read_bw), C(ib_send_bw))
description:
  - Reads the text printed by a perftest C(*_bw) test, client or server side, with one result row
    or the C(-a) table of all message sizes.
  - All bandwidths are returned in Gb/s (10^9 bit/s) whatever perftest printed. With
    C(--report_gbits) perftest prints C([Gb/sec]), used as is. Otherwise it prints C([MB/sec]) (older
    releases) or C([MiB/sec]) (newer ones) and both mean 2^20 bytes per second (perftest divides by
    0x100000), so the value is multiplied by 1048576 * 8 / 10^9 = 0.008388608. The printed values are
    kept as C(bw_peak_raw) and C(bw_average_raw) in each row, with C(unit).
  - Problems are reported in the result, never raised. C(errors) is not empty when there is no
    result table (for example C(Couldn't connect to ...) or C(Unable to init the socket connection)
    on a failed run), when the table has no rows, a row is cut short or a bandwidth is negative.
options:
  _input:
    description: The standard output (and error) of the perftest command.
    type: string
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Server side
  ansible.builtin.command: ib_write_bw -d mlx5_0 -F --report_gbits -s 1048576 -D 10
  async: 60
  poll: 0
  delegate_to: "{{ peer }}"

- name: Client side
  ansible.builtin.command: "ib_write_bw -d mlx5_0 -F --report_gbits -s 1048576 -D 10 {{ peer }}"
  register: bw
  changed_when: false

- name: At least 360 Gb/s on a 400 Gb/s link
  ansible.builtin.assert:
    that:
      - result.errors | length == 0
      - result.bw_average >= 360
  vars:
    result: "{{ bw.stdout | gpucluster.acceptance.from_perftest }}"
"""

RETURN = r"""
_value:
  description: The parsed result.
  type: dict
  contains:
    test:
      description: The test title, for example C(RDMA_Write BW Test) or C(RDMA_Write Bidirectional BW Test).
      type: str
    device:
      description: The device tested (C(mlx5_0)).
      type: str
    link_type:
      description: C(IB) or C(Ethernet) (RoCE).
      type: str
    role:
      description: C(server) when the output shows the server waiting for its client, else C(client).
      type: str
    unit:
      description: The bandwidth unit perftest printed (Gb/sec, MB/sec or MiB/sec).
      type: str
    msg_size:
      description: Message size in bytes of the largest row.
      type: int
    bw_peak:
      description: Peak bandwidth of the largest row, in Gb/s (0 when perftest did not measure it, as in duration mode).
      type: float
    bw_average:
      description: Average bandwidth of the largest row, in Gb/s.
      type: float
    msg_rate:
      description: Message rate of the largest row, in millions of messages per second.
      type: float
    bw_average_max:
      description: The highest average bandwidth of all rows, in Gb/s.
      type: float
    rows:
      description: Every row, C({msg_size, iterations, bw_peak, bw_average, msg_rate, bw_peak_raw,
        bw_average_raw, line}) plus C(sl), per-port and C(cpu_util) columns when printed.
      type: list
      elements: dict
    errors:
      description: Why the output cannot be trusted, with line numbers; empty when it can.
      type: list
      elements: str
    warnings:
      description: perftest warnings (CPU frequency, peak not measured, driver warnings).
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import parse_perftest
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """Ansible filter: from_perftest."""

    def filters(self):
        return guarded_filters({"from_perftest": text_filter("from_perftest", parse_perftest)})
