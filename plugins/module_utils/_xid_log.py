# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for NVIDIA Xid events in kernel logs (``dmesg``, ``dmesg -T``, syslog, journal).

An Xid line, whatever the log prefix, reads::

    NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, ...
    NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000
    NVRM: Xid (0000:03:00): 14, Channel 00000001
    NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). ...

``pid`` and ``name`` are optional, and ``'<unknown>'`` when the driver could not tell. Lines
that follow an Xid with the same timestamp (the GSP RPC history after Xid 119, the "GPU has
fallen off the bus" line after Xid 79) or that continue it on an indented line are kept as the
event's ``continuation``. A GPU that fell off the bus is reported in ``gpu_lost`` whether or not
an Xid was logged (newer drivers print a multi-line "The NVIDIA GPU <bdf> ... has fallen off
the bus" message instead).

Lines that are not Xid lines are ignored: a log without Xid events is a valid, empty result.
Launcher prefixes (srun ``-l``, mpirun ``--tag-output``) are removed and shell prompts pasted with
the log dropped with a warning. An ``NVRM: Xid (...)`` line in the driver's shape whose Xid
number cannot be read is an error (an Xid that cannot be judged); other unreadable mentions of
``NVRM: Xid`` are warnings.

Time: each event's ``time`` holds what its prefix says (``uptime`` seconds for plain ``dmesg``
and kmsg, ``epoch`` for ISO stamps with a UTC offset, ``local`` fields for ``dmesg -T`` and
naive ISO stamps, ``local_noyear`` for syslog). place_events() turns them into UTC ``epoch``
seconds given the node's clock (parse_node_clock: its current time, UTC offset and uptime), so
a verdict can count only the Xids after a window start (parse_xid_window, resolve_window) and
report older ones as history. Standard library only; never raises.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_ISO = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"

# Known log prefixes, tried in order; "kind" tells which one matched.
_PREFIXES = (
    ("monotonic", re.compile(r"^\[\s*\d+\.\d+\]")),
    ("ctime", re.compile(r"^\[%s\s+%s\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}\s+\d{4}\]" % (_WEEKDAY, _MONTH))),
    ("kmsg", re.compile(r"^\d+,\d+,\d+,[^;]*;")),
    # journalctl -o short-iso / rsyslog RFC 3339: "2024-01-01T00:00:00+0000 host kernel:"
    ("iso", re.compile(r"^%s(?:\s+\S+\s+kernel(?:\[\d+\])?:)?(?:\s*\[\s*\d+\.\d+\])?" % _ISO)),
    # syslog / journalctl short: "Jan  1 00:00:00 host kernel: [ 12.3]" (also localised months)
    ("syslog", re.compile(r"^\S{1,12}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+\S+\s+"
                          r"kernel(?:\[\d+\])?:(?:\s*\[\s*\d+\.\d+\])?")),
)

_NVRM = re.compile(r"NVRM:\s*")
_UNREADABLE_LOG = re.compile(r"^\s*(?:dmesg|journalctl): .*(?:failed|not permitted|denied|No journal files)"
                             r"|^\s*-- No entries --\s*$", re.IGNORECASE)
# The driver's own Xid line shape: an unreadable one is an Xid that cannot be judged.
_XID_SHAPED = re.compile(r"NVRM:\s*Xid\s*\([^)]*\)\s*:", re.IGNORECASE)
_XID_MARK = re.compile(r"NVRM:\s*Xid\b", re.IGNORECASE)
_XID = re.compile(r"NVRM:\s*Xid\s*\((?P<device>[^)]*)\)\s*:\s*(?P<xid>\d+)\s*(?:,\s*(?P<rest>.*))?$")
_PCI = re.compile(r"(?:PCI:)?\s*(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):"
                  r"(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>[0-7]))?(?![0-9a-fA-F:])")
_MIG = re.compile(r"GPU-I:\s*(\d+)", re.IGNORECASE)
_PID = re.compile(r"^pid\s*=\s*(?P<pid>'[^']*'|\"[^\"]*\"|<[^>]*>|[^,\s]*)\s*(?:,\s*|$)")
_NAME = re.compile(r"^name\s*=\s*(?P<name>'[^']*'|\"[^\"]*\"|<[^>]*>|[^,]*?)\s*(?:,\s*|$)")
_GPU_AT = re.compile(r"NVRM:\s*GPU at PCI:\s*(?P<pci>[0-9a-fA-F:.]+)\s*:\s*(?P<uuid>GPU-[0-9a-fA-F-]+)")
_SERIAL = re.compile(r"NVRM:\s*GPU Board Serial Number:\s*(?P<serial>\S+)")
_FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
_GPU_DEVICE = re.compile(r"(?:The NVIDIA GPU|GPU at PCI:|GPU at|GPU|PCI:)\s*"
                         r"((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)")
_RATE_LIMIT = re.compile(r"Rate limiting .*?GPU at PCI:\s*([0-9a-fA-F:.]+)", re.IGNORECASE)
_UNKNOWN = frozenset(("", "<unknown>", "unknown", "'<unknown>'", "\"<unknown>\"", "n/a", "-"))

# How far back a "fallen off the bus" line without its own address may look for the
# "The NVIDIA GPU <bdf>" line it continues.
_LOOKBACK = 3
_MAX_CONTINUATION = 64


def normalize_pci(text):
    """'PCI:0000:3B:00.0', '00000000:3b:00', '3b:00.0' -> '0000:3b:00'; None if no address."""
    if not text:
        return None
    match = _PCI.search(text)
    if not match:
        return None
    domain = (match.group("domain") or "0000").lower()
    if len(domain) > 4:
        domain = domain[-4:]
    return "%s:%s:%s" % (domain, match.group("bus").lower(), match.group("dev").lower())


# `dmesg -x` (--decode) puts "kern  :warn  : " before the time, `dmesg -r` the raw "<4>" level.
_DECODE = re.compile(r"^(?:<\d{1,3}>|[a-z0-9]+\s*:\s*(?:emerg|alert|crit|err|warn|notice|info|debug)\s*:\s*)")


def _split_prefix(line):
    """(message starting at NVRM:, raw prefix or None, kind or None) for one log line."""
    nvrm = _NVRM.search(line)
    head = line[:nvrm.start()] if nvrm else line
    head_stripped = _DECODE.sub("", head.strip(), count=1)
    for kind, pattern in _PREFIXES:
        match = pattern.match(head_stripped)
        if match:
            return (line[nvrm.start():] if nvrm else ""), match.group(0).strip(), kind
    if head_stripped and head_stripped not in ("kernel:",):
        return (line[nvrm.start():] if nvrm else ""), head_stripped, "other"
    return (line[nvrm.start():] if nvrm else ""), None, None


_CLOCK = re.compile(r"(\d{1,2}):(\d{2}):(\d{2}(?:[.,]\d+)?)")
_MONO = re.compile(r"\[\s*(\d+\.\d+)\]")


def _when(prefix):
    """(day, seconds) comparable between two prefixes of the same log; None when unknown."""
    if not prefix:
        return None
    mono = _MONO.search(prefix)
    if mono:
        return ("mono", float(mono.group(1)))
    clock = _CLOCK.search(prefix)
    if not clock:
        return None
    seconds = (int(clock.group(1)) * 3600 + int(clock.group(2)) * 60
               + float(clock.group(3).replace(",", ".")))
    return (prefix[:clock.start()], seconds)


def _close_in_time(earlier, later):
    """True when two log prefixes are at most a second apart (same raw prefix counts)."""
    if earlier == later:
        return True
    first, second = _when(earlier), _when(later)
    if first is None or second is None or first[0] != second[0]:
        return False
    return 0 <= second[1] - first[1] <= 1.0


def _clean_value(value):
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _UNKNOWN:
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1].strip()
        if value.lower() in _UNKNOWN:
            return None
    return value or None


