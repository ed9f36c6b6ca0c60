# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_health Xid checks: the kernel log's Xid events in their window, and GPUs lost from the bus.

Private to _judge_gpu_health (judge_gpu_health calls _judge_xid; the stage reports the window
_window_of resolves). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names, parse_error_results, profile_get, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_views import STAGE_WINDOW, STAGE_XID, TOOL_XID, _num
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import normalize_bus_id
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_window import place_events, resolve_window


# Short descriptions for messages (NVIDIA Xid catalog mnemonics, abbreviated).
XID_NAMES = {
    8: "GPU stopped processing",
    13: "graphics engine exception",
    31: "GPU memory page fault",
    32: "invalid or corrupted push buffer stream",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
    46: "GPU stopped processing",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint/warning",
    62: "internal micro-controller halt",
    63: "row remap / page retirement recorded",
    64: "row remap / page retirement failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
    154: "GPU recovery action changed",
}


def _xid_severity(code, profile):
    for severity in ("fail", "warn", "ignore"):
        if code in (profile_get(profile, "xid." + severity) or []):
            return severity
    return profile_get(profile, "xid.unknown", "warn")


def _window_of(window, clock):
    """The resolved window, or one meaning 'the whole log' when the window was not captured."""
    if window is None:
        return {"kind": "log", "start": None, "label": "in the whole log", "errors": []}
    return resolve_window(window, clock)


def _split_by_window(items, start):
    """(in the window, before it): unplaced items count as in the window."""
    if start is None:
        return list(items), []
    recent, history = [], []
    for item in items:
        epoch = item.get("epoch")
        (history if epoch is not None and epoch < start else recent).append(item)
    return recent, history


# Where a user without root reads the kernel log (docs/install.md, "No root, no SSH").
REFUSED_HINT = ("run as root, or as a member of adm/systemd-journal with the journal as the kernel log "
                "(check_gpu_health_kernel_log, default: dmesg, else journalctl -k)")


def _refused(xid):
    """A skip when every kernel log source was refused to this user and nothing else was read."""
    if not isinstance(xid, dict) or not xid.get("refused") or xid.get("first_line") or xid.get("events"):
        return None
    refused = xid["refused"]
    return check_result("gpu.xid", SKIP, "%s: the kernel log was refused to this user (%s): the Xid scan was not "
                        "done; %s" % (TOOL_XID, refused[0]["text"], REFUSED_HINT),
                        {"refused": [r["text"] for r in refused]}, evidence=[r["text"] for r in refused],
                        tool=STAGE_XID, component="permission")


