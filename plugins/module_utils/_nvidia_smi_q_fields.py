# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One GPU of an ``nvidia-smi -q`` report: its fields from the GPU block's tree, and their lines.

Private to _nvidia_smi: _gpu reads every section the judges use (ECC, retired pages, remapped
rows, clocks event reasons, temperatures, power, clocks, PCIe), _evidence the printed lines each
check rests on. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_fabric import fabric_of_section
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_q_tree import _Node
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_values import normalize_bus_id
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_missing,
    to_number,
)


# Clocks event (throttle) reason names as printed, normalised to result keys.
_REASON_KEYS = {
    "idle": "idle",
    "applications clocks setting": "applications_clocks_setting",
    "application clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "display clock setting": "display_clock_setting",
}
# Reasons that are normal operation, not throttling.
_NOT_THROTTLE = ("idle", "applications_clocks_setting")

_TEMPERATURE_KEYS = (
    ("GPU Current Temp", "gpu"),
    ("Memory Current Temp", "memory"),
    ("GPU Shutdown Temp", "shutdown"),
    ("GPU Slowdown Temp", "slowdown"),
    ("GPU Max Operating Temp", "max_operating"),
    ("GPU Target Temperature", "target"),
    ("Memory Max Operating Temp", "memory_max_operating"),
    # Drivers from 565 on report limits relative to the T.Limit (negative = below it).
    ("GPU T.Limit Temp", "tlimit"),
    ("GPU Shutdown T.Limit Temp", "shutdown_tlimit"),
    ("GPU Slowdown T.Limit Temp", "slowdown_tlimit"),
    ("GPU Max Operating T.Limit Temp", "max_operating_tlimit"),
    ("Memory Max Operating T.Limit Temp", "memory_max_operating_tlimit"),
)

_OLD_ECC_SRAM_PARTS = ("Register File", "L1 Cache", "L2 Cache", "Texture Memory",
                       "Texture Shared", "CBU", "SRAM")


def _bool(value, true_words=("yes", "active", "enabled", "true")):
    if value is None or is_missing(value):
        return None
    word = value.strip().lower()
    if word in true_words:
        return True
    if word in ("no", "not active", "disabled", "false"):
        return False
    return None


def _sum(values):
    present = [v for v in values if isinstance(v, (int, float))]
    return sum(present) if present else None


def _first(node, *paths):
    for path in paths:
        if node.get(*path) is not None:
            return node.get(*path)
    return None


def _ecc_counts(section):
    """Counters of one ECC timescale (Volatile or Aggregate) in either layout."""
    counts = {
        "sram_correctable": None, "sram_uncorrectable": None,
        "sram_uncorrectable_parity": None, "sram_uncorrectable_secded": None,
        "dram_correctable": None, "dram_uncorrectable": None,
        "correctable_total": None, "uncorrectable_total": None,
    }
    if section is None:
        return counts, None
    if section.get("Single Bit") is not None or section.get("Double Bit") is not None:
        single = section.get("Single Bit") or _Node("Single Bit")
        double = section.get("Double Bit") or _Node("Double Bit")
        counts["dram_correctable"] = single.number("Device Memory")
        counts["dram_uncorrectable"] = double.number("Device Memory")
        if counts["dram_correctable"] is None:
            counts["dram_correctable"] = single.number("DRAM")
        if counts["dram_uncorrectable"] is None:
            counts["dram_uncorrectable"] = double.number("DRAM")
        counts["sram_correctable"] = _sum(single.number(p) for p in _OLD_ECC_SRAM_PARTS)
        counts["sram_uncorrectable"] = _sum(double.number(p) for p in _OLD_ECC_SRAM_PARTS)
        total_c = single.number("Total")
        total_u = double.number("Total")
        counts["correctable_total"] = total_c if total_c is not None else _sum(
            (counts["sram_correctable"], counts["dram_correctable"]))
        counts["uncorrectable_total"] = total_u if total_u is not None else _sum(
            (counts["sram_uncorrectable"], counts["dram_uncorrectable"]))
        return counts, "single_double_bit"
    counts["sram_correctable"] = section.number("SRAM Correctable")
    counts["sram_uncorrectable_parity"] = section.number("SRAM Uncorrectable Parity")
    counts["sram_uncorrectable_secded"] = section.number("SRAM Uncorrectable SEC-DED")
    plain = section.number("SRAM Uncorrectable")
    if plain is not None:
        counts["sram_uncorrectable"] = plain
    else:
        counts["sram_uncorrectable"] = _sum((counts["sram_uncorrectable_parity"],
                                             counts["sram_uncorrectable_secded"]))
    counts["dram_correctable"] = section.number("DRAM Correctable")
    counts["dram_uncorrectable"] = section.number("DRAM Uncorrectable")
    counts["correctable_total"] = _sum((counts["sram_correctable"], counts["dram_correctable"]))
    counts["uncorrectable_total"] = _sum((counts["sram_uncorrectable"],
                                          counts["dram_uncorrectable"]))
    known = any(section.get(k) is not None for k in (
        "SRAM Correctable", "SRAM Uncorrectable", "SRAM Uncorrectable Parity",
        "DRAM Correctable", "DRAM Uncorrectable"))
    return counts, ("sram_dram" if known else None)


