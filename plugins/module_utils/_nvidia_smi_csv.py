# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` output.

Public through _nvidia_smi (parse_nvidia_smi_csv). Standard library only; never raises.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_values import (
    TEMPERATURE_RANGE,
    TLIMIT_RANGE,
    _echo,
    _finite,
    normalize_bus_id,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    is_missing,
    lines_of,
    new_result,
    strip_launcher_prefix,
)


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


@capped(4)
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
