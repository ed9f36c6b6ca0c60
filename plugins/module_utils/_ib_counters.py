# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for InfiniBand port counters, from ``perfquery`` or from sysfs.

Private to the collection. Standard library only; nothing here raises on odd input.

Two sources, which may be mixed in one text:

* ``perfquery`` (infiniband-diags): a header per port, then one ``Name:.....value`` line per
  counter::

      # Port extended counters: Lid 10 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
      PortSelect:......................1
      PortXmitData:....................13672645927
      SymbolErrorCounter:..............0

  ``perfquery -x`` prints "Port extended counters" (64-bit), plain ``perfquery`` "Port counters"
  (error counters 4 to 16 bits wide, data 32 bits); ``-a`` aggregates all ports as port 255.
  perfquery does not print the device name, so the CA is taken from, in this order: the ``ca``
  argument; the last marker line before the block (``-C mlx5_0`` in an echoed perfquery command
  line, or a line holding just a device name such as ``mlx5_0``, ``### mlx5_0``, ``[mlx5_0]``,
  ``==> mlx5_0 <==`` or ``CA 'mlx5_0'``); else ``lid-<LID>`` with a warning.

* sysfs, as printed by ``grep -H . /sys/class/infiniband/*/ports/*/counters/*`` (and the
  ``hw_counters`` directory)::

      /sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:0
      /sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:0

  Any path containing ``/infiniband/<ca>/ports/<n>/(counters|hw_counters)/`` is read, so the
  ``/sys/devices/pci.../infiniband/...`` form works too. ``N/A (no PMA)`` (iWARP devices) is
  reported in ``unavailable``, not as a counter.

perfquery names are normalised to the sysfs names (``SymbolErrorCounter`` -> ``symbol_error``,
``VL15Dropped`` -> ``VL15_dropped``, ...); names with no sysfs equivalent are converted from
CamelCase to snake_case (``QP1Dropped`` -> ``qp1_dropped``). ``names`` maps every perfquery name
met to the name used. Data counters (``port_xmit_data``, ``port_rcv_data``) count 4-octet words,
as in the IB specification: multiply by 4 for bytes.

``counter_deltas(before, after)`` subtracts two such snapshots.

Salvage: an ``iberror``/``ibwarn`` line, a garbled or truncated line is reported (errors or
warnings, with its line number) next to every counter read from the rest; ``lines`` maps
``ca/port/name`` to the line the value was read from (evidence). Shell prompts are dropped with
a warning.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    IBDIAG_ERROR,
    IBDIAG_WARNING,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
)

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

# Selector fields perfquery prints alongside the counters; not counters.
_META_NAMES = frozenset(("PortSelect", "CounterSelect", "CounterSelect2"))

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

_HEADER = re.compile(
    r"^\s*#\s*Port\s+(?P<ext>extended\s+)?counters:\s*(?P<portid>.*?)\s+port\s+(?P<port>\d{1,6})\b(?P<rest>.*)$",
    re.IGNORECASE)
_LID = re.compile(r"\bLid\s+(?P<lid>\d{1,9})\b", re.IGNORECASE)
_CAPMASK = re.compile(r"CapMask:\s*(?P<mask>0x[0-9A-Fa-f]+)")
_HEADER_CONTINUATION = re.compile(r"^\s*(?:CapMask2:\s*)?0x[0-9A-Fa-f]+\)\s*$")
_DOTTED = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_]*):\.+\s*(?P<value>\S*)\s*$")
_SYSFS = re.compile(
    r"^\s*(?P<path>\S*/infiniband/(?P<ca>[^/\s:]+)/ports/(?P<port>\d{1,6})/"
    r"(?P<dir>counters|counters_ext|hw_counters)/(?P<name>[^/\s:]+)):(?P<value>.*)$")
_SYSFS_DEVICE_HW = re.compile(r"^\s*\S*/infiniband/(?P<ca>[^/\s:]+)/hw_counters/(?P<name>[^/\s:]+):")
_SYSFS_PARTIAL = re.compile(r"^\s*/sys/\S*$|^\s*\S*/infiniband/\S*$")
# Bounded: an unbounded lazy ".*?" rescans the rest of the line from every "perfquery" in it.
_COMMAND_CA = re.compile(r"perfquery\b.{0,200}?(?:-C\s*|--Ca[=\s]+)(?P<ca>[A-Za-z0-9_.\-]+)")
_COMMAND = re.compile(r"^\s*(?:[$#+]|\[[^\]]*\][$#])?\s*\S*perfquery\b")
_MARKER = re.compile(
    r"^[\s#=\[\]<>\-*:]*(?:CA\s*:?\s*)?'?(?P<ca>[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+)'?[\s#=\[\]<>\-*:]*$")
