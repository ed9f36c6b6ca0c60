# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``nvidia-smi --query-gpu=... --format=csv``, ``nvidia-smi -q`` and ``nvidia-smi -L``.

Private to the collection. Standard library only; nothing here raises on odd input: problems
end up in the result's ``errors`` (that part of the data cannot be trusted) or ``warnings``.

Parsers salvage: a row, line or value that cannot be read is reported in ``errors`` (with its
line number) next to what the rest of the output shows, never instead of it. A value that cannot
be real (a negative or non-finite temperature or error count, a count that is not a whole number,
a PCI bus id that is not one) is such an error: the value is dropped, and the GPU it belongs to
lists the affected area in its ``invalid`` mapping so a judge never passes it. Shell prompts and
echoed commands pasted with a capture are dropped with a warning.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_missing,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
    to_number,
)

# "00000000:18:00.0" (nvidia-smi), "0000:18:00.0" (older drivers), "PCI:0000:18:00" (Xid lines).
_BUS_ID = re.compile(r"^(?:PCI:)?(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.([0-7]))?$")
# An nvidia-smi command line echoed without a prompt (a job script's "set -x" or a log).
_COMMAND_ECHO = re.compile(r"^\S*nvidia-smi(?:\s|$)")
_MAX_REPORTED = 20


def normalize_bus_id(text):
    """'00000000:18:00.0', '0000:18:00', 'PCI:0000:18:00', '18:00.0' -> '00000000:18:00.0'.

    None when text is not a PCI address (domain up to 8 hex digits, bus and device 2, function 0-7).
    """
    if not isinstance(text, str):
        return None
    match = _BUS_ID.match(text.strip())
    if not match:
        return None
    domain = int(match.group(1) or "0", 16)
    return "%08X:%s:%s.%s" % (domain, match.group(2).upper(), match.group(3).upper(),
                              match.group(4) or "0")


def _echo(line):
    """True for a shell prompt, an xtrace line or a bare echoed nvidia-smi command."""
    return is_shell_echo(line) or bool(_COMMAND_ECHO.match(line.strip()))


# No counter or reading nvidia-smi prints is wider than 64 bits; a longer integer is garbage (and
# would overflow the float conversions of the checks).
_INT_LIMIT = 1 << 64


def _finite(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return -_INT_LIMIT < value < _INT_LIMIT
    return not (math.isnan(value) or math.isinf(value))


# --------------------------------------------------------------------------------------------
# CSV (--query-gpu)
# --------------------------------------------------------------------------------------------

# "memory.total [MiB]" -> ("memory.total", "MiB"); field names are dotted lower-case words.
# Field names are lower case with dots, but some are camel case as nvidia-smi prints them
# (pci.baseClass, encoder.stats.sessionCount, fabric.cliqueId).
_CSV_HEADER_CELL = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)(?:\s*\[([^\]]*)\])?$")
# A whole cell that is a number, optionally followed by a unit ("81559 MiB", "35 %", "700.00 W").
_CSV_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s*([A-Za-z%/]+))?$")
# Words nvidia-smi prints for a number that is not finite: never a value.
_NON_FINITE = re.compile(r"^[-+]?(?:inf(?:inity)?|nan)\b", re.IGNORECASE)

# Fields whose values look like numbers but are identifiers or versions: kept as text.
_CSV_TEXT_FIELDS = frozenset((
    "driver_version", "vbios_version", "name", "gpu_name", "serial", "gpu_serial", "uuid",
    "gpu_uuid", "pci.bus_id", "gpu_bus_id", "pci.device_id", "pci.sub_device_id", "compute_cap",
    "pstate", "timestamp", "compute_mode", "display_mode", "display_active", "persistence_mode",
    "accounting.mode", "mig.mode.current", "mig.mode.pending", "board_id", "platform.chassis_serial_number",
))
_CSV_TEXT_PREFIXES = ("inforom.", "pci.", "gpu_operation_mode.", "ecc.mode.", "clocks_event_reasons.",
                      "clocks_throttle_reasons.")
