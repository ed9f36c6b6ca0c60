# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge GPU health from nvidia-smi -q, nvidia-smi --query-gpu (CSV) and the kernel's Xid lines.

judge_gpu_health(smi_q, smi_csv, xid, profile) takes the parse results of parse_nvidia_smi_q,
parse_nvidia_smi_csv and the Xid parser; any of the three may be None when it was not collected.
nvidia-smi -q is preferred; CSV fields fill in what -q lacks (or stand in when -q is missing).

Checks (component = "GPU<index>" for per-GPU findings):
- gpu.parse           a tool's output was missing or unreadable
- gpu.count           GPUs seen vs gpus_per_node
- gpu.model           product name vs gpu_name_pattern
- gpu.ecc             volatile/aggregate uncorrectable ECC errors; many correctable ones warn
- gpu.retired_pages   retired page count and pending retirements
- gpu.remapped_rows   pending remaps, remapping failure, uncorrectable remaps
- gpu.reset_required  the driver asks for a GPU reset (or drain and reset)
- gpu.throttle        active clock event reasons in throttle.fail (fail) or throttle.warn (warning)
- gpu.temperature     GPU and memory temperature vs the profile or the GPU's own limits
- gpu.xid             Xid events by the profile's severity lists
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
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log

TOOL_Q = "nvidia-smi -q"
TOOL_CSV = "nvidia-smi --query-gpu"
TOOL_XID = "kernel log (Xid)"

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


def _bus_key(text):
    """(domain, bus, device) ints of a PCI address in any of its printed forms; None if unreadable.

    '00000000:1B:00.0' (nvidia-smi), '0000:1b:00' and 'PCI:0000:1b:00' (Xid lines), '1b:00.0'.
    """
    if not isinstance(text, str):
        return None
    value = text.strip()
    if value.upper().startswith("PCI:"):
        value = value[4:]
    value = value.split(".")[0]
    parts = value.split(":")
    try:
        if len(parts) >= 3:
            return (int(parts[-3], 16), int(parts[-2], 16), int(parts[-1], 16))
        if len(parts) == 2:
            return (0, int(parts[0], 16), int(parts[1], 16))
    except ValueError:
        return None
    return None


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


def _gpu_views(smi_q, smi_csv):
    """One dict per GPU with every value the checks read; -q first, CSV where -q lacks a value."""
    q_gpus = list((smi_q or {}).get("gpus") or [])
    csv_gpus = list((smi_csv or {}).get("gpus") or [])
    views = []
    by_bus = {}
    by_index = {}
    for position, gpu in enumerate(q_gpus):
        ecc = gpu.get("ecc") or {}
        vol = ecc.get("volatile") or {}
        agg = ecc.get("aggregate") or {}
        retired = gpu.get("retired_pages") or {}
        remap = gpu.get("remapped_rows") or {}
        temp = gpu.get("temperature") or {}
        index = gpu.get("index") if isinstance(gpu.get("index"), int) else position
        view = {
            "index": index,
            "bus_id": gpu.get("bus_id"),
            "product_name": gpu.get("product_name"),
            "ecc_vol_unc": _num(vol.get("uncorrectable_total")),
            "ecc_agg_unc": _num(agg.get("uncorrectable_total")),
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
        }
        views.append(view)
        key = _bus_key(view["bus_id"])
        if key:
            by_bus[key] = view
        by_index[index] = view

    for position, row in enumerate(csv_gpus):
        index = row.get("index") if isinstance(row.get("index"), int) else None
        bus = _csv_lookup(row, "pci.bus_id", "gpu_bus_id")
        view = by_bus.get(_bus_key(bus)) if bus else None
        if view is None and index is not None:
            view = by_index.get(index)
        if view is None and q_gpus:
            continue  # a CSV row that matches no -q GPU: -q is authoritative
        if view is None:
            view = {"index": index if index is not None else position, "bus_id": bus,
                    "product_name": None, "throttle": [], "throttle_known": False}
            views.append(view)
        fills = {
            "product_name": _csv_lookup(row, "name", "gpu_name"),
            "ecc_vol_unc": _num(_csv_lookup(row, "ecc.errors.uncorrected.volatile.total")),
            "ecc_agg_unc": _num(_csv_lookup(row, "ecc.errors.uncorrected.aggregate.total")),
            "ecc_vol_corr": _num(_csv_lookup(row, "ecc.errors.corrected.volatile.total")),
            "retired_sbe": _num(_csv_lookup(row, "retired_pages.single_bit_ecc.count",
                                            "retired_pages.sbe")),
            "retired_dbe": _num(_csv_lookup(row, "retired_pages.double_bit.count",
                                            "retired_pages.dbe")),
            "retired_pending": _yes(_csv_lookup(row, "retired_pages.pending")),
            "remap_corr": _num(_csv_lookup(row, "remapped_rows.correctable")),
            "remap_unc": _num(_csv_lookup(row, "remapped_rows.uncorrectable")),
            "remap_pending": _yes(_csv_lookup(row, "remapped_rows.pending")),
            "remap_failure": _yes(_csv_lookup(row, "remapped_rows.failure")),
            "temp_gpu": _num(_csv_lookup(row, "temperature.gpu")),
            "temp_mem": _num(_csv_lookup(row, "temperature.memory")),
        }
        for key, value in fills.items():
            if view.get(key) is None and value is not None:
                view[key] = value
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
    for view in views:
        view["label"] = "GPU%s" % view["index"]
    return sorted(views, key=lambda v: v["index"] if isinstance(v["index"], int) else 1 << 30)