def _parse_xid(message):
    """Fields of one Xid message, or None when it is not in the known shape."""
    match = _XID.search(message)
    if not match:
        return None
    device = match.group("device").strip()
    rest = (match.group("rest") or "").strip()
    pid = None
    process = None
    pid_match = _PID.match(rest)
    if pid_match:
        raw_pid = _clean_value(pid_match.group("pid"))
        if raw_pid is not None and is_digits(raw_pid):
            pid = int(raw_pid)
        rest = rest[pid_match.end():]
    name_match = _NAME.match(rest)
    if name_match:
        process = _clean_value(name_match.group("name"))
        rest = rest[name_match.end():]
    mig = _MIG.search(device)
    return {
        "xid": int(match.group("xid")),
        "pci": normalize_pci(device),
        "device": device or None,
        "gpu_instance": int(mig.group(1)) if mig else None,
        "pid": pid,
        "process": process,
        "message": rest.strip(),
    }


@capped(16)
def parse_xid_log(text):
    """Parse Xid events (and GPUs that fell off the bus) out of kernel log text.

    Returns a dict with ``events`` (each ``xid``, ``pci``, ``pid``, ``process``, ``message``,
    ``timestamp``, ``timestamp_kind``, ``line``, ``device``, ``gpu_instance``, ``uuid``,
    ``continuation``), ``gpu_lost``, ``by_xid``, ``by_pci``, ``devices``, ``rate_limited``,
    ``errors`` and ``warnings``.
    """
    result = new_result(events=[], gpu_lost=[], by_xid={}, by_pci={}, devices={},
                        rate_limited=[], lines=0, lost=[], first_line=None, last_line=None)
    if text is None:
        result["errors"].append("no input: expected kernel log text")
        return result
    try:
        _parse(text, result)
    except Exception as exc:  # pylint: disable=broad-except
        result["errors"].append("internal parser error (%s: %s); please report it with the input"
                                % (type(exc).__name__, exc))
    return result