_CSV_COUNT_FIELDS = frozenset((
    "index", "count", "retired_pages.single_bit_ecc.count", "retired_pages.double_bit.count",
    "retired_pages.sbe", "retired_pages.dbe", "remapped_rows.correctable", "remapped_rows.uncorrectable",
))
_CSV_FLAG_FIELDS = frozenset(("retired_pages.pending", "remapped_rows.pending", "remapped_rows.failure"))
_FLAG_WORDS = frozenset(("yes", "no", "active", "not active", "enabled", "disabled", "true", "false",
                         "0", "1"))
# Which judged area a field belongs to (a GPU's `invalid` keys).
_CSV_AREAS = (("ecc.errors.", "ecc"), ("retired_pages.", "retired_pages"), ("remapped_rows.", "remapped_rows"),
              ("temperature.", "temperature"), ("clocks_event_reasons.", "throttle"),
              ("clocks_throttle_reasons.", "throttle"), ("pci.bus_id", "bus_id"), ("gpu_bus_id", "bus_id"),
              ("index", "index"))
# Plausible temperatures in deg C; T.Limit values are margins and may be negative.
TEMPERATURE_RANGE = (0, 200)
TLIMIT_RANGE = (-200, 200)


def _csv_area(field):
    for prefix, area in _CSV_AREAS:
        if field.startswith(prefix):
            return area
    return "other"


def _is_text_field(field):
    return field in _CSV_TEXT_FIELDS or any(field.startswith(p) for p in _CSV_TEXT_PREFIXES)


def _is_flag_field(field):
    """Yes/No fields: the known ones and those named like one (...thresholdExceeded, ...Pending)."""
    last = field.rsplit(".", 1)[-1].lower()
    return field in _CSV_FLAG_FIELDS or last.endswith(("exceeded", "pending", "occurred"))


