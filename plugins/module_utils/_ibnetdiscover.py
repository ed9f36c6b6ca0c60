# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the topology file printed by ``ibnetdiscover`` (infiniband-diags).

Private to the collection. Standard library only; nothing here raises on odd input.

The format (``infiniband-diags/ibnetdiscover.c``; man page section "TOPOLOGY FILE FORMAT")::

    vendid=0x2c9
    devid=0xd2f2
    sysimgguid=0x2c5eab0300b87b40
    switchguid=0x2c5eab0300b87b40(2c5eab0300b87b40)
    Switch  65 "S-2c5eab0300b87b40"   # "MF0;leaf01:MQM9701/U1" enhanced port 0 lid 73 lmc 0
    [1]     "H-e09d7303007a4bd8"[1](e09d7303007a4bd8)   # "gpu001 mlx5_5" lid 647 4xNDR
    [35]    "S-2c5eab0300c26280"[32]                    # "MF0;spine02:MQM9701/U1" lid 236 4xNDR

    caguid=0xe09d7303007a4bd8
    Ca      1 "H-e09d7303007a4bd8"    # "gpu001 mlx5_5"
    [1](e09d7303007a4bd8)   "S-2c5eab0300b87b40"[1]   # lid 647 lmc 0 "MF0;leaf01:MQM9701/U1" lid 73 4xNDR

Also read: ``Rt`` (router) nodes, CA-to-CA links, ``-g`` grouping (``[ext N]`` port suffixes,
chassis headers), ``-f`` (``s=.. w=.. v=..`` after the speed), tabs or spaces, a port line whose
width/speed is missing. Not read: the ``-p`` ports report and the ``-l/-H/-S`` lists (an error
says so).

GUIDs are returned as ``0x`` + 16 lower-case hex digits, as ibstat prints them, so both outputs
can be joined; ``node_id`` keeps ibnetdiscover's ``S-``/``H-``/``R-`` form. Link ``rate`` is in
Gb/s (lanes x per-lane rate: 4xNDR = 400, 4xHDR = 200, 4xEDR = 100, 4xFDR = 56, 1xSDR = 2.5).

Leaves are switches with at least one HCA that is not a SHARP "Aggregation Node" (every Quantum
switch has one on its last port, spines included); spines are the other switches.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    IBDIAG_ERROR,
    IBDIAG_WARNING,
    lines_of,
    new_result,
    strip_launcher_prefix,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

_ID = r"[SHR?]-[0-9A-Fa-f]{1,16}"
_NODE = re.compile(
    r"^\s*(?P<kind>Switch|Ca|Rt)\s+(?P<nports>\d{1,6})\s+\"(?P<id>" + _ID + r")\"\s*"
    r"(?:#\s*\"(?P<desc>[^\"]*)\"(?P<rest>.*))?$")
_PORT0 = re.compile(r"(?P<mode>base|enhanced)\s+port\s+0\s+lid\s+(?P<lid>\d{1,9})\s+lmc\s+(?P<lmc>\d{1,3})")
_PORT = re.compile(
    r"^\s*\[(?P<port>\d{1,6})\](?:\[ext\s+(?P<ext>\d{1,6})\])?(?:\((?P<guid>[0-9A-Fa-f]+)\))?\s*"
    r"\"(?P<peer>" + _ID + r")\"\[(?P<pport>\d{1,6})\](?:\[ext\s+(?P<pext>\d{1,6})\])?"
    r"\s*(?:\((?P<pguid>[0-9A-Fa-f]+)\))?\s*#\s*(?P<comment>.*)$")
# Comment of a CA/router port: lid 647 lmc 0 "peer desc" lid 73 4xNDR
_CA_COMMENT = re.compile(
    r"^lid\s+(?P<lid>\d{1,9})\s+lmc\s+(?P<lmc>\d{1,3})\s+\"(?P<pdesc>[^\"]*)\"\s+lid\s+(?P<plid>\d{1,9})\s*(?P<tail>.*)$")
