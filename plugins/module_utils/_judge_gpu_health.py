# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge GPU health from nvidia-smi -q, nvidia-smi --query-gpu (CSV) and the kernel's Xid lines.

judge_gpu_health(smi_q, smi_csv, xid, profile, window=None, clock=None) takes the parse results
of parse_nvidia_smi_q, parse_nvidia_smi_csv and parse_xid_log (any may be None when it was not
collected), and optionally the Xid window (parse_xid_window) and the node's clock
(parse_node_clock). nvidia-smi -q is preferred; CSV fields fill in what -q lacks (or stand in
when -q is missing or cut short).

A parser error is a gpu.parse error reported next to the findings from the rest of the output
(a pending row remap in a -q report whose last section was cut off is still named); a value that
cannot be real (a negative temperature, a count of 1e309) makes that GPU's check an error, never
a pass. Every result carries the printed lines it rests on as evidence.

GPUs are named "GPU<index> (<PCI bus id>)": nvidia-smi renumbers the GPUs it sees, so only the
bus id names a physical GPU. A missing GPU is named by bus id and slot from the profile's
gpu_bus_ids layout when the node's GPUs fit it (otherwise the cluster-wide gpu.identity check
names it from the layout its peers show).

Xid window: events are counted from the window start (the node's last passed run, boot, or a
configured time or duration, as the stage's xid-window output says), placed in time with the
node's clock (node-clock output) for plain dmesg stamps; older events are history: a pass with a
warning naming them. An event that cannot be placed in time is counted.

Checks (component = "GPU<index>" for per-GPU findings):
- gpu.parse           a tool's output was missing, or a part of it unreadable
- gpu.count           GPUs seen vs gpus_per_node; a missing one named by bus id and slot
- gpu.model           product name vs gpu_name_pattern
- gpu.ecc             volatile/aggregate uncorrectable ECC errors; many correctable ones warn
- gpu.retired_pages   retired page count and pending retirements
- gpu.remapped_rows   pending remaps, remapping failure, uncorrectable remaps
- gpu.reset_required  the driver asks for a GPU reset (or drain and reset)
- gpu.throttle        active clock event reasons in throttle.fail (fail) or throttle.warn (warning)
- gpu.temperature     GPU and memory temperature vs the profile or the GPU's own limits
- gpu.xid             Xid events in the window by the profile's severity lists; older ones warn
- gpu.lost            a GPU has fallen off the bus
- gpu.driver          driver version on the profile's driver_branch
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, join_names, parse_error_results,
    profile_get, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    normalize_bus_id, parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import (
    parse_node_clock, parse_xid_log, parse_xid_window, place_events, resolve_window)

TOOL_Q = "nvidia-smi -q"
TOOL_CSV = "nvidia-smi --query-gpu"
TOOL_XID = "kernel log (Xid)"
# The gpu_health stage's tool names (roles/check_gpu_health).
STAGE_Q, STAGE_CSV, STAGE_XID, STAGE_CLOCK, STAGE_WINDOW = (
    "nvidia-smi-q", "nvidia-smi-csv", "dmesg", "node-clock", "xid-window")

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

_CSV_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")
_CSV_NOT_REASONS = ("active", "supported", "gpu_idle", "idle", "applications_clocks_setting")


def _norm(name):
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")


def _yes(value):
    """True/False for the many ways tools print a flag; None when unknown."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("yes", "true", "active", "enabled", "1"):
            return True
        if word in ("no", "false", "not active", "disabled", "0"):
            return False
    return None


def _num(value):
    return value if is_number(value) else None


def _csv_lookup(row, *names):
    for name in names:
        if name in row and row[name] is not None:
            return row[name]
    return None


def _own_gpu_limit(temp):
    """The GPU's own temperature limit in deg C from nvidia-smi -q, None when not reported.

    Older drivers print absolute limits ("GPU Max Operating Temp", else "GPU Slowdown Temp").
    Drivers from 565 print margins instead: "GPU T.Limit Temp" is the current headroom to the
    T.Limit and "GPU Max Operating T.Limit Temp" (else "GPU Slowdown T.Limit Temp") the limit
    relative to T.Limit, so the absolute limit is current + headroom - that offset.
    """
    for key in ("max_operating", "slowdown"):
        if _num(temp.get(key)) is not None:
            return temp[key]
    current, headroom = _num(temp.get("gpu")), _num(temp.get("tlimit"))
    if current is None or headroom is None:
        return None
    for key in ("max_operating_tlimit", "slowdown_tlimit"):
        offset = _num(temp.get(key))
        if offset is not None:
            return current + headroom - offset
    return None


# --------------------------------------------------------------------------------------------
# GPU identity: bus ids, the profile's layout, naming a missing GPU
# --------------------------------------------------------------------------------------------

def profile_layout(profile):
    """The profile's expected bus id per slot (normalised; None for an unknown slot), or None."""
    layout = profile_get(profile, "gpu_bus_ids")
    if not isinstance(layout, (list, tuple)) or not any(layout):
        return None
    return [normalize_bus_id(b) if isinstance(b, str) else None for b in layout]


def name_missing(present, layout, expected=None):
    """Which GPUs of a layout a node lacks: {missing: [(slot, bus id)], unnamed: int, reason}.

    present: the node's bus ids. The layout applies only when every present bus id is in it (an
    OEM board with other bus numbers is not that layout); slots with no known bus id cannot be
    named (unnamed counts them). reason says why nothing could be named, else None.
    """
    present = set(b for b in (normalize_bus_id(p) for p in present or ()) if b)
    if not layout:
        return {"missing": [], "unnamed": None, "reason": "no GPU bus-id layout is known for this node"}
    known = set(b for b in layout if b)
    foreign = sorted(present - known)
    if foreign:
        return {"missing": [], "unnamed": None,
                "reason": "its GPUs are not that layout (%s %s not in it)"
                % (join_names(foreign, limit=3), "is" if len(foreign) == 1 else "are")}
    missing = [(slot, bus) for slot, bus in enumerate(layout) if bus and bus not in present]
    short = (expected if expected is not None else len(layout)) - len(present)
    unnamed = max(short - len(missing), 0)
    return {"missing": missing, "unnamed": unnamed, "reason": None}


def describe_missing(found, source):
    """' missing 00000000:AB:00.0 (slot 5 of the profile layout)' or ''; for messages."""
    parts = ["%s (slot %d of %s)" % (bus, slot, source) for slot, bus in found["missing"]]
    if found.get("unnamed"):
        parts.append("%d GPU(s) in slots whose bus id is not known" % found["unnamed"])
    return join_names(parts)


# --------------------------------------------------------------------------------------------
# One view per GPU, from -q with CSV filling in
# --------------------------------------------------------------------------------------------

def _q_view(position, gpu):
    ecc = gpu.get("ecc") or {}
    vol = ecc.get("volatile") or {}
    agg = ecc.get("aggregate") or {}
    retired = gpu.get("retired_pages") or {}
    remap = gpu.get("remapped_rows") or {}
    temp = gpu.get("temperature") or {}
    evidence = gpu.get("evidence") or {}
    header = [evidence.get("header")] if evidence.get("header") else []
    index = gpu.get("index") if isinstance(gpu.get("index"), int) else position
    ev = dict((key, header + list(evidence.get(key) or []))
              for key in ("ecc_uncorrectable", "ecc_correctable", "retired_pages", "remapped_rows",
                          "temperature", "throttle", "reset", "product", "bus_id"))
    return {
        "index": index,
        "bus_id": normalize_bus_id(gpu.get("bus_id") or ""),
        "uuid": gpu.get("uuid"),
        "product_name": gpu.get("product_name"),
        "ecc_vol_unc": _num(vol.get("uncorrectable_total")),
        "ecc_agg_unc": _num(agg.get("uncorrectable_total")),
        "ecc_repair": sorted(k for k, v in (ecc.get("repair") or {}).items() if v),
        "ecc_vol_corr": _num(vol.get("correctable_total")),
        "retired_sbe": _num(retired.get("single_bit")),
        "retired_dbe": _num(retired.get("double_bit")),
        "retired_pending": retired.get("pending"),
        "remap_corr": _num(remap.get("correctable")),
        "remap_unc": _num(remap.get("uncorrectable")),
        "remap_pending": remap.get("pending"),
        "remap_failure": remap.get("failure"),
        "throttle": list(gpu.get("active_throttle") or []),
        "throttle_known": gpu.get("clocks_event_reasons_section") is not None
        or bool(gpu.get("clocks_event_reasons")),
        "temp_gpu": _num(temp.get("gpu")),
        "temp_mem": _num(temp.get("memory")),
        "limit_gpu": _own_gpu_limit(temp),
        "limit_mem": _num(temp.get("memory_max_operating")),
        "reset_required": gpu.get("reset_required"),
        "drain_and_reset": gpu.get("drain_and_reset_recommended"),
        "invalid": dict(gpu.get("invalid") or {}),
        "ev": ev,
        "tool": STAGE_Q,
    }


def _csv_fill(view, row, row_ev, invalid):
    fills = {
        "product_name": _csv_lookup(row, "name", "gpu_name"),
        "uuid": _csv_lookup(row, "uuid", "gpu_uuid"),
        "ecc_vol_unc": _num(_csv_lookup(row, "ecc.errors.uncorrected.volatile.total")),
        "ecc_agg_unc": _num(_csv_lookup(row, "ecc.errors.uncorrected.aggregate.total")),
        "ecc_vol_corr": _num(_csv_lookup(row, "ecc.errors.corrected.volatile.total")),
        "retired_sbe": _num(_csv_lookup(row, "retired_pages.single_bit_ecc.count", "retired_pages.sbe")),
        "retired_dbe": _num(_csv_lookup(row, "retired_pages.double_bit.count", "retired_pages.dbe")),
        "retired_pending": _yes(_csv_lookup(row, "retired_pages.pending")),
        "remap_corr": _num(_csv_lookup(row, "remapped_rows.correctable")),
        "remap_unc": _num(_csv_lookup(row, "remapped_rows.uncorrectable")),
        "remap_pending": _yes(_csv_lookup(row, "remapped_rows.pending")),
        "remap_failure": _yes(_csv_lookup(row, "remapped_rows.failure")),
        "temp_gpu": _num(_csv_lookup(row, "temperature.gpu")),
        "temp_mem": _num(_csv_lookup(row, "temperature.memory")),
    }
    areas = {"ecc_vol_unc": "ecc_uncorrectable", "ecc_agg_unc": "ecc_uncorrectable",
             "ecc_vol_corr": "ecc_correctable", "retired_sbe": "retired_pages", "retired_dbe": "retired_pages",
             "retired_pending": "retired_pages", "remap_corr": "remapped_rows", "remap_unc": "remapped_rows",
             "remap_pending": "remapped_rows", "remap_failure": "remapped_rows", "temp_gpu": "temperature",
             "temp_mem": "temperature", "product_name": "product"}
    for key, value in fills.items():
        if view.get(key) is None and value is not None:
            view[key] = value
            area = areas.get(key)
            if area and len(view["ev"].get(area) or []) <= 1:
                view["ev"][area] = list(row_ev)
    for area, problems in invalid.items():
        view["invalid"].setdefault(area, []).extend(problems)
    reasons = []
    seen_reason = False
    for field, value in row.items():
        for prefix in _CSV_REASON_PREFIXES:
            if field.startswith(prefix):
                reason = field[len(prefix):]
                if reason in _CSV_NOT_REASONS:
                    continue
                seen_reason = True
                if _yes(value):
                    reasons.append(_norm(reason))
    if not view.get("throttle_known") and seen_reason:
        view["throttle"] = reasons
        view["throttle_known"] = True
        view["ev"]["throttle"] = list(row_ev)


def _gpu_views(smi_q, smi_csv):
    """One dict per GPU with every value the checks read; -q first, CSV where -q lacks a value.

    A CSV row that matches no -q GPU is added only when the -q report is incomplete (has errors):
    otherwise -q is authoritative.
    """
    q_gpus = list((smi_q or {}).get("gpus") or [])
    csv = smi_csv or {}
    csv_gpus = list(csv.get("gpus") or [])
    row_lines = list(csv.get("row_lines") or [])
    csv_invalid = list(csv.get("invalid") or [])
    q_complete = bool(q_gpus) and not (smi_q or {}).get("errors")
    views = []
    by_bus = {}
    by_index = {}
    for position, gpu in enumerate(q_gpus):
        view = _q_view(position, gpu)
        views.append(view)
        if view["bus_id"]:
            by_bus[view["bus_id"]] = view
        by_index[view["index"]] = view

    for position, row in enumerate(csv_gpus):
        index = row.get("index") if isinstance(row.get("index"), int) else None
        bus = normalize_bus_id(_csv_lookup(row, "pci.bus_id", "gpu_bus_id") or "")
        view = by_bus.get(bus) if bus else None
        if view is None and index is not None and not bus:
            view = by_index.get(index)
        if view is None and q_complete:
            continue  # a CSV row that matches no -q GPU: -q is authoritative
        row_ev = [csv.get("header_line"), row_lines[position] if position < len(row_lines) else None]
        row_ev = [line for line in row_ev if line]
        if view is None:
            view = {"index": index if index is not None else position, "bus_id": bus,
                    "product_name": None, "throttle": [], "throttle_known": False, "invalid": {},
                    "ev": {"bus_id": list(row_ev), "product": list(row_ev)}, "tool": STAGE_CSV}
            views.append(view)
            if bus:
                by_bus[bus] = view
        _csv_fill(view, row, row_ev, csv_invalid[position] if position < len(csv_invalid) else {})
    for view in views:
        view["label"] = "GPU%s" % view["index"]
        view["name"] = "%s (%s)" % (view["label"], view["bus_id"]) if view.get("bus_id") else view["label"]
    return sorted(views, key=lambda v: v["index"] if isinstance(v["index"], int) else 1 << 30)


def _ev(view, area):
    return [line for line in (view.get("ev") or {}).get(area) or [] if line]


def _invalid(view, *areas):
    problems = []
    for area in areas:
        problems.extend((view.get("invalid") or {}).get(area) or [])
    return problems


def _usable(parsed):
    return isinstance(parsed, dict) and bool(parsed.get("gpus"))


def _parse_results(tool, stage_tool, parsed):
    """gpu.parse errors for a parse result: missing, unreadable or (partly) garbled."""
    failed = parse_error_results("gpu.parse", tool, parsed)
    for result in failed:
        result["tool"] = stage_tool
        if isinstance(parsed, dict) and parsed.get("errors"):
            result["evidence"] = [str(e) for e in parsed["errors"]][:12]
            if parsed.get("gpus"):
                result["message"] = result["message"].replace(
                    "output unreadable:", "part of the output is unreadable (the rest is judged):")
    return failed


def judge_gpu_health(smi_q, smi_csv, xid, profile, window=None, clock=None):
    """List of check results for one node's GPUs (see the module docstring)."""
    results = []
    if smi_q is not None:
        results.extend(_parse_results(TOOL_Q, STAGE_Q, smi_q))
    if smi_csv is not None:
        results.extend(_parse_results(TOOL_CSV, STAGE_CSV, smi_csv))
    q_ok = _usable(smi_q)
    csv_ok = _usable(smi_csv)
    if smi_q is not None and not (smi_q or {}).get("errors") and not q_ok:
        results.append(check_result("gpu.parse", ERROR, "%s: the report lists no GPUs" % TOOL_Q,
                                    {"tool": TOOL_Q}, tool=STAGE_Q))
    views = []
    if not q_ok and not csv_ok:
        if smi_q is None and smi_csv is None:
            # Neither was captured (a replayed set with the kernel log only): nothing to judge,
            # not a finding. (Live, a tool that printed nothing is an error before this.)
            results.append(check_result(
                "gpu.parse", SKIP, "%s and %s were not captured: the GPUs' state was not judged"
                % (TOOL_Q, TOOL_CSV), {"tool": TOOL_Q}))
    else:
        views = _gpu_views(smi_q if q_ok else None, smi_csv if csv_ok else None)
        results.extend(_judge_count(views, profile, smi_q if q_ok else None, smi_csv if csv_ok else None))
        results.extend(_judge_model(views, profile))
        results.extend(_judge_ecc(views, profile))
        results.extend(_judge_retired(views, profile))
        results.extend(_judge_remap(views, profile))
        results.extend(_judge_reset(views))
        results.extend(_judge_throttle(views, profile))
        results.extend(_judge_temperature(views, profile))
        results.extend(_judge_driver(smi_q if q_ok else None, smi_csv if csv_ok else None, profile))
    results.extend(_judge_xid(xid, views, profile, window, clock))
    return results


def _judge_count(views, profile, smi_q, smi_csv):
    expected = profile_get(profile, "gpus_per_node")
    if expected is None:
        return []
    tool_name = TOOL_Q if smi_q else TOOL_CSV
    tool = STAGE_Q if smi_q else STAGE_CSV
    found = len(views)
    present = [v["bus_id"] for v in views if v.get("bus_id")]
    evidence = [line for v in views for line in _ev(v, "bus_id")[:1]]
    if smi_q and smi_q.get("attached_line"):
        evidence = [smi_q["attached_line"]] + evidence
    metrics = {"found": found, "expected": expected, "bus_ids": present}
    layout = profile_layout(profile)
    source = "the %s layout" % profile_get(profile, "name", "profile")
    if found == expected:
        # (the bus ids are in the metrics: the cross-check of tools and peers reads them there)
        message = "%s shows %d GPUs, as expected%s" % (tool_name, found, "" if present else ", without bus ids")
        named = name_missing(present, layout, expected) if layout else None
        if named and named["reason"]:
            return [warning_result("gpu.count", "%s; their bus ids are not %s (%s), so a missing GPU on "
                                   "this board cannot be named from the profile"
                                   % (message, source, named["reason"]), metrics, evidence=evidence, tool=tool)]
        return [check_result("gpu.count", PASS, message, metrics, evidence=evidence, tool=tool)]
    attached = (smi_q or {}).get("attached_gpus")
    extra = ""
    if isinstance(attached, int) and attached != found:
        extra = " (the driver reports %d attached)" % attached
    if smi_q and smi_q.get("errors") and isinstance(attached, int) and attached >= expected > found:
        # The driver sees every GPU; the text holds fewer sections because it was cut: the count
        # of what the text shows is not the node's.
        return [check_result("gpu.count", ERROR, "%s shows %d GPU section(s) of the %d the driver reports "
                             "attached: the output is incomplete, the GPUs cannot be counted from it"
                             % (tool_name, found, attached), metrics, evidence=evidence, tool=tool)]
    named = name_missing(present, layout, expected)
    if found < expected and (named["missing"] or named["unnamed"]) and not named["reason"]:
        what = "missing %s" % describe_missing(named, source)
        metrics["missing"] = [{"slot": slot, "bus_id": bus} for slot, bus in named["missing"]]
    elif found < expected:
        what = ("present: %s; the missing one cannot be named: %s (the cluster-wide gpu.identity check "
                "names it from the layout its peers show)"
                % (join_names(present, limit=16) or "no bus ids", named["reason"] if layout else
                   "the profile has no GPU bus-id layout (gpu_bus_ids)"))
    else:
        what = "present: %s" % join_names(present, limit=16)
    return [check_result("gpu.count", FAIL, "%s shows %d GPUs, expected %d%s; %s"
                         % (tool_name, found, expected, extra, what), metrics, evidence=evidence, tool=tool)]


def _judge_model(views, profile):
    pattern = profile_get(profile, "gpu_name_pattern")
    if not pattern:
        return []
    regex = re.compile(pattern)
    results = []
    if views and all(v.get("product_name") is None for v in views):
        # A fragment (nvidia-smi -q -d ECC, PAGE_RETIREMENT ...) carries no Product Name at all.
        return [check_result("gpu.model", SKIP, "the output shows no product name (a section of -q only): "
                             "the GPU model was not judged", {"pattern": pattern}, tool=views[0]["tool"])]
    for view in views:
        name = view.get("product_name")
        if name is None:
            results.append(check_result("gpu.model", ERROR, "%s reports no product name"
                                        % view["name"], {}, view["label"], evidence=_ev(view, "product"),
                                        tool=view["tool"]))
        elif not regex.search(name):
            results.append(check_result(
                "gpu.model", FAIL, "%s is a '%s', expected a name matching '%s'"
                % (view["name"], name, pattern), {"found": name, "pattern": pattern},
                view["label"], evidence=_ev(view, "product"), tool=view["tool"]))
    if not results:
        names = sorted(set(v.get("product_name") for v in views))
        results.append(check_result("gpu.model", PASS, "all %d GPUs are %s" % (len(views), join_names(names)),
                                    {"pattern": pattern}, evidence=_ev(views[0], "product"),
                                    tool=views[0]["tool"]))
    return results


def _judge_ecc(views, profile):
    vol_max = profile_get(profile, "ecc.volatile_uncorrectable_max", 0)
    agg_max = profile_get(profile, "ecc.aggregate_uncorrectable_max", 0)
    corr_warn = profile_get(profile, "ecc.volatile_correctable_warn")
    results = []
    unknown = []
    judged = []
    for view in views:
        label, name = view["label"], view["name"]
        vol, agg, corr = view.get("ecc_vol_unc"), view.get("ecc_agg_unc"), view.get("ecc_vol_corr")
        problems = _invalid(view, "ecc", "ecc_uncorrectable", "ecc_correctable")
        if problems:
            results.append(check_result("gpu.ecc", ERROR, "%s ECC counts cannot be trusted: %s"
                                        % (name, "; ".join(problems)), {"problems": problems}, label,
                                        evidence=_ev(view, "ecc_uncorrectable"), tool=view["tool"]))
            continue
        if view.get("ecc_repair"):
            # Blackwell-era drivers: a memory repair waiting for a reset, or memory it cannot repair.
            flags = view["ecc_repair"]
            advice = "replace the GPU" if any(f.startswith("Unrepairable") for f in flags) else "reset it before use"
            results.append(check_result("gpu.ecc", FAIL, "%s reports %s: Yes (%s)" % (name, " and ".join(flags), advice),
                                        {"flags": flags}, label, evidence=_ev(view, "ecc_uncorrectable"),
                                        tool=view["tool"]))
            continue
        if vol is None and agg is None:
            unknown.append(view)
            continue
        judged.append(view)
        metrics = {"volatile_uncorrectable": vol, "aggregate_uncorrectable": agg,
                   "volatile_correctable": corr}
        if vol is not None and vol > vol_max:
            results.append(check_result(
                "gpu.ecc", FAIL, "%s has %d volatile uncorrectable ECC errors (limit %d)"
                % (name, vol, vol_max), metrics, label, evidence=_ev(view, "ecc_uncorrectable"),
                tool=view["tool"]))
        elif agg is not None and agg > agg_max:
            results.append(check_result(
                "gpu.ecc", FAIL, "%s has %d aggregate (lifetime) uncorrectable ECC errors "
                "(limit %d)" % (name, agg, agg_max), metrics, label, evidence=_ev(view, "ecc_uncorrectable"),
                tool=view["tool"]))
        if corr is not None and corr_warn is not None and corr > corr_warn:
            results.append(warning_result(
                "gpu.ecc", "%s has %d volatile correctable ECC errors (warning above %d)"
                % (name, corr, corr_warn), metrics, label, evidence=_ev(view, "ecc_correctable"),
                tool=view["tool"]))
    if unknown and not judged and not results:
        results.append(check_result("gpu.ecc", SKIP, "no GPU reports ECC error counts "
                                    "(ECC disabled or not queried)", {}))
    elif unknown:
        results.append(check_result("gpu.ecc", ERROR, "%s report no ECC error counts while other "
                                    "GPUs do" % join_names([v["name"] for v in unknown]),
                                    {"gpus": [v["label"] for v in unknown]},
                                    evidence=[l for v in unknown for l in _ev(v, "ecc_uncorrectable")]))
    if judged and not any(r["status"] in (FAIL, ERROR) for r in results):
        results.append(check_result("gpu.ecc", PASS, "no uncorrectable ECC errors on %d GPUs"
                                    % len(judged), {}, evidence=_pass_evidence(judged, "ecc_uncorrectable"),
                                    tool=judged[0]["tool"]))
    return results


def _pass_evidence(views, area, per_gpu=2):
    """A pass's evidence: for each GPU its header and the first lines that show the area."""
    lines = []
    for view in views:
        lines.extend(_ev(view, area)[:per_gpu])
    return lines


def _judge_retired(views, profile):
    total_max = profile_get(profile, "retired_pages.total_max")
    pending_fails = profile_get(profile, "retired_pages.pending_fails", True)
    results = []
    reported = []
    for view in views:
        label, name = view["label"], view["name"]
        problems = _invalid(view, "retired_pages")
        if problems:
            results.append(check_result("gpu.retired_pages", ERROR, "%s retired pages cannot be trusted: %s"
                                        % (name, "; ".join(problems)), {"problems": problems}, label,
                                        evidence=_ev(view, "retired_pages"), tool=view["tool"]))
            continue
        sbe, dbe, pending = view.get("retired_sbe"), view.get("retired_dbe"), \
            view.get("retired_pending")
        if sbe is None and dbe is None and pending is None:
            continue
        reported.append(view)
        total = (sbe or 0) + (dbe or 0)
        metrics = {"single_bit": sbe, "double_bit": dbe, "pending": pending, "total": total}
        if total_max is not None and total >= total_max:
            results.append(check_result(
                "gpu.retired_pages", FAIL, "%s has %d retired pages (%s single-bit, %s double-bit);"
                " replace at %d" % (name, total, sbe, dbe, total_max), metrics, label,
                evidence=_ev(view, "retired_pages"), tool=view["tool"]))
        if pending and pending_fails:
            results.append(check_result(
                "gpu.retired_pages", FAIL, "%s has pages pending retirement; reset the GPU to "
                "retire them" % name, metrics, label, evidence=_ev(view, "retired_pages"), tool=view["tool"]))
    if not reported and not results:
        return [check_result("gpu.retired_pages", SKIP, "no GPU reports retired pages "
                             "(GPUs with row remapping report remapped rows instead)", {})]
    if reported and not results:
        results.append(check_result("gpu.retired_pages", PASS, "retired pages within limits on "
                                    "%d GPUs" % len(reported), {"limit": total_max},
                                    evidence=_pass_evidence(reported, "retired_pages", 3), tool=reported[0]["tool"]))
    return results


def _judge_remap(views, profile):
    pending_fails = profile_get(profile, "remapped_rows.pending_fails", True)
    failure_fails = profile_get(profile, "remapped_rows.failure_fails", True)
    unc_max = profile_get(profile, "remapped_rows.uncorrectable_max")
    results = []
    reported = []
    for view in views:
        label, name = view["label"], view["name"]
        problems = _invalid(view, "remapped_rows")
        if problems:
            results.append(check_result("gpu.remapped_rows", ERROR, "%s remapped rows cannot be trusted: %s"
                                        % (name, "; ".join(problems)), {"problems": problems}, label,
                                        evidence=_ev(view, "remapped_rows"), tool=view["tool"]))
            continue
        corr, unc = view.get("remap_corr"), view.get("remap_unc")
        pending, failure = view.get("remap_pending"), view.get("remap_failure")
        if corr is None and unc is None and pending is None and failure is None:
            continue
        reported.append(view)
        metrics = {"correctable": corr, "uncorrectable": unc, "pending": pending,
                   "failure": failure}
        counts = "%s uncorrectable, %s correctable remapped rows" % (
            fmt_num(unc) if unc is not None else "?", fmt_num(corr) if corr is not None else "?")
        evidence = _ev(view, "remapped_rows")
        if failure and failure_fails:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s row remapping failed (%s); the GPU meets NVIDIA's "
                "RMA criterion" % (name, counts), metrics, label, evidence=evidence, tool=view["tool"]))
        if pending and pending_fails:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s has pending row remaps (%s); reset the GPU to apply "
                "them" % (name, counts), metrics, label, evidence=evidence, tool=view["tool"]))
        if unc_max is not None and unc is not None and unc > unc_max:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s has %d rows remapped for uncorrectable errors "
                "(limit %d)" % (name, unc, unc_max), metrics, label, evidence=evidence, tool=view["tool"]))
    if not reported and not results:
        return [check_result("gpu.remapped_rows", SKIP, "no GPU reports remapped rows "
                             "(not supported or not queried)", {})]
    if reported and not results:
        results.append(check_result("gpu.remapped_rows", PASS, "no pending or failed row remaps "
                                    "on %d GPUs" % len(reported), {"limit": unc_max},
                                    evidence=_pass_evidence(reported, "remapped_rows", 4)[:12],
                                    tool=reported[0]["tool"]))
    return results


