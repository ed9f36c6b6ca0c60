# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the output of ``ibstat`` (infiniband-diags, part of rdma-core).

Private to the collection. Standard library only; nothing here raises on odd input.

What ``ibstat`` prints (see ``infiniband-diags/ibstat.c``)::

    CA 'mlx5_0'
    <TAB>CA type: MT4129
    <TAB>Number of ports: 1
    <TAB>Firmware version: 28.39.1002
    <TAB>Hardware version: 0
    <TAB>Node GUID: 0x58a2e10300dae626
    <TAB>System image GUID: 0x58a2e10300dae626
    <TAB>Port 1:
    <TAB><TAB>State: Active
    <TAB><TAB>Physical state: LinkUp
    <TAB><TAB>Rate: 400
    <TAB><TAB>Base lid: 128
    ...
    <TAB><TAB>Link layer: InfiniBand

The parser reads it whatever the indentation (tabs, spaces copied from a terminal, none at all as
on some web pages), the single-port form ``ibstat mlx5_0 1`` (``CA: 'mlx5_0'`` then ``Port 1:``),
``Rate: 40 (FDR10)`` and ``Rate: 2.5`` (1x SDR), the ``Effective speed:`` line of recent
releases, ``ibwarn:`` debug lines (``ibstat -d``) and ``ibpanic:`` lines, which ibstat prints when
a device listed in sysfs cannot be read (the blocks before it are still parsed).

Problems that make the result untrustworthy go to ``errors``: no CA at all, an ``ibpanic``,
a port block without State / Physical state / Rate, a key without its value, a CA without any
``Port`` block or with fewer than it announced (truncated output; ``ibstat -s`` prints no port
either, and unknown port states must not read as healthy ones). The parser salvages: an
``ibpanic``/``iberror`` line before, between or after the CA blocks is an error next to every
CA and port read from the rest. Shell prompts and echoed commands are dropped with a warning.

Each CA keeps ``text`` (its ``CA '...'`` line) and each port ``lines``: the port's printed lines
as ``CA 'mlx5_0' > Port 1: > State: Active``, for evidence.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    IBDIAG_WARNING,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
)

# "CA 'mlx5_0'", "CA: 'mlx5_0'" (single-port form), "Switch 'x'" when run on a switch.
_NODE = re.compile(r"^\s*(?P<kind>CA|Switch|Router|iWARP RNIC|\?\?\?)\s*:?\s*'(?P<name>[^']*)'\s*$")
_PORT = re.compile(r"^\s*Port\s+(?P<port>\d{1,6})\s*:\s*$")
_KEY_VALUE = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z ]*?)\s*:(?:\s*(?P<value>.*?))?\s*$")
_IBPANIC = re.compile(r"^\s*(?:\S+:\s*)?ibpanic:\s*(?P<msg>.*)$")
_IBERROR = re.compile(r"^\s*(?:\S+:\s*)?iberror:\s*(?P<msg>.*)$")
_PANIC_DEVICE = re.compile(r"IB device '(?P<name>[^']+)'")
# Shell prompts and echoed commands people paste along with the output.
_PROMPT = re.compile(r"^\s*(?:[$#]|\[[^\]]*\][$#]|\+ )\s*\S*ibstat\b|^\s*[$#]\s*$|^\s*\+ ")

_CA_KEYS = {
    "ca type": "type",
    "switch type": "type",
    "router type": "type",
    "iwarp rnic type": "type",
    "??? type": "type",
    "number of ports": "nports",
    "firmware version": "firmware",
    "hardware version": "hardware_version",
    "node guid": "node_guid",
    "system image guid": "system_guid",
}
_PORT_KEYS = {
    "state": "state",
    "physical state": "physical_state",
    "rate": "rate",
    "effective speed": "effective_speed",
    "base lid": "lid",
    "lmc": "lmc",
    "sm lid": "sm_lid",
    "capability mask": "capability_mask",
    "port guid": "guid",
    "link layer": "link_layer",
}
_INT_KEYS = frozenset(("nports", "lid", "lmc", "sm_lid"))
_REQUIRED_PORT_KEYS = (("state", "State"), ("physical_state", "Physical state"), ("rate", "Rate"))

