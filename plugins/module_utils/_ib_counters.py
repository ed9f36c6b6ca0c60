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

``_ib_counters_deltas.counter_deltas(before, after)`` subtracts two such snapshots; the counter
names and widths are in ``_ib_counters_names``.

Salvage: an ``iberror``/``ibwarn`` line, a garbled or truncated line is reported (errors or
warnings, with its line number) next to every counter read from the rest; ``lines`` maps
``ca/port/name`` to the line the value was read from (evidence). Shell prompts are dropped with
a warning.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_names import (
    COUNTER_WIDTHS, _BASIC_DATA_WIDTHS, _saturated, perfquery_name_to_sysfs)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    IBDIAG_ERROR,
    IBDIAG_WARNING,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
)

# Selector fields perfquery prints alongside the counters; not counters.
_META_NAMES = frozenset(("PortSelect", "CounterSelect", "CounterSelect2"))

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