def _judge_reset(views):
    results = []
    for view in views:
        evidence = _ev(view, "reset")
        if _invalid(view, "reset"):
            results.append(check_result("gpu.reset_required", ERROR, "%s reset status cannot be read: %s"
                                        % (view["name"], "; ".join(_invalid(view, "reset"))), {},
                                        view["label"], evidence=evidence, tool=view["tool"]))
        elif view.get("reset_required"):
            results.append(check_result("gpu.reset_required", FAIL, "%s reports that a GPU reset is "
                                        "required" % view["name"], {}, view["label"], evidence=evidence,
                                        tool=view["tool"]))
        elif view.get("drain_and_reset"):
            results.append(check_result("gpu.reset_required", FAIL, "%s recommends draining the "
                                        "node and resetting the GPU" % view["name"], {},
                                        view["label"], evidence=evidence, tool=view["tool"]))
    return results


def _judge_throttle(views, profile):
    fail_names = profile_get(profile, "throttle.fail", [])
    warn_names = profile_get(profile, "throttle.warn", [])
    display = {}
    for name in list(fail_names) + list(warn_names):
        display[_norm(name)] = name
    fail_set = set(_norm(n) for n in fail_names)
    warn_set = set(_norm(n) for n in warn_names)
    results = []
    known = []
    for view in views:
        if _invalid(view, "throttle"):
            results.append(check_result("gpu.throttle", ERROR, "%s clock event reasons cannot be read: %s"
                                        % (view["name"], "; ".join(_invalid(view, "throttle"))), {},
                                        view["label"], evidence=_ev(view, "throttle"), tool=view["tool"]))
            continue
        if not view.get("throttle_known"):
            continue
        known.append(view)
        active = [_norm(r) for r in view.get("throttle") or []]
        failing = [display.get(r, r) for r in active if r in fail_set]
        warning = [display.get(r, r) for r in active if r in warn_set]
        metrics = {"active": active}
        if failing:
            results.append(check_result("gpu.throttle", FAIL, "%s is throttled: %s"
                                        % (view["name"], ", ".join(failing)), metrics,
                                        view["label"], evidence=_ev(view, "throttle"), tool=view["tool"]))
        elif warning:
            results.append(warning_result("gpu.throttle", "%s clocks are limited by %s"
                                          % (view["name"], ", ".join(warning)), metrics,
                                          view["label"], evidence=_ev(view, "throttle"), tool=view["tool"]))
    if not known and not results:
        return [check_result("gpu.throttle", SKIP, "no GPU reports clock event reasons", {})]
    if known and not any(r["status"] in (FAIL, ERROR) for r in results):
        results.append(check_result("gpu.throttle", PASS, "none of %d GPUs is throttled by %s"
                                    % (len(known), join_names(list(fail_names))), {},
                                    evidence=[l for v in known for l in _ev(v, "throttle")[:2]],
                                    tool=known[0]["tool"]))
    return results


