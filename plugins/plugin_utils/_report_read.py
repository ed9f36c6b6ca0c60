# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a results.json for the report: typed look-ups that name the path of what is wrong.

need(obj, key, kinds, path) returns obj[key] when it has one of the kinds ('object',
'number|null', ...) and raises Problem('path: expected ..., got ...') when it does not, or when a
key the schema requires is missing; an optional key that is absent is None. Nothing is defaulted:
the report draws what the document holds or says what is wrong with it. A stage's block the document
does not have is the section's "not_run" or "not_kept" view (_absent), by whether the stage is in
`stages` (stages_of).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import math

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import STATUSES


CHECK_STATUSES = STATUSES


class Problem(ValueError):
    """Something present in the document that the schema does not allow: 'path: what is wrong'."""


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_time(text):
    """A timezone-aware datetime from an ISO 8601 string, else None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if is_number(value):
        return "a number"
    return type(value).__name__


_KINDS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "name": lambda v: isinstance(v, str) and v != "",
    "number": is_number,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_kind(value, kinds, path):
    if not any(_KINDS[k](value) for k in kinds.split("|")):
        raise Problem("%s: expected %s, got %s" % (path, " or ".join(kinds.split("|")), type_name(value)))
    return value


def need(obj, key, kinds, path, required=True):
    """obj[key] checked against kinds ('object', 'number|null', ...); None when optional and absent."""
    if not isinstance(obj, dict):
        raise Problem("%s: expected an object, got %s" % (path or "(document)", type_name(obj)))
    where = "%s/%s" % (path, key) if path else key
    if key not in obj:
        if required:
            raise Problem("%s: missing (the results schema requires it)" % where)
        return None
    return check_kind(obj[key], kinds, where)


def need_enum(obj, key, allowed, path, required=True):
    value = need(obj, key, "string", path, required)
    if value is not None and value not in allowed:
        raise Problem("%s/%s: %r is none of %s" % (path, key, value, ", ".join(allowed)))
    return value


def need_names(obj, key, path, required=True):
    values = need(obj, key, "array", path, required)
    if values is None:
        return None
    for i, value in enumerate(values):
        check_kind(value, "name", "%s/%s/%d" % (path, key, i))
    return values


def need_strings(obj, key, path, required=True):
    values = need(obj, key, "array", path, required)
    if values is None:
        return None
    for i, value in enumerate(values):
        check_kind(value, "string", "%s/%s/%d" % (path, key, i))
    return values


def checks_of(document):
    """`checks`, each checked for the keys the report reads (stage, node, status)."""
    checks = need(document, "checks", "array", "")
    for i, check in enumerate(checks):
        path = "checks/%d" % i
        check_kind(check, "object", path)
        need_enum(check, "status", CHECK_STATUSES, path)
        need(check, "stage", "name", path)
        need(check, "node", "string|null", path)
    return checks


def metric_of(document, stage, check_name, metric):
    """{node: value} of one number in the metrics of the (stage, check) checks, as the judge wrote it."""
    found = {}
    for i, check in enumerate(checks_of(document)):
        if check["stage"] != stage or check.get("check") != check_name or not check.get("node"):
            continue
        metrics = need(check, "metrics", "object", "checks/%d" % i, required=False) or {}
        if metric in metrics:
            found[check["node"]] = check_kind(metrics[metric], "number|null", "checks/%d/metrics/%s" % (i, metric))
    return dict((n, v) for n, v in found.items() if v is not None)


def stages_of(document):
    """The stages that reported, in order (`stages`)."""
    return need_names(document, "stages", "")


def _absent(document, stage, block, what):
    """The view of a block the document does not have: not run, or run and not kept."""
    if stage in stages_of(document):
        checks = [c for c in need(document, "checks", "array", "") if isinstance(c, dict) and c.get("stage") == stage]
        text = "the %s stage ran (%d check(s)) but this results.json has no %s: %s" % (stage, len(checks), block, what)
        return {"state": "not_kept", "text": text}
    return {"state": "not_run", "text": "the %s stage did not run in this run" % stage}
