# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the output of the perftest bandwidth tests (ib_write_bw, ib_read_bw, ib_send_bw,
ib_atomic_bw), client or server side.

Private to the collection. Standard library only; nothing here raises on odd input.

What is read::

                        RDMA_Write BW Test
     Dual-port       : OFF          Device         : mlx5_0
     ...
     Link type       : IB
    ---------------------------------------------------------------------------------------
     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      5000             92.39              92.39              0.176196

The result table may have one row or, with ``-a``, one row per message size; extra columns
(``#sl`` with QoS, per-port columns with ``--dualport``, ``CPU_Util`` with ``--cpu_util``) are
found from the header.

Units. Every bandwidth in the result is in Gb/s (10**9 bit/s) whatever perftest printed:

* ``--report_gbits`` prints ``[Gb/sec]``: bytes * 8 / 10**9 -- used as is;
* otherwise perftest prints ``[MB/sec]`` (older releases) or ``[MiB/sec]`` (newer ones, same
  number): in both cases the unit is 2**20 bytes per second (``format_factor = 0x100000`` in
  ``perftest_parameters.c``), **not** 10**6 -- so Gb/s = value * 1048576 * 8 / 10**9
  = value * 0.008388608 (11728.47 MB/sec is 98.39 Gb/s, not 93.83).

The raw printed values are kept in each row (``bw_peak_raw``, ``bw_average_raw``) with ``unit``.

``errors`` get perftest's failure lines (``Couldn't connect to ...``, ``Unable to init the socket
connection``, ``Failed to ...``, ``Completion with error``, ...), a missing result table, a
header without data rows, truncated or negative rows. ``warnings`` get ``WARNING:`` lines, the
``Conflicting CPU frequency`` notice (the figures may be off; run with ``-F``), a peak not
measured (``0.00`` in duration mode), and libibverbs driver warnings.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import read_number
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    lines_of,
    new_result,
    strip_launcher_prefix,
)

# Bytes per printed unit, per second.
MIB = 1048576
GBIT_FACTOR = {"Gb/sec": 1.0, "MB/sec": MIB * 8 / 1e9, "MiB/sec": MIB * 8 / 1e9}

_HEADER = re.compile(r"^\s*#?\s*bytes\s+.*?iterations.*BW\s+peak\s*\[(?P<unit>[^\]]+)\]", re.IGNORECASE)
_LAT_HEADER = re.compile(r"^\s*#?\s*bytes\s+#?iterations\s+t_(?:min|avg)", re.IGNORECASE)
_TITLE = re.compile(r"^\s*(?P<title>[A-Za-z][\w ]*?\bBW Test)\s*$")
# A key of the info block: a letter, then letters, digits, "_*.-" and spaces (see key_values).
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_*.- ")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_RULE = re.compile(r"^\s*-{10,}\s*$")
_STARS = re.compile(r"^\s*\*+(?:\s*Waiting for client to connect\.\.\.\s*\*+)?\s*$")
_ERROR_PATTERNS = [
    re.compile(p) for p in (
        r"(?:^|\s|:)Couldn't\b",
        r"^\s*(?:\S+:\s*)?Unable to\b(?! validata PKey)",
        r"^\s*(?:\S+:\s*)?Failed\b",
        r"\bFailed (?:to|status)\b",
        r"Completion with error",
        r"\bIB device\b.*\bnot found\b",
        r"^\s*No IB devices found",
        r"^\s*(?:ERROR|Error)\b",
        r"\bgot completion with error\b",
        r"Segmentation fault|core dumped",
        r"Problems with warm up",
        r"^\s*(?:\S+:\s*)?Invalid\b",
    )
]
_WARNING_PATTERNS = [
    re.compile(p, re.IGNORECASE) for p in (
        r"^\s*WARNING\b",
        r"Conflicting CPU frequency",
        r"^\s*libibverbs: Warning",
        r"Requested mtu is higher than active mtu",
        r"Unable to validata PKey",
        r"not recognized to implement inline feature",
    )
]
_INFO_KEYS = {
    "device": "device",
    "link type": "link_type",
    "transport type": "transport_type",
    "connection type": "connection_type",
    "number of qps": "qps",
    "mtu": "mtu",
    "gid index": "gid_index",
    "tx depth": "tx_depth",
    "post list": "post_list",
    "cq moderation": "cq_moderation",
    "dual-port": "dual_port",
    "data ex. method": "data_exchange",
}
_INT_INFO = frozenset(("qps", "mtu", "gid_index", "tx_depth", "post_list", "cq_moderation"))
_COLUMNS = (
    ("msg_size", r"#?\s*bytes\b"),
    ("sl", r"#sl\b"),
    ("iterations", r"#?\s*iterations\b"),
    ("bw_peak", r"BW\s+peak\s*\["),
    ("bw_average", r"BW\s+average\s*\["),
    ("msg_rate", r"MsgRate\s*\["),
    ("bw_port1", r"BW\s+Port1\s*\["),
    ("msg_rate_port1", r"MsgRate\s+Port1\s*\["),
    ("bw_port2", r"BW\s+Port2\s*\["),
    ("msg_rate_port2", r"MsgRate\s+Port2\s*\["),
    ("cpu_util", r"CPU_Util\s*\["),
)
_BW_COLUMNS = ("bw_peak", "bw_average", "bw_port1", "bw_port2")