def _judge_temperature(views, profile):
    gpu_cap = profile_get(profile, "temperature.gpu_max_c")
    mem_cap = profile_get(profile, "temperature.memory_max_c")
    margin = profile_get(profile, "temperature.margin_c", 0) or 0
    results = []
    judged = []
    for view in views:
        label, name = view["label"], view["name"]
        problems = _invalid(view, "temperature")
        if problems:
            results.append(check_result("gpu.temperature", ERROR, "%s temperatures cannot be trusted: %s"
                                        % (name, "; ".join(problems)), {"problems": problems}, label,
                                        evidence=_ev(view, "temperature"), tool=view["tool"]))
            continue
        for what, value, cap, own in (("GPU", view.get("temp_gpu"), gpu_cap, view.get("limit_gpu")),
                                      ("memory", view.get("temp_mem"), mem_cap,
                                       view.get("limit_mem"))):
            if value is None:
                continue
            limit = cap if cap is not None else (own - margin if own is not None else None)
            if limit is None:
                continue
            judged.append(view)
            if value > limit:
                source = "profile limit" if cap is not None else "the GPU's own limit"
                results.append(check_result(
                    "gpu.temperature", FAIL, "%s %s temperature is %s C, above %s C (%s)"
                    % (name, what, fmt_num(value), fmt_num(limit), source),
                    {"what": what, "value": value, "limit": limit}, label,
                    evidence=_ev(view, "temperature"), tool=view["tool"]))
    if not judged and not results:
        return [check_result("gpu.temperature", SKIP, "no GPU temperature with a known limit "
                             "(set temperature.gpu_max_c, or collect nvidia-smi -q)", {})]
    if judged and not results:
        seen = []
        for view in judged:
            if view not in seen:
                seen.append(view)
        results.append(check_result("gpu.temperature", PASS, "all %d GPUs are within their temperature "
                                    "limits" % len(seen), {}, evidence=_pass_evidence(seen, "temperature"),
                                    tool=seen[0]["tool"]))
    return results