# Comment of a switch port: "peer desc" lid 647 4xNDR
_SW_COMMENT = re.compile(r"^\"(?P<pdesc>[^\"]*)\"\s+lid\s+(?P<plid>\d{1,9})\s*(?P<tail>.*)$")
_WIDTH_SPEED = re.compile(r"^(?P<width>\d{1,3}x|\?\?)(?P<speed>[A-Z0-9]+|\?\?\?)$")
_ID_LINE = re.compile(
    r"^\s*(?P<key>vendid|devid|sysimgguid|switchguid|caguid|rtguid)=(?P<value>0x[0-9A-Fa-f]+)"
    r"(?:\((?P<port_guid>[0-9A-Fa-f]+)\))?")
_GENERATED = re.compile(r"^\s*#\s*Topology file: generated on\s+(?P<when>.*?)\s*$")
_INITIATED = re.compile(r"^\s*#\s*Initiated from node\s+(?P<node>[0-9A-Fa-f]+)\s+port\s+(?P<port>[0-9A-Fa-f]+)")
_PORTS_REPORT = re.compile(r"^\s*(?:CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9A-Fa-f]{16}\s+\S+\s")
_LIST_LINE = re.compile(r"^\s*(?:Ca|Switch|Router)\s*:\s*0x[0-9A-Fa-f]+\s+ports\s+\d+")
_GROUPING = re.compile(r"^\s*(?:Non-Chassis Nodes|Chassis\s+\d+.*|Hostname:.*)\s*$")
_PROMPT = re.compile(r"^\s*(?:[$#+]|\[[^\]]*\][$#])\s*\S*ibnetdiscover\b")

# Gb/s per lane for each speed name ibnetdiscover prints.
LANE_RATES = {
    "SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0,
    "HDR": 50.0, "NDR": 100.0, "XDR": 200.0,
}
_KINDS = {"S": "switch", "H": "hca", "R": "router", "?": "unknown"}
_NODE_KINDS = {"Switch": "switch", "Ca": "hca", "Rt": "router"}
# Node descriptions that are the adapter's default, not a host name.
_DEFAULT_DESC = re.compile(r"^\s*$|^MT\d+\b|Mellanox Technologies|Aggregation Node|^localhost\b", re.IGNORECASE)
_AGGREGATION = re.compile(r"Aggregation Node", re.IGNORECASE)

_MAX_UNRECOGNISED = 20


def _guid(hex_digits):
    """'2c5eab0300b87b40' / 'S-2c5eab...' / '0x..' -> '0x2c5eab0300b87b40' (16 digits, lower case)."""
    digits = hex_digits.split("-", 1)[-1]
    if digits.lower().startswith("0x"):
        digits = digits[2:]
    return "0x%016x" % int(digits, 16)


def _rate(width, speed):
    """Link rate in Gb/s from '4x' and 'NDR'; None when unknown."""
    if not width or not speed or speed not in LANE_RATES or not is_digits(width[:-1]):
        return None
    value = int(width[:-1]) * LANE_RATES[speed]
    return int(value) if value == int(value) else value


def host_of(description):
    """The host name guessed from a node description ('gpu001 mlx5_0' -> 'gpu001'); None if default."""
    if description is None or _DEFAULT_DESC.search(description):
        return None
    words = description.split()
    return words[0] if words else None


def _new_node(kind, match, ids, line_no):
    rest = match.group("rest") or ""
    node = {
        "guid": _guid(match.group("id")),
        "node_id": match.group("id"),
        "name": match.group("desc"),
        "nports": int(match.group("nports")),
        "lid": None,
        "lmc": None,
        "vendid": ids.get("vendid"),
        "devid": ids.get("devid"),
        "sysimgguid": ids.get("sysimgguid"),
        "ports": [],
        "line": line_no,
    }
    if kind == "switch":
        port0 = _PORT0.search(rest)
        node["port0"] = port0.group("mode") if port0 else None
        if port0:
            node["lid"] = int(port0.group("lid"))
            node["lmc"] = int(port0.group("lmc"))
    else:
        node["host"] = host_of(node["name"])
        node["aggregation_node"] = bool(_AGGREGATION.search(node["name"] or ""))
    return node