def _columns(header):
    """Column names in the order the header prints them."""
    found = []
    for name, pattern in _COLUMNS:
        match = re.search(pattern, header, re.IGNORECASE)
        if match:
            found.append((match.start(), name))
    return [name for _pos, name in sorted(found)]


def _to_number(token):
    value, dummy = read_number(token)  # the row was checked whole: every token reads
    return int(value) if isinstance(value, float) and value.is_integer() and "." not in token else value


def _row(tokens, columns, factor):
    row = {}
    for name, token in zip(columns, tokens):
        value = _to_number(token)
        if name in _BW_COLUMNS:
            row[name + "_raw"] = value
            row[name] = round(value * factor, 6)
        elif name in ("msg_size", "iterations", "sl"):
            row[name] = int(float(token))
        else:
            row[name] = value
    return row


def _value_end(line, start):
    """End of a value that starts at ``start``: words joined by single spaces, up to two blanks,
    a tab or the end of the line."""
    end, size = start, len(line)
    while end < size:
        char = line[end]
        if char == "\t" or (char.isspace() and (end + 1 >= size or line[end + 1].isspace() or char != " ")):
            return end
        end += 1
    return end


def key_values(line):
    """[(key, value)] of one info line (" Dual-port       : OFF\t\tDevice         : mlx5_0"), in
    one pass over the line: time linear in its length whatever it holds (a regular expression
    with a lazy key and a lazy value took seconds on one garbled 16 KB line)."""
    pairs, pos, size = [], 0, len(line)
    while True:
        colon = line.find(":", pos)
        if colon < 0:
            return pairs
        key_end = colon
        while key_end > pos and line[key_end - 1].isspace():
            key_end -= 1
        key_start = key_end
        while key_start > pos and line[key_start - 1] in _KEY_CHARS:
            key_start -= 1
        while key_start < key_end and line[key_start] not in _LETTERS:
            key_start += 1
        start = colon + 1
        while start < size and line[start].isspace():
            start += 1
        if key_start == key_end or start >= size:
            pos = colon + 1
            continue
        end = _value_end(line, start)
        pairs.append((line[key_start:key_end], line[start:end]))
        pos = end


def _classify(line):
    """'error' / 'warning' / None for a non-table line."""
    for pattern in _WARNING_PATTERNS:
        if pattern.search(line):
            return "warning"
    for pattern in _ERROR_PATTERNS:
        if pattern.search(line):
            return "error"
    return None


