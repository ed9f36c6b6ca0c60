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

Time: each event's ``time`` holds what its prefix says (time_fields); placing the events in UTC
and the window Xids are counted in (place_events, parse_node_clock, parse_xid_window,
resolve_window) are in _xid_window. Standard library only; never raises.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_window import _MONO, time_fields

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
# The kernel log refused to this user (not root, kernel.dmesg_restrict=1; not in adm/systemd-journal):
# util-linux "dmesg: read kernel buffer failed: Operation not permitted", journalctl's "No journal
# files were opened due to insufficient permissions." / "Hint: You are currently not seeing messages
# from other users and the system." A permission, not a broken node: the judge skips, naming it.
# (systemd's notice comes in several wordings: "Users in groups 'adm', 'systemd-journal', 'wheel'
# can see all messages.", older "Users in the 'systemd-journal' group can see all messages. Pass -q
# to" / "turn off this notice."; every indented line after the Hint belongs to it.)
_REFUSED_LOG = re.compile(r"^\s*dmesg: .*(?:Operation not permitted|Permission denied)"
                          r"|^\s*No journal files were opened due to insufficient permissions"
                          r"|^\s*Hint: You are currently not seeing messages from other users and the system"
                          r"|^\s*Users in (?:the )?groups? .*can see all messages"
                          r"|^\s*(?:Pass -q to )?turn off this notice", re.IGNORECASE)
_UNREADABLE_LOG = re.compile(r"^\s*(?:dmesg|journalctl): .*(?:failed|not permitted|denied|No journal files)"
                             r"|^\s*No journal files were found"
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
    ``refused`` ([{kind: permission, line, text}]: a log source this user may not read; the other
    lines, e.g. a journal read after a refused dmesg, are parsed as usual), ``errors`` and ``warnings``.
    """
    result = new_result(events=[], gpu_lost=[], by_xid={}, by_pci={}, devices={},
                        rate_limited=[], lines=0, lost=[], first_line=None, last_line=None, refused=[])
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
        if _REFUSED_LOG.search(raw) or (result["refused"] and raw[:1].isspace()
                                        and result["refused"][-1]["line"] == number - 1):
            # Structured, not an error: the judge skips the scan where nothing else was read.
            result["refused"].append({"kind": "permission", "line": number, "text": raw.strip()[:200]})
            continue
        if result["refused"] and raw.strip() == "-- No entries --":
            # the journal after its permission notice: nothing this user may see, no broken log
            result["refused"].append({"kind": "permission", "line": number, "text": raw.strip()})
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