# Counters are at most 64 bits (20 digits); longer digit strings are garbage, not numbers.
_INTEGER = re.compile(r"^\d{1,20}$")

_MAX_UNRECOGNISED = 20


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


class _State(object):
    """Mutable parse state shared by the line handlers."""

    def __init__(self, ca):
        self.result = new_result(counters={}, names={}, sources=[], unavailable=[], saturated=[], lines={})
        self.ca_argument = ca
        self.marker_ca = None
        self.block = None
        self.unrecognised = 0
        self.device_hw = 0
        self.seen_sysfs = set()
        self.duplicates = set()

    def add(self, ca, port, name, value, line_no, widths, text=None):
        ports = self.result["counters"].setdefault(ca, {})
        values = ports.setdefault(port, {})
        if name in values and (ca, port) not in self.duplicates:
            self.duplicates.add((ca, port))
            self.result["warnings"].append(
                "line %d: %s port %s: counter %s given more than once; keeping the last value"
                % (line_no, ca, port, name))
        values[name] = value
        where = "%s/%s/%s" % (ca, port, name)
        if text:
            self.result["lines"][where] = text
        if _saturated(name, value, widths) and where not in self.result["saturated"]:
            self.result["saturated"].append(where)

    def close_block(self):
        block = self.block
        self.block = None
        if block is not None and block["count"] == 0:
            self.result["errors"].append(
                "line %d: perfquery block for %s port %s has no counters (output truncated?)"
                % (block["line"], block["ca"], block["port"]))

    def unknown(self, line_no, line):
        self.unrecognised += 1
        if self.unrecognised <= _MAX_UNRECOGNISED:
            self.result["warnings"].append("line %d: unrecognised line ignored: %r" % (line_no, line.strip()[:120]))


def _open_block(state, line_no, match):
    state.close_block()
    lid_match = _LID.search(match.group("portid"))
    lid = int(lid_match.group("lid")) if lid_match else None
    cap = _CAPMASK.search(match.group("rest"))
    extended = bool(match.group("ext"))
    ca = state.ca_argument or state.marker_ca
    if not ca:
        ca = "lid-%d" % lid if lid is not None else "unknown"
        state.result["warnings"].append(
            "line %d: perfquery does not print the device name; counters keyed as %r (pass ca= or print "
            "the device name before each block)" % (line_no, ca))
    port = str(int(match.group("port")))
    state.block = {"ca": ca, "port": port, "line": line_no, "count": 0, "extended": extended,
                   "after_header": True}
    state.result["sources"].append({
        "ca": ca, "port": port, "lid": lid, "capmask": cap.group("mask") if cap else None,
        "format": "perfquery_extended" if extended else "perfquery", "line": line_no})


def _dotted(state, line_no, match):
    name = match.group("name")
    raw = match.group("value")
    block = state.block
    if block is None:
        # Counters pasted without their header: open an anonymous block, PortSelect gives the port.
        ca = state.ca_argument or state.marker_ca or "unknown"
        block = {"ca": ca, "port": None, "line": line_no, "count": 0, "extended": False, "after_header": False}
        state.block = block
        state.result["warnings"].append(
            "line %d: perfquery counters without a '# Port counters' header; port taken from PortSelect "
            "(0 when there is none)" % line_no)
        state.result["sources"].append({"ca": ca, "port": None, "lid": None, "capmask": None,
                                        "format": "perfquery", "line": line_no})
    block["after_header"] = False
    if not raw:
        state.result["errors"].append("line %d: %s has no value (output truncated?)" % (line_no, name))
        return
    if name in _META_NAMES:
        if name == "PortSelect" and block["port"] is None and _INTEGER.match(raw):
            block["port"] = str(int(raw))
            state.result["sources"][-1]["port"] = block["port"]
        return
    if not _INTEGER.match(raw):
        state.result["errors"].append("line %d: %s value is not a counter: %r" % (line_no, name, raw[:60]))
        return
    if block["port"] is None:
        block["port"] = "0"
        state.result["sources"][-1]["port"] = "0"
    sysfs_name = perfquery_name_to_sysfs(name)
    state.result["names"][name] = sysfs_name
    widths = {} if block["extended"] else dict(COUNTER_WIDTHS, **_BASIC_DATA_WIDTHS)
    state.add(block["ca"], block["port"], sysfs_name, int(raw), line_no, widths,
              "%s port %s: %s" % (block["ca"], block["port"], match.group(0).strip()))
    block["count"] += 1


