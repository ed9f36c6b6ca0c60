# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``nvidia-smi --query-gpu=... --format=csv`` and ``nvidia-smi -q`` text output.

Private to the collection. Standard library only; nothing here raises on odd input: problems
end up in the result's ``errors`` (the data cannot be trusted) or ``warnings``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_missing,
    lines_of,
    new_result,
    strip_launcher_prefix,
    to_number,
)

# --------------------------------------------------------------------------------------------
# CSV (--query-gpu)
# --------------------------------------------------------------------------------------------

# "memory.total [MiB]" -> ("memory.total", "MiB"); field names are dotted lower-case words.
_CSV_HEADER_CELL = re.compile(r"^([a-z_][a-z0-9_.]*)(?:\s*\[([^\]]*)\])?$")
# A whole cell that is a number, optionally followed by a unit ("81559 MiB", "35 %", "700.00 W").
_CSV_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s*([A-Za-z%/]+))?$")

# Fields whose values look like numbers but are identifiers or versions: kept as text.
_CSV_TEXT_FIELDS = frozenset((
    "driver_version", "vbios_version", "name", "gpu_name", "serial", "gpu_serial", "uuid",
    "gpu_uuid", "pci.bus_id", "gpu_bus_id", "pci.device_id", "pci.sub_device_id", "compute_cap",
    "pstate", "timestamp", "compute_mode", "display_mode", "display_active", "persistence_mode",
    "accounting.mode", "mig.mode.current", "mig.mode.pending", "board_id", "platform.chassis_serial_number",
))
_CSV_TEXT_PREFIXES = ("inforom.", "pci.", "gpu_operation_mode.", "ecc.mode.")


def _csv_value(field, cell):
    """Typed value of one CSV cell: None for N/A-like, int/float for numbers, text otherwise.

    Any bracketed status ("[N/A]", "[Not Supported]", "[GPU is lost]") means no value.
    """
    value = cell.strip()
    if is_missing(value) or (value.startswith("[") and value.endswith("]")):
        return None
    if field in _CSV_TEXT_FIELDS or any(field.startswith(p) for p in _CSV_TEXT_PREFIXES):
        return value
    match = _CSV_NUMBER.match(value)
    if not match:
        return value
    token = match.group(1)
    if any(c in token for c in ".eE"):
        return float(token)
    return int(token)


def _csv_header(cells):
    """(fields, units) when every cell is a field name, else None."""
    fields = []
    units = {}
    for cell in cells:
        match = _CSV_HEADER_CELL.match(cell.strip())
        if not match:
            return None
        fields.append(match.group(1))
        units[match.group(1)] = match.group(2)
    return fields, units


def _fields_argument(fields):
    """Field names from a list or a comma-separated --query-gpu string; None when not given."""
    if fields is None:
        return None
    if isinstance(fields, str):
        fields = fields.split(",")
    try:
        names = [str(f).strip() for f in fields]
    except TypeError:
        return None
    names = [re.sub(r"\s*\[[^\]]*\]$", "", n) for n in names if n]
    return names or None


def parse_nvidia_smi_csv(text, fields=None):
    """Parse ``nvidia-smi --query-gpu=... --format=csv[,nounits]`` output; never raises.

    The header line names the fields. Output made with ``noheader`` can be read by passing the
    query's field names as ``fields`` (a list or the comma-separated --query-gpu string).

    Result keys: gpus (one dict per row, keyed by field name without the unit suffix), fields,
    units (field -> unit from the header or None), errors, warnings.
    """
    result = new_result(gpus=[], fields=[], units={})
    errors = result["errors"]
    warnings = result["warnings"]
    if not isinstance(text, str):
        errors.append("expected the text of `nvidia-smi --query-gpu`, got %s" % type(text).__name__)
        return result
    given = _fields_argument(fields)
    if fields is not None and given is None:
        errors.append("fields must be a list of field names or a comma-separated string")
        return result

    header = given
    units = dict((f, None) for f in given) if given else {}
    header_seen = False
    saw_data = False
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split(",")]
        parsed_header = _csv_header(cells)
        if parsed_header is not None:
            names, header_units = parsed_header
            if header is not None and names == header:
                if not header_seen:
                    units = header_units
                header_seen = True
                continue  # the header (again, when outputs of several runs are concatenated)
            if not header_seen and not saw_data:
                if given:
                    warnings.append("line %d: header (%s) differs from the given fields; "
                                    "using the header" % (lineno, ", ".join(names)))
                header, units, header_seen = names, header_units, True
                continue
        if header is None:
            errors.append("line %d: no CSV header before the first data row (run with "
                          "--format=csv without noheader, or pass the query's fields)" % lineno)
            return result
        saw_data = True
        if len(cells) != len(header):
            errors.append("line %d: %d values for %d fields (%s); row skipped"
                          % (lineno, len(cells), len(header), ", ".join(header)))
            continue
        row = {}
        for field, cell in zip(header, cells):
            row[field] = _csv_value(field, cell)
            if row[field] is None and cell.startswith("[") and not is_missing(cell):
                warnings.append("line %d: %s is %s" % (lineno, field, cell))
        result["gpus"].append(row)

    result["fields"] = list(header) if header else []
    result["units"] = units
    if header is None:
        errors.append("no CSV header line found: empty or not `nvidia-smi --query-gpu` output")
    elif not saw_data:
        errors.append("no data rows after the header")
    elif not result["gpus"]:
        errors.append("no usable data rows")
    if "index" in result["fields"]:
        seen = set()
        for gpu in result["gpus"]:
            if gpu.get("index") in seen:
                warnings.append("GPU index %s appears in more than one row (looped output?)"
                                % gpu.get("index"))
                break
            seen.add(gpu.get("index"))
    return result


