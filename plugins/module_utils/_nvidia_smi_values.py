# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvidia-smi parsers share: PCI bus ids, echoed commands, and which values can be real.

normalize_bus_id is public through _nvidia_smi; _validate drops the values of a ``-q`` GPU block
that cannot be real and says why. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_missing,
    is_shell_echo,
    to_number,
)


# "00000000:18:00.0" (nvidia-smi), "0000:18:00.0" (older drivers), "PCI:0000:18:00" (Xid lines).
_BUS_ID = re.compile(r"^(?:PCI:)?(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.([0-7]))?$")
# An nvidia-smi command line echoed without a prompt (a job script's "set -x" or a log).
_COMMAND_ECHO = re.compile(r"^\S*nvidia-smi(?:\s|$)")


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
    return is_shell_echo(line) or ("nvidia-smi" in line and bool(_COMMAND_ECHO.match(line.strip())))


# No counter or reading nvidia-smi prints is wider than 64 bits; a longer integer is garbage (and
# would overflow the float conversions of the checks).
_INT_LIMIT = 1 << 64


def _finite(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return -_INT_LIMIT < value < _INT_LIMIT
    return not (math.isnan(value) or math.isinf(value))


# Plausible temperatures in deg C; T.Limit values are margins and may be negative.
TEMPERATURE_RANGE = (0, 200)
TLIMIT_RANGE = (-200, 200)


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
