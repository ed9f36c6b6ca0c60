# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When Xid events happened, and the window the verdict counts them in.

Private to the collection. Standard library only; never raises.

Each event's ``time`` (time_fields) holds what its kernel log prefix says: ``uptime`` seconds for
plain ``dmesg`` and kmsg, ``epoch`` for ISO stamps with a UTC offset, ``local`` fields for
``dmesg -T`` and naive ISO stamps, ``local_noyear`` for syslog. place_events() turns them into UTC
``epoch`` seconds given the node's clock (parse_node_clock: its current time, UTC offset and
uptime), so a verdict can count only the Xids after a window start (parse_xid_window,
resolve_window) and report older ones as history.

It is apart from the parser (_xid_log), which finds the events, because placing them needs
the node's clock and the window setting, two other outputs of the gpu_health stage.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    lines_of,
    strip_launcher_prefix,
)

# A plain dmesg stamp, "[ 12.345678]": seconds since boot (the parser also compares lines by it).
_MONO = re.compile(r"\[\s*(\d+\.\d+)\]")
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
