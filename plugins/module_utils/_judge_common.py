# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Building blocks shared by the judges: the check result, robust statistics, peer outliers.

A judge is a pure function from parsed tool output and a hardware profile to a list of check
results. Every result is a dict built by check_result():

    {"check": "gpu.ecc", "status": "fail", "message": "GPU1 has 2 ...", "metrics": {...},
     "component": "GPU1"}

status is one of pass, fail, error, skip. A warning (something a person should look at that
does not fail the node) is a pass whose message starts with "warning:" and whose metrics carry
"warning": True. "error" means the judge could not decide: the input was missing or the parser
reported errors. It is never turned into a pass.

Standard library only: judges may run on managed nodes as well as on the controller.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

# The status vocabulary lives in _status and the statistics in _stats; judges import both from here.
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import (  # noqa: F401  # pylint: disable=unused-import
    ERROR, FAIL, PASS, SKIP, STATUSES, worst_status)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import mad, median, robust_z  # noqa: F401  # pylint: disable=unused-import


# Evidence: at most this many lines of the tool's output, each cut to this many characters.
EVIDENCE_LINES = 12
EVIDENCE_WIDTH = 240


def evidence_lines(lines):
    """The lines that back a verdict, cleaned for the report: strings, stripped, bounded."""
    kept = []
    for line in lines or ():
        text = str(line).rstrip()
        if not text.strip():
            continue
        if len(text) > EVIDENCE_WIDTH:
            text = text[:EVIDENCE_WIDTH - 3] + "..."
        kept.append(text)
        if len(kept) >= EVIDENCE_LINES:
            break
    return kept


def check_result(check, status, message, metrics=None, component=None, evidence=None, tool=None):
    """One check result. Raises ValueError for a status outside pass/fail/error/skip.

    evidence: the lines of the tool's output that show what the verdict rests on (a failure's
    rows, the line that proves the level run); tool: the collected output it judged (a tool name
    of the stage, e.g. 'dmesg') when the stage collects several.
    """
    if status not in STATUSES:
        raise ValueError("check %s: status must be one of %s, got %r"
                         % (check, ", ".join(STATUSES), status))
    result = {
        "check": check,
        "status": status,
        "message": message,
        "metrics": dict(metrics) if metrics else {},
        "component": component,
        "evidence": evidence_lines(evidence),
    }
    if tool:
        result["tool"] = tool
    return result


def warning_result(check, message, metrics=None, component=None, evidence=None, tool=None):
    """A pass that a person should still read: message prefixed 'warning:', metrics warning=True."""
    merged = dict(metrics) if metrics else {}
    merged["warning"] = True
    if not message.startswith("warning:"):
        message = "warning: " + message
    return check_result(check, PASS, message, merged, component, evidence=evidence, tool=tool)


def parse_error_results(check, tool, parsed, required=None):
    """Error results when a parser result is missing, not a dict, has errors or lacks data.

    tool names the command in the message ("nvidia-smi topo -m"); required lists keys that must
    be present and not None. Returns [] when the input is usable.
    """
    if parsed is None:
        return [check_result(check, ERROR, "%s: no output was collected" % tool,
                             {"tool": tool})]
    if not isinstance(parsed, dict):
        return [check_result(check, ERROR, "%s: expected a parsed result (dict), got %s"
                             % (tool, type(parsed).__name__), {"tool": tool})]
    errors = [str(e) for e in (parsed.get("errors") or [])]
    if errors:
        return [check_result(check, ERROR, "%s: output unreadable: %s" % (tool, "; ".join(errors)),
                             {"tool": tool, "errors": errors})]
    missing = [key for key in (required or ()) if parsed.get(key) is None]
    if missing:
        return [check_result(check, ERROR, "%s: parsed output lacks %s"
                             % (tool, ", ".join(missing)), {"tool": tool, "missing": missing})]
    return []


def is_number(value):
    """True for int/float (not bool) that is finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not (math.isnan(value) or math.isinf(value))


def peer_outliers(values_by_node, low_is_bad=True, k=3.5, min_rel_drop=0.10, min_nodes=3):
    """Nodes whose value is far from the cluster median in the bad direction.

    A node is an outlier when both hold:
    - its modified z-score is beyond k in the bad direction (below for low_is_bad), and
    - it differs from the median by at least min_rel_drop (a fraction, 0.10 = 10 %).
    The relative floor keeps a tight, healthy cluster (tiny MAD) from flagging 1 % noise; the
    z-score keeps a noisy cluster from flagging its normal spread.

    Values that are not finite numbers are ignored. With fewer than min_nodes usable values no
    node is flagged (a median of two says nothing). Returns {node: {value, median, mad, z,
    rel_diff}} for the outliers only; rel_diff is the signed fraction (value - median) / median.
    """
    usable = dict((node, value) for node, value in values_by_node.items() if is_number(value))
    if len(usable) < max(min_nodes, 1):
        return {}
    center = median(list(usable.values()))
    spread = mad(list(usable.values()), center)
    outliers = {}
    for node in sorted(usable):
        value = usable[node]
        z = robust_z(value, center, spread)
        if center != 0:
            rel = (value - center) / abs(center)
        else:
            rel = 0.0 if value == 0 else math.copysign(float("inf"), value)
        if low_is_bad:
            bad = z <= -k and rel <= -min_rel_drop
        else:
            bad = z >= k and rel >= min_rel_drop
        if bad:
            outliers[node] = {"value": value, "median": center, "mad": spread, "z": z,
                              "rel_diff": rel}
    return outliers


def fmt_num(value):
    """Short human form of a number: 386, 386.5, 0.25 (no trailing zeros)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if math.isinf(value) or math.isnan(value):
        return str(value)
    if abs(value) >= 100:
        return "%d" % int(round(value))
    text = "%.2f" % value
    text = text.rstrip("0").rstrip(".")
    return text


def join_names(names, limit=8):
    """'GPU1, GPU3 and GPU5'; long lists end with 'and N more'."""
    names = [str(n) for n in names]
    if len(names) > limit:
        shown = names[:limit]
        return "%s and %d more" % (", ".join(shown), len(names) - limit)
    if len(names) <= 1:
        return "".join(names)
    return "%s and %s" % (", ".join(names[:-1]), names[-1])


def profile_get(profile, dotted, default=None):
    """profile['a']['b'] for 'a.b'; default when any level is missing or not a dict."""
    node = profile
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return default if node is None else node
