# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a dcgmi diag run covered, as its output proves it: level, GPUs and the lines behind them.

Private to _dcgm_diag: parse_dcgm_diag calls _coverage once the tests are shaped. Standard
library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_common import _GPU_PREFIX
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_levels import (
    LEVEL_TESTS,
    _DEPLOYMENT_KEYS,
    _is_deployment,
    _listed_level,
    _misplaced_errors,
    proven_level,
)


def _json_name_lines(lines):
    """Line number of each '"name" : "X"' in a JSON document, by name, in order."""
    found = {}
    for number, line in enumerate(lines, 1):
        match = re.search(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"', line)
        if match:
            found.setdefault(match.group(1), number)
    return found


def _test_lines(test, lines, names):
    """The row of a test (text), or its name line and the first status after it (JSON)."""
    number = test.get("line")
    if number and 0 < number <= len(lines):
        return [lines[number - 1].strip()]
    number = names.get(test.get("name"))
    if not number or number > len(lines):
        return []
    found = [lines[number - 1].strip()]
    for line in lines[number:number + 12]:
        if '"status"' in line:
            found.append(line.strip())
            break
    return found


def _test_evidence(test, lines, names):
    """The lines a test's verdict rests on: its row(s), GPU rows not passing, message rows."""
    found = _test_lines(test, lines, names)
    numbers = []
    for number in test.get("_gpu_lines") or []:
        row = lines[number - 1] if 0 < number <= len(lines) else ""
        if not re.search(r"\bpass\b", row, re.IGNORECASE):
            numbers.append(number)
    numbers.extend(m["line"] for m in test.get("messages") or []
                   if isinstance(m.get("line"), int) and m.get("level") in ("warning", "error"))
    for number in sorted(set(numbers))[:8]:
        if 0 < number <= len(lines) and lines[number - 1].strip() not in found:
            found.append(lines[number - 1].strip())
    return found


def _level_evidence(tests, level, lines, names):
    """The rows of the tests that prove the level (or show what stops it), highest level first;
    of the deployment tests only the first."""
    wanted = []
    for step in range(min(level or 0, 3) + 1, 0, -1):
        if step == 1:
            wanted.extend([t for t in tests if _is_deployment(t)][:1])
        else:
            keys = LEVEL_TESTS.get(step, ())
            wanted.extend(t for t in tests if t.get("key") in keys)
    evidence = []
    for test in wanted:
        for line in _test_lines(test, lines, names):
            if line not in evidence:
                evidence.append(line)
    return evidence


def _gpu_sets(tests):
    """{test name: GPU ids} for the tests whose results list every GPU they ran on."""
    sets = {}
    for test in tests:
        if test.get("key") in _DEPLOYMENT_KEYS or not test.get("gpu_results"):
            continue
        sets[test["name"]] = set(test["gpu_results"])
    return sets


def _span(ids):
    """'0-7', '0, 2, 3' for a sorted id list."""
    ids = sorted(ids)
    if ids and ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return "%d-%d" % (ids[0], ids[-1])
    return ", ".join(str(i) for i in ids)


def _coverage(result, tests, lines):
    """level_run, level_listed, gpu_ids, gpu_count and their evidence, from the tests themselves."""
    names = _json_name_lines(lines) if result["format"] == "json" else {}
    for test in tests:
        test["evidence"] = _test_evidence(test, lines, names)
    _misplaced_errors(tests, result)
    result["level_run"] = proven_level(tests)
    result["level_listed"] = _listed_level(tests)
    result["level_evidence"] = _level_evidence(
        tests, max(result["level_run"] or 0, result["level_listed"] or 0), lines, names)

    declared = set(result.pop("_declared", set()))
    count = result.pop("_declared_count", None)
    sets = _gpu_sets(tests)
    named = set()
    for test in tests:
        for message in test.get("messages") or []:
            match = _GPU_PREFIX.match(message.get("text") or "")
            if match and message.get("level") in ("warning", "error", "info"):
                named.add(int(match.group(1)))
            if isinstance(message.get("gpu"), int):
                named.add(message["gpu"])
    listed = set().union(*sets.values()) if sets else set()
    reference = declared or listed
    for name, ids in sorted(sets.items()):
        if reference and ids != reference:
            result["errors"].append(
                "test %r reports GPUs %s but the run tested GPUs %s: rows missing or damaged"
                % (name, _span(ids), _span(reference)))
    if declared:
        stray = sorted((listed | named) - declared)
        if stray:
            result["errors"].append("GPU %s named in the results but not among the GPUs of the "
                                    "run (%s)" % (_span(stray), _span(declared)))
        if count is not None and count != len(declared):
            result["errors"].append("the output lists %d GPU device ids but %d GPUs (%s)"
                                    % (count, len(declared), _span(declared)))
    seen = declared or listed or named
    if count is not None and len(seen) > count:
        result["errors"].append("the results name %d GPUs (%s) but the run lists %d GPU device "
                                "ids" % (len(seen), _span(seen), count))
    if declared:
        ids = declared
    elif listed:
        ids = listed | named
    elif named and count is not None and len(named) == count:
        ids = named
    else:
        ids = None
    result["gpu_ids"] = sorted(ids) if ids is not None else None
    result["gpu_count"] = count if count is not None else (len(ids) if ids is not None else None)
    result["gpu_evidence"] = _gpu_evidence(result, tests, lines)
    # The lines the errors point at ("line 49: ..."), as evidence for the error check.
    numbers = [int(m.group(1)) for m in (re.match(r"^line (\d+): ", e) for e in result["errors"])
               if m]
    result["error_lines"] = [lines[n - 1].strip() for n in numbers if 0 < n <= len(lines)
                             and lines[n - 1].strip()][:12]


def _gpu_evidence(result, tests, lines):
    numbers = list(result.pop("_gpu_lines", []))
    for test in tests:
        gpu_lines = test.get("_gpu_lines") or []
        if gpu_lines:
            numbers.extend(gpu_lines)
            break
    if result["format"] == "json":
        pattern = re.compile(r'"(?:gpu_ids?|entity_id|GPU Device IDs|GPU Device Serials)"')
        numbers.extend(n for n, line in enumerate(lines, 1) if pattern.search(line))
    return [lines[n - 1].strip() for n in sorted(set(numbers))[:12] if 0 < n <= len(lines)]