def _parse(text, result):
    lines = lines_of(text)
    result["lines"] = len(lines)
    lost = {}
    devices = result["devices"]
    last_device = None
    event = None  # the Xid event whose continuation lines may follow
    last_prefix = None
    recent = []   # (line number, message) of the last few lines, for multi-line messages

    for number, raw in enumerate(lines, 1):
        raw = strip_launcher_prefix(raw)
        if not raw.strip():
            event = None
            continue
        if is_shell_echo(raw.strip()):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s"
                                      % (number, raw.strip()[:120]))
            continue
        if _UNREADABLE_LOG.search(raw):
            # dmesg without the right to read the ring buffer, an empty journal: no Xid can be seen.
            result["errors"].append("line %d: the kernel log could not be read: %s" % (number, raw.strip()[:200]))
            continue
        if result["first_line"] is None:
            result["first_line"] = raw.strip()
        result["last_line"] = raw.strip()
        message, prefix, kind = _split_prefix(raw.strip())
        indented = raw[:1].isspace() and prefix is None
        recent.append((number, message or raw.strip()))
        if len(recent) > _LOOKBACK + 1:
            recent.pop(0)

        if _XID_MARK.search(raw):
            fields = _parse_xid(message or raw)
            if fields is None:
                where = result["errors"] if _XID_SHAPED.search(raw) else result["warnings"]
                where.append("line %d: could not parse the Xid line: %s" % (number, raw.strip()[:200]))
                event = None
                continue
            fields["timestamp"] = prefix
            fields["timestamp_kind"] = kind
            fields["time"] = time_fields(prefix, kind)
            fields["epoch"] = fields["time"].get("epoch")
            fields["raw"] = raw.strip()
            fields["line"] = number
            fields["uuid"] = devices.get(fields["pci"], {}).get("uuid") if fields["pci"] else None
            fields["continuation"] = []
            result["events"].append(fields)
            event = fields
            last_prefix = prefix
            if fields["xid"] == 79 and fields["pci"]:
                lost.setdefault(fields["pci"], (number, raw.strip(), prefix, kind))
            if _FALLEN.search(message or "") and fields["pci"]:
                lost.setdefault(fields["pci"], (number, raw.strip(), prefix, kind))
            continue

        gpu_at = _GPU_AT.search(raw)
        if gpu_at:
            pci = normalize_pci(gpu_at.group("pci"))
            if pci:
                devices.setdefault(pci, {"uuid": None, "serial": None})["uuid"] = gpu_at.group("uuid")
                last_device = pci
            event = None
            continue
        serial = _SERIAL.search(raw)
        if serial and last_device:
            devices[last_device]["serial"] = serial.group("serial")

        rate = _RATE_LIMIT.search(raw)
        if rate:
            pci = normalize_pci(rate.group(1))
            if pci and pci not in result["rate_limited"]:
                result["rate_limited"].append(pci)
                result["warnings"].append(
                    "line %d: the driver rate-limited error prints for %s; Xid counts for it are "
                    "lower bounds" % (number, pci))

        if _FALLEN.search(raw):
            pci = None
            device = _GPU_DEVICE.search(message or raw)
            if device:
                pci = normalize_pci(device.group(1))
            if pci is None:
                for _number, earlier in reversed(recent[:-1]):
                    device = _GPU_DEVICE.search(earlier)
                    if device:
                        pci = normalize_pci(device.group(1))
                        break
            if pci is None and event is not None and event["pci"]:
                pci = event["pci"]
            if pci is None:
                result["warnings"].append(
                    "line %d: a GPU fell off the bus but the line names no PCI address: %s"
                    % (number, raw.strip()[:200]))
            else:
                lost.setdefault(pci, (number, raw.strip(), prefix, kind))

        if event is not None:
            close = bool(message) and prefix is not None and _close_in_time(last_prefix, prefix)
            if (indented or close) and len(event["continuation"]) < _MAX_CONTINUATION:
                event["continuation"].append((message or raw).strip())
                if prefix is not None:
                    last_prefix = prefix
                continue
            event = None

    by_xid = {}
    by_pci = {}
    for item in result["events"]:
        by_xid[item["xid"]] = by_xid.get(item["xid"], 0) + 1
        if item["pci"]:
            xids = by_pci.setdefault(item["pci"], [])
            if item["xid"] not in xids:
                xids.append(item["xid"])
    result["by_xid"] = dict(sorted(by_xid.items()))
    result["by_pci"] = dict((pci, sorted(xids)) for pci, xids in sorted(by_pci.items()))
    result["gpu_lost"] = sorted(lost)
    for pci in sorted(lost):
        number, text, prefix, kind = lost[pci]
        when = time_fields(prefix, kind)
        result["lost"].append({"pci": pci, "line": number, "raw": text, "time": when,
                               "epoch": when.get("epoch")})