KNOWN_STATES = frozenset(("Down", "Initializing", "Armed", "Active", "???"))
KNOWN_PHYSICAL_STATES = frozenset((
    "No state change", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
    "LinkErrorRecovery", "PhyTest", "???"))

_MAX_UNRECOGNISED = 20


def _number(text):
    """'400' -> 400, '2.5' -> 2.5, '40 (FDR10)' -> 40; None when there is no leading number."""
    match = re.match(r"^\s*(\d{1,15}(?:\.\d{1,15})?)(?![\d.])", text or "")
    if not match:
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def _new_ca(name, kind, line_no, text=None):
    return {
        "text": text,
        "name": name,
        "node_type": kind,
        "type": None,
        "nports": None,
        "firmware": None,
        "hardware_version": None,
        "node_guid": None,
        "system_guid": None,
        "ports": [],
        "line": line_no,
    }


def _new_port(number, line_no, text=None):
    return {
        "text": text,
        "lines": [],
        "port": number,
        "state": None,
        "physical_state": None,
        "rate": None,
        "rate_note": None,
        "effective_speed": None,
        "lid": None,
        "lmc": None,
        "sm_lid": None,
        "capability_mask": None,
        "guid": None,
        "link_layer": None,
        "line": line_no,
    }


def _store(target, field, raw, line_no, label, result):
    """Put one key's value into a CA or port dict, converting numbers; False if it had no value."""
    value = (raw or "").strip()
    if not value:
        result["errors"].append("line %d: '%s' has no value (output truncated?)" % (line_no, label))
        return False
    if field in _INT_KEYS:
        number = _number(value)
        if not isinstance(number, int):
            result["errors"].append("line %d: '%s' is not a number: %r" % (line_no, label, value[:60]))
            return False
        target[field] = number
    elif field in ("rate", "effective_speed"):
        number = _number(value)
        if number is None:
            result["errors"].append("line %d: '%s' is not a number: %r" % (line_no, label, value[:60]))
            return False
        target[field] = number
        if field == "rate":
            note = re.search(r"\(([^)]*)\)", value)
            target["rate_note"] = note.group(1) if note else None
    else:
        target[field] = value
    return True


def _check(result):
    """Cross-checks once everything is read: missing ports, missing keys, odd values."""
    for ca in result["cas"]:
        found = len(ca["ports"])
        declared = ca["nports"]
        if found == 0:
            # Also what `ibstat -s` prints; either way the port states are unknown, which must not
            # read as "no bad port".
            result["errors"].append(
                "line %d: CA %s has no Port block (output truncated, or ibstat -s?); port state unknown"
                % (ca["line"], ca["name"]))
        elif declared is not None and found < declared:
            result["errors"].append(
                "line %d: CA %s announces %d port(s) but %d Port block(s) follow (output truncated?)"
                % (ca["line"], ca["name"], declared, found))
        seen = set()
        for port in ca["ports"]:
            where = "line %d: CA %s port %d" % (port["line"], ca["name"], port["port"])
            if port["port"] in seen:
                result["warnings"].append("%s appears twice; keeping both" % where)
            seen.add(port["port"])
            for field, label in _REQUIRED_PORT_KEYS:
                if port[field] is None:
                    result["errors"].append("%s: no '%s' line (output truncated?)" % (where, label))
            if port["link_layer"] is None:
                result["warnings"].append("%s: no 'Link layer' line" % where)
            if port["state"] is not None and port["state"] not in KNOWN_STATES:
                result["warnings"].append("%s: unknown State %r" % (where, port["state"][:60]))
            if port["physical_state"] is not None and port["physical_state"] not in KNOWN_PHYSICAL_STATES:
                result["warnings"].append("%s: unknown Physical state %r" % (where, port["physical_state"][:60]))
            rate = port["rate"]
            if rate is not None and not 1 <= rate <= 2400:
                result["warnings"].append("%s: implausible Rate %s Gb/s" % (where, rate))