def _judge_xid(xid, views, profile, window=None, clock=None):
    if xid is None:
        return [check_result("gpu.xid", SKIP, "%s: not collected: Xid events not judged" % TOOL_XID, {},
                             tool=STAGE_XID)]
    refused = _refused(xid)
    if refused is not None and not xid.get("errors"):
        return [refused]
    if not isinstance(xid, dict) or xid.get("errors") and not xid.get("events"):
        failed = parse_error_results("gpu.xid", TOOL_XID, xid)
        for result in failed:
            result["tool"] = STAGE_XID
            if isinstance(xid, dict):
                result["evidence"] = [str(e) for e in xid.get("errors") or []][:12]
        if failed:
            return failed
    results = []
    if not xid.get("first_line") and not xid.get("events") and not xid.get("errors") and "first_line" in xid:
        # A kernel log is never empty on a booted node: nothing here means nothing was read.
        return [check_result("gpu.xid", ERROR, "%s: the kernel log is empty: Xid events cannot be judged"
                             % TOOL_XID, {}, tool=STAGE_XID)]
    if xid.get("errors"):
        results.append(check_result("gpu.xid", ERROR, "%s: part of the log is unreadable (the rest is "
                                    "judged): %s" % (TOOL_XID, "; ".join(xid["errors"])),
                                    {"errors": list(xid["errors"])}, evidence=xid["errors"], tool=STAGE_XID))
    resolved = _window_of(window, clock)
    for problem in resolved.get("errors") or []:
        results.append(check_result("gpu.xid", ERROR, "Xid window: %s" % problem, {"window": resolved["kind"]},
                                    evidence=list((window or {}).get("lines") or []), tool=STAGE_WINDOW))
    events = [dict(e) for e in xid.get("events") or []]
    lost = [dict(e) for e in xid.get("lost") or []]
    unplaced = place_events(events + lost, clock or {})
    start = resolved.get("start")
    recent, history = _split_by_window(events, start)
    recent_lost, history_lost = _split_by_window(lost, start)

    names = {}
    for view in views:
        key = normalize_bus_id(view.get("bus_id") or "")
        if key:
            names[key[:-2]] = view  # Xid lines name domain:bus:device, no function
    groups = {}
    ignored = {}
    for event in recent:
        code = event.get("xid")
        if not isinstance(code, int):
            code_num = _num(code)
            code = int(code_num) if code_num is not None else code
        pci = event.get("pci")
        key = normalize_bus_id(pci or "")
        view = names.get(key[:-2]) if key else None
        where = view["name"] if view else (pci or "an unknown GPU")
        severity = _xid_severity(code, profile) if isinstance(code, int) else "fail"
        if severity == "ignore":
            ignored[code] = ignored.get(code, 0) + 1
            continue
        groups.setdefault((severity, code, where, view["label"] if view else None), []).append(event)
    for (severity, code, where, label), group in sorted(
            groups.items(), key=lambda kv: (kv[0][0] != "fail", str(kv[0][1]), kv[0][2])):
        last = group[-1]
        name = XID_NAMES.get(code, "")
        times = " %d times" % len(group) if len(group) > 1 else ""
        detail = last.get("message") or name
        text = "%s logged Xid %s%s%s %s" % (
            where, code, " (%s)" % name if name else "", times, resolved["label"])
        if detail and detail != name:
            text += ": %s" % detail
        metrics = {"xid": code, "count": len(group), "pci": last.get("pci"),
                   "timestamp": last.get("timestamp"), "severity": severity, "window": resolved["kind"]}
        evidence = [e.get("raw") for e in group[-4:] if e.get("raw")] + list(last.get("continuation") or [])[:2]
        if severity == "fail":
            results.append(check_result("gpu.xid", FAIL, text, metrics, label or last.get("pci"),
                                        evidence=evidence, tool=STAGE_XID))
        else:
            results.append(warning_result("gpu.xid", text, metrics, label or last.get("pci"),
                                          evidence=evidence, tool=STAGE_XID))
    if recent_lost:
        names_lost = []
        for item in recent_lost:
            key = normalize_bus_id(item.get("pci") or "")
            view = names.get(key[:-2]) if key else None
            names_lost.append(view["name"] if view else str(item.get("pci")))
        results.append(check_result("gpu.lost", FAIL, "%s has fallen off the bus; reboot or reseat before use"
                                    % join_names(names_lost), {"gpus": names_lost, "window": resolved["kind"]},
                                    evidence=[i.get("raw") for i in recent_lost if i.get("raw")], tool=STAGE_XID))
    elif xid.get("gpu_lost") and not lost:
        # A result without per-line details (built by hand): the list alone names them.
        results.append(check_result("gpu.lost", FAIL, "%s has fallen off the bus; reboot or reseat before use"
                                    % join_names([str(p) for p in xid["gpu_lost"]]),
                                    {"gpus": list(xid["gpu_lost"])}, tool=STAGE_XID))
    if history or history_lost:
        results.append(_history_result(history, history_lost, names, resolved))
    if not any(r["status"] == FAIL for r in results):
        note = ""
        if ignored:
            note = " (%d application Xid events ignored: %s)" % (
                sum(ignored.values()), ", ".join("Xid %s" % c for c in sorted(ignored)))
        if unplaced and start is not None:
            note += " (%d event(s) could not be placed in time and were counted)" % unplaced
        shown = [r for r in results if r["check"] == "gpu.xid" and r["metrics"].get("severity")]
        what = "no failing Xid events %s (see the warnings)" % resolved["label"] if shown else \
            "no hardware Xid events %s" % resolved["label"]
        span = [line for line in (xid.get("first_line"), xid.get("last_line")) if line]
        results.append(check_result("gpu.xid", PASS, "%s: %s%s" % (TOOL_XID, what, note),
                                    {"ignored": dict((str(k), v) for k, v in ignored.items()),
                                     "window": resolved["kind"], "window_start": start},
                                    evidence=span, tool=STAGE_XID))
    return results


def _history_result(history, history_lost, names, resolved):
    """Xid events before the window: named in a warning and listed in its metrics, not counted."""
    listed = []
    for event in history:
        key = normalize_bus_id(event.get("pci") or "")
        view = names.get(key[:-2]) if key else None
        listed.append({"xid": event.get("xid"), "pci": event.get("pci"), "gpu": view["label"] if view else None,
                       "timestamp": event.get("timestamp"), "epoch": event.get("epoch"), "line": event.get("line")})
    for item in history_lost:
        key = normalize_bus_id(item.get("pci") or "")
        view = names.get(key[:-2]) if key else None
        listed.append({"xid": None, "lost": True, "pci": item.get("pci"), "gpu": view["label"] if view else None,
                       "epoch": item.get("epoch"), "line": item.get("line")})
    summary = {}
    for entry in listed:
        what = "GPU fallen off the bus" if entry.get("lost") else "Xid %s" % entry["xid"]
        summary.setdefault(what, set()).add(entry.get("gpu") or entry.get("pci") or "?")
    text = "; ".join("%s on %s" % (what, join_names(sorted(where))) for what, where in sorted(summary.items()))
    return warning_result(
        "gpu.xid", "%d kernel log event(s) before the Xid window are history, not counted (window: %s): %s"
        % (len(listed), resolved["label"], text), {"history": listed, "window": resolved["kind"],
                                                   "window_start": resolved.get("start")},
        evidence=[e.get("raw") for e in history[-6:] + history_lost[-2:] if e.get("raw")], tool=STAGE_XID)