def _usable(parsed):
    return isinstance(parsed, dict) and not parsed.get("errors") and bool(parsed.get("gpus"))


def judge_gpu_health(smi_q, smi_csv, xid, profile):
    """List of check results for one node's GPUs."""
    results = []
    q_errors = parse_error_results("gpu.parse", TOOL_Q, smi_q) if smi_q is not None else []
    csv_errors = parse_error_results("gpu.parse", TOOL_CSV, smi_csv) if smi_csv is not None \
        else []
    results.extend(q_errors)
    results.extend(csv_errors)
    q_ok = smi_q is not None and not q_errors and _usable(smi_q)
    csv_ok = smi_csv is not None and not csv_errors and _usable(smi_csv)
    if smi_q is not None and not q_errors and not q_ok:
        results.append(check_result("gpu.parse", ERROR, "%s: the report lists no GPUs" % TOOL_Q,
                                    {"tool": TOOL_Q}))
    if not q_ok and not csv_ok:
        if smi_q is None and smi_csv is None:
            results.append(check_result(
                "gpu.parse", ERROR, "%s and %s: no output was collected" % (TOOL_Q, TOOL_CSV),
                {"tool": TOOL_Q}))
    else:
        views = _gpu_views(smi_q if q_ok else None, smi_csv if csv_ok else None)
        results.extend(_judge_count(views, profile, smi_q if q_ok else None))
        results.extend(_judge_model(views, profile))
        results.extend(_judge_ecc(views, profile))
        results.extend(_judge_retired(views, profile))
        results.extend(_judge_remap(views, profile))
        results.extend(_judge_reset(views))
        results.extend(_judge_throttle(views, profile))
        results.extend(_judge_temperature(views, profile))
        results.extend(_judge_driver(smi_q if q_ok else None, smi_csv if csv_ok else None,
                                     profile))
    views_for_xid = _gpu_views(smi_q if q_ok else None, smi_csv if csv_ok else None) \
        if (q_ok or csv_ok) else []
    results.extend(_judge_xid(xid, views_for_xid, profile))
    return results


def _judge_count(views, profile, smi_q):
    expected = profile_get(profile, "gpus_per_node")
    if expected is None:
        return []
    found = len(views)
    attached = (smi_q or {}).get("attached_gpus")
    metrics = {"found": found, "expected": expected}
    if found == expected:
        return [check_result("gpu.count", PASS, "%d GPUs visible to nvidia-smi, as expected"
                             % found, metrics)]
    extra = ""
    if isinstance(attached, int) and attached != found:
        extra = " (the driver reports %d attached)" % attached
    return [check_result("gpu.count", FAIL, "%d GPUs visible to nvidia-smi, expected %d%s"
                         % (found, expected, extra), metrics)]