# --------------------------------------------------------------------------------------------
# Time: where each event lies, the node's clock, the window Xids are counted in
# --------------------------------------------------------------------------------------------

_MONTHS = dict((name, i + 1) for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")))
_ISO_PARTS = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
                        r"(Z|[+-]\d{2}:?\d{2})?")
_CTIME_PARTS = re.compile(r"\[\s*\w{3}\s+(\w{3})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})\]")
_SYSLOG_PARTS = re.compile(r"^(\S{1,12}?)\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?\s")
_KMSG_PARTS = re.compile(r"^\d+,\d+,(\d+),")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)w)?(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?"
                       r"(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$")


def _offset_seconds(text):
    if not text or text == "Z":
        return 0
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)


def _valid_fields(year, month, day, hour, minute, second):
    return 1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 60 \
        and 1970 <= year <= 9999


def parse_iso_time(text):
    """UTC epoch seconds of '2024-11-14T07:00:14Z', '...+01:00', '2024-11-14 07:00:14' (UTC) or
    '2024-11-14' (midnight UTC); None when it is not one."""
    if not isinstance(text, str):
        return None
    value = text.strip()
    if re.match(r"^\d{4}-\d{2}-\d{2}$", value):
        value += "T00:00:00Z"
    match = _ISO_PARTS.match(value)
    if not match or match.end() != len(value):
        return None
    fields = [int(match.group(i)) for i in range(1, 7)]
    if not _valid_fields(*fields):
        return None
    fraction = float("0." + match.group(7)) if match.group(7) else 0.0
    return calendar.timegm(tuple(fields) + (0, 0, 0)) + fraction - _offset_seconds(match.group(8))


