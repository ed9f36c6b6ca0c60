# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink error counters (``nvidia-smi nvlink -e``) read before and after a traffic stage.

The format (nvidia-smi, Hopper; one block per GPU, a blank line between links on some drivers)::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
             Link 0: Replay Errors: 0
             Link 0: Recovery Errors: 0
             Link 0: CRC Errors: 0

Newer drivers add counters per link ("Rx Errors", "Tx discards", "Link recovery failed events",
...); every ``Link N: <name>: <value>`` line is read, the name normalised to lower-case words
joined by ``_`` (``replay_errors``, ``recovery_errors``, ``crc_errors``, ``rx_errors``). A value
``N/A`` is kept as None. A GPU without NVLink prints its header line only. Any other line is an
error next to what the rest shows (a prompt, a driver message), never instead of it.

judge_nvlink_errors(before, after, profile, during) -> checks ``nvlink.errors``, one per GPU: the
increase of each counter during the stage against ``nvlink.error_limits`` of the profile (a
``recovery_errors`` increase is the link retraining under load, like an InfiniBand flap).
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

TOOL_BEFORE = "nvlink-errors-before"
TOOL_AFTER = "nvlink-errors-after"
_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]+)\))?\s*$")
_LINK = re.compile(r"^Link (\d+): ([A-Za-z][A-Za-z0-9 ./-]*?)\s*: (\S+)\s*$")
_SKIPPED = re.compile(r"^(?:\$ |\[\.\.\.\]$)")