# --------------------------------------------------------------------------------------------
# nvidia-smi -q
# --------------------------------------------------------------------------------------------

_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KEY_VALUE = re.compile(r"^(\S(?:[^:]*\S)?)\s*:\s?(.*)$")
_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")

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


class _Node(object):
    """One indentation level of the -q report: values and subsections by name."""

    __slots__ = ("name", "value", "children", "order")

    def __init__(self, name, value=None):
        self.name = name
        self.value = value
        self.children = {}
        self.order = []

    def add(self, node):
        if node.name not in self.children:
            self.children[node.name] = node
        self.order.append(node)
        return node

    def get(self, *path):
        node = self
        for name in path:
            if node is None:
                return None
            node = node.children.get(name)
        return node

    def text(self, *path):
        """The value at path, None when missing, N/A or a section without a value."""
        node = self.get(*path)
        if node is None or node.value is None or is_missing(node.value):
            return None
        return node.value.strip()

    def number(self, *path):
        return to_number(self.text(*path))


def _indent(line):
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


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
    if pci_bus and pci_bus.upper() != bus_id.upper():
        warnings.append("%s: PCI Bus Id is %s" % (where, pci_bus))
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
        gpu["fabric"] = {
            "state": fabric.text("State"),
            "status": fabric.text("Status"),
            "clique_id": fabric.text("CliqueId"),
            "cluster_uuid": fabric.text("ClusterUUID"),
        }
    return gpu


def _parse_tree(text, result):
    """Top-level values and (bus id, lineno, tree) for every GPU block."""
    top = _Node("top")
    blocks = []
    stack = None
    banners = 0
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        if _BANNER.match(stripped):
            banners += 1
            if banners > 1:
                result["warnings"].append("line %d: a second NVSMI LOG banner: several reports "
                                          "concatenated" % lineno)
            stack = None
            continue
        match = _GPU_HEADER.match(stripped)
        if match and _indent(line) == 0:
            root = _Node("GPU " + match.group(1))
            blocks.append((match.group(1).upper(), lineno, root))
            stack = [(-1, root)]
            continue
        level = _indent(line)
        kv = _KEY_VALUE.match(stripped)
        if kv:
            node = _Node(kv.group(1).strip(), kv.group(2))
        else:
            node = _Node(stripped)
        if stack is None:
            if level == 0:
                top.add(node)
            continue
        while len(stack) > 1 and stack[-1][0] >= level:
            stack.pop()
        stack[-1][1].add(node)
        stack.append((level, node))
    return top, blocks


def parse_nvidia_smi_q(text):
    """Parse ``nvidia-smi -q`` text into a dict; never raises.

    Result keys: driver_version, cuda_version, attached_gpus, timestamp, gpus (one dict per
    ``GPU <bus id>`` block, in output order), errors, warnings.
    """
    result = new_result(driver_version=None, cuda_version=None, attached_gpus=None,
                        timestamp=None, gpus=[])
    errors = result["errors"]
    warnings = result["warnings"]
    if not isinstance(text, str):
        errors.append("expected the text of `nvidia-smi -q`, got %s" % type(text).__name__)
        return result
    if not text.strip():
        errors.append("empty input: no `nvidia-smi -q` output")
        return result

    top, blocks = _parse_tree(text, result)
    result["driver_version"] = top.text("Driver Version")
    cuda = top.text("CUDA Version")
    result["cuda_version"] = None if cuda in (None, "Not Found") else cuda
    result["attached_gpus"] = top.number("Attached GPUs")
    result["timestamp"] = top.text("Timestamp")

    if not blocks:
        errors.append("no 'GPU <PCI bus id>' sections found: empty, truncated or not "
                      "`nvidia-smi -q` output")
        return result
    seen = set()
    for index, (bus_id, lineno, node) in enumerate(blocks):
        if bus_id in seen:
            warnings.append("line %d: GPU %s appears twice" % (lineno, bus_id))
        seen.add(bus_id)
        if not node.order:
            errors.append("line %d: GPU %s has no fields (output truncated?)" % (lineno, bus_id))
            continue
        result["gpus"].append(_gpu(bus_id, index, node, warnings))

    # A full report (Product Name printed, i.e. no -d filter) always ends each GPU with
    # "Processes"; its absence means the text was cut short.
    for bus_id, lineno, node in blocks:
        if node.order and node.get("Product Name") is not None and node.get("Processes") is None:
            errors.append("GPU %s (line %d): report ends before its 'Processes' section "
                          "(output truncated?)" % (bus_id, lineno))
    attached = result["attached_gpus"]
    if isinstance(attached, int) and attached != len(blocks):
        message = ("Attached GPUs is %d but the report has %d GPU section(s)"
                   % (attached, len(blocks)))
        if len(blocks) > attached:
            errors.append(message)
        else:
            warnings.append(message + " (queried with -i, or output cut short)")
    if result["driver_version"] is None:
        warnings.append("no 'Driver Version' line before the GPU sections")
    return result