def time_fields(prefix, kind):
    """What a log prefix says about when the line was logged (see the module docstring)."""
    fields = {}
    if not prefix:
        return fields
    mono = _MONO.search(prefix)
    if mono and kind in ("monotonic", "other"):
        # syslog and journal lines carry the wall time too, and may come from earlier boots,
        # where seconds since (this) boot would place them wrongly.
        fields["uptime"] = float(mono.group(1))
    if kind == "kmsg":
        match = _KMSG_PARTS.match(prefix)
        if match:
            fields["uptime"] = int(match.group(1)) / 1e6
    elif kind == "iso":
        match = _ISO_PARTS.search(prefix)
        if match:
            parts = [int(match.group(i)) for i in range(1, 7)]
            if _valid_fields(*parts):
                fraction = float("0." + match.group(7)) if match.group(7) else 0.0
                if match.group(8):
                    fields["epoch"] = calendar.timegm(tuple(parts) + (0, 0, 0)) + fraction - \
                        _offset_seconds(match.group(8))
                else:
                    fields["local"] = parts
    elif kind == "ctime":
        match = _CTIME_PARTS.search(prefix)
        month = _MONTHS.get(match.group(1).lower()) if match else None
        if month:
            parts = [int(match.group(6)), month, int(match.group(2)), int(match.group(3)),
                     int(match.group(4)), int(match.group(5))]
            if _valid_fields(*parts):
                fields["local"] = parts
    elif kind == "syslog":
        match = _SYSLOG_PARTS.match(prefix)
        if match:
            word = match.group(1).lower()
            month = _MONTHS.get(word[:3]) if word[:3] in _MONTHS else None
            digits = re.match(r"^(\d{1,2})\D", word)  # "6月" and other numeric localised months
            if month is None and digits:
                month = int(digits.group(1))
            if month and 1 <= month <= 12:
                fields["local_noyear"] = [month] + [int(match.group(i)) for i in range(2, 6)]
    return fields


def parse_node_clock(text):
    """The node-clock tool's output: ``now: <UTC ISO>``, ``tz: +hhmm``, ``uptime: <s> <idle s>``.

    Returns {now (epoch), tz_offset (seconds east of UTC), uptime (seconds), boot (epoch),
    errors}; a value that cannot be read is None with an error naming the line.
    """
    clock = {"now": None, "tz_offset": None, "uptime": None, "boot": None, "errors": [], "lines": []}
    if not isinstance(text, str):
        clock["errors"].append("no node clock output")
        return clock
    for number, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        key, _sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        clock["lines"].append(line)
        if key == "now":
            clock["now"] = parse_iso_time(value)
            if clock["now"] is None:
                clock["errors"].append("line %d: node time %r is not an ISO 8601 time" % (number, value[:60]))
        elif key == "tz":
            if re.match(r"^[+-]\d{2}:?\d{2}$", value):
                clock["tz_offset"] = _offset_seconds(value)
            else:
                clock["errors"].append("line %d: UTC offset %r is not +hhmm" % (number, value[:20]))
        elif key == "uptime":
            word = value.split()[0] if value.split() else ""
            try:
                uptime = float(word)
            except ValueError:
                uptime = None
            if uptime is None or math.isnan(uptime) or math.isinf(uptime) or uptime < 0:
                clock["errors"].append("line %d: uptime %r is not a number of seconds" % (number, word[:40]))
            else:
                clock["uptime"] = uptime
        else:
            clock["errors"].append("line %d: unexpected node clock line: %s" % (number, line[:120]))
    if clock["now"] is None and not clock["errors"]:
        clock["errors"].append("the node clock output names no current time (now: ...)")
    if clock["now"] is not None and clock["uptime"] is not None:
        clock["boot"] = clock["now"] - clock["uptime"]
    return clock


def parse_duration(text):
    """Seconds of '24h', '90m', '7d', '1h30m', '3600s', '2w'; None when it is not a duration."""
    if not isinstance(text, str) or not text.strip():
        return None
    match = _DURATION.match(text.strip().lower())
    if not match or not any(match.groups()):
        return None
    total = 0.0
    for unit, value in zip("wdhms", match.groups()):
        if value:
            total += float(value) * _UNIT_SECONDS[unit]
    return total if total > 0 and not math.isinf(total) else None