def _parse_tail(tail, port, line_no, result):
    """'4xNDR s=64 w=2 v=3' -> width/speed/rate on the port dict."""
    words = tail.split()
    port["width"] = port["speed"] = port["rate"] = None
    if not words:
        result["warnings"].append("line %d: port %d has no width/speed (link not active?)" % (line_no, port["port"]))
        return
    match = _WIDTH_SPEED.match(words[0])
    if not match:
        result["warnings"].append("line %d: unrecognised width/speed %r" % (line_no, words[0][:40]))
        return
    port["width"] = match.group("width")
    port["speed"] = match.group("speed")
    port["rate"] = _rate(port["width"], port["speed"])
    if port["rate"] is None:
        result["warnings"].append("line %d: unknown link width/speed %s" % (line_no, words[0]))


def _parse_port(match, node, line_no, result):
    peer = match.group("peer")
    port = {
        "port": int(match.group("port")),
        "ext_port": int(match.group("ext")) if match.group("ext") else None,
        "port_guid": _guid(match.group("guid")) if match.group("guid") else None,
        "lid": None,
        "lmc": None,
        "peer_guid": _guid(peer),
        "peer_node_id": peer,
        "peer_type": _KINDS.get(peer[0], "unknown"),
        "peer_port": int(match.group("pport")),
        "peer_ext_port": int(match.group("pext")) if match.group("pext") else None,
        "peer_port_guid": _guid(match.group("pguid")) if match.group("pguid") else None,
        "peer_name": None,
        "peer_lid": None,
        "line": line_no,
    }
    comment = match.group("comment").strip()
    detail = _CA_COMMENT.match(comment)
    if detail:
        port["lid"] = int(detail.group("lid"))
        port["lmc"] = int(detail.group("lmc"))
    else:
        detail = _SW_COMMENT.match(comment)
    if not detail:
        result["errors"].append("line %d: port %d of %s: unreadable comment %r (output truncated?)"
                                % (line_no, port["port"], node["node_id"], comment[:120]))
        port["width"] = port["speed"] = port["rate"] = None
        return port
    port["peer_name"] = detail.group("pdesc")
    port["peer_lid"] = int(detail.group("plid"))
    _parse_tail(detail.group("tail"), port, line_no, result)
    if port["port"] > node["nports"]:
        result["warnings"].append("line %d: port %d of %s is above its %d ports"
                                  % (line_no, port["port"], node["node_id"], node["nports"]))
    return port


def _link_key(a_guid, a_port, b_guid, b_port):
    return tuple(sorted(((a_guid, a_port), (b_guid, b_port))))


def _build_links(result, nodes):
    links = {}
    for kind, node in nodes:
        for port in node["ports"]:
            key = _link_key(node["guid"], port["port"], port["peer_guid"], port["peer_port"])
            if key in links:
                link = links[key]
                for field in ("width", "speed", "rate"):
                    if link[field] is None:
                        link[field] = port[field]
                if port["speed"] and link["speed"] and (port["width"], port["speed"]) != (link["width"], link["speed"]):
                    result["warnings"].append(
                        "line %d: %s port %d reports %s%s but its peer reports %s%s"
                        % (port["line"], node["node_id"], port["port"], port["width"], port["speed"],
                           link["width"], link["speed"]))
                    if port["rate"] is not None and (link["rate"] is None or port["rate"] < link["rate"]):
                        # Keep the slower view of a link the two ends disagree on.
                        link["width"], link["speed"], link["rate"] = port["width"], port["speed"], port["rate"]
                continue
            # Put the switch end first, then the lower GUID, so each link reads the same way.
            a = (kind, node["guid"], node["name"], port["port"])
            b = (port["peer_type"], port["peer_guid"], port["peer_name"], port["peer_port"])
            if (a[0] != "switch" and b[0] == "switch") or (a[0] == b[0] and b[1] < a[1]):
                a, b = b, a
            links[key] = {
                "a_type": a[0], "a_guid": a[1], "a_name": a[2], "a_port": a[3],
                "b_type": b[0], "b_guid": b[1], "b_name": b[2], "b_port": b[3],
                "kind": "%s-%s" % (a[0], b[0]),
                "width": port["width"], "speed": port["speed"], "rate": port["rate"],
            }
    return sorted(links.values(), key=lambda l: (l["a_guid"], l["a_port"], l["b_guid"], l["b_port"]))