@capped(4)
def parse_perftest(text):
    """Parse the output of a perftest ``*_bw`` run.

    Returns ``{test, device, link_type, transport_type, connection_type, qps, mtu, role,
    bidirectional, unit, msg_size, iterations, bw_peak, bw_average, msg_rate, bw_average_max,
    rows, errors, warnings}`` (plus the other header settings found: gid_index, tx_depth,
    post_list, cq_moderation, dual_port, data_exchange). ``msg_size``, ``bw_*`` and ``msg_rate``
    come from the row with the largest message size; bandwidths are in Gb/s, msg_rate in Mpps.
    ``rows`` holds every row: ``{msg_size, iterations, bw_peak, bw_average, msg_rate,
    bw_peak_raw, bw_average_raw}`` (+ ``sl``, per-port and ``cpu_util`` columns when printed).
    ``role`` is 'server' when the output shows the server waiting for its client, else 'client'.
    """
    result = new_result(
        test=None, device=None, link_type=None, transport_type=None, connection_type=None, qps=None,
        mtu=None, gid_index=None, tx_depth=None, post_list=None, cq_moderation=None, dual_port=None,
        data_exchange=None, role=None, bidirectional=None, unit=None, msg_size=None, iterations=None,
        bw_peak=None, bw_average=None, msg_rate=None, bw_average_max=None, rows=[])
    if text is None:
        text = ""
    lines = lines_of(text)
    columns = None
    factor = None
    header_line = None
    tables = 0
    waiting = False
    rules = 0
    closed = False
    for line_no, raw in enumerate(lines, 1):
        line = strip_launcher_prefix(raw)
        stripped = line.strip()
        if not stripped:
            continue
        if _RULE.match(line):
            rules += 1
            closed = bool(result["rows"])
            continue
        if "Waiting for client to connect" in line:
            waiting = True
            continue
        if _STARS.match(line):
            continue
        if _LAT_HEADER.match(line):
            result["errors"].append("line %d: this is a latency test table (ib_*_lat); from_perftest reads "
                                    "the bandwidth tests (ib_*_bw)" % line_no)
            columns = None
            continue
        match = _HEADER.match(line)
        if match:
            unit = match.group("unit").strip()
            columns = _columns(line)
            header_line = line_no
            tables += 1
            if unit not in GBIT_FACTOR:
                result["errors"].append("line %d: unknown bandwidth unit %r" % (line_no, unit[:30]))
                factor = None
                columns = None
                continue
            if result["unit"] not in (None, unit):
                result["warnings"].append("line %d: tables in different units (%s, %s); all converted to Gb/s"
                                          % (line_no, result["unit"], unit))
            result["unit"] = unit
            factor = GBIT_FACTOR[unit]
            continue
        tokens = stripped.split()
        if columns and tokens and _NUMBER.match(tokens[0]):
            if not all(_NUMBER.match(t) and read_number(t)[1] is None for t in tokens):
                result["errors"].append("line %d: garbled result row: %r" % (line_no, stripped[:120]))
                continue
            required = len([c for c in columns if c != "cpu_util"])
            if len(tokens) < required:
                result["errors"].append("line %d: result row has %d of %d columns (output truncated?): %r"
                                        % (line_no, len(tokens), required, stripped[:120]))
                continue
            if len(tokens) > len(columns):
                result["warnings"].append("line %d: result row has %d values for %d columns; extra ignored"
                                          % (line_no, len(tokens), len(columns)))
            row = _row(tokens, columns, factor)
            row["line"] = line_no
            negative = [c for c in columns if c in _BW_COLUMNS and row.get(c, 0) < 0]
            if negative:
                result["errors"].append("line %d: negative bandwidth (%s) for %d bytes: the measurement is invalid"
                                        % (line_no, ", ".join(negative), row["msg_size"]))
            result["rows"].append(row)
            closed = False
            continue
        kind = _classify(line)
        if kind == "error":
            result["errors"].append("line %d: %s" % (line_no, stripped))
            continue
        if kind == "warning":
            result["warnings"].append("line %d: %s" % (line_no, stripped))
            continue
        match = _TITLE.match(line)
        if match and result["test"] is None:
            result["test"] = re.sub(r"\s+", " ", match.group("title"))
            continue
        for key, value in key_values(line):
            field = _INFO_KEYS.get(key.strip().lower())
            if field is None or result[field] is not None:
                continue
            value = value.strip()
            if field in _INT_INFO:
                number = re.match(r"^\d{1,15}", value)
                result[field] = int(number.group(0)) if number else None
            else:
                result[field] = value
    if result["test"]:
        result["bidirectional"] = "Bidirectional" in result["test"]
    if result["test"] is not None or result["rows"] or waiting:
        result["role"] = "server" if waiting else "client"
    if tables > 1:
        result["warnings"].append("%d result tables found; rows from all of them are kept" % tables)
    rows = result["rows"]
    if not rows:
        if header_line is not None:
            result["errors"].append("line %d: result header without data rows (test failed or output truncated)"
                                    % header_line)
        else:
            result["errors"].append("no result table ('#bytes #iterations BW peak[...] BW average[...]' header) "
                                    "found in %d line(s) of output" % len(lines))
        return result
    if rules and not closed:
        result["errors"].append("line %d: no closing '-----' line after the last result row (output truncated?)"
                                % rows[-1]["line"])
    largest = max(rows, key=lambda r: (r["msg_size"], r["line"]))
    for key in ("msg_size", "iterations", "bw_peak", "bw_average", "msg_rate"):
        result[key] = largest.get(key)
    result["bw_average_max"] = max(r.get("bw_average", 0) for r in rows)
    if largest.get("bw_peak") == 0 and (largest.get("bw_average") or 0) > 0:
        result["warnings"].append("BW peak was not measured (printed as 0.00, e.g. in duration mode -D); "
                                  "use bw_average")
    return result