def parse_xid_window(text):
    """The xid-window tool's output: ``xid_since: <setting>``, ``window: <start>`` and
    ``last_pass_run: <run id>``; the start is ``boot``, an ISO time or a duration.

    Returns {since, window, last_pass_run, lines, errors}.
    """
    window = {"since": None, "window": None, "last_pass_run": None, "lines": [], "errors": []}
    if not isinstance(text, str):
        window["errors"].append("no Xid window output")
        return window
    for number, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        key, _sep, value = line.partition(":")
        key = key.strip().lower()
        window["lines"].append(line)
        if key in ("xid_since", "window", "last_pass_run"):
            window[{"xid_since": "since"}.get(key, key)] = value.strip() or None
        else:
            window["errors"].append("line %d: unexpected Xid window line: %s" % (number, line[:120]))
    if window["window"] is None and not window["errors"]:
        window["errors"].append("the Xid window output names no window start (window: ...)")
    return window


def _fmt_epoch(epoch):
    import time as _time  # local: only messages need it
    return _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime(epoch))


def resolve_window(window, clock):
    """Where the Xid window starts: {kind, start (UTC epoch or None: the whole log), label, errors}.

    kind: 'boot' (the whole log: dmesg and journalctl -k hold the current boot only; a syslog
    file holding earlier boots is judged whole too), 'last_pass' (since the node's last passed
    run), 'time' or 'duration' (a configured start). A duration needs the node's clock; a start
    that cannot be read is an error and the whole log is judged.
    """
    window = window or {}
    clock = clock or {}
    since = window.get("since") or "boot"
    value = window.get("window") or "boot"
    resolved = {"kind": "boot", "start": None, "label": "since boot", "errors": list(window.get("errors") or [])}
    if value == "boot":
        # dmesg and journalctl -k hold this boot only: the whole log is the window. (The boot
        # time is not used as a start: a kernel stamp and the node's uptime may drift apart.)
        resolved["kind"] = "boot"
        if clock.get("boot") is not None:
            resolved["label"] += " (%s)" % _fmt_epoch(clock["boot"])
        if since == "last_pass":
            resolved["label"] += ", no passed run of this node on record"
        return resolved
    start = parse_iso_time(value)
    if start is not None:
        resolved["kind"] = "last_pass" if since == "last_pass" else "time"
        resolved["start"] = start
        resolved["label"] = ("since the last passed run (%s%s)" % (
            _fmt_epoch(start), ", run %s" % window["last_pass_run"] if window.get("last_pass_run") else "")
            if since == "last_pass" else "since %s" % _fmt_epoch(start))
        return resolved
    seconds = parse_duration(value)
    if seconds is not None:
        resolved["kind"] = "duration"
        if clock.get("now") is None:
            resolved["errors"].append("window %s needs the node's clock, which was not captured or not "
                                      "readable: the whole log is judged" % value)
            resolved["label"] = "in the whole log (window %s could not be placed)" % value
            return resolved
        resolved["start"] = clock["now"] - seconds
        resolved["label"] = "in the last %s (since %s)" % (value, _fmt_epoch(resolved["start"]))
        return resolved
    resolved["errors"].append("Xid window start %r is not boot, an ISO 8601 time or a duration: the "
                              "whole log is judged" % value[:60])
    resolved["label"] = "in the whole log"
    return resolved


def _local_epoch(parts, offset):
    return calendar.timegm(tuple(parts) + (0, 0, 0)) - offset


def place_events(items, clock):
    """Set each event's (or lost GPU's) ``epoch`` from its ``time`` and the node's clock.

    Plain dmesg stamps (seconds since boot) need the boot time (now - uptime); local times need
    the node's UTC offset; syslog stamps without a year take the year that puts them at most a
    day after the node's current time. Returns the number of items left without a time.
    """
    clock = clock or {}
    unplaced = 0
    for item in items or []:
        when = item.get("time") or {}
        epoch = when.get("epoch")
        offset = clock.get("tz_offset")
        if epoch is None and when.get("local") and offset is not None:
            epoch = _local_epoch(when["local"], offset)
        if epoch is None and when.get("local_noyear") and offset is not None and clock.get("now") is not None:
            year = int(_fmt_epoch(clock["now"])[:4])
            epoch = _local_epoch([year] + when["local_noyear"], offset)
            if epoch > clock["now"] + 86400:
                epoch = _local_epoch([year - 1] + when["local_noyear"], offset)
        if epoch is None and when.get("uptime") is not None and clock.get("boot") is not None:
            epoch = clock["boot"] + when["uptime"]
        item["epoch"] = epoch
        if epoch is None:
            unplaced += 1
    return unplaced