def _sysfs(state, line_no, match):
    state.close_block()
    ca = match.group("ca")
    port = str(int(match.group("port")))
    name = match.group("name")
    value = match.group("value").strip()
    key = (ca, port, match.group("dir"))
    if key not in state.seen_sysfs:
        state.seen_sysfs.add(key)
        state.result["sources"].append({
            "ca": ca, "port": port, "lid": None, "capmask": None,
            "format": "sysfs_" + match.group("dir"), "line": line_no})
    if not value:
        state.result["errors"].append("line %d: %s has no value (output truncated?)" % (line_no, match.group("path")))
        return
    if not _INTEGER.match(value):
        where = "%s/%s/%s" % (ca, port, name)
        if where not in state.result["unavailable"]:
            state.result["unavailable"].append(where)
        if len(state.result["unavailable"]) <= _MAX_UNRECOGNISED:
            state.result["warnings"].append("line %d: %s port %s counter %s unavailable: %r"
                                            % (line_no, ca, port, name, value[:60]))
        return
    widths = COUNTER_WIDTHS if match.group("dir") == "counters" else {}
    state.add(ca, port, name, int(value), line_no, widths, match.group(0).strip())


@capped(16)
def parse_ib_counters(text, ca=None):
    """Parse perfquery output and/or a sysfs counter dump.

    Returns ``{counters: {ca: {port: {name: int}}}, names: {perfquery_name: name}, sources: [...],
    unavailable: ["ca/port/name"], saturated: ["ca/port/name"], errors, warnings}``. Ports are
    strings of integers ("1"; "255" is perfquery -a's all-ports aggregate). ``sources`` lists
    each block read: ``{ca, port, lid, capmask, format, line}`` with format one of
    perfquery, perfquery_extended, sysfs_counters, sysfs_hw_counters, sysfs_counters_ext.
    """
    state = _State(ca if isinstance(ca, str) and ca else None)
    result = state.result
    if text is None:
        text = ""
    lines = lines_of(text)
    for line_no, raw in enumerate(lines, 1):
        line = strip_launcher_prefix(raw)
        if not line.strip():
            continue
        if is_shell_echo(line) and not _COMMAND.match(line):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s" % (line_no, line.strip()[:120]))
            continue
        match = _SYSFS.match(line)
        if match:
            _sysfs(state, line_no, match)
            continue
        match = _HEADER.match(line)
        if match:
            _open_block(state, line_no, match)
            continue
        match = _DOTTED.match(line)
        if match:
            _dotted(state, line_no, match)
            continue
        if state.block is not None and state.block["after_header"] and _HEADER_CONTINUATION.match(line):
            continue  # header wrapped by a mail client or terminal: "(CapMask: 0x1600 CapMask2:\n0x0000000)"
        match = IBDIAG_ERROR.match(line)
        if match:
            state.close_block()
            result["errors"].append("line %d: %s" % (line_no, line.strip()))
            continue
        match = IBDIAG_WARNING.match(line)
        if match:
            result["warnings"].append("line %d: %s" % (line_no, line.strip()))
            continue
        if _SYSFS_DEVICE_HW.match(line):
            state.device_hw += 1
            continue
        # the command line first: searching every line for "perfquery ... -C" costs a scan of the
        # rest of the line per occurrence (quadratic on a capture without line breaks)
        match = _COMMAND_CA.search(line) if _COMMAND.match(line) else None
        if match:
            state.close_block()
            state.marker_ca = match.group("ca")
            continue
        if _COMMAND.match(line):
            state.close_block()
            continue
        match = _MARKER.match(line)
        if match:
            state.close_block()
            state.marker_ca = match.group("ca")
            continue
        if state.block is not None:
            result["errors"].append(
                "line %d: garbled or truncated line inside the perfquery block for %s port %s: %r"
                % (line_no, state.block["ca"], state.block["port"], line.strip()[:120]))
            state.block = None
            continue
        if _SYSFS_PARTIAL.match(line):
            result["errors"].append("line %d: truncated sysfs counter line: %r" % (line_no, line.strip()[:160]))
            continue
        if line.lstrip().startswith("#"):
            continue  # comments and echoed commands
        state.unknown(line_no, line)
    state.close_block()
    if state.unrecognised > _MAX_UNRECOGNISED:
        result["warnings"].append("%d more unrecognised lines ignored" % (state.unrecognised - _MAX_UNRECOGNISED))
    if len(result["unavailable"]) > _MAX_UNRECOGNISED:
        result["warnings"].append("%d counters unavailable in all" % len(result["unavailable"]))
    if state.device_hw:
        result["warnings"].append("%d device-level hw_counters lines (not per port) ignored" % state.device_hw)
    if not result["counters"]:
        if result["unavailable"]:
            result["errors"].append("no readable counter: all %d counters are unavailable (%s)"
                                    % (len(result["unavailable"]), "no PMA on this device?"))
        else:
            result["errors"].append(
                "no counters found in %d line(s): expected perfquery output ('# Port counters: ...' then "
                "'Name:....value' lines) or 'grep -H . /sys/class/infiniband/*/ports/*/counters/*' output"
                % len(lines))
    for where in result["saturated"]:
        result["warnings"].append("%s is at its maximum value and no longer counts; reset the counters "
                                  "(perfquery -R) to see new errors" % where)
    return result


