# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The difference between two InfiniBand port-counter snapshots (counter_deltas): per CA, port and
counter, what rose between them, with the counters reset or saturated in between (a lower bound)
and the ports or counters one side lacks.

Apart from the parser (_ib_counters): a snapshot may be a parse result, its counters mapping or the
tool's text, and mappings from outside (the ib_counter_deltas filter) are checked here entry by
entry. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_names import COUNTER_WIDTHS, _saturated
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import new_result


def _counters_of(value, label, result):
    """The {ca: {port: {name: int}}} mapping inside a parse result, a bare mapping or raw text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        value = parse_ib_counters(value)
    if not isinstance(value, Mapping):
        result["errors"].append("%s: expected a from_ib_counters result, a counters mapping or the tool's "
                                "text, got %s" % (label, type(value).__name__))
        return {}
    if isinstance(value.get("counters"), Mapping):
        for error in value.get("errors") or []:
            result["errors"].append("%s: %s" % (label, error))
        value = value["counters"]
    clean = {}
    for ca, ports in value.items():
        if not isinstance(ports, Mapping):
            result["warnings"].append("%s: %s is not a mapping of ports; ignored" % (label, ca))
            continue
        for port, names in ports.items():
            if not isinstance(names, Mapping):
                result["warnings"].append("%s: %s port %s is not a mapping of counters; ignored" % (label, ca, port))
                continue
            target = clean.setdefault(str(ca), {}).setdefault(str(port), {})
            for name, number in names.items():
                if isinstance(number, bool) or not isinstance(number, int):
                    result["warnings"].append("%s: %s port %s %s is not an integer (%s); ignored"
                                              % (label, ca, port, name, repr(number)[:60]))
                    continue
                target[str(name)] = number
    return clean


def counter_deltas(before, after):
    """Subtract two counter snapshots: ``after - before`` per CA, port and counter.

    ``before`` and ``after`` may each be a parse_ib_counters result, its ``counters`` mapping, or
    the raw text. Returns ``{deltas: {ca: {port: {name: int}}}, resets: ["ca/port/name"],
    saturated: ["ca/port/name"], missing_before: [...], missing_after: [...], errors, warnings}``.
    A counter lower after than before was reset in between: its delta is taken as the after
    value (a lower bound) and it is listed in ``resets`` with a warning. A counter at its maximum
    in ``after`` no longer counts: its delta is a lower bound too (``saturated``).
    """
    result = new_result(deltas={}, resets=[], saturated=[], missing_before=[], missing_after=[])
    old = _counters_of(before, "before", result)
    new = _counters_of(after, "after", result)
    for ca in sorted(new):
        for port in sorted(new[ca]):
            base = old.get(ca, {}).get(port)
            if base is None:
                result["missing_before"].append("%s/%s" % (ca, port))
                result["warnings"].append("%s port %s has no baseline in 'before'; no deltas" % (ca, port))
                continue
            target = result["deltas"].setdefault(ca, {}).setdefault(port, {})
            for name in sorted(new[ca][port]):
                value = new[ca][port][name]
                where = "%s/%s/%s" % (ca, port, name)
                if name not in base:
                    result["missing_before"].append(where)
                    continue
                delta = value - base[name]
                if delta < 0:
                    delta = value
                    result["resets"].append(where)
                    result["warnings"].append("%s port %s: %s went from %d to %d (counters reset?); delta taken as %d"
                                              % (ca, port, name, base[name], value, value))
                if _saturated(name, value, COUNTER_WIDTHS):
                    result["saturated"].append(where)
                    result["warnings"].append("%s port %s: %s is at its maximum (%d); the real increase may be "
                                              "larger than %d" % (ca, port, name, value, delta))
                target[name] = delta
            for name in sorted(base):
                if name not in new[ca][port]:
                    result["missing_after"].append("%s/%s/%s" % (ca, port, name))
    for ca in sorted(old):
        for port in sorted(old[ca]):
            if port not in new.get(ca, {}):
                result["missing_after"].append("%s/%s" % (ca, port))
                result["warnings"].append("%s port %s is in 'before' but not in 'after'" % (ca, port))
    if not old and not new and not result["errors"]:
        result["errors"].append("no counters in either snapshot")
    elif not result["deltas"] and not result["errors"]:
        result["errors"].append("no CA/port in common between 'before' and 'after'")
    return result