@capped(4)
def parse_ibstat(text):
    """Parse ``ibstat`` output.

    Returns ``{cas: [...], failed_cas: [...], errors: [...], warnings: [...]}``; each CA is
    ``{name, node_type, type, nports, firmware, hardware_version, node_guid, system_guid, ports,
    line}`` and each port ``{port, state, physical_state, rate, rate_note, effective_speed, lid,
    lmc, sm_lid, capability_mask, guid, link_layer, line}`` (``rate`` in Gb/s as ibstat prints
    it, ``line`` the 1-based line the block starts on). Missing values are None.
    """
    result = new_result(cas=[], failed_cas=[])
    if text is None:
        text = ""
    lines = lines_of(text)
    ca = None
    port = None
    unrecognised = 0
    for line_no, raw in enumerate(lines, 1):
        line = strip_launcher_prefix(raw)
        if not line.strip():
            continue
        match = _IBPANIC.match(line)
        if match:
            result["errors"].append("line %d: ibpanic: %s" % (line_no, match.group("msg").strip()))
            device = _PANIC_DEVICE.search(match.group("msg"))
            if device and device.group("name") not in result["failed_cas"]:
                result["failed_cas"].append(device.group("name"))
            continue
        match = _IBERROR.match(line)
        if match:
            result["errors"].append("line %d: iberror: %s" % (line_no, match.group("msg").strip()))
            continue
        match = IBDIAG_WARNING.match(line)
        if match:
            result["warnings"].append("line %d: ibwarn: %s" % (line_no, match.group("msg").strip()))
            continue
        match = _NODE.match(line)
        if match:
            ca = _new_ca(match.group("name"), match.group("kind"), line_no, line.strip())
            result["cas"].append(ca)
            port = None
            continue
        match = _PORT.match(line)
        if match:
            if ca is None:
                result["errors"].append("line %d: 'Port %s:' before any CA line" % (line_no, match.group("port")))
                port = None
                continue
            port = _new_port(int(match.group("port")), line_no, line.strip())
            ca["ports"].append(port)
            continue
        match = _KEY_VALUE.match(line)
        key = match.group("key").strip().lower() if match else None
        if match and ca is not None and key in _PORT_KEYS and port is not None:
            _store(port, _PORT_KEYS[key], match.group("value"), line_no, match.group("key").strip(), result)
            port["lines"].append("%s > %s > %s" % (ca["text"], port["text"], line.strip()))
            continue
        if match and ca is not None and key in _CA_KEYS and port is None:
            _store(ca, _CA_KEYS[key], match.group("value"), line_no, match.group("key").strip(), result)
            continue
        if match and (key in _PORT_KEYS or key in _CA_KEYS):
            result["errors"].append("line %d: '%s' outside the CA/Port block it belongs to"
                                    % (line_no, match.group("key").strip()))
            continue
        if _PROMPT.match(line) or is_shell_echo(line):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s" % (line_no, line.strip()[:120]))
            continue
        if re.match(r"^\s*(?:=+|-+|Log ibstat:?)\s*$", line):
            continue
        unrecognised += 1
        if unrecognised <= _MAX_UNRECOGNISED:
            result["warnings"].append("line %d: unrecognised line ignored: %r" % (line_no, line.strip()[:120]))
    if unrecognised > _MAX_UNRECOGNISED:
        result["warnings"].append("%d more unrecognised lines ignored" % (unrecognised - _MAX_UNRECOGNISED))
    if not result["cas"]:
        result["errors"].append("no CA found: no \"CA '<name>'\" line in %d line(s) of output" % len(lines))
    _check(result)
    return result
