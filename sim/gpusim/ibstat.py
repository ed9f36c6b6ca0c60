# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``ibstat`` (rdma-core infiniband-diags): all CAs, ``-l``, ``-p``, ``-s``, ``ibstat CA [PORT]``.

Layout of infiniband-diags/ibstat.c (ca_dump / port_dump: tab-indented, ``Rate: 400``,
``Capability mask: 0x%08x``, GUIDs as ``0x%016x``); ConnectX-7 IB values as real ibstat prints
them (CA type MT4129, capability mask 0xa751e848, Port GUID = Node GUID).
"""
from __future__ import annotations

import os

from .common import Result

CAPMASK = {"MT4129": 0xA751E848, "MT4123": 0xA651E848}


def ca_header(node, nic):
    hw = node.hw
    return ("CA '%s'\n\tCA type: %s\n\tNumber of ports: 1\n\tFirmware version: %s\n\tHardware version: 0\n"
            "\tNode GUID: 0x%016x\n\tSystem image GUID: 0x%016x\n"
            % (nic.name, hw["nic_ca_type"], nic.fw, nic.guid, nic.guid))


def port_block(node, nic, alone=False):
    pre, hdr = ("", "") if alone else ("\t\t", "\t")
    lines = [
        "%sPort 1:" % hdr,
        "%sState: %s" % (pre, nic.state),
        "%sPhysical state: %s" % (pre, nic.phys),
        "%sRate: %d" % (pre, nic.rate),
        "%sBase lid: %d" % (pre, nic.lid),
        "%sLMC: 0" % pre,
        "%sSM lid: %d" % (pre, nic.sm_lid),
        "%sCapability mask: 0x%08x" % (pre, CAPMASK.get(node.hw["nic_ca_type"], 0xA751E848)),
        "%sPort GUID: 0x%016x" % (pre, nic.guid),
        "%sLink layer: %s" % (pre, getattr(nic, "link_layer", "InfiniBand")),
    ]
    return "\n".join(lines) + "\n"


def run(node, args):
    """Run ``ibstat ARGS`` on ``node``; return a Result."""
    flags = [a for a in args if a.startswith("-")]
    pos = [a for a in args if not a.startswith("-")]
    for f in flags:
        if f not in ("-l", "--list_of_cas", "-p", "--port_list", "-s", "--short", "-d", "--debug", "-v", "--verbose"):
            return Result("", "ibstat: invalid option -- '%s'\n" % f.lstrip("-")[:1], 255)
    nics = node.nics + list(getattr(node, "storage_nics", []))
    if pos:
        match = [n for n in nics if n.name == pos[0]]
        if not match:
            return Result("", "ibpanic: [%d] main: '%s' IB device can't be found: No such file or directory\n"
                          % (os.getpid(), pos[0]), 255)
        nics = match
    if "-l" in flags or "--list_of_cas" in flags:
        return Result("".join("%s\n" % n.name for n in nics), "", 0, "ibstat")
    if "-p" in flags or "--port_list" in flags:
        return Result("".join("0x%016x\n" % n.guid for n in nics), "", 0, "ibstat")
    if len(pos) > 1:
        try:
            port = int(pos[1], 0)
        except ValueError:
            port = -1
        nic = nics[0]
        if port != 1:
            return Result("", "ibwarn: [%d] ca_stat: CA: '%s' has no port number %d - max (1)\n"
                          "ibwarn: [%d] main: stat of IB device '%s' failed\n"
                          % (os.getpid(), nic.name, port, os.getpid(), nic.name), 0, "ibstat")
        return Result("CA: '%s'\n" % nic.name + port_block(node, nic, alone=True), "", 0, "ibstat")
    short = "-s" in flags or "--short" in flags
    out = "".join(ca_header(node, n) + ("" if short else port_block(node, n)) for n in nics)
    return Result(out, "", 0, "ibstat")