def _ecc(node):
    mode = _first(node, ("ECC Mode",), ("Ecc Mode",)) or _Node("ECC Mode")
    errors = node.get("ECC Errors") or _Node("ECC Errors")
    volatile, layout_v = _ecc_counts(errors.get("Volatile"))
    aggregate, layout_a = _ecc_counts(errors.get("Aggregate"))
    ecc = {
        "mode_current": mode.text("Current"),
        "mode_pending": mode.text("Pending"),
        "enabled": _bool(mode.text("Current")),
        "volatile": volatile,
        "aggregate": aggregate,
        "layout": layout_v or layout_a,
    }
    agg = errors.get("Aggregate")
    if agg is not None and agg.get("SRAM Threshold Exceeded") is not None:
        ecc["aggregate"]["sram_threshold_exceeded"] = _bool(agg.text("SRAM Threshold Exceeded"))
    repair = dict((child.name, _bool(child.value)) for child in errors.order
                  if child.name.endswith("Repair Pending") or child.name.startswith("Unrepairable"))
    if repair:
        ecc["repair"] = repair   # e.g. {"Channel Repair Pending": False, "Unrepairable Memory": False}
    sources = errors.get("Aggregate Uncorrectable SRAM Sources")
    if sources is not None:
        ecc["aggregate_uncorrectable_sram_sources"] = dict(
            (child.name.replace("SRAM ", "").lower(), to_number(child.value))
            for child in sources.order)
    return ecc


def _retired_pages(node):
    section = node.get("Retired Pages")
    if section is None:
        return {"single_bit": None, "double_bit": None, "pending": None}
    single = section.get("Single Bit ECC")
    double = section.get("Double Bit ECC")
    pending = _first(section, ("Pending Page Blacklist",), ("Pending",),
                     ("Pending Page Retirement",))
    return {
        "single_bit": to_number(single.value) if single is not None else None,
        "double_bit": to_number(double.value) if double is not None else None,
        "pending": _bool(pending.value) if pending is not None else None,
    }


def _remapped_rows(node):
    section = node.get("Remapped Rows")
    rows = {"correctable": None, "uncorrectable": None, "pending": None, "failure": None,
            "supported": None, "histogram": {}}
    if section is None:
        return rows
    if not section.children:
        rows["supported"] = False
        return rows
    rows["supported"] = True
    rows["correctable"] = section.number("Correctable Error")
    rows["uncorrectable"] = section.number("Uncorrectable Error")
    rows["pending"] = _bool(section.text("Pending"))
    rows["failure"] = _bool(section.text("Remapping Failure Occurred"))
    histogram = section.get("Bank Remap Availability Histogram")
    if histogram is not None:
        rows["histogram"] = dict((child.name.lower(), to_number(child.value))
                                 for child in histogram.order)
    return rows


