# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A per-node fake of ``/sys/class/infiniband/<ca>/ports/<port>/counters/<name>``.

Real nodes expose the InfiniBand port counters in sysfs, and the acceptance infiniband stage
reads them there with grep. The simulated node's tree lives in
``<run>/gpusim/sys/<node>/class/infiniband``; it is (re)written whenever ``ibstat`` or
``perfquery`` runs on the node and by ``clusterctl start``, each write counting as traffic on the
ports, so an ``ib_counters_rising`` fault shows between two reads that straddle an ibstat call.
"""
from __future__ import annotations

import os

from . import model
from .common import write_atomic
from .perfquery import counters
from .runstate import RunState

# perfquery -x field -> sysfs file name (mlx5 driver).
SYSFS_NAMES = {
    "SymbolErrorCounter": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
    "PortXmitData": "port_xmit_data",
    "PortRcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_packets",
    "PortRcvPkts": "port_rcv_packets",
    "PortUnicastXmitPkts": "unicast_xmit_packets",
    "PortUnicastRcvPkts": "unicast_rcv_packets",
    "PortMulticastXmitPkts": "multicast_xmit_packets",
    "PortMulticastRcvPkts": "multicast_rcv_packets",
    "PortXmitWait": "port_xmit_wait",
}


def root(run_dir, node_name):
    return os.path.join(run_dir, "gpusim", "sys", node_name, "class", "infiniband")


def write_tree(node, run_dir):
    """Write the node's counter files; each call is one more 'tick' of traffic on every port."""
    if not run_dir:
        return
    state = RunState(run_dir, node.name)
    calls = state.bump("sysfs")
    for nic in node.nics + list(getattr(node, "storage_nics", [])):
        values = counters(node.spec.seed, node.name, nic, calls, calls, 0, flapped=state.bump("flaps:%s" % nic.name, 0))
        folder = os.path.join(root(run_dir, node.name), nic.name, "ports", "1", "counters")
        os.makedirs(folder, exist_ok=True)
        _write_link(run_dir, node, nic)
        for field, name in SYSFS_NAMES.items():
            write_atomic(os.path.join(folder, name), "%d\n" % values.get(field, 0), encoding="ascii")


def _write_link(run_dir, node, nic):
    """<ca>/device/{current,max}_link_{speed,width}: the HCA's PCI function (a directory here,
    a link to /sys/devices/pci... on a real node; grep reads through either)."""
    folder = os.path.join(root(run_dir, node.name), nic.name, "device")
    os.makedirs(folder, exist_ok=True)
    top = node.hw["nic_pcie_gen"]
    values = {"current_link_speed": "%s GT/s PCIe" % model.PCIE_GTS[nic.pcie_gen],
              "current_link_width": str(nic.pcie_width),
              "max_link_speed": "%s GT/s PCIe" % model.PCIE_GTS[top], "max_link_width": "16"}
    for name, value in values.items():
        write_atomic(os.path.join(folder, name), value + "\n", encoding="ascii")