def _judge_driver(smi_q, smi_csv, profile):
    branch = profile_get(profile, "driver_branch")
    if not branch:
        return []
    version = (smi_q or {}).get("driver_version")
    tool = STAGE_Q
    if version is None:
        tool = STAGE_CSV
        for row in (smi_csv or {}).get("gpus") or []:
            if row.get("driver_version"):
                version = row["driver_version"]
                break
    if version is None:
        return [check_result("gpu.driver", ERROR, "nvidia-smi reports no driver version", {})]
    branch = str(branch)
    evidence = ["Driver Version : %s" % version]
    if str(version) == branch or str(version).startswith(branch + "."):
        return [check_result("gpu.driver", PASS, "driver %s is on the %s branch"
                             % (version, branch), {"version": version, "branch": branch},
                             evidence=evidence, tool=tool)]
    return [check_result("gpu.driver", FAIL, "driver %s is not on the expected %s branch"
                         % (version, branch), {"version": version, "branch": branch},
                         evidence=evidence, tool=tool)]


# --------------------------------------------------------------------------------------------
# Xid events, in their window
# --------------------------------------------------------------------------------------------

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


def _judge_xid(xid, views, profile, window=None, clock=None):
    if xid is None:
        return [check_result("gpu.xid", SKIP, "%s: not collected: Xid events not judged" % TOOL_XID, {},
                             tool=STAGE_XID)]
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


