# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_xid_log
version_added: 0.1.0
short_description: Extract NVIDIA Xid events and lost GPUs from kernel log text
description:
  - >-
    Finds the C(NVRM: Xid) lines, each naming a PCI address and an Xid number, in the
    output of C(dmesg), C(dmesg -T),
    C(journalctl -k) (short or ISO timestamps) or a syslog file, and returns one event per
    line with the Xid number, PCI address, process id and name, message and raw timestamp.
  - Lines that continue an Xid (the GSP RPC history after Xid 119, the lines printed after
    Xid 79) are attached to the event. GPUs that fell off the bus are listed in C(gpu_lost)
    whether or not an Xid was logged (newer drivers print a multi-line
    C(The NVIDIA GPU <bdf> ... fallen off the bus) message).
  - >-
    Lines that are not Xid lines are ignored; a log without any Xid is a valid, empty
    result. An C(NVRM: Xid (...)) line in the driver's shape whose Xid number cannot be read is
    reported in C(errors) (an Xid that cannot be judged), other unreadable C(NVRM: Xid)
    mentions in C(warnings), both with their line number; a C(dmesg: read kernel buffer failed)
    or C(-- No entries --) line is an error. Only a value that is not a string raises an error.
  - >-
    Reads plain C(dmesg) (seconds since boot), C(dmesg -T), C(dmesg --time-format=iso) (also
    with C(--decode) facility/level prefixes), C(dmesg -r) level prefixes, C(journalctl -k)
    (short and ISO), syslog files (also localised month names); srun and mpirun line prefixes
    are removed, shell prompts dropped with a warning. Each event's C(time) says when it was
    logged as far as its prefix tells; placing plain dmesg stamps on the clock needs the node's
    uptime (the gpu_health stage captures it).
options:
  _input:
    description: Kernel log text.
    type: string
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Read the kernel log
  ansible.builtin.command: dmesg -T
  register: kmsg
  changed_when: false
  become: true

- name: Parse the Xid events
  ansible.builtin.set_fact:
    xid: "{{ kmsg.stdout | gpucluster.acceptance.from_xid_log }}"

- name: No GPU may have fallen off the bus, and no double-bit ECC error may have occurred
  ansible.builtin.assert:
    that:
      - xid.gpu_lost | length == 0
      - 48 not in xid.by_xid
    fail_msg: "lost GPUs {{ xid.gpu_lost }}, Xids per GPU {{ xid.by_pci }}"
"""

RETURN = r"""
_value:
  description: The Xid events found.
  type: dict
  contains:
    events:
      description: One entry per Xid line, in log order.
      type: list
      elements: dict
      contains:
        xid:
          description: The Xid number.
          type: int
        pci:
          description: PCI address as C(domain:bus:device), lower case (C(0000:18:00)); null when the line names none.
          type: str
        device:
          description: The text in parentheses as logged (C(PCI:0000:18:00), C(PCI:0000:01:00 GPU-I:05)).
          type: str
        gpu_instance:
          description: MIG GPU instance id (C(GPU-I:05)), or null.
          type: int
        pid:
          description: Process id, or null when missing or C('<unknown>').
          type: int
        process:
          description: Process name, or null when missing or C(<unknown>).
          type: str
        message:
          description: The text after the Xid number, pid and name.
          type: str
        timestamp:
          description: >-
            The raw log prefix: C([ 1234.567890]), C([Mon Jan  1 00:00:00 2024]),
            C(Jan  1 00:00:00 host kernel:) (with a trailing monotonic stamp when present), or
            an ISO timestamp (with C(host kernel:) for the journal); null when the line has none.
          type: str
        timestamp_kind:
          description: C(monotonic), C(ctime), C(syslog), C(iso), C(kmsg), C(other) or null.
          type: str
        line:
          description: Line number of the Xid line (1-based).
          type: int
        raw:
          description: The Xid line as logged (launcher prefix removed).
          type: str
        time:
          description: >-
            What the prefix says about when: C(uptime) (seconds since boot), C(epoch) (UTC
            seconds, from an ISO stamp with an offset), C(local) ([year, month, day, hour,
            minute, second], local time) or C(local_noyear) (syslog); empty when unknown.
          type: dict
        epoch:
          description: UTC seconds when the prefix alone gives them (ISO with offset), else null.
          type: float
        uuid:
          description: >-
            GPU UUID from a preceding C(NVRM: GPU at PCI:...) line, or null.
          type: str
        continuation:
          description: Lines that continue this event (same time, or indented), without their prefix.
          type: list
          elements: str
    gpu_lost:
      description: Sorted PCI addresses of GPUs that fell off the bus (Xid 79 or the fallen-off-the-bus messages).
      type: list
      elements: str
    lost:
      description: One entry per lost GPU, C({pci, line, raw, time, epoch}), the line that reported it.
      type: list
      elements: dict
    first_line:
      description: The first line of the log (what it covers), null when empty.
      type: str
    last_line:
      description: The last line of the log.
      type: str
    by_xid:
      description: Number of events per Xid number.
      type: dict
    by_pci:
      description: Sorted distinct Xid numbers per PCI address.
      type: dict
    devices:
      description: C(uuid) and C(serial) per PCI address, from C(GPU at PCI) and serial number lines.
      type: dict
    rate_limited:
      description: PCI addresses whose error prints the driver rate-limited (counts are lower bounds).
      type: list
      elements: str
    lines:
      description: Number of lines read.
      type: int
    errors:
      description: Problems that make the result unusable (none for ordinary logs).
      type: list
      elements: str
    warnings:
      description: Xid lines that could not be read (with line numbers) and similar notes.
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """from_xid_log filter."""

    def filters(self):
        return guarded_filters({"from_xid_log": text_filter("from_xid_log", parse_xid_log)})