def _csv_value(field, cell):
    """(typed value, problem) of one CSV cell: None for N/A-like, int/float, text; problem or None.

    Any bracketed status ("[N/A]", "[Not Supported]", "[GPU is lost]") means no value.
    """
    value = cell.strip()
    if field in ("pci.bus_id", "gpu_bus_id"):
        # nvidia-smi always knows a GPU's bus id: a placeholder here is no more a bus id than junk.
        if normalize_bus_id(value) is None:
            return None, "%s %r is not a PCI bus id" % (field, value[:60])
        return value, None
    if is_missing(value) or (value.startswith("[") and value.endswith("]")):
        return None, None
    if _is_flag_field(field):
        if value.lower() not in _FLAG_WORDS:
            return None, "%s %r is not Yes/No" % (field, value[:60])
        return value, None
    if _is_text_field(field):
        return value, None
    match = _CSV_NUMBER.match(value)
    if not match:
        if _NON_FINITE.match(value) or field in _CSV_COUNT_FIELDS or field.startswith(
                ("ecc.errors.", "temperature.")):
            return None, "%s %r is not a number" % (field, value[:60])
        return value, None
    token = match.group(1)
    number = float(token) if any(c in token for c in ".eE") else int(token)
    if not _finite(number):
        return None, "%s %r is not a finite number" % (field, value[:60])
    if field in _CSV_COUNT_FIELDS or field.startswith("ecc.errors."):
        if isinstance(number, float) and not number.is_integer() or number < 0:
            return None, "%s %r is not a count (a whole number >= 0)" % (field, value[:60])
        return int(number), None
    if field.startswith("temperature."):
        low, high = TLIMIT_RANGE if "tlimit" in field else TEMPERATURE_RANGE
        if not low <= number <= high:
            return None, "%s %r C is not a possible temperature" % (field, value[:60])
    elif number < 0:
        return None, "%s %r is negative" % (field, value[:60])
    return number, None


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
    units (field -> unit from the header or None), header_line (the header as printed),
    row_lines (each GPU row as printed, in the order of gpus), invalid (one dict per row:
    area -> problems, for values that cannot be real), errors, warnings.
    """
    result = new_result(gpus=[], fields=[], units={}, header_line=None, row_lines=[], invalid=[])
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
    headerless = 0
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        if _echo(line):
            warnings.append("line %d: shell prompt or command echo ignored: %s" % (lineno, line[:120]))
            continue
        cells = [c.strip() for c in line.split(",")]
        parsed_header = _csv_header(cells)
        if parsed_header is not None:
            names, header_units = parsed_header
            if header is not None and names == header:
                if not header_seen:
                    units = header_units
                    result["header_line"] = line
                header_seen = True
                continue  # the header (again, when outputs of several runs are concatenated)
            if not header_seen and not saw_data:
                if given:
                    warnings.append("line %d: header (%s) differs from the given fields; "
                                    "using the header" % (lineno, ", ".join(names)))
                header, units, header_seen = names, header_units, True
                result["header_line"] = line
                continue
        if header is None:
            headerless += 1
            if headerless == 1:
                errors.append("line %d: a data row before any CSV header line (run with --format=csv "
                              "without noheader, or pass the query's fields): %s" % (lineno, line[:120]))
            continue
        saw_data = True
        if len(cells) != len(header):
            errors.append("line %d: %d values for %d fields (%s); row skipped"
                          % (lineno, len(cells), len(header), ", ".join(header)))
            continue
        row = {}
        invalid = {}
        for field, cell in zip(header, cells):
            row[field], problem = _csv_value(field, cell)
            if problem:
                text_problem = "line %d: %s" % (lineno, problem)
                errors.append(text_problem)
                invalid.setdefault(_csv_area(field), []).append(text_problem)
            elif row[field] is None and cell.startswith("[") and not is_missing(cell):
                warnings.append("line %d: %s is %s" % (lineno, field, cell))
        result["gpus"].append(row)
        result["row_lines"].append(line)
        result["invalid"].append(invalid)

    if headerless > 1:
        errors.append("%d lines before the header were not read" % headerless)
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
# nvidia-smi -L
# --------------------------------------------------------------------------------------------

_LIST_GPU = re.compile(r"^GPU\s+(\d+)\s*:\s*(.*?)\s*\(UUID:\s*(\S+?)\s*\)\s*$")
_LIST_MIG = re.compile(r"^MIG\s+(\S+)\s+Device\s+(\d+)\s*:\s*\(UUID:\s*(\S+?)\s*\)\s*$")
_LIST_LOST = re.compile(r"^Unable to determine the device handle for\s*(?:GPU)?\s*([0-9A-Fa-f:.]+)\s*:\s*(.*)$",
                        re.IGNORECASE)
_UUID = re.compile(r"^(?:GPU|MIG)-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$")
_NO_DEVICES = re.compile(r"^No devices were found\s*$", re.IGNORECASE)


def parse_nvidia_smi_list(text):
    """Parse ``nvidia-smi -L`` (``--list-gpus``) output; never raises.

    Result keys: gpus (``{index, name, uuid, line, text, mig: [{profile, device, uuid}]}`` in
    output order), unreachable (``{bus_id, reason, line, text}`` for each "Unable to determine
    the device handle for GPU <bus id>: <reason>" line, the form a GPU that fell off the bus or
    is lost takes), no_devices (the tool said "No devices were found"), errors, warnings.
    """
    result = new_result(gpus=[], unreachable=[], no_devices=False)
    errors = result["errors"]
    if not isinstance(text, str):
        errors.append("expected the text of `nvidia-smi -L`, got %s" % type(text).__name__)
        return result
    seen = set()
    unreadable = 0
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        if _echo(line):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s" % (lineno, line[:120]))
            continue
        match = _LIST_GPU.match(line)
        if match:
            index, uuid = int(match.group(1)), match.group(3)
            if not _UUID.match(uuid):
                errors.append("line %d: GPU %d: %r is not a GPU UUID" % (lineno, index, uuid[:60]))
                uuid = None
            if index in seen:
                errors.append("line %d: GPU %d is listed twice" % (lineno, index))
                continue
            seen.add(index)
            result["gpus"].append({"index": index, "name": match.group(2) or None, "uuid": uuid,
                                   "line": lineno, "text": line, "mig": []})
            continue
        match = _LIST_MIG.match(line)
        if match and result["gpus"]:
            result["gpus"][-1]["mig"].append({"profile": match.group(1), "device": int(match.group(2)),
                                              "uuid": match.group(3)})
            continue
        match = _LIST_LOST.match(line)
        if match:
            bus_id = normalize_bus_id(match.group(1).rstrip(":"))
            if bus_id is None:
                errors.append("line %d: %r is not a PCI bus id: %s" % (lineno, match.group(1)[:40], line[:160]))
            result["unreachable"].append({"bus_id": bus_id, "reason": match.group(2).strip() or None,
                                          "line": lineno, "text": line})
            continue
        if _NO_DEVICES.match(line):
            result["no_devices"] = True
            continue
        unreadable += 1
        if unreadable <= _MAX_REPORTED:
            errors.append("line %d: not an `nvidia-smi -L` line: %s" % (lineno, line[:160]))
    if unreadable > _MAX_REPORTED:
        errors.append("%d more unreadable lines" % (unreadable - _MAX_REPORTED))
    indexes = [g["index"] for g in result["gpus"]]
    if indexes and sorted(indexes) != list(range(len(indexes))):
        result["warnings"].append("GPU indexes %s are not 0..%d (queried with -i, or lines lost?)"
                                  % (",".join(str(i) for i in indexes), len(indexes) - 1))
    if not result["gpus"] and not result["unreachable"] and not result["no_devices"] and not errors:
        errors.append("empty input: no `nvidia-smi -L` output")
    return result


# --------------------------------------------------------------------------------------------
# nvidia-smi -q
# --------------------------------------------------------------------------------------------

_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
# A section header whose bus id is unreadable ("GPU 00000000:ZZ:00.0"): still a new GPU block.
_GPU_HEADER_LIKE = re.compile(r"^GPU\s+(\S*:\S*)\s*$")
# Keys never contain a colon: the first one separates key and value ("Bus Id : :" has value ":").
_KEY_VALUE = re.compile(r"^([^:\s](?:[^:]*[^:\s])?)\s*:\s?(.*)$")
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
    """One indentation level of the -q report: values and subsections by name.

    line and text: where it was printed (1-based line number, the line stripped), for evidence.
    """

    __slots__ = ("name", "value", "children", "order", "line", "text_line", "parent")

    def __init__(self, name, value=None, line=None, text_line=None):
        self.name = name
        self.value = value
        self.children = {}
        self.order = []
        self.line = line
        self.text_line = text_line
        self.parent = None

    def add(self, node):
        if node.name not in self.children:
            self.children[node.name] = node
        self.order.append(node)
        node.parent = self
        return node

    def path(self):
        """'ECC Errors > Volatile > DRAM Uncorrectable : 2' (the printed line with its sections)."""
        names = []
        node = self.parent
        while node is not None and node.parent is not None:
            names.append(node.name)
            node = node.parent
        names.reverse()
        return re.sub(r"\s{2,}", " ", " > ".join(names + [self.text_line or self.name]))

    def leaves(self):
        """Every node below this one that carries a value, in output order."""
        found = []
        for child in self.order:
            if child.value is not None and child.value.strip():
                found.append(child)
            found.extend(child.leaves())
        return found

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
        gpu["fabric"] = {
            "state": fabric.text("State"),
            "status": fabric.text("Status"),
            "clique_id": fabric.text("CliqueId"),
            "cluster_uuid": fabric.text("ClusterUUID"),
        }
    return gpu


# Counters and flags whose value must be a whole number >= 0 or Yes/No, per judged area.
_FLAG_VALUES = frozenset(("yes", "no"))


def _count_problem(value):
    number = to_number(value)
    if number is None:
        return "is not a number"
    if not _finite(number):
        return "is not a finite number"
    if isinstance(number, float) and not number.is_integer() or number < 0:
        return "is not a count (a whole number >= 0)"
    return None


def _temperature_problem(name, value):
    number = to_number(value)
    if number is None:
        return "is not a temperature"
    if not _finite(number):
        return "is not a finite number"
    low, high = TLIMIT_RANGE if "T.Limit" in name else TEMPERATURE_RANGE
    if not low <= number <= high:
        return "is not a possible temperature"
    return None


def _rule(area, leaf):
    """The check a -q leaf's value must pass: 'count', 'flag', 'temperature', 'bus_id' or None."""
    name = leaf.name
    if area == "ecc":
        if "Threshold" in name:
            return None
        # Drivers 590+ add repair state to ECC Errors: "Channel Repair Pending : No",
        # "TPC Repair Pending : No", "Unrepairable Memory : No" are flags, not counts.
        if name.endswith("Pending") or name.startswith("Unrepairable"):
            return "flag"
        return "count"
    if area == "retired_pages":
        return "flag" if name.startswith("Pending") else "count"
    if area == "remapped_rows":
        return "flag" if name in ("Pending", "Remapping Failure Occurred") else "count"
    if area == "temperature":
        return "temperature"
    if area == "reset":
        return "flag"
    return None