def _judge_model(views, profile):
    pattern = profile_get(profile, "gpu_name_pattern")
    if not pattern:
        return []
    regex = re.compile(pattern)
    results = []
    for view in views:
        name = view.get("product_name")
        if name is None:
            results.append(check_result("gpu.model", ERROR, "%s reports no product name"
                                        % view["label"], {}, view["label"]))
        elif not regex.search(name):
            results.append(check_result(
                "gpu.model", FAIL, "%s is a '%s', expected a name matching '%s'"
                % (view["label"], name, pattern), {"found": name, "pattern": pattern},
                view["label"]))
    if not results:
        names = sorted(set(v.get("product_name") for v in views))
        results.append(check_result("gpu.model", PASS, "all GPUs are %s" % join_names(names),
                                    {"pattern": pattern}))
    return results


def _judge_ecc(views, profile):
    vol_max = profile_get(profile, "ecc.volatile_uncorrectable_max", 0)
    agg_max = profile_get(profile, "ecc.aggregate_uncorrectable_max", 0)
    corr_warn = profile_get(profile, "ecc.volatile_correctable_warn")
    results = []
    unknown = []
    for view in views:
        label = view["label"]
        vol, agg, corr = view.get("ecc_vol_unc"), view.get("ecc_agg_unc"), view.get("ecc_vol_corr")
        if vol is None and agg is None:
            unknown.append(label)
            continue
        metrics = {"volatile_uncorrectable": vol, "aggregate_uncorrectable": agg,
                   "volatile_correctable": corr}
        if vol is not None and vol > vol_max:
            results.append(check_result(
                "gpu.ecc", FAIL, "%s has %d volatile uncorrectable ECC errors (limit %d)"
                % (label, vol, vol_max), metrics, label))
        elif agg is not None and agg > agg_max:
            results.append(check_result(
                "gpu.ecc", FAIL, "%s has %d aggregate (lifetime) uncorrectable ECC errors "
                "(limit %d)" % (label, agg, agg_max), metrics, label))
        if corr is not None and corr_warn is not None and corr > corr_warn:
            results.append(warning_result(
                "gpu.ecc", "%s has %d volatile correctable ECC errors (warning above %d)"
                % (label, corr, corr_warn), metrics, label))
    if unknown and len(unknown) == len(views):
        results.append(check_result("gpu.ecc", SKIP, "no GPU reports ECC error counts "
                                    "(ECC disabled or not queried)", {}))
    elif unknown:
        results.append(check_result("gpu.ecc", ERROR, "%s report no ECC error counts while other "
                                    "GPUs do" % join_names(unknown), {"gpus": unknown}))
    if not any(r["status"] in (FAIL, ERROR) for r in results) and len(unknown) < len(views):
        results.append(check_result("gpu.ecc", PASS, "no uncorrectable ECC errors on %d GPUs"
                                    % (len(views) - len(unknown)), {}))
    return results


def _judge_retired(views, profile):
    total_max = profile_get(profile, "retired_pages.total_max")
    pending_fails = profile_get(profile, "retired_pages.pending_fails", True)
    results = []
    reported = 0
    for view in views:
        label = view["label"]
        sbe, dbe, pending = view.get("retired_sbe"), view.get("retired_dbe"), \
            view.get("retired_pending")
        if sbe is None and dbe is None and pending is None:
            continue
        reported += 1
        total = (sbe or 0) + (dbe or 0)
        metrics = {"single_bit": sbe, "double_bit": dbe, "pending": pending, "total": total}
        if total_max is not None and total >= total_max:
            results.append(check_result(
                "gpu.retired_pages", FAIL, "%s has %d retired pages (%s single-bit, %s double-bit);"
                " replace at %d" % (label, total, sbe, dbe, total_max), metrics, label))
        if pending and pending_fails:
            results.append(check_result(
                "gpu.retired_pages", FAIL, "%s has pages pending retirement; reset the GPU to "
                "retire them" % label, metrics, label))
    if not reported:
        return [check_result("gpu.retired_pages", SKIP, "no GPU reports retired pages "
                             "(GPUs with row remapping report remapped rows instead)", {})]
    if not results:
        results.append(check_result("gpu.retired_pages", PASS, "retired pages within limits on "
                                    "%d GPUs" % reported, {"limit": total_max}))
    return results