def _clock_reasons(node, warnings, where):
    section = _first(node, ("Clocks Event Reasons",), ("Clocks Throttle Reasons",))
    reasons = {}
    if section is None:
        return reasons, [], None

    def walk(parent):
        for child in parent.order:
            key = _REASON_KEYS.get(child.name.lower())
            if key is None:
                key = re.sub(r"[^a-z0-9]+", "_", child.name.lower()).strip("_")
            if child.value is not None and child.value.strip():
                state = _bool(child.value)
                if state is None and not is_missing(child.value):
                    warnings.append("%s: clocks reason %s has unknown state %r"
                                    % (where, child.name, child.value.strip()))
                reasons[key] = state
            walk(child)

    walk(section)
    active = [k for k, v in reasons.items() if v and k not in _NOT_THROTTLE]
    return reasons, active, section.name


def _power(node):
    section = _first(node, ("GPU Power Readings",), ("Power Readings",))
    power = {"draw": None, "draw_average": None, "draw_instant": None, "limit": None,
             "enforced_limit": None, "requested_limit": None, "default_limit": None,
             "min_limit": None, "max_limit": None, "section": None}
    if section is None:
        return power
    power["section"] = section.name
    power["draw_average"] = section.number("Average Power Draw")
    power["draw_instant"] = section.number("Instantaneous Power Draw")
    draw = section.number("Power Draw")
    if draw is None:
        draw = power["draw_instant"] if power["draw_instant"] is not None else power["draw_average"]
    power["draw"] = draw
    limit = section.number("Power Limit")
    power["limit"] = limit if limit is not None else section.number("Current Power Limit")
    enforced = section.number("Enforced Power Limit")
    power["enforced_limit"] = enforced if enforced is not None else section.number(
        "Current Power Limit")
    power["requested_limit"] = section.number("Requested Power Limit")
    power["default_limit"] = section.number("Default Power Limit")
    power["min_limit"] = section.number("Min Power Limit")
    power["max_limit"] = section.number("Max Power Limit")
    memory = node.get("GPU Memory Power Readings")
    if memory is not None:
        power["memory_draw"] = memory.number("Power Draw")
    module = node.get("Module Power Readings")
    if module is not None:
        power["module_draw"] = module.number("Power Draw")
    return power


def _clocks(section):
    if section is None:
        return {"graphics": None, "sm": None, "memory": None, "video": None}
    return {"graphics": section.number("Graphics"), "sm": section.number("SM"),
            "memory": section.number("Memory"), "video": section.number("Video")}


def _pcie(node):
    link = node.get("PCI", "GPU Link Info") or _Node("GPU Link Info")
    return {
        "gen_current": link.number("PCIe Generation", "Current"),
        "gen_max": link.number("PCIe Generation", "Max"),
        "gen_device_max": link.number("PCIe Generation", "Device Max"),
        "gen_host_max": link.number("PCIe Generation", "Host Max"),
        "width_current": link.number("Link Width", "Current"),
        "width_max": link.number("Link Width", "Max"),
        "replays": node.number("PCI", "Replays Since Reset"),
    }