_AREAS = ((("ECC Errors",), "ecc"), (("Aggregate Uncorrectable SRAM Sources",), "ecc"),
          (("Retired Pages",), "retired_pages"), (("Remapped Rows",), "remapped_rows"),
          (("Temperature",), "temperature"), (("GPU Reset Status",), "reset"))


def _validate(node, where, errors):
    """{area: [problems]} for values that cannot be real; such values are dropped (set to None)."""
    invalid = {}

    def bad(area, leaf, problem):
        text = "line %s: %s: %s %r %s" % (leaf.line, where, leaf.path().split(" : ")[0].strip(),
                                          (leaf.value or "").strip()[:60], problem)
        errors.append(text)
        invalid.setdefault(area, []).append(text)
        leaf.value = None

    for path, area in _AREAS:
        section = node.get(*path)
        if section is None:
            continue
        for leaf in section.leaves():
            value = leaf.value
            if value is None or is_missing(value):
                continue
            rule = _rule(area, leaf)
            if rule == "count":
                problem = _count_problem(value)
            elif rule == "flag":
                problem = None if value.strip().lower() in _FLAG_VALUES else "is not Yes/No"
            elif rule == "temperature":
                problem = _temperature_problem(leaf.name, value)
            else:
                problem = None
            if problem:
                bad(area, leaf, problem)
    bus = node.get("PCI", "Bus Id")
    if bus is not None and bus.value is not None and normalize_bus_id(bus.value) is None:
        bad("bus_id", bus, "is not a PCI bus id")  # nvidia-smi always prints one; N/A is not one either
    return invalid


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
    }