# --------------------------------------------------------------------------------------------
# The stage
# --------------------------------------------------------------------------------------------

def gpu_identity_of(smi_q, smi_csv):
    """{tool: {count, bus_ids, uuids}} of the stage's GPU-listing outputs that could be read."""
    identity = {}
    for tool, parsed, bus_key, uuid_key in ((STAGE_Q, smi_q, "bus_id", "uuid"),
                                            (STAGE_CSV, smi_csv, "pci.bus_id", "uuid")):
        if not _usable(parsed) or parsed.get("errors"):
            continue  # a partly unreadable output would make its count look like a disagreement
        gpus = parsed["gpus"]
        buses = [normalize_bus_id(g.get(bus_key) or "") for g in gpus]
        uuids = [g.get(uuid_key) or g.get("gpu_uuid") for g in gpus]
        identity[tool] = {"count": len(gpus), "bus_ids": [b for b in buses if b] if any(buses) else None,
                          "uuids": [u for u in uuids if u] if any(uuids) else None}
    return identity


def judge_gpu_health_stage(outputs, profile, options):
    """The gpu_health stage: (checks, metrics); an output that is None was not captured.

    metrics: gpu_count, gpu_bus_ids, gpu_uuids (from -q, else the CSV), gpu_identity (per tool),
    xid_window (kind, start, label) and xid_history (events before the window).
    """
    def parsed(tool, parser):
        text = outputs.get(tool)
        return None if text is None else parser(text)
    smi_q = parsed(STAGE_Q, parse_nvidia_smi_q)
    smi_csv = parsed(STAGE_CSV, parse_nvidia_smi_csv)
    xid = parsed(STAGE_XID, parse_xid_log)
    clock = parsed(STAGE_CLOCK, parse_node_clock)
    window = parsed(STAGE_WINDOW, parse_xid_window)
    checks = judge_gpu_health(smi_q, smi_csv, xid, profile, window=window, clock=clock)
    if clock is not None and clock.get("errors"):
        checks.append(check_result("gpu.xid", ERROR, "node clock: %s" % "; ".join(clock["errors"]), {},
                                   evidence=clock.get("lines"), tool=STAGE_CLOCK))
    if xid is not None and window is None and outputs.get(STAGE_WINDOW) is None and STAGE_WINDOW in outputs:
        checks.append(check_result("gpu.xid", SKIP, "%s was not captured: Xid events were judged in the "
                                   "whole log" % STAGE_WINDOW, tool=STAGE_WINDOW))
    metrics = {}
    identity = gpu_identity_of(smi_q, smi_csv)
    if identity:
        metrics["gpu_identity"] = identity
        main = identity.get(STAGE_Q) or identity.get(STAGE_CSV)
        metrics["gpu_count"] = main["count"]
        if main.get("bus_ids"):
            metrics["gpu_bus_ids"] = main["bus_ids"]
        if main.get("uuids"):
            metrics["gpu_uuids"] = main["uuids"]
    if xid is not None:
        resolved = _window_of(window, clock)
        metrics["xid_window"] = {"kind": resolved["kind"], "start": resolved.get("start"),
                                 "label": resolved["label"]}
        history = [c for c in checks if c["check"] == "gpu.xid" and c["metrics"].get("history")]
        if history:
            metrics["xid_history"] = history[0]["metrics"]["history"]
    return checks, metrics
