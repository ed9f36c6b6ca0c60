# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names and widths of InfiniBand port counters: perfquery's field names mapped to the sysfs
counter file names (PERFQUERY_TO_SYSFS, perfquery_name_to_sysfs), and the width in bits of each
PortCounters field (COUNTER_WIDTHS), by which a counter stuck at its maximum is told (_saturated).

Apart from the parser (_ib_counters) because both the parser and the snapshot deltas
(_ib_counters_deltas) read them: one table of names, one of widths. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# perfquery (libibmad field names, old and new) -> sysfs counter file name.
PERFQUERY_TO_SYSFS = {
    "SymbolErrorCounter": "symbol_error",
    "SymbolErrors": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkRecovers": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "LinkDowned": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "RcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "RcvRemotePhysErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "RcvSwRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "XmtDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "XmtConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "RcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "LinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "ExcBufOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
    "QP1Dropped": "qp1_dropped",
    "PortXmitData": "port_xmit_data",
    "XmtData": "port_xmit_data",
    "PortRcvData": "port_rcv_data",
    "RcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_packets",
    "XmtPkts": "port_xmit_packets",
    "PortRcvPkts": "port_rcv_packets",
    "RcvPkts": "port_rcv_packets",
    "PortUnicastXmitPkts": "unicast_xmit_packets",
    "PortUnicastRcvPkts": "unicast_rcv_packets",
    "PortMulticastXmitPkts": "multicast_xmit_packets",
    "PortMulticastRcvPkts": "multicast_rcv_packets",
    "PortXmitWait": "port_xmit_wait",
    "XmtWait": "port_xmit_wait",
}

# Width in bits of the PortCounters fields (IB spec; libibmad fields.c). sysfs reads the error
# counters from PortCounters, so a value of 2**width - 1 there means the counter is stuck at its
# maximum and further errors are not counted.
COUNTER_WIDTHS = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_wait": 32,
}
# Data and packet counters are 32 bits in plain PortCounters (perfquery without -x).
_BASIC_DATA_WIDTHS = {
    "port_xmit_data": 32,
    "port_rcv_data": 32,
    "port_xmit_packets": 32,
    "port_rcv_packets": 32,
}


def perfquery_name_to_sysfs(name):
    """The sysfs name for a perfquery counter name (CamelCase -> snake_case when not known)."""
    if name in PERFQUERY_TO_SYSFS:
        return PERFQUERY_TO_SYSFS[name]
    if "_" in name and name == name.lower():
        return name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _saturated(name, value, widths):
    width = widths.get(name)
    return width is not None and value == (1 << width) - 1
