# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``ibnetdiscover``: the whole simulated fabric as infiniband-diags prints it.

Leaf switches (one per leaf and rail: ``leaf01-r3`` when rails > 1, else ``leaf01``) hold the
nodes' HCAs of that rail on ports 1.., uplinks to every spine from port 33 (fewer when the fabric
is oversubscribed, fewer again on a degraded_uplink leaf); Down HCAs are not discovered.
Layout of infiniband-diags/ibnetdiscover.c: ``vendid=``/``devid=``/``sysimgguid=`` blocks,
``Switch\\t65 "S-<guid>"\\t\\t# "MF0;<name>:MQM9700/U1" enhanced port 0 lid L lmc 0``, port lines
``[p]\\t"H-<guid>"[1](<guid>) \\t\\t# "<node> mlx5_N" lid L 4xNDR``, CA blocks with ``caguid=``.
"""
from __future__ import annotations

import math
import os
import time

from . import hardware
from .common import Result
from .model import switch_guid, uplink_factor

SWITCH_DEVID = "0xd2f2"   # Quantum-2 (QM9700)
SWITCH_MODEL = "MQM9700/U1"


def link_speed(rate):
    """ibnetdiscover width+speed of an HCA link at ``rate`` Gb/s ('4xNDR', '4xHDR', ...)."""
    if rate in hardware.IB_SPEED_NAME and rate >= 40:
        return "4x" + hardware.IB_SPEED_NAME[rate]
    return {25: "1xEDR", 50: "1xHDR", 10: "4xSDR", 20: "4xDDR"}.get(rate, "4xNDR")


class Fabric:
    """Switches, their ports and the HCAs of every node of the spec."""

    def __init__(self, spec, states):
        self.spec = spec
        fab = spec.fabric
        nics = spec.hw["nics"]
        rails = min(fab["rails"], nics)
        self.switches = []  # dicts: name, guid, lid, ports {port: (kind, ref, remote_port, speed)}
        for s in range(fab["spines"]):
            self.switches.append({"name": spec.spine_name(s), "ports": {}, "spine": True})
        leaf_switch = {}
        for leaf in range(fab["leaves"]):
            for rail in range(rails):
                name = spec.leaf_name(leaf) if rails == 1 else "%s-r%d" % (spec.leaf_name(leaf), rail + 1)
                leaf_switch[(leaf, rail)] = len(self.switches)
                self.switches.append({"name": name, "ports": {}, "spine": False, "leaf": leaf})
        for i, sw in enumerate(self.switches):
            sw["guid"] = switch_guid(i)
            sw["lid"] = i + 1
        self.cas = []  # (node name, nic)
        per_leaf = spec.nodes_per_leaf()
        down_max = per_leaf * -(-nics // rails)
        for node_name in spec.nodes:
            st = states[node_name]
            for nic in st.nics:
                sw = self.switches[leaf_switch[(st.leaf, nic.rail)]]
                port = (spec.node_index(node_name) % per_leaf) * -(-nics // rails) + nic.index // rails + 1
                if nic.state != "Active":
                    continue
                nic.switch, nic.switch_port = sw, port
                sw["ports"][port] = ("ca", (node_name, nic), 1, nic.rate)
                self.cas.append((node_name, nic))
        spines = [s for s in self.switches if s["spine"]]
        spine_next = {id(s): 1 for s in spines}
        up_total = max(1, math.ceil(down_max / fab["oversubscription"]))
        first_up = 33 if down_max <= 32 else down_max + 1
        for sw in self.switches:
            if sw["spine"]:
                continue
            kept = max(1, int(round(up_total * uplink_factor(spec, sw["leaf"]))))
            for k in range(up_total):
                spine = spines[k % len(spines)]
                if k >= kept:
                    spine_next[id(spine)] += 1  # the cable is missing: its spine port stays empty
                    continue
                sport = spine_next[id(spine)]
                spine_next[id(spine)] += 1
                lport = first_up + k
                sw["ports"][lport] = ("sw", spine, sport, spec.nic_gbps())
                spine["ports"][sport] = ("sw", sw, lport, spec.nic_gbps())
        for sw in self.switches:
            sw["numports"] = max(65, max(sw["ports"] or [0]) + 1)


def _desc(sw):
    return "MF0;%s:%s" % (sw["name"], SWITCH_MODEL)


def render(spec, states, local_nic):
    fab = Fabric(spec, states)
    out = ["#\n# Topology file: generated on %s\n#\n" % time.ctime(),
           "# Initiated from node %016x port %016x\n" % (local_nic.guid, local_nic.guid)]
    leaves = [s for s in fab.switches if not s["spine"]]
    spines = [s for s in fab.switches if s["spine"]]
    for sw in leaves + spines:
        out.append("\nvendid=0x2c9\ndevid=%s\nsysimgguid=0x%x\nswitchguid=0x%x(%x)\n"
                   % (SWITCH_DEVID, sw["guid"], sw["guid"], sw["guid"]))
        out.append('Switch\t%d "S-%016x"\t\t# "%s" enhanced port 0 lid %d lmc 0\n'
                   % (sw["numports"], sw["guid"], _desc(sw), sw["lid"]))
        for port in sorted(sw["ports"]):
            kind, ref, rport, rate = sw["ports"][port]
            if kind == "ca":
                node_name, nic = ref
                out.append('[%d]\t"H-%016x"[%d](%x) \t\t# "%s %s" lid %d %s\n'
                           % (port, nic.guid, rport, nic.guid, node_name, nic.name, nic.lid, link_speed(nic.rate)))
            else:
                out.append('[%d]\t"S-%016x"[%d]\t\t# "%s" lid %d %s\n'
                           % (port, ref["guid"], rport, _desc(ref), ref["lid"], link_speed(rate)))
    for node_name, nic in fab.cas:
        sw = nic.switch
        out.append("\nvendid=0x2c9\ndevid=%s\nsysimgguid=0x%x\ncaguid=0x%x\n"
                   % (spec.hw["nic_devid"], nic.guid, nic.guid))
        out.append('Ca\t1 "H-%016x"\t\t# "%s %s"\n' % (nic.guid, node_name, nic.name))
        out.append('[1](%x) \t"S-%016x"[%d]\t\t# lid %d lmc 0 "%s" lid %d %s\n'
                   % (nic.guid, sw["guid"], nic.switch_port, nic.lid, _desc(sw), sw["lid"], link_speed(nic.rate)))
    out.append("\n")
    return "".join(out), fab


def list_nodes(spec, states, switches_only=False):
    fab = Fabric(spec, states)
    out = []
    if not switches_only:
        for node_name, nic in fab.cas:
            out.append('Ca\t : 0x%016x ports 1 devid 0x%x vendid 0x2c9 "%s %s"\n'
                       % (nic.guid, int(spec.hw["nic_devid"], 16), node_name, nic.name))
    for sw in fab.switches:
        out.append('Switch\t : 0x%016x ports %d devid 0x%x vendid 0x2c9 "%s"\n'
                   % (sw["guid"], sw["numports"], int(SWITCH_DEVID, 16), _desc(sw)))
    return "".join(out)


def run(node, args, node_state_of):
    """Run ``ibnetdiscover ARGS`` from ``node``; return a Result."""
    ca = None
    mode = "topology"
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-C", "--Ca", "-P", "--Port"):
            i += 1
            if i >= len(args):
                return Result("", "ibnetdiscover: option requires an argument -- '%s'\n" % a[-1], 255)
            if a in ("-C", "--Ca"):
                ca = args[i]
        elif a in ("-l", "--list"):
            mode = "list"
        elif a in ("-H", "--Hca_list"):
            mode = "cas"
        elif a in ("-S", "--Switch_list"):
            mode = "switches"
        elif a in ("-g", "--show", "-s", "--full", "-q"):
            pass
        else:
            return Result("", "ibnetdiscover: invalid option -- '%s'\n" % a.lstrip("-")[:1], 255)
        i += 1
    nics = {n.name: n for n in node.nics}
    if ca is not None and ca not in nics:
        return Result("", "ibwarn: [%d] mad_rpc_open_port: can't open UMAD port (%s:0)\n"
                      "ibnetdiscover: iberror: failed: discover failed\n" % (os.getpid(), ca), 255)
    local = nics[ca] if ca else node.nics[0]
    if local.state != "Active":
        pid = os.getpid()
        return Result("", "ibwarn: [%d] _do_madrpc: recv failed: Connection timed out\n"
                      "ibwarn: [%d] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\n"
                      "src/ibnetdisc.c:811; Failed to resolve self\n"
                      "ibnetdiscover: iberror: failed: discover failed\n" % (pid, pid), 255, "ibnetdiscover")
    states = {n: (node if n == node.name else node_state_of(n)) for n in node.spec.nodes}
    if mode == "list":
        return Result(list_nodes(node.spec, states), "", 0, "ibnetdiscover")
    if mode in ("cas", "switches"):
        text = list_nodes(node.spec, states, switches_only=mode == "switches")
        keep = "Ca" if mode == "cas" else "Switch"
        return Result("".join(line + "\n" for line in text.splitlines() if line.startswith(keep)), "", 0,
                      "ibnetdiscover")
    text = render(node.spec, states, local)[0]
    return Result(text, "", 0, "ibnetdiscover")
