# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``perfquery`` (rdma-core infiniband-diags): ``[-x] [-r] [-C ca] [-P port] [lid [port]]``.

Layout of perfquery.c / libibmad dump.c: ``# Port extended counters: Lid L port P (CapMask: 0x5A00
CapMask2: 0x0000002)`` then ``Name:....value`` rows padded with dots to column 33. Every call of
a port counts in the run state: traffic counters grow with each call, an ib_counters_rising fault
adds ``per_call`` to its error counter per call, ``-r`` resets what later calls show.
"""
from __future__ import annotations

import os
import random

from .common import Result
from .runstate import RunState

CAPMASK = 0x5A00
CAPMASK2 = 0x0000002
EXT_FIELDS = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
              "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts")
ERROR_FIELDS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
                "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
                "PortXmitConstraintErrors", "PortRcvConstraintErrors", "LocalLinkIntegrityErrors",
                "ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitWait", "QP1Dropped")


def _row(name, value):
    return ("%s:" % name).ljust(33, ".") + str(value) + "\n"


def counters(seed, node_name, nic, calls, since_reset, reset_calls, flapped=0):
    """Counter values of ``nic`` after ``calls`` queries (``reset_calls`` of them before the last -r);
    flapped: how often its link went down and recovered under traffic (link_flap)."""
    r = random.Random("perf|%s|%s|%s" % (seed, node_name, nic.name))
    base = {} if reset_calls else {
        "PortXmitData": r.randint(10 ** 12, 6 * 10 ** 13), "PortRcvData": r.randint(10 ** 12, 6 * 10 ** 13),
        "PortXmitPkts": r.randint(10 ** 9, 10 ** 11), "PortRcvPkts": r.randint(10 ** 9, 10 ** 11),
        "PortMulticastXmitPkts": r.randint(0, 10 ** 6), "PortMulticastRcvPkts": r.randint(10 ** 6, 10 ** 9),
        "PortXmitWait": r.randint(0, 5 * 10 ** 7),
    }
    step = {"PortXmitData": r.randint(10 ** 8, 10 ** 9), "PortRcvData": r.randint(10 ** 8, 10 ** 9),
            "PortXmitPkts": r.randint(10 ** 5, 10 ** 6), "PortRcvPkts": r.randint(10 ** 5, 10 ** 6),
            "PortMulticastXmitPkts": r.randint(0, 3), "PortMulticastRcvPkts": r.randint(10, 500),
            "PortXmitWait": r.randint(0, 2000)}
    values = {f: 0 for f in EXT_FIELDS + ERROR_FIELDS}
    for field in values:
        values[field] = base.get(field, 0) + step.get(field, 0) * since_reset
    values["PortUnicastXmitPkts"] = values["PortXmitPkts"] - values["PortMulticastXmitPkts"]
    values["PortUnicastRcvPkts"] = values["PortRcvPkts"] - values["PortMulticastRcvPkts"]
    for field, per_call in nic.rising:
        values[field] += per_call * since_reset
    values["LinkDownedCounter"] += flapped
    values["LinkErrorRecoveryCounter"] += flapped
    return values


def render(lid, port, values, extended):
    if extended:
        out = ["# Port extended counters: Lid %d port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n"
               % (lid, port, CAPMASK, CAPMASK2), _row("PortSelect", port), _row("CounterSelect", "0x0000")]
        out += [_row(f, values[f]) for f in EXT_FIELDS]
        out.append(_row("CounterSelect2", "0x00000000"))
        out += [_row(f, values[f]) for f in ERROR_FIELDS]
        return "".join(out)

    def cap32(value, bits=32):  # the basic counters saturate
        return min(value, 2 ** bits - 1)
    out = ["# Port counters: Lid %d port %d (CapMask: 0x%02X)\n" % (lid, port, CAPMASK),
           _row("PortSelect", port), _row("CounterSelect", "0x0000")]
    widths = {"SymbolErrorCounter": 16, "LinkErrorRecoveryCounter": 8, "LinkDownedCounter": 8, "PortRcvErrors": 16,
              "PortRcvRemotePhysicalErrors": 16, "PortRcvSwitchRelayErrors": 16, "PortXmitDiscards": 16,
              "PortXmitConstraintErrors": 8, "PortRcvConstraintErrors": 8}
    out += [_row(f, cap32(values[f], widths[f])) for f in widths]
    out.append(_row("CounterSelect2", "0x00"))
    out += [_row("LocalLinkIntegrityErrors", cap32(values["LocalLinkIntegrityErrors"], 4)),
            _row("ExcessiveBufferOverrunErrors", cap32(values["ExcessiveBufferOverrunErrors"], 4)),
            _row("QP1Dropped", cap32(values["QP1Dropped"], 16)), _row("VL15Dropped", cap32(values["VL15Dropped"], 16))]
    out += [_row(f, cap32(values[f])) for f in ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait")]
    return "".join(out)


def _timeout(lid):
    pid = os.getpid()
    return ("ibwarn: [%d] _do_madrpc: recv failed: Connection timed out\n"
            "ibwarn: [%d] mad_rpc: _do_madrpc failed; dport (Lid %d)\n"
            "perfquery: iberror: failed: classportinfo query\n" % (pid, pid, lid))


def run(node, args, run_dir=None, node_state_of=None):  # noqa: C901
    """Run ``perfquery ARGS`` on ``node``; return a Result. ``node_state_of(name)`` gives other nodes."""
    extended = reset = False
    ca = None
    port = 1
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-x", "--extended"):
            extended = True
        elif a in ("-r", "--reset_after_read"):
            reset = True
        elif a in ("-a", "--all_ports", "-l", "--loop_ports"):
            pass
        elif a in ("-C", "--Ca", "-P", "--Port"):
            i += 1
            if i >= len(args):
                return Result("", "perfquery: option requires an argument -- '%s'\n" % a[-1], 255)
            if a in ("-C", "--Ca"):
                ca = args[i]
            else:
                try:
                    port = int(args[i], 0)
                except ValueError:
                    return Result("", "perfquery: iberror: failed: bad port '%s'\n" % args[i], 255)
        elif a.startswith("-"):
            return Result("", "perfquery: invalid option -- '%s'\n" % a.lstrip("-")[:1], 255)
        else:
            pos.append(a)
        i += 1
    nics = {n.name: n for n in node.nics}
    if ca is not None and ca not in nics:
        return Result("", "ibwarn: [%d] mad_rpc_open_port: can't open UMAD port (%s:%d)\n"
                      "perfquery: iberror: failed: Failed to open '%s' port '%d'\n" % (os.getpid(), ca, port, ca, port), 255)
    local = nics[ca] if ca else node.nics[0]
    if local.state != "Active":
        return Result("", _timeout(local.lid), 255, "perfquery")
    target_node, nic = node, local
    if pos:
        try:
            lid = int(pos[0], 0)
            if len(pos) > 1:
                port = int(pos[1], 0)
        except ValueError:
            return Result("", "perfquery: iberror: failed: can't resolve destination port %s\n" % pos[0], 255)
        found = None
        for other in node.spec.nodes:
            state = node if other == node.name else node_state_of(other)
            for n in state.nics:
                if n.lid == lid:
                    found = (state, n)
        if found is None or found[1].state != "Active":
            return Result("", _timeout(lid), 255, "perfquery")
        target_node, nic = found
    if port != 1:
        return Result("", "ibwarn: [%d] pma_query_via: PerfMgt ClassPortInfo 0x0 port %d not present\n"
                      "perfquery: iberror: failed: classportinfo query\n" % (os.getpid(), port), 255)
    state = RunState(run_dir, target_node.name)
    calls = state.bump("perfquery:%s" % nic.name)
    with state._locked() as data:  # pylint: disable=protected-access
        reset_calls = int(data.get("perfquery_reset:%s" % nic.name, 0))
    values = counters(node.spec.seed, target_node.name, nic, calls, calls - reset_calls, reset_calls,
                      flapped=state.bump("flaps:%s" % nic.name, 0))
    if reset:
        with state._locked() as data:  # pylint: disable=protected-access
            data["perfquery_reset:%s" % nic.name] = calls
    return Result(render(nic.lid, port, values, extended), "", 0, "perfquery")