def _judge_remap(views, profile):
    pending_fails = profile_get(profile, "remapped_rows.pending_fails", True)
    failure_fails = profile_get(profile, "remapped_rows.failure_fails", True)
    unc_max = profile_get(profile, "remapped_rows.uncorrectable_max")
    results = []
    reported = 0
    for view in views:
        label = view["label"]
        corr, unc = view.get("remap_corr"), view.get("remap_unc")
        pending, failure = view.get("remap_pending"), view.get("remap_failure")
        if corr is None and unc is None and pending is None and failure is None:
            continue
        reported += 1
        metrics = {"correctable": corr, "uncorrectable": unc, "pending": pending,
                   "failure": failure}
        counts = "%s uncorrectable, %s correctable remapped rows" % (
            fmt_num(unc) if unc is not None else "?", fmt_num(corr) if corr is not None else "?")
        if failure and failure_fails:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s row remapping failed (%s); the GPU meets NVIDIA's "
                "RMA criterion" % (label, counts), metrics, label))
        if pending and pending_fails:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s has pending row remaps (%s); reset the GPU to apply "
                "them" % (label, counts), metrics, label))
        if unc_max is not None and unc is not None and unc > unc_max:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s has %d rows remapped for uncorrectable errors "
                "(limit %d)" % (label, unc, unc_max), metrics, label))
    if not reported:
        return [check_result("gpu.remapped_rows", SKIP, "no GPU reports remapped rows "
                             "(not supported or not queried)", {})]
    if not results:
        results.append(check_result("gpu.remapped_rows", PASS, "no pending or failed row remaps "
                                    "on %d GPUs" % reported, {"limit": unc_max}))
    return results


def _judge_reset(views):
    results = []
    for view in views:
        if view.get("reset_required"):
            results.append(check_result("gpu.reset_required", FAIL, "%s reports that a GPU reset is "
                                        "required" % view["label"], {}, view["label"]))
        elif view.get("drain_and_reset"):
            results.append(check_result("gpu.reset_required", FAIL, "%s recommends draining the "
                                        "node and resetting the GPU" % view["label"], {},
                                        view["label"]))
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
    known = 0
    for view in views:
        if not view.get("throttle_known"):
            continue
        known += 1
        active = [_norm(r) for r in view.get("throttle") or []]
        failing = [display.get(r, r) for r in active if r in fail_set]
        warning = [display.get(r, r) for r in active if r in warn_set]
        metrics = {"active": active}
        if failing:
            results.append(check_result("gpu.throttle", FAIL, "%s is throttled: %s"
                                        % (view["label"], ", ".join(failing)), metrics,
                                        view["label"]))
        elif warning:
            results.append(warning_result("gpu.throttle", "%s clocks are limited by %s"
                                          % (view["label"], ", ".join(warning)), metrics,
                                          view["label"]))
    if not known:
        return [check_result("gpu.throttle", SKIP, "no GPU reports clock event reasons", {})]
    if not any(r["status"] == FAIL for r in results):
        results.append(check_result("gpu.throttle", PASS, "no GPU is throttled by %s"
                                    % join_names(list(fail_names)), {}))
    return results


def _judge_temperature(views, profile):
    gpu_cap = profile_get(profile, "temperature.gpu_max_c")
    mem_cap = profile_get(profile, "temperature.memory_max_c")
    margin = profile_get(profile, "temperature.margin_c", 0) or 0
    results = []
    judged = 0
    for view in views:
        label = view["label"]
        for what, value, cap, own in (("GPU", view.get("temp_gpu"), gpu_cap, view.get("limit_gpu")),
                                      ("memory", view.get("temp_mem"), mem_cap,
                                       view.get("limit_mem"))):
            if value is None:
                continue
            limit = cap if cap is not None else (own - margin if own is not None else None)
            if limit is None:
                continue
            judged += 1
            if value > limit:
                source = "profile limit" if cap is not None else "the GPU's own limit"
                results.append(check_result(
                    "gpu.temperature", FAIL, "%s %s temperature is %s C, above %s C (%s)"
                    % (label, what, fmt_num(value), fmt_num(limit), source),
                    {"what": what, "value": value, "limit": limit}, label))
    if not judged:
        return [check_result("gpu.temperature", SKIP, "no GPU temperature with a known limit "
                             "(set temperature.gpu_max_c, or collect nvidia-smi -q)", {})]
    if not results:
        results.append(check_result("gpu.temperature", PASS, "all GPU temperatures are within "
                                    "limits", {}))
    return results


