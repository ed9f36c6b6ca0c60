# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPUs the gpu_health checks judge: one view per GPU, from nvidia-smi -q with CSV filling in.

Also the GPU identity helpers (the profile's bus-id layout, naming a missing GPU) that
_cluster uses through _judge_gpu_health, and the stage's tool names. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR,
    check_result,
    is_number,
    join_names,
    profile_get,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import normalize_bus_id
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_fabric import fabric_of_csv


TOOL_Q = "nvidia-smi -q"
TOOL_CSV = "nvidia-smi --query-gpu"
TOOL_XID = "kernel log (Xid)"
# The gpu_health stage's tool names (roles/check_gpu_health).
STAGE_Q, STAGE_CSV, STAGE_XID, STAGE_CLOCK, STAGE_WINDOW = (
    "nvidia-smi-q", "nvidia-smi-csv", "dmesg", "node-clock", "xid-window")

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
                          "temperature", "throttle", "reset", "product", "bus_id", "pcie"))
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
        "pcie": dict(gpu.get("pcie") or {}),
        "pstate": gpu.get("performance_state"),
        "fabric": gpu.get("fabric"),
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
    if view.get("fabric") is None:
        fabric = fabric_of_csv(row)
        if fabric is not None:
            fabric["evidence"] = list(row_ev)
            view["fabric"] = fabric
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


def untrusted(view, check, what, areas, evidence_area=None):
    """An error result when the GPU's ``areas`` could not be read (the parser's problems), else None."""
    problems = _invalid(view, *areas)
    if not problems:
        return None
    return check_result(check, ERROR, "%s %s cannot be trusted: %s" % (view["name"], what, "; ".join(problems)),
                        {"problems": problems}, view["label"], evidence=_ev(view, evidence_area or areas[0]),
                        tool=view["tool"])


def _usable(parsed):
    return isinstance(parsed, dict) and bool(parsed.get("gpus"))


def _pass_evidence(views, area, per_gpu=2):
    """A pass's evidence: for each GPU its header and the first lines that show the area."""
    lines = []
    for view in views:
        lines.extend(_ev(view, area)[:per_gpu])
    return lines