def _parse_tree(text, result):
    """Top-level values and [bus id or None, lineno, tree, header text] for every GPU block."""
    top = _Node("top")
    blocks = []
    stack = None
    banners = 0
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        if _echo(stripped):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s"
                                      % (lineno, stripped[:120]))
            continue
        if _BANNER.match(stripped):
            banners += 1
            if banners > 1:
                result["warnings"].append("line %d: a second NVSMI LOG banner: several reports "
                                          "concatenated" % lineno)
            stack = None
            continue
        level = _indent(line)
        match = _GPU_HEADER.match(stripped)
        if level == 0 and (match or _GPU_HEADER_LIKE.match(stripped)):
            root = _Node(stripped, line=lineno, text_line=stripped)
            if match:
                blocks.append([match.group(1).upper(), lineno, root, stripped])
            else:
                result["errors"].append("line %d: GPU section header with an unreadable PCI bus id: %s"
                                        % (lineno, stripped[:80]))
                blocks.append([None, lineno, root, stripped])
            stack = [(-1, root)]
            continue
        kv = _KEY_VALUE.match(stripped)
        if kv:
            node = _Node(kv.group(1).strip(), kv.group(2), line=lineno, text_line=stripped)
        else:
            node = _Node(stripped, line=lineno, text_line=stripped)
        if stack is None:
            if level == 0:
                top.add(node)
            continue
        while len(stack) > 1 and stack[-1][0] >= level:
            stack.pop()
        stack[-1][1].add(node)
        stack.append((level, node))
    return top, blocks