def _judge_driver(smi_q, smi_csv, profile):
    branch = profile_get(profile, "driver_branch")
    if not branch:
        return []
    version = (smi_q or {}).get("driver_version")
    if version is None:
        for row in (smi_csv or {}).get("gpus") or []:
            if row.get("driver_version"):
                version = row["driver_version"]
                break
    if version is None:
        return [check_result("gpu.driver", ERROR, "nvidia-smi reports no driver version", {})]
    branch = str(branch)
    if str(version) == branch or str(version).startswith(branch + "."):
        return [check_result("gpu.driver", PASS, "driver %s is on the %s branch"
                             % (version, branch), {"version": version, "branch": branch})]
    return [check_result("gpu.driver", FAIL, "driver %s is not on the expected %s branch"
                         % (version, branch), {"version": version, "branch": branch})]


def _xid_severity(code, profile):
    for severity in ("fail", "warn", "ignore"):
        if code in (profile_get(profile, "xid." + severity) or []):
            return severity
    return profile_get(profile, "xid.unknown", "warn")


def _judge_xid(xid, views, profile):
    if xid is None:
        return [check_result("gpu.xid", SKIP, "%s: not collected" % TOOL_XID, {})]
    failed = parse_error_results("gpu.xid", TOOL_XID, xid)
    if failed:
        return failed
    labels = {}
    for view in views:
        key = _bus_key(view.get("bus_id"))
        if key:
            labels[key] = view["label"]
    groups = {}
    ignored = {}
    for event in xid.get("events") or []:
        code = event.get("xid")
        if not isinstance(code, int):
            code_num = _num(code)
            code = int(code_num) if code_num is not None else code
        pci = event.get("pci")
        key = _bus_key(pci)
        gpu = labels.get(key) if key else None
        where = "%s (%s)" % (gpu, pci) if gpu and pci else (gpu or pci or "an unknown GPU")
        severity = _xid_severity(code, profile) if isinstance(code, int) else "fail"
        if severity == "ignore":
            ignored[code] = ignored.get(code, 0) + 1
            continue
        group = groups.setdefault((severity, code, where, gpu), [])
        group.append(event)
    results = []
    for (severity, code, where, gpu), events in sorted(
            groups.items(), key=lambda kv: (kv[0][0] != "fail", str(kv[0][1]), kv[0][2])):
        last = events[-1]
        name = XID_NAMES.get(code, "")
        times = " %d times" % len(events) if len(events) > 1 else ""
        detail = last.get("message") or name
        text = "%s logged Xid %s%s%s" % (where, code, " (%s)" % name if name else "", times)
        if detail and detail != name:
            text += ": %s" % detail
        metrics = {"xid": code, "count": len(events), "pci": last.get("pci"),
                   "timestamp": last.get("timestamp"), "severity": severity}
        if severity == "fail":
            results.append(check_result("gpu.xid", FAIL, text, metrics, gpu or last.get("pci")))
        else:
            results.append(warning_result("gpu.xid", text, metrics, gpu or last.get("pci")))
    lost = xid.get("gpu_lost")
    if lost:
        lost_list = lost if isinstance(lost, (list, tuple)) else []
        names = []
        for pci in lost_list:
            key = _bus_key(pci if isinstance(pci, str) else None)
            names.append("%s (%s)" % (labels[key], pci) if key in labels else str(pci))
        text = ("%s has fallen off the bus" % join_names(names)) if names else \
            "a GPU has fallen off the bus (kernel log)"
        results.append(check_result("gpu.lost", FAIL, text + "; reboot or reseat before use",
                                    {"gpus": names}))
    if not any(r["status"] == FAIL for r in results):
        note = ""
        if ignored:
            note = " (%d application Xid events ignored: %s)" % (
                sum(ignored.values()), ", ".join("Xid %s" % c for c in sorted(ignored)))
        what = "no failing Xid events (see the warnings)" if results else "no hardware Xid events"
        results.append(check_result("gpu.xid", PASS, what + note,
                                    {"ignored": dict((str(k), v) for k, v in ignored.items())}))
    return results


def judge_gpu_health_stage(outputs, profile, options):
    """The gpu_health stage: (checks, metrics); an output that is None was not captured."""
    def parsed(tool, parser):
        text = outputs.get(tool)
        return None if text is None else parser(text)
    return judge_gpu_health(parsed("nvidia-smi-q", parse_nvidia_smi_q), parsed("nvidia-smi-csv", parse_nvidia_smi_csv),
                            parsed("dmesg", parse_xid_log), profile), {}
