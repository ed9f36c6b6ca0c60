"""perfquery counter names mapped to the sysfs names (_ib_counters_names), against a real sysfs dump."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_names import (
    PERFQUERY_TO_SYSFS,
    perfquery_name_to_sysfs,
)

from test_ib_counters import fixture


@pytest.mark.parametrize("perfquery, sysfs", [
    ("SymbolErrorCounter", "symbol_error"),
    ("LinkDownedCounter", "link_downed"),
    ("LinkErrorRecoveryCounter", "link_error_recovery"),
    ("PortRcvErrors", "port_rcv_errors"),
    ("PortXmitDiscards", "port_xmit_discards"),
    ("PortRcvRemotePhysicalErrors", "port_rcv_remote_physical_errors"),
    ("ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors"),
    ("LocalLinkIntegrityErrors", "local_link_integrity_errors"),
    ("PortXmitData", "port_xmit_data"),
    ("PortRcvData", "port_rcv_data"),
    ("PortXmitWait", "port_xmit_wait"),
    ("PortXmitPkts", "port_xmit_packets"),
    ("PortUnicastRcvPkts", "unicast_rcv_packets"),
    ("VL15Dropped", "VL15_dropped"),
    ("QP1Dropped", "qp1_dropped"),
    ("PortLocalPhysicalErrors", "port_local_physical_errors"),
    ("symbol_error", "symbol_error"),
])
def test_name_normalisation(perfquery, sysfs):
    assert perfquery_name_to_sysfs(perfquery) == sysfs


def test_known_names_map_to_sysfs_files():
    sysfs_files = {
        "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors",
        "port_rcv_constraint_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
        "VL15_dropped", "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
        "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
        "port_xmit_wait", "qp1_dropped"}
    assert set(PERFQUERY_TO_SYSFS.values()) <= sysfs_files
    # The gpud dump holds every sysfs file name we map to (qp1_dropped has no sysfs file).
    dumped = set(parse_ib_counters(fixture("gpud_h100_sysfs_grep_counters_hw_counters.txt"))["counters"]["mlx5_0"]["1"])
    assert set(PERFQUERY_TO_SYSFS.values()) - {"qp1_dropped"} <= dumped
