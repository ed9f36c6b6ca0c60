"""Fake ``nvidia-imex-ctl -N``: the IMEX domain of the node's rack as the driver-570 tool prints it.

Layout: the real 18-node output quoted in tests/fixtures/imex (legend, time stamp, one ``Node #``
line per member, the From/To connectivity matrix, ``Domain State:``). The domain is the node's
rack (rack_trays trays). An ``imex_down`` fault stops one tray's daemon: there the tool cannot
reach its daemon (no real sample of that message was found: the words here are made up, the exit
status non-zero); on its rack peers it is UNAVAILABLE, its connections I (Invalid) and the domain
DEGRADED (the states and domain status DCGM's IMEX fields name). Non-rack profiles have no IMEX.
"""
import time

from .common import Result

LEGEND = (
    "Connectivity Table Legend:\n"
    "I - Invalid - Node wasn't reachable, no connection status available\n"
    "N - Never Connected\n"
    "R - Recovering - Connection was lost, but clean up has not yet been triggered.\n"
    "D - Disconnected - Connection was lost, and clean up has been triggreed.\n"
    "A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.\n"
    "!V! - Version mismatch, communication disabled.\n"
    "!M! - Node map mismatch, communication disabled.\n"
    "C - Connected - Ready for operation\n\n")
USAGE = "usage: nvidia-imex-ctl -N (the simulated tool prints the node status only)\n"


def _stamp(now):
    t = time.localtime(now)
    return "%d/%d/%d %02d:%02d:%02d.%03d" % (
        t.tm_mon, t.tm_mday, t.tm_year, t.tm_hour, t.tm_min, t.tm_sec, int(now * 1000) % 1000)


def _members(node):
    spec = node.spec
    per = getattr(spec, "rack_trays", 18)
    rack = node.index // per
    return spec.nodes[rack * per:(rack + 1) * per], rack


def run(node, args):
    if args[:1] != ["-N"] or len(args) > 1:
        return Result("", USAGE, 2)
    if node.hw.get("fabric") != "rack":
        return Result("", "nvidia-imex-ctl: no IMEX daemon on this node (not an NVLink multi-node system)\n", 1)
    members, rack = _members(node)
    down = set(f["node"] for f in node.spec.faults_for(kind="imex_down"))
    if node.name in down:
        return Result("", "nvidia-imex-ctl: cannot connect to the IMEX daemon on this node\n", 1)
    driver = ".".join(node.driver.split(".")[:2])
    lines = [LEGEND + _stamp(node.now), "Nodes:"]
    for i, name in enumerate(members):
        address = "172.31.%d.%d" % (48 + rack, 10 + i)
        state = "UNAVAILABLE" if name in down else "READY"
        lines.append(("Node #%d" % i).ljust(9) + " - " + address.ljust(15) + " - " + state.ljust(20)
                     + " - Version: " + driver)
    lines.append("")
    lines.append(" Nodes From\\To  " + "".join(str(i).ljust(4) for i in range(len(members))).rstrip())
    for i, name in enumerate(members):
        cells = ["I" if name in down or other in down else "C" for other in members]
        lines.append(str(i).rjust(8) + "        " + "   ".join(cells))
    lines.append("")
    lines.append("Domain State: %s" % ("DEGRADED" if down & set(members) else "UP"))
    return Result("\n".join(lines) + "\n", "", 0, time_key="nvidia_smi")