def _counters_of(value, label, result):
    """The {ca: {port: {name: int}}} mapping inside a parse result, a bare mapping or raw text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        value = parse_ib_counters(value)
    if not isinstance(value, Mapping):
        result["errors"].append("%s: expected a from_ib_counters result, a counters mapping or the tool's "
                                "text, got %s" % (label, type(value).__name__))
        return {}
    if isinstance(value.get("counters"), Mapping):
        for error in value.get("errors") or []:
            result["errors"].append("%s: %s" % (label, error))
        value = value["counters"]
    clean = {}
    for ca, ports in value.items():
        if not isinstance(ports, Mapping):
            result["warnings"].append("%s: %s is not a mapping of ports; ignored" % (label, ca))
            continue
        for port, names in ports.items():
            if not isinstance(names, Mapping):
                result["warnings"].append("%s: %s port %s is not a mapping of counters; ignored" % (label, ca, port))
                continue
            target = clean.setdefault(str(ca), {}).setdefault(str(port), {})
            for name, number in names.items():
                if isinstance(number, bool) or not isinstance(number, int):
                    result["warnings"].append("%s: %s port %s %s is not an integer (%s); ignored"
                                              % (label, ca, port, name, repr(number)[:60]))
                    continue
                target[str(name)] = number
    return clean


def counter_deltas(before, after):
    """Subtract two counter snapshots: ``after - before`` per CA, port and counter.

    ``before`` and ``after`` may each be a parse_ib_counters result, its ``counters`` mapping, or
    the raw text. Returns ``{deltas: {ca: {port: {name: int}}}, resets: ["ca/port/name"],
    saturated: ["ca/port/name"], missing_before: [...], missing_after: [...], errors, warnings}``.
    A counter lower after than before was reset in between: its delta is taken as the after
    value (a lower bound) and it is listed in ``resets`` with a warning. A counter at its maximum
    in ``after`` no longer counts: its delta is a lower bound too (``saturated``).
    """
    result = new_result(deltas={}, resets=[], saturated=[], missing_before=[], missing_after=[])
    old = _counters_of(before, "before", result)
    new = _counters_of(after, "after", result)
    for ca in sorted(new):
        for port in sorted(new[ca]):
            base = old.get(ca, {}).get(port)
            if base is None:
                result["missing_before"].append("%s/%s" % (ca, port))
                result["warnings"].append("%s port %s has no baseline in 'before'; no deltas" % (ca, port))
                continue
            target = result["deltas"].setdefault(ca, {}).setdefault(port, {})
            for name in sorted(new[ca][port]):
                value = new[ca][port][name]
                where = "%s/%s/%s" % (ca, port, name)
                if name not in base:
                    result["missing_before"].append(where)
                    continue
                delta = value - base[name]
                if delta < 0:
                    delta = value
                    result["resets"].append(where)
                    result["warnings"].append("%s port %s: %s went from %d to %d (counters reset?); delta taken as %d"
                                              % (ca, port, name, base[name], value, value))
                if _saturated(name, value, COUNTER_WIDTHS):
                    result["saturated"].append(where)
                    result["warnings"].append("%s port %s: %s is at its maximum (%d); the real increase may be "
                                              "larger than %d" % (ca, port, name, value, delta))
                target[name] = delta
            for name in sorted(base):
                if name not in new[ca][port]:
                    result["missing_after"].append("%s/%s/%s" % (ca, port, name))
    for ca in sorted(old):
        for port in sorted(old[ca]):
            if port not in new.get(ca, {}):
                result["missing_after"].append("%s/%s" % (ca, port))
                result["warnings"].append("%s port %s is in 'before' but not in 'after'" % (ca, port))
    if not old and not new and not result["errors"]:
        result["errors"].append("no counters in either snapshot")
    elif not result["deltas"] and not result["errors"]:
        result["errors"].append("no CA/port in common between 'before' and 'after'")
    return result