def _merge_blocks(blocks, warnings):
    """One block per bus id: `-q -d ECC` and `-q -d TEMPERATURE` outputs pasted together are one GPU."""
    merged = []
    by_bus = {}
    for block in blocks:
        bus_id, lineno, root = block[0], block[1], block[2]
        first = by_bus.get(bus_id) if bus_id else None
        if first is None:
            if bus_id:
                by_bus[bus_id] = block
            merged.append(block)
            continue
        warnings.append("line %d: GPU %s appears again; its sections are merged into the first one "
                        "(values already read are kept)" % (lineno, bus_id))
        for child in root.order:
            first[2].add(child)
    return merged


# Lines people put where they cut a pasted report.
_ELISIONS = frozenset(("[...]", "...", "[..]", "\u2026", "[\u2026]", "<snip>", "[snip]", "(...)"))


def parse_nvidia_smi_q(text):
    """Parse ``nvidia-smi -q`` text (the whole report or ``-q -d SECTION`` fragments); never raises.

    Result keys: driver_version, cuda_version, attached_gpus, timestamp, gpus (one dict per
    ``GPU <bus id>`` block, in output order; each with ``evidence``, the printed lines of each
    judged area, and ``invalid``, area -> problems for values that cannot be real), errors,
    warnings.
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

    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip() in _ELISIONS:
            # Someone cut the report when pasting it: what is missing cannot be judged.
            errors.append("line %d: %r: part of the report was left out (elided)" % (lineno, line.strip()))
    top, blocks = _parse_tree(text, result)
    result["driver_version"] = top.text("Driver Version")
    cuda = top.text("CUDA Version")
    result["cuda_version"] = None if cuda in (None, "Not Found") else cuda
    result["attached_gpus"] = top.number("Attached GPUs")
    result["timestamp"] = top.text("Timestamp")
    attached_node = top.get("Attached GPUs")
    result["attached_line"] = attached_node.text_line if attached_node is not None else None
    if result["attached_gpus"] is not None and _count_problem(str(result["attached_gpus"])):
        errors.append("line %s: Attached GPUs %r is not a count" % (attached_node.line, attached_node.value))
        result["attached_gpus"] = None

    if not blocks:
        errors.append("no 'GPU <PCI bus id>' sections found: empty, truncated or not "
                      "`nvidia-smi -q` output")
        return result
    blocks = _merge_blocks(blocks, warnings)
    for index, (bus_id, lineno, node, header) in enumerate(blocks):
        label = bus_id or "at line %d" % lineno
        if not node.order:
            errors.append("line %d: GPU %s has no fields (output truncated?)" % (lineno, label))
            continue
        invalid = _validate(node, "GPU %s" % label, errors)
        if bus_id is None:
            # The header is garbled: the PCI section may still name the GPU.
            bus_id = normalize_bus_id(node.text("PCI", "Bus Id") or "")
            invalid.setdefault("bus_id", []).append("line %d: GPU section header %r names no PCI bus id"
                                                    % (lineno, header[:80]))
        gpu = _gpu(bus_id, index, node, warnings)
        conflict = gpu.pop("_bus_conflict", None)
        if conflict:
            errors.append(conflict)
            invalid.setdefault("bus_id", []).append(conflict)
        gpu["invalid"] = invalid
        gpu["evidence"] = _evidence(node, header)
        gpu["line"] = lineno
        result["gpus"].append(gpu)

    # A full report (Product Name printed, i.e. no -d filter) always ends each GPU with
    # "Processes"; its absence means the text was cut short.
    for bus_id, lineno, node, _header in blocks:
        if node.order and node.get("Product Name") is not None and node.get("Processes") is None:
            errors.append("GPU %s (line %d): report ends before its 'Processes' section "
                          "(output truncated?)" % (bus_id or "at line %d" % lineno, lineno))
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
