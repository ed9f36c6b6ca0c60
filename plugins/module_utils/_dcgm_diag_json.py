# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``dcgmi diag -j`` JSON document (DCGM 2.x/3.x and 4.x schemas) read into test records.

Private to _dcgm_diag: parse_dcgm_diag detects the format and calls _parse_json and
_finish_json_tests, then shapes the result. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_common import (
    FAIL,
    SKIP,
    _JSON_START,
    _RUN_LEVEL,
    _SUCCESS,
    _gpu_list,
    _new_test,
    _status_of,
    _to_gpu_id,
    _worst,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_crash_line,
    is_shell_echo,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits


def _strings(value):
    """Message strings from a str, a list of str/dicts, a dict with warning text, or None."""
    found = []
    if value is None:
        return found
    if isinstance(value, str):
        if value.strip():
            found.append(value.strip())
        return found
    if isinstance(value, dict):
        for key in ("warning", "warnings", "info", "msg", "message"):
            item = value.get(key)
            if isinstance(item, str) and item.strip():
                found.append(item.strip())
                return found
        return found
    if isinstance(value, list):
        for item in value:
            found.extend(_strings(item))
    return found


def _json_message_list(value, level):
    messages = []
    if value is None:
        return messages
    items = value if isinstance(value, list) else [value]
    for item in items:
        for text in _strings(item):
            entry = {"level": level, "text": text}
            if isinstance(item, dict) and isinstance(item.get("error_id"), int):
                entry["error_id"] = item["error_id"]
            messages.append(entry)
    return messages


def _json_locate(lines, result):
    """Offset of the JSON document in text, adding any lines printed before it as warnings."""
    offset = 0
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if _JSON_START.match(stripped):
            return offset + (len(raw) - len(raw.lstrip())), number
        if stripped and stripped != _SUCCESS:
            level = _RUN_LEVEL.search(stripped)
            if level:
                if is_digits(level.group(1)) and result["level"] is None:
                    result["level"] = int(level.group(1))
            elif re.match(r"^(Error|ERROR)\b", stripped) or is_crash_line(stripped):
                result["errors"].append("line %d: dcgmi reported: %s" % (number, stripped[:200]))
            elif is_shell_echo(stripped):
                result["warnings"].append("line %d: shell prompt or command echo ignored: %s"
                                          % (number, stripped[:120]))
            else:
                result["warnings"].append("line %d: text before the JSON document: %s"
                                          % (number, stripped[:200]))
        offset += len(raw) + 1
    return None, None


def _decoder(result):
    """A JSON decoder that refuses NaN, Infinity and numbers too large for a float."""
    def constant(name):
        result["errors"].append("the JSON document holds %s: not a value dcgmi writes" % name)

    def number(text):
        value = float(text)
        if math.isnan(value) or math.isinf(value):
            result["errors"].append("the JSON document holds the number %s, too large for a "
                                    "float: implausible value" % text[:40])
            return None
        return value
    return json.JSONDecoder(parse_constant=constant, parse_float=number)


def _parse_json(result, lines):
    normalised = "\n".join(lines)
    start, first_line = _json_locate(lines, result)
    if start is None:
        result["errors"].append("no JSON document found")
        return []
    try:
        document, end = _decoder(result).raw_decode(normalised[start:])
    except ValueError as exc:
        result["errors"].append("line %d: invalid JSON (%s); the output looks truncated or "
                                "is not a dcgmi diag -j document"
                                % (first_line + getattr(exc, "lineno", 1) - 1, exc))
        return []
    trailing = normalised[start + end:].strip()
    for line in trailing.splitlines():
        line = line.strip()
        if re.match(r"^(Error|ERROR)\b", line) or is_crash_line(line):
            result["errors"].append("after the JSON document, dcgmi reported: %s" % line[:200])
        elif line and not is_shell_echo(line):
            result["warnings"].append("text after the JSON document ignored: %s" % line[:200])
    if not isinstance(document, dict):
        result["errors"].append("the JSON document is a %s, not a dcgmi diag object"
                                % type(document).__name__)
        return []

    if isinstance(document.get("iterations"), list):
        tests = []
        merged = {}
        for index, iteration in enumerate(document["iterations"]):
            if not isinstance(iteration, dict):
                result["warnings"].append("iteration %d is not an object; ignored" % index)
                continue
            for test in _parse_json_document(iteration, result):
                key = (test["category"], test["name"])
                if key in merged:
                    _merge_tests(merged[key], test)
                else:
                    merged[key] = test
                    tests.append(test)
        overall = document.get("Overall Result")
        if isinstance(overall, str) and _status_of(overall) == FAIL:
            reason = document.get("Warning")
            result["errors"].append("dcgmi reported the iterations as failed%s"
                                    % ((": %s" % reason) if isinstance(reason, str) else ""))
        result["warnings"].append("%d iterations found; results of the same test were merged"
                                  % len(document["iterations"]))
        return tests
    return _parse_json_document(document, result)


def _merge_tests(into, other):
    into["_statuses"].extend(other["_statuses"])
    for gpu, status in other["gpu_results"].items():
        into["gpu_results"][gpu] = _worst([status, into["gpu_results"].get(gpu, status)])
    seen = set((m["level"], m["text"], m.get("gpu")) for m in into["messages"])
    for message in other["messages"]:
        if (message["level"], message["text"], message.get("gpu")) not in seen:
            into["messages"].append(message)
    into["_summary"] = _worst([s for s in (into["_summary"], other["_summary"]) if s]) or None


def _parse_json_document(document, result):
    diag = None
    schema = None
    for name, version in (("DCGM Diagnostic", 4), ("DCGM GPU Diagnostic", 3)):
        if isinstance(document.get(name), dict):
            diag = document[name]
            schema = version
            break
    if diag is None:
        result["errors"].append("the JSON document has no 'DCGM GPU Diagnostic' or "
                                "'DCGM Diagnostic' object; not a dcgmi diag -j document")
        return []
    result["schema"] = "4.x" if schema == 4 else "3.x"

    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    for key, value in metadata.items():
        if isinstance(value, (str, int, float)):
            result["metadata"][key] = value
    version = metadata.get("version") or document.get("version") or diag.get("version")
    if isinstance(version, str) and version.strip():
        result["dcgm_version"] = version.strip()
    driver = (metadata.get("Driver Version Detected") or document.get("Driver Version Detected")
              or diag.get("Driver Version Detected"))
    if isinstance(driver, str) and driver.strip():
        result["driver_version"] = driver.strip()
    device_ids = document.get("GPU Device IDs")
    if isinstance(device_ids, list):
        result["metadata"]["GPU Device IDs"] = [str(item) for item in device_ids
                                                if isinstance(item, (str, int))]
        # One PCI device id per GPU of the run (JsonOutput::AddGpusAndDriverVersion).
        result["_declared_count"] = max(result.get("_declared_count") or 0,
                                        len(result["metadata"]["GPU Device IDs"]))
    serials = document.get("GPU Device Serials")
    if isinstance(serials, dict):
        for key in serials:
            gpu = _to_gpu_id(key)
            if gpu is not None:
                result["_known"].add(gpu)
                result["_declared"].add(gpu)
    groups = document.get("entity_groups")
    if isinstance(groups, list):
        for group in groups:
            if not isinstance(group, dict):
                continue
            is_gpu = (str(group.get("entity_group", "")).upper() == "GPU"
                      or group.get("entity_group_id") == 1)
            entities = group.get("entities") if isinstance(group.get("entities"), list) else []
            for entity in entities:
                if is_gpu and isinstance(entity, dict):
                    gpu = _to_gpu_id(entity.get("entity_id"))
                    if gpu is not None:
                        result["_known"].add(gpu)
                        result["_declared"].add(gpu)

    runtime_error = diag.get("runtime_error")
    if isinstance(runtime_error, str) and runtime_error.strip():
        result["runtime_error"] = runtime_error.strip()
        result["errors"].append("dcgmi could not run the diagnostic: %s" % runtime_error.strip())

    categories = diag.get("test_categories")
    if categories is None:
        if not result["runtime_error"]:
            result["errors"].append("the JSON document has no test_categories")
        return []
    if not isinstance(categories, list):
        result["errors"].append("test_categories is a %s, not a list"
                                % type(categories).__name__)
        return []

    tests = []
    for cat_index, category in enumerate(categories):
        if not isinstance(category, dict):
            result["warnings"].append("test_categories[%d] is not an object; ignored" % cat_index)
            continue
        category_name = category.get("category")
        category_name = category_name if isinstance(category_name, str) else None
        cat_tests = category.get("tests")
        if cat_tests is None:
            continue
        if not isinstance(cat_tests, list):
            result["errors"].append("category %r: tests is not a list" % category_name)
            continue
        for test_index, entry in enumerate(cat_tests):
            if not isinstance(entry, dict):
                if entry is not None:
                    result["warnings"].append("category %r: tests[%d] is not an object; ignored"
                                              % (category_name, test_index))
                continue
            test = _parse_json_test(entry, category_name, test_index, result)
            if test is not None:
                tests.append(test)
    return tests


def _parse_json_test(entry, category, index, result):
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        result["errors"].append("category %r: tests[%d] has no name" % (category, index))
        name = "tests[%d]" % index
    name = name.strip()
    test = _new_test(name, category, None)
    test.pop("_rows")
    test["_statuses"] = []
    test["_summary"] = None

    results = entry.get("results")
    if results is not None and not isinstance(results, list):
        result["errors"].append("test %r: results is a %s, not a list"
                                % (name, type(results).__name__))
        results = []
    for res_index, item in enumerate(results or []):
        if not isinstance(item, dict):
            if item is not None:
                result["warnings"].append("test %r: results[%d] is not an object; ignored"
                                          % (name, res_index))
            continue
        raw_status = item.get("status")
        status = _status_of(raw_status)
        if status is None:
            result["errors"].append("test %r: results[%d] has %s status %r"
                                    % (name, res_index,
                                       "no" if raw_status is None else "an unrecognised",
                                       raw_status))
            status = FAIL
        if raw_status == "":
            test["messages"].append({"level": "info", "text": "not run"})
        gpus = []
        entity = None
        if "entity_id" in item or "entity_group" in item or "entity_group_id" in item:
            group = item.get("entity_group")
            is_gpu = (isinstance(group, str) and group.upper() == "GPU") or (
                group is None and item.get("entity_group_id") in (1, None))
            entity_id = _to_gpu_id(item.get("entity_id"))
            if is_gpu and entity_id is None and item.get("entity_id") is not None:
                result["errors"].append("test %r: results[%d] has entity_id %r, not a GPU id"
                                        % (name, res_index, item.get("entity_id")))
            if is_gpu and entity_id is not None:
                gpus = [entity_id]
            elif entity_id is not None:
                entity = "%s%d" % (group if isinstance(group, str) else "ENTITY", entity_id)
                test.setdefault("entity_results", {})[entity] = status
        else:
            for key in ("gpu_ids", "gpu_id"):
                if key in item:
                    gpus = _gpu_list(item.get(key))
                    value = item.get(key)
                    given = value if isinstance(value, list) else (
                        [] if value is None else str(value).split(","))
                    if len(gpus) != len([v for v in given if str(v).strip()]):
                        result["errors"].append("test %r: results[%d] has %s %r, not a list of GPU "
                                                "ids" % (name, res_index, key, value))
                    break
        test["_statuses"].append(status)
        for gpu in gpus:
            test["gpu_results"][gpu] = _worst([status, test["gpu_results"].get(gpu, status)])
        gpu = gpus[0] if len(gpus) == 1 else None
        for message in (_json_message_list(item.get("warnings"), "warning")
                        + _json_message_list(item.get("info"), "info")):
            message["gpu"] = gpu
            message["entity"] = entity if entity else (("GPU%d" % gpu) if gpu is not None
                                                       else None)
            test["messages"].append(message)

    summary = entry.get("test_summary")
    if isinstance(summary, dict):
        raw_status = summary.get("status")
        status = _status_of(raw_status)
        if status is None:
            result["errors"].append("test %r: test_summary has %s status %r"
                                    % (name, "no" if raw_status is None else "an unrecognised",
                                       raw_status))
            status = FAIL
        test["_summary"] = status
        for message in (_json_message_list(summary.get("warnings"), "warning")
                        + _json_message_list(summary.get("info"), "info")):
            message["gpu"] = None
            message["entity"] = None
            test["messages"].append(message)
    elif summary is not None:
        result["warnings"].append("test %r: test_summary is not an object; ignored" % name)
    return test


def _finish_json_tests(tests, result):
    for test in tests:
        statuses = test.pop("_statuses")
        summary = test.pop("_summary")
        if summary is not None:
            test["status"] = _worst([summary] + ([FAIL] if FAIL in statuses else []))
        elif statuses:
            test["status"] = _worst(statuses)
        else:
            test["status"] = SKIP
            test["messages"].append({"level": "info", "text": "not run (no results reported)",
                                     "gpu": None, "entity": None})
            result["warnings"].append("test %r reported no results; counted as skipped"
                                      % test["name"])
        test["_scope"] = "listed" if test["gpu_results"] else "none"