def counter_key(name):
    """'Replay Errors' -> 'replay_errors'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


@capped(8)
def parse_nvlink_errors(text):
    """{gpus: {index: {name, uuid, links: {link: {counter: int|None}}}}, errors, lines}."""
    result = {"gpus": {}, "errors": [], "lines": {}}
    gpu = None
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or _SKIPPED.match(line):
            continue
        match = _GPU.match(line)
        if match:
            gpu = int(match.group(1))
            result["gpus"][gpu] = {"name": match.group(2), "uuid": match.group(3), "links": {}}
            continue
        match = _LINK.match(line)
        if match and gpu is not None:
            value = match.group(3)
            if is_digits(value):
                value = int(value)
            elif value.upper() == "N/A":
                value = None
            else:
                result["errors"].append("line %d: not a counter value: %r" % (number, line[:160]))
                continue
            link = int(match.group(1))
            key = counter_key(match.group(2))
            result["gpus"][gpu]["links"].setdefault(link, {})[key] = value
            result["lines"].setdefault((gpu, link), []).append(line)
            continue
        result["errors"].append("line %d: unexpected line: %r" % (number, line[:160]))
    if not result["gpus"] and not result["errors"]:
        result["errors"].append("no GPU line (GPU N: <name> (UUID: ...)): is this nvidia-smi nvlink -e output?")
    return result


def _snapshot_problem(parsed, label):
    if parsed is None:
        return "%s was not captured" % label
    if not parsed["gpus"]:
        return "%s: %s" % (label, "; ".join(parsed["errors"][:2]))
    return None


def judge_nvlink_errors(before, after, profile, during="the stage"):
    """nvlink.errors results, one per GPU, from two parse_nvlink_errors snapshots around a stage."""
    # Every result names its tool: the stage's other tool (the all-reduce) keeps its own checks.
    limits = profile_get(profile, "nvlink.error_limits") or {}
    if before is None and after is None:
        return [check_result("nvlink.errors", SKIP, "nvidia-smi nvlink -e was not captured around %s: not judged"
                             % during, {}, tool=TOOL_AFTER)]
    results = []
    for parsed, label in ((before, "nvidia-smi nvlink -e before %s" % during),
                          (after, "nvidia-smi nvlink -e after %s" % during)):
        problem = _snapshot_problem(parsed, label)
        if problem:
            return [check_result("nvlink.errors", ERROR, problem, {}, component="nvidia-smi nvlink",
                                 evidence=(parsed or {}).get("errors"), tool=TOOL_AFTER)]
        if parsed["errors"]:  # read what could be read; say what could not
            results.append(check_result("nvlink.parse", ERROR, "%s: %s" % (label, "; ".join(parsed["errors"][:3])),
                                        {"errors": parsed["errors"][:10]}, component="nvidia-smi nvlink",
                                        tool=TOOL_AFTER))
    for index in sorted(set(before["gpus"]) | set(after["gpus"])):
        results.extend(_judge_gpu(index, before["gpus"].get(index), after["gpus"].get(index), after, limits, during))
    return results


def vanished(first, last):
    """What one snapshot read and the other did not: ['link 3 (every counter) after', 'link 4
    replay_errors N/A before', ...]. Both snapshots of a link must show the same readable counters:
    a link that went away or a counter that became unreadable during the stage is not 'no rise'."""
    lost = []
    for link in sorted(set(first["links"]) | set(last["links"])):
        if (link in first["links"]) != (link in last["links"]):
            lost.append("link %d missing %s" % (link, "before" if link not in first["links"] else "after"))
            continue
        old, new = first["links"][link], last["links"][link]
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key), new.get(key)
            if (a is None) != (b is None):
                side, where = (new, "after") if b is None else (old, "before")
                lost.append("link %d %s %s %s" % (link, key, "N/A" if key in side else "missing", where))
    return lost


def _judge_gpu(index, first, last, after, limits, during):
    """[nvlink.errors] for one GPU: its counters' rises, and an error for what one snapshot lost."""
    component = "GPU%d NVLink" % index
    if first is None or last is None:
        return [check_result("nvlink.errors", ERROR, "GPU%d is missing from the %s snapshot" % (
            index, "before" if first is None else "after"), {}, component=component, tool=TOOL_AFTER)]
    if not first["links"] and not last["links"]:
        return [check_result("nvlink.errors", SKIP, "GPU%d (%s) shows no NVLink: not judged" % (index, last["name"]),
                             {"links": 0}, component=component, tool=TOOL_AFTER)]
    lost = vanished(first, last)
    result = _rises(index, first, last, after, limits, during, component)
    if not lost:
        return [result]
    listed = ", ".join(lost[:6]) + (" ..." if len(lost) > 6 else "")
    error = check_result("nvlink.errors", ERROR, "GPU%d: the snapshots around %s do not compare like with like "
                         "(%d link(s) before, %d after): %s" % (index, during, len(first["links"]), len(last["links"]), listed),
                         {"lost": lost[:50]}, component=component, tool=TOOL_AFTER)
    # A rise measured on the links both snapshots read still counts; a pass does not.
    return [error] + ([result] if result["status"] == FAIL else [])


def _rises(index, first, last, after, limits, during, component):
    rises, over, unknown, compared = {}, [], [], 0
    for link in sorted(set(first["links"]) | set(last["links"])):
        old, new = first["links"].get(link) or {}, last["links"].get(link) or {}
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key), new.get(key)
            if a is None or b is None:
                continue
            delta = b - a
            if delta < 0:  # the counters were reset during the stage: the new value is a lower bound
                delta = b
            if delta:
                rises["link %d %s" % (link, key)] = delta
            limit = limits.get(key)
            if key not in limits or limit is None:
                if delta:
                    unknown.append("link %d %s +%d" % (link, key, delta))
                continue
            compared += 1
            if delta > limit:
                over.append((link, key, a, b, delta, limit))
    metrics = {"links": len(last["links"]), "increases": rises}
    if over:
        evidence = []
        for link, _key, _a, _b, _d, _l in over:
            evidence.extend(after["lines"].get((index, link)) or [])
        words = "; ".join("link %d %s rose by %d during %s (%d -> %d, limit %d)" % (link, key.replace("_", " "),
                                                                                    delta, during, a, b, limit)
                          for link, key, a, b, delta, limit in over[:4])
        retrained = any(key == "recovery_errors" for _l, key, _a, _b, _d, _m in over)
        return check_result("nvlink.errors", FAIL, "GPU%d %s%s" % (
            index, words, ": the link retrained under load" if retrained else ""), metrics,
            component=component, evidence=evidence, tool=TOOL_AFTER)
    note = " (not judged: %s)" % ", ".join(unknown[:4]) if unknown else ""
    if not compared:  # every value N/A, or only counters without a limit: nothing was proven
        return check_result("nvlink.errors", SKIP, "GPU%d: none of its %d link(s) shows a counter with a limit "
                            "(%s) in both snapshots: not judged%s" % (
                                index, len(last["links"]), ", ".join(sorted(k for k, v in limits.items() if v is not None)),
                                note), metrics, component=component, tool=TOOL_AFTER)
    return check_result("nvlink.errors", PASS, "GPU%d: no NVLink error counter of %d link(s) rose during %s%s" % (
        index, len(last["links"]), during, note), metrics, component=component, tool=TOOL_AFTER)