def _gpu(bus_id, index, node, warnings):
    where = "GPU %s" % bus_id
    reasons, active, reasons_section = _clock_reasons(node, warnings, where)
    gpu = {
        "bus_id": bus_id,
        "index": index,
        "product_name": node.text("Product Name"),
        "product_architecture": node.text("Product Architecture"),
        "serial": node.text("Serial Number"),
        "uuid": node.text("GPU UUID"),
        "vbios_version": node.text("VBIOS Version"),
        "minor_number": node.number("Minor Number"),
        "module_id": node.number("Module ID"),
        "persistence_mode": node.text("Persistence Mode"),
        "persistence_mode_enabled": _bool(node.text("Persistence Mode")),
        "mig_mode": node.text("MIG Mode", "Current"),
        "performance_state": node.text("Performance State"),
        "reset_required": _bool(node.text("GPU Reset Status", "Reset Required")),
        "drain_and_reset_recommended": _bool(
            node.text("GPU Reset Status", "Drain and Reset Recommended")),
        "memory": {
            "total": node.number("FB Memory Usage", "Total"),
            "reserved": node.number("FB Memory Usage", "Reserved"),
            "used": node.number("FB Memory Usage", "Used"),
            "free": node.number("FB Memory Usage", "Free"),
        },
        "ecc": _ecc(node),
        "retired_pages": _retired_pages(node),
        "remapped_rows": _remapped_rows(node),
        "clocks_event_reasons": reasons,
        "clocks_event_reasons_section": reasons_section,
        "active_throttle": active,
        "temperature": dict((key, node.number("Temperature", label))
                            for label, key in _TEMPERATURE_KEYS),
        "power": _power(node),
        "clocks": _clocks(node.get("Clocks")),
        "applications_clocks": _clocks(node.get("Applications Clocks")),
        "max_clocks": _clocks(node.get("Max Clocks")),
        "pcie": _pcie(node),
    }
    pci_bus = node.text("PCI", "Bus Id")
    if pci_bus and bus_id and normalize_bus_id(pci_bus) and normalize_bus_id(pci_bus) != normalize_bus_id(bus_id):
        # The section header and the PCI section name different GPUs: which one this is is unknown.
        problem = "line %s: %s: PCI Bus Id is %s" % (node.get("PCI", "Bus Id").line, where, pci_bus)
        gpu["_bus_conflict"] = problem
    counters = node.get("Clocks Event Reasons Counters")
    if counters is not None:
        gpu["clocks_event_reasons_counters"] = dict(
            (re.sub(r"[^a-z0-9]+", "_", c.name.lower()).strip("_"), to_number(c.value))
            for c in counters.order)
    recovery = node.get("GPU Recovery Action")
    if recovery is not None:
        gpu["recovery_action"] = node.text("GPU Recovery Action")
    fabric = node.get("Fabric")
    if fabric is not None:
        gpu["fabric"] = fabric_of_section(fabric)  # values as printed: N/A is judged by the profile
    return gpu


def _nonzero(leaf):
    number = to_number(leaf.value)
    return isinstance(number, (int, float)) and number != 0


def _evidence(node, header):
    """The printed lines each check rests on, with their sections ('Remapped Rows > Pending : Yes')."""
    def lines(section_path, keep=lambda leaf: True):
        section = node.get(*section_path)
        if section is None:
            return []
        return [leaf.path() for leaf in section.leaves() if keep(leaf)]

    def old_layout(kind):
        return lambda leaf: leaf.parent is not None and leaf.parent.name == kind and (
            leaf.name in ("Device Memory", "DRAM", "Total") or _nonzero(leaf))

    ecc = node.get("ECC Errors")
    old = ecc is not None and any(sub.get("Single Bit") or sub.get("Double Bit") for sub in ecc.order)
    if old:
        uncorrectable = lines(("ECC Errors",), old_layout("Double Bit"))
        correctable = lines(("ECC Errors",), old_layout("Single Bit"))
    else:
        uncorrectable = lines(("ECC Errors",), lambda leaf: "Uncorrectable" in leaf.name)
        correctable = lines(("ECC Errors",), lambda leaf: "Correctable" in leaf.name
                            and "Uncorrectable" not in leaf.name)
    reasons = _first(node, ("Clocks Event Reasons",), ("Clocks Throttle Reasons",))
    return {
        "header": header,
        "product": [leaf.path() for leaf in node.order if leaf.name == "Product Name"],
        "bus_id": lines(("PCI",), lambda leaf: leaf.name == "Bus Id"),
        "ecc_uncorrectable": uncorrectable,
        "ecc_correctable": correctable,
        "retired_pages": lines(("Retired Pages",)),
        "remapped_rows": lines(("Remapped Rows",), lambda leaf: leaf.parent is not None
                               and leaf.parent.name == "Remapped Rows"),
        "temperature": lines(("Temperature",), lambda leaf: not is_missing(leaf.value)),
        "throttle": [leaf.path() for leaf in (reasons.leaves() if reasons is not None else [])
                     if _bool(leaf.value) and _REASON_KEYS.get(leaf.name.lower()) not in _NOT_THROTTLE],
        "reset": lines(("GPU Reset Status",)),
        "pcie": lines(("PCI", "GPU Link Info")) + [leaf.path() for leaf in node.order
                                                   if leaf.name == "Performance State"],
    }