def _check_peers(result, nodes):
    """Both ends of a link should name each other; every node seen on a port should have a block."""
    by_guid = dict((node["guid"], node) for _kind, node in nodes)
    missing = {}
    mismatched = 0
    for _kind, node in nodes:
        for port in node["ports"]:
            peer = by_guid.get(port["peer_guid"])
            if peer is None:
                missing.setdefault(port["peer_type"], set()).add(port["peer_guid"])
                continue
            back = [p for p in peer["ports"] if p["port"] == port["peer_port"]]
            if back and (back[0]["peer_guid"] != node["guid"] or back[0]["peer_port"] != port["port"]):
                mismatched += 1
                if mismatched <= 10:
                    result["warnings"].append(
                        "line %d: %s port %d says its peer is %s port %d, which says its peer is %s port %d"
                        % (port["line"], node["node_id"], port["port"], peer["node_id"], port["peer_port"],
                           back[0]["peer_node_id"], back[0]["peer_port"]))
    for kind, node in nodes:
        if node["ports"]:
            continue
        if kind == "switch":
            # ibnetdiscover reaches a switch through one of its links, so it always lists one.
            result["errors"].append("line %d: switch %s (%s) has no port line (output truncated?)"
                                    % (node["line"], node["node_id"], node["name"]))
        else:
            result["warnings"].append("line %d: %s (%s) has no connected port"
                                      % (node["line"], node["node_id"], node["name"]))
    for kind in sorted(missing):
        guids = sorted(missing[kind])
        message = "%d %s(s) seen on ports but with no block of their own (output truncated?): %s" % (
            len(guids), kind, ", ".join(guids[:5]) + (", ..." if len(guids) > 5 else ""))
        result["errors"].append(message)


@capped(10)
def parse_ibnetdiscover(text):
    """Parse an ``ibnetdiscover`` topology file.

    Returns ``{switches, hcas, routers, links, leaf_switches, spine_switches, hca_hosts,
    generated, initiated_from, errors, warnings}``. Nodes: ``{guid, node_id, name, nports, lid,
    lmc, vendid, devid, sysimgguid, ports, line}`` (+ ``port0`` for switches, ``host`` and
    ``aggregation_node`` for HCAs and routers); ports: ``{port, ext_port, port_guid, lid, lmc,
    peer_guid, peer_node_id, peer_type, peer_port, peer_ext_port, peer_port_guid, peer_name,
    peer_lid, width, speed, rate, line}``. ``links``: one entry per cable, ``{a_type, a_guid,
    a_name, a_port, b_type, b_guid, b_name, b_port, kind, width, speed, rate}`` with the switch
    end as ``a``. ``leaf_switches`` / ``spine_switches``: GUID lists. ``hca_hosts``: HCA GUID ->
    host name guessed from the first word of its description (None for default descriptions).
    """
    result = new_result(switches=[], hcas=[], routers=[], links=[], leaf_switches=[], spine_switches=[],
                        hca_hosts={}, generated=None, initiated_from=None)
    if text is None:
        text = ""
    lines = lines_of(text)
    nodes = []
    node = None
    ids = {}
    unrecognised = 0
    seen = set()
    for line_no, raw in enumerate(lines, 1):
        line = strip_launcher_prefix(raw)
        if not line.strip():
            continue
        match = _NODE.match(line)
        if match:
            kind = _NODE_KINDS[match.group("kind")]
            if match.group("desc") is None:
                result["errors"].append("line %d: %s line without its description (output truncated?)"
                                        % (line_no, match.group("kind")))
                node = None
                continue
            node = _new_node(kind, match, ids, line_no)
            ids = {}
            if node["guid"] in seen:
                result["warnings"].append("line %d: node %s listed twice" % (line_no, node["node_id"]))
            seen.add(node["guid"])
            nodes.append((kind, node))
            result[{"switch": "switches", "hca": "hcas", "router": "routers"}[kind]].append(node)
            continue
        match = _PORT.match(line)
        if match:
            if node is None:
                result["errors"].append("line %d: port line before any Switch/Ca line" % line_no)
                continue
            node["ports"].append(_parse_port(match, node, line_no, result))
            continue
        match = _ID_LINE.match(line)
        if match:
            ids[match.group("key")] = match.group("value").lower()
            node = None
            continue
        match = _GENERATED.match(line)
        if match:
            result["generated"] = match.group("when")
            continue
        match = _INITIATED.match(line)
        if match:
            result["initiated_from"] = _guid(match.group("node"))
            continue
        match = IBDIAG_ERROR.match(line)
        if match:
            result["errors"].append("line %d: %s" % (line_no, line.strip()))
            continue
        match = IBDIAG_WARNING.match(line)
        if match:
            result["warnings"].append("line %d: %s" % (line_no, line.strip()))
            continue
        if _PORTS_REPORT.match(line) or _LIST_LINE.match(line):
            result["errors"].append("line %d: this is an 'ibnetdiscover -p/-l/-H/-S' listing; run ibnetdiscover "
                                    "without options for the topology file" % line_no)
            break
        if line.lstrip().startswith("#") or _GROUPING.match(line) or _PROMPT.match(line):
            continue
        stripped = line.strip()
        if stripped.startswith("[") or re.match(r"^(?:Switch|Ca|Rt)\b", stripped):
            result["errors"].append("line %d: unreadable %s line (output truncated?): %r"
                                    % (line_no, "port" if stripped.startswith("[") else "node", stripped[:120]))
            continue
        unrecognised += 1
        if unrecognised <= _MAX_UNRECOGNISED:
            result["warnings"].append("line %d: unrecognised line ignored: %r" % (line_no, stripped[:120]))
    if unrecognised > _MAX_UNRECOGNISED:
        result["warnings"].append("%d more unrecognised lines ignored" % (unrecognised - _MAX_UNRECOGNISED))
    if not nodes:
        result["errors"].append("no Switch or Ca node found in %d line(s) of output" % len(lines))
        return result
    _check_peers(result, nodes)
    result["links"] = _build_links(result, nodes)
    for kind, item in nodes:
        if kind == "hca":
            for port in item["ports"]:
                if item["lid"] is None and port["lid"] is not None:
                    item["lid"] = port["lid"]
                    item["lmc"] = port["lmc"]
    aggregation = set(n["guid"] for k, n in nodes if k != "switch" and n["aggregation_node"])
    for kind, item in nodes:
        if kind == "hca":
            result["hca_hosts"][item["guid"]] = item["host"]
        for port in item["ports"]:
            if port["peer_type"] == "hca" and port["peer_guid"] not in result["hca_hosts"]:
                if _AGGREGATION.search(port["peer_name"] or ""):
                    aggregation.add(port["peer_guid"])
                    continue
                result["hca_hosts"][port["peer_guid"]] = host_of(port["peer_name"])
    for guid in list(result["hca_hosts"]):
        if guid in aggregation:
            del result["hca_hosts"][guid]
    for switch in result["switches"]:
        has_hca = any(p["peer_type"] == "hca" and p["peer_guid"] not in aggregation
                      and not _AGGREGATION.search(p["peer_name"] or "") for p in switch["ports"])
        switch["leaf"] = has_hca
        (result["leaf_switches"] if has_hca else result["spine_switches"]).append(switch["guid"])
    unknown = sorted(g for g, h in result["hca_hosts"].items() if h is None)
    if unknown:
        result["warnings"].append("%d HCA(s) have a default node description, host unknown: %s"
                                  % (len(unknown), ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")))
    return result
