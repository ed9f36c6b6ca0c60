# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``dcgmi diag`` output: the text table and the ``-j`` JSON document.

Both layouts of DCGM 3.x and 4.x are recognised, and which one was given is detected from the
text itself:

* text, DCGM 2.x/3.x: one row per test; tests that run per GPU print ``Pass - All``,
  ``Fail - GPU: 1`` or ``Pass - GPUs: 0, 2, 3`` (several rows when GPUs differ); ``Warning`` /
  ``Error`` / ``Info`` rows follow, their text wrapped every 45 characters onto rows whose
  first cell is empty.
* text, DCGM 4.x: one row per test with the test's overall result (``Pass``), then one
  ``GPU0: Pass`` row per entity; messages are ``Warning`` (not tied to a GPU) or
  ``Warning: GPU0`` rows. Test names are the plugin names (``software``, ``pcie``, ...).
* JSON, DCGM 2.x/3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests":
  [{"name", "results": [{"gpu_ids"|"gpu_id", "status", "warnings", "info"}]}]}]}, "version"}``.
* JSON, DCGM 4.x: ``{"DCGM Diagnostic": {"test_categories": [... "results": [{"entity_group",
  "entity_group_id", "entity_id", "status", "warnings", "info"}], "test_summary": {"status"}
  ...]}, "entity_groups": [...], "metadata": {"version", "Driver Version Detected"}}``.

What the run covered is read from the tests themselves, never from the command line:
``level_run`` is the highest level whose tests all ran (LEVEL_TESTS, the suites DCGM 2.x-4.x
build), ``gpu_ids``/``gpu_count`` the GPUs the results, the Metadata device ids, the JSON serials
or entity groups name; results that disagree about the GPUs, or a level test printed under the
wrong section, are ``errors``. Shell prompts, command echoes and srun/mpirun prefixes are dropped
with a warning; ``Error``/crash lines around the output and NaN/Infinity in JSON are ``errors``.

Standard library only. Never raises on odd input: problems become ``errors`` and ``overall`` is
then ``fail``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_crash_line,
    is_shell_echo,
    launcher_prefix,
    lines_of,
    new_result,
    strip_launcher_prefix,
)

PASS = "pass"
FAIL = "fail"
SKIP = "skip"
WARN = "warn"

# Worst first: the status a test gets when its rows or GPUs disagree.
_SEVERITY = {FAIL: 3, WARN: 2, SKIP: 1, PASS: 0}

_STATUS_WORDS = {
    "pass": PASS, "passed": PASS,
    "fail": FAIL, "failed": FAIL,
    "warn": WARN, "warning": WARN, "warned": WARN,
    "skip": SKIP, "skipped": SKIP,
    # DCGM 4.x prints nothing (and JSON carries "") for a test that did not run.
    "": SKIP, "not run": SKIP, "not_run": SKIP, "notrun": SKIP,
}

# Names that DCGM prints in the Metadata section (and, in some 3.x builds, before Deployment).
_METADATA_NAMES = frozenset((
    "dcgm version", "driver version detected", "gpu device ids detected",
    "gpu device serials detected", "cpu device ids detected", "number of cpus detected",
    "eud test version", "cpu eud test version",
))

# Display names (2.x/3.x text and JSON) -> the plugin names DCGM 4.x prints; ``key`` of a test.
_TEST_KEYS = {
    "blacklist": "denylist",
    "denylist": "denylist",
    "nvml library": "nvml_library",
    "cuda main library": "cuda_main_library",
    "cuda toolkit library": "cuda_toolkit_library",
    "permissions and os blocks": "permissions_and_os_blocks",
    "persistence mode": "persistence_mode",
    "environment variables": "environment_variables",
    "page retirement": "page_retirement_row_remap",
    "page retirement/row remap": "page_retirement_row_remap",
    "graphics processes": "graphics_processes",
    "inforom": "inforom",
    "gpu memory": "memory",
    "memory": "memory",
    "context create": "context_create",
    "sm stress": "sm_stress",
    "targeted stress": "targeted_stress",
    "targeted power": "targeted_power",
    "diagnostic": "diagnostic",
    "pcie": "pcie",
    "memory bandwidth": "memory_bandwidth",
    "memtest": "memtest",
    "pulse test": "pulse_test",
    "eud test": "eud",
    "eud": "eud",
    "cpu eud test": "cpu_eud",
    "cpu eud": "cpu_eud",
    "software": "software",
    "nvbandwidth": "nvbandwidth",
}

# Width of the wrapped message chunks DCGM writes into the Result column.
_CHUNK = 45

_SECTION = re.compile(r"^[|+]-{2,}\s+([A-Za-z][A-Za-z0-9 /_]*?)\s+-{2,}[+|]")
_BORDER = re.compile(r"^[+|][-=+|]*$")
# A complete two-column border; a line cut short ("+-----") does not close the table.
_FULL_BORDER = re.compile(r"^\+[-=]{3,}\+[-=]{3,}\+$")
_STATUS_CELL = re.compile(
    r"^(pass|fail|skip|warn)(?:\s*-\s*(?:(all)|gpus?\s*:?\s*(\d+(?:\s*,\s*\d+)*)\s*,?))?\s*$",
    re.IGNORECASE)
_ENTITY_CELL = re.compile(r"^(GPU|CPU|CPU_CORE|NvSwitch|SWITCH|LINK|VGPU|GPU_I|GPU_CI|NONE)"
                          r"\s*(\d+)\s*:\s*([A-Za-z _]*|\S+)$", re.IGNORECASE)
# A per-GPU status row of 2.x/3.x ("Fail - GPU: 1"), whatever its status word.
_STATUS_LIKE = re.compile(r"^\S+\s+-\s+(?:all|gpus?\s*:\s*\d+(?:\s*,\s*\d+)*\s*,?)\s*$",
                          re.IGNORECASE)
_MESSAGE_NAME = re.compile(r"^(Warning|Error|Info)\s*(?::\s*([A-Za-z_]+)\s*(\d+))?\s*$",
                           re.IGNORECASE)
_GPU_MENTION = re.compile(r"\bGPU\s?(\d{1,3})\b")
_GPU_PREFIX = re.compile(r"^\s*GPU\s?(\d{1,3})\b")
_RUN_LEVEL = re.compile(r"\bdcgmi\s+diag\b.*?(?:-r|--run)[\s=]+['\"]?(\S+?)['\"]?(?:\s|$)")
_SUCCESS = "Successfully ran diagnostic for group."
# Where a JSON document starts; "[root@host ~]# dcgmi diag -r 3" is a prompt, not JSON.
_JSON_START = re.compile(r"^(?:\{|\[\s*(?:$|[{\[\]\"\d-]|true|false|null))")


def _status_of(word):
    """Normalised status for a DCGM result word, or None when the word is not one."""
    if word is None:
        return None
    if not isinstance(word, str):
        return None
    return _STATUS_WORDS.get(word.strip().lower())


def _worst(statuses):
    worst = None
    for status in statuses:
        if worst is None or _SEVERITY[status] > _SEVERITY[worst]:
            worst = status
    return worst


def _test_key(name):
    lowered = " ".join(name.lower().split())
    if lowered in _TEST_KEYS:
        return _TEST_KEYS[lowered]
    return re.sub(r"[^a-z0-9]+", "_", lowered).strip("_")


def _to_gpu_id(value):
    """An int GPU id from 3, "3", "GPU3" or "GPU 3"; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        match = re.match(r"^\s*(?:gpu\s*)?(\d{1,6})\s*$", value, re.IGNORECASE)
        if match:
            return int(match.group(1))
    return None


def _gpu_list(value):
    """GPU ids from a gpu_ids value: an int, "0", "0,1,2,3", ["0", 1] or None."""
    if value is None:
        return []
    if isinstance(value, list):
        found = []
        for item in value:
            gpu = _to_gpu_id(item)
            if gpu is not None:
                found.append(gpu)
        return found
    if isinstance(value, str) and "," in value:
        return _gpu_list(value.split(","))
    gpu = _to_gpu_id(value)
    return [] if gpu is None else [gpu]


def _new_test(name, category, line):
    return {
        "name": name,
        "key": _test_key(name),
        "category": category,
        "status": None,
        "gpus": [],
        "all_gpus": False,
        "gpu_results": {},
        "details": [],
        "messages": [],
        "line": line,
        # Working state, removed before the result is returned.
        "_rows": [],
    }


def _empty_result():
    return new_result(
        format=None,
        dcgm_version=None,
        driver_version=None,
        level=None,
        tests=[],
        overall=FAIL,
        failed_gpus=[],
        gpus=[],
        counts={PASS: 0, FAIL: 0, WARN: 0, SKIP: 0},
        metadata={},
        runtime_error=None,
        level_run=None,
        level_listed=None,
        level_evidence=[],
        gpu_ids=None,
        gpu_count=None,
        gpu_evidence=[],
        error_lines=[],
    )


# --------------------------------------------------------------------------------------------
# Text table
# --------------------------------------------------------------------------------------------

class _Message(object):
    """A Warning/Error/Info row and its wrapped continuation rows."""

    def __init__(self, level, entity, line, owner):
        self.level = level
        self.entity = entity  # ("GPU", 0) for DCGM 4.x "Warning: GPU0" rows, else None
        self.line = line
        self.owner = owner
        self.chunks = []

    def add(self, raw_cell):
        content = raw_cell[1:] if raw_cell.startswith(" ") else raw_cell
        if len(content) >= _CHUNK and not content[_CHUNK:].strip():
            # The standard layout: a 45-character chunk padded to the column width. Keep the
            # chunk as is, so words split across rows join back without a stray space.
            self.chunks.append(content[:_CHUNK])
        else:
            self.chunks.append(content.rstrip() + " ")

    def text(self):
        return "".join(self.chunks).strip()


class _TextParser(object):
    """Reads the table line by line; tests are collected in order of first appearance."""

    def __init__(self, result):
        self.result = result
        self.tests = []
        self.by_key = {}
        self.category = None
        self.section = None
        self.test = None
        self.message = None
        self.orphans = []
        self.tables = 0
        self.rows_since_open = 0
        self.open_at = None  # line where the table (or fragment) still open began

    # -- helpers ------------------------------------------------------------------------------
    def _close_message(self):
        message, self.message = self.message, None
        if message is None:
            return
        text = message.text()
        if not text:
            return
        if message.owner is None:
            self.orphans.append((message.level, message.line, text))
            return
        entity = message.entity
        message.owner["messages"].append({
            "level": message.level,
            "gpu": entity[1] if entity and entity[0] == "GPU" else None,
            "entity": ("%s%d" % entity) if entity else None,
            "text": text,
            "line": message.line,
        })

    def _start_message(self, level, entity, line):
        self._close_message()
        self.message = _Message(level, entity, line, self.test)

    def _get_test(self, name, line):
        key = (self.category, name)
        test = self.by_key.get(key)
        if test is None:
            test = _new_test(name, self.category, line)
            self.by_key[key] = test
            self.tests.append(test)
        return test

    def _open(self, number):
        if self.open_at is None:
            self.open_at = number
            self.rows_since_open = 0

    # -- rows ---------------------------------------------------------------------------------
    def row(self, number, name, cell):
        value = cell.strip()
        if name.lower() == "diagnostic" and value.lower() == "result":
            self._close_message()
            self.test = None
            self.tables += 1
            self.open_at = number
            self.rows_since_open = 0
            self.category = None
            self.section = None
            return
        self._open(number)
        self.rows_since_open += 1

        if name and (self.section == "metadata"
                     or (self.category is None and name.lower() in _METADATA_NAMES)):
            self._close_message()
            self.result["metadata"][name] = value
            lowered = name.lower()
            if lowered == "dcgm version":
                self.result["dcgm_version"] = value or None
            elif lowered == "driver version detected":
                self.result["driver_version"] = value or None
            elif lowered == "gpu device ids detected":
                # One PCI device id per GPU of the run (Diag.cpp prints diagResult.devIds).
                self.result["_declared_count"] = len([p for p in value.split(",") if p.strip()])
                self.result["_gpu_lines"].append(number)
            return

        message_name = _MESSAGE_NAME.match(name) if name else None
        if message_name:
            entity = None
            if message_name.group(2):
                entity = (message_name.group(2).upper(), int(message_name.group(3)))
            self._start_message(message_name.group(1).lower(), entity, number)
            self.message.add(cell)
            return

        if name:
            self._close_message()
            self.test = self._get_test(name, number)
            self._status_row(number, self.test, value)
            return

        # An empty first cell: more GPUs of the current test, an entity result, or the next
        # chunk of a wrapped message.
        status_cell = _STATUS_CELL.match(value)
        if status_cell and self.test is not None and (status_cell.group(2)
                                                      or status_cell.group(3)):
            self._close_message()
            self._status_row(number, self.test, value)
            return
        if self.test is not None and _STATUS_LIKE.match(value):
            # "Fxil - GPU: 1": a per-GPU status row whose status word is unknown.
            self._close_message()
            self._status_row(number, self.test, value)
            return
        entity_cell = _ENTITY_CELL.match(value)
        if entity_cell and self.test is not None:
            self._close_message()
            self._entity_row(number, entity_cell)
            return
        if self.message is not None:
            self.message.add(cell)
            return
        if not value:
            return
        if self.test is not None:
            # e.g. "Code: (000000000042)" under a "Warn - All" Diagnostic row.
            self._start_message("info", None, number)
            self.message.add(cell)
            return
        self.result["warnings"].append(
            "line %d: row %r belongs to no test and was ignored" % (number, value))

    def _status_row(self, number, test, value):
        match = _STATUS_CELL.match(value)
        if match is None:
            status = _status_of(value)
            if status is not None:  # "" or "Not Run": DCGM 4.x leaves the cell empty
                test["_rows"].append((status, None, number))
                test["messages"].append({"level": "info", "gpu": None, "entity": None,
                                         "text": "not run", "line": number})
                return
            self.result["errors"].append(
                "line %d: test %r has an unrecognised result %r" % (number, test["name"], value))
            test["_rows"].append((FAIL, None, number))
            return
        status = _status_of(match.group(1))
        if match.group(2):
            test["_rows"].append((status, "all", number))
        elif match.group(3):
            ids = [int(part) for part in re.split(r"\s*,\s*", match.group(3).strip()) if part]
            test["_rows"].append((status, ids, number))
            test.setdefault("_gpu_lines", []).append(number)
            for gpu in ids:
                test["gpu_results"][gpu] = _worst([status, test["gpu_results"].get(gpu, status)])
        else:
            test["_rows"].append((status, None, number))

    def _entity_row(self, number, match):
        kind = match.group(1).upper()
        entity_id = int(match.group(2))
        word = match.group(3).strip()
        status = _status_of(word)
        if status is None:
            self.result["errors"].append(
                "line %d: test %r reports an unrecognised result %r for %s%d"
                % (number, self.test["name"], word, kind, entity_id))
            status = FAIL
        if kind == "GPU":
            previous = self.test["gpu_results"].get(entity_id, status)
            self.test["gpu_results"][entity_id] = _worst([status, previous])
            self.test["_entity_rows"] = True
            self.test.setdefault("_gpu_lines", []).append(number)
        else:
            self.test.setdefault("entity_results", {})["%s%d" % (kind, entity_id)] = status

    # -- lines --------------------------------------------------------------------------------
    def line(self, number, raw):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            return
        if line.startswith("|") or line.startswith("+"):
            section = _SECTION.match(line)
            if section:
                self._close_message()
                self.test = None
                self._open(number)
                name = section.group(1).strip()
                if name.lower() == "metadata":
                    self.section = "metadata"
                    self.category = None
                else:
                    self.section = "tests"
                    self.category = name
                return
            if _BORDER.match(line):
                if (self.open_at is not None and self.rows_since_open > 0
                        and _FULL_BORDER.match(line)):
                    # The closing border of a table: whatever follows is a new table.
                    self._close_message()
                    self.test = None
                    self.open_at = None
                return
            if line.startswith("|"):
                body = line[1:]
                if body.endswith("|"):
                    body = body[:-1]
                if "|" not in body:
                    self.result["warnings"].append(
                        "line %d: table row without a column separator ignored: %r"
                        % (number, line[:80]))
                    return
                name, cell = body.split("|", 1)
                self.row(number, name.strip(), cell)
            return
        level = _RUN_LEVEL.search(line)
        if level:
            if self.result["level"] is None and level.group(1).isdigit():
                self.result["level"] = int(level.group(1))
            return
        if line == _SUCCESS:
            return
        echo = is_shell_echo(line)
        if echo and self.open_at is None:
            self.result["warnings"].append("line %d: shell prompt or command echo ignored: %s"
                                           % (number, line[:120]))
            return
        if self.open_at is not None:
            # Text inside a table that is not a row: the table was cut off before this line.
            self._close_message()
            self.test = None
            self.result["errors"].append(
                "line %d: the result table that began on line %d is cut off (no closing "
                "border before this text)" % (number, self.open_at))
            self.open_at = None
        if re.match(r"^(Error|ERROR)\b", line) or line.startswith("Aborting the iterative runs") \
                or is_crash_line(line):
            self.result["errors"].append("line %d: dcgmi reported: %s" % (number, line))

    def finish(self, last_line):
        self._close_message()
        result = self.result
        if self.tables == 0 and self.tests:
            result["warnings"].append(
                "no 'Diagnostic | Result' header: parsed a fragment of a dcgmi diag table")
        if self.open_at is not None:
            result["errors"].append(
                "line %d: the result table that began on line %d ends without its closing "
                "border; the output looks truncated" % (last_line, self.open_at))
        if self.tables > 1:
            result["warnings"].append(
                "%d result tables found (iterations?); results of the same test were merged"
                % self.tables)
        for level, number, text in self.orphans:
            if level == "error":
                result["errors"].append(
                    "line %d: DCGM reported an error outside any test: %s" % (number, text))
            else:
                result["warnings"].append(
                    "line %d: DCGM %s outside any test: %s" % (number, level, text))
        return self.tests


def _parse_text(result, lines):
    parser = _TextParser(result)
    number = 0
    for number, raw in enumerate(lines, 1):
        parser.line(number, raw)
    tests = parser.finish(number)
    for test in tests:
        rows = test.pop("_rows")
        entity_rows = test.pop("_entity_rows", False)
        statuses = [row[0] for row in rows]
        test["status"] = _worst(statuses) if statuses else None
        if test["status"] is None:
            result["errors"].append("line %d: test %r has no result" % (test["line"], test["name"]))
            test["status"] = FAIL
        listed = [row for row in rows if isinstance(row[1], list)]
        all_statuses = set(row[0] for row in rows if row[1] == "all")
        if all_statuses and (test["status"] in all_statuses or not listed):
            test["_scope"] = "all"
        elif listed or entity_rows:
            test["_scope"] = "listed"
        else:
            test["_scope"] = "none"
    return tests


# --------------------------------------------------------------------------------------------
# JSON document
# --------------------------------------------------------------------------------------------

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
                if level.group(1).isdigit() and result["level"] is None:
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


# --------------------------------------------------------------------------------------------
# Shared finishing: gpus, details, failed GPUs, overall
# --------------------------------------------------------------------------------------------

def _detail_string(message):
    text = message["text"]
    gpu = message.get("gpu")
    entity = message.get("entity")
    if gpu is not None and not _GPU_PREFIX.match(text):
        return "GPU %d: %s" % (gpu, text)
    if gpu is None and entity and not text.startswith(entity):
        return "%s: %s" % (entity, text)
    return text


def _finish(tests, result):
    known = result.pop("_known")
    for test in tests:
        known.update(test["gpu_results"])
        for message in test["messages"]:
            # DCGM 3.x starts every per-GPU message with "GPU <id>".
            match = _GPU_PREFIX.match(message["text"])
            if match and message["level"] in ("warning", "error", "info"):
                known.add(int(match.group(1)))
            if message.get("gpu") is not None:
                known.add(message["gpu"])
    for test in tests:
        details = test["details"]
        for message in test["messages"]:
            message.setdefault("gpu", None)
            message.setdefault("entity", None)
            details.append(_detail_string(message))
        scope = test.pop("_scope")
        status = test["status"]
        prefixed = set()
        mentioned = set()
        for message in test["messages"]:
            if message["level"] in ("warning", "error", "info"):
                match = _GPU_PREFIX.match(message["text"])
                if match:
                    prefixed.add(int(match.group(1)))
                if message["level"] in ("warning", "error"):
                    for gpu in _GPU_MENTION.findall(message["text"]):
                        mentioned.add(int(gpu))
            if message.get("gpu") is not None:
                prefixed.add(message["gpu"])
        if scope == "all":
            test["all_gpus"] = True
            test["gpus"] = sorted(known | prefixed)
        elif scope == "listed":
            matching = sorted(gpu for gpu, gpu_status in test["gpu_results"].items()
                              if gpu_status == status)
            test["gpus"] = matching
            test["all_gpus"] = bool(matching) and set(matching) >= known
        else:
            if status in (FAIL, WARN) and mentioned:
                test["gpus"] = sorted(mentioned)
                test["all_gpus"] = False
            else:
                test["gpus"] = sorted(known)
                test["all_gpus"] = True
        test["gpu_results"] = dict(sorted(test["gpu_results"].items()))
        result["counts"][status] += 1

    failed = set()
    for test in tests:
        failed.update(gpu for gpu, status in test["gpu_results"].items() if status == FAIL)
        if test["status"] == FAIL:
            failed.update(test["gpus"])
    result["failed_gpus"] = sorted(failed)
    for test in tests:
        known.update(test["gpus"])
    result["gpus"] = sorted(known)
    result["tests"] = tests

    if not tests:
        if not result["errors"]:
            result["errors"].append("no test results found: not a dcgmi diag output, or it was "
                                    "cut off before the first test")
        result["overall"] = FAIL
    elif result["errors"]:
        result["overall"] = FAIL
    elif any(test["status"] == FAIL for test in tests):
        result["overall"] = FAIL
    elif all(test["status"] == SKIP for test in tests):
        result["warnings"].append("every test was skipped: the diagnostic verified nothing")
        result["overall"] = FAIL
    else:
        result["overall"] = PASS


# --------------------------------------------------------------------------------------------
# What the run covered: the level and the GPUs, as the output proves them
# --------------------------------------------------------------------------------------------

# The tests each dcgmi diag level adds, by test key, as NvidiaValidationSuite::FillTestVectors
# (nvvs/src/NvidiaValidationSuite.cpp, DCGM v2.1.4 to v4.6.0) builds the suites: level 1 runs
# the deployment (software) tests only; 2 adds memory and pcie; 3 adds diagnostic,
# memory_bandwidth, targeted_stress and targeted_power; 4 (2.4 on) adds memtest and pulse_test.
# A level is proven when every one of its tests, and of the levels below, ran (passed, warned or
# failed): a skipped or absent test proves nothing.
LEVEL_TESTS = {
    2: ("memory", "pcie"),
    3: ("diagnostic", "memory_bandwidth", "targeted_stress", "targeted_power"),
    4: ("memtest", "pulse_test"),
}
# Level-3 tests some runs add and others lack (2.x sm_stress; eud and cpu_eud only as root;
# nvbandwidth since 4.0; nccl_tests and rist where installed): they prove nothing on their own.
LEVEL_OPTIONAL_TESTS = {3: ("sm_stress", "eud", "cpu_eud", "nvbandwidth", "nccl_tests", "rist")}
LEVEL_NAMES = {
    1: "Deployment tests only",
    2: "deployment, memory and PCIe tests",
    3: "deployment, memory, PCIe, diagnostic and stress tests",
    4: "deployment, memory, PCIe, diagnostic, stress, memtest and pulse tests",
}
# 2.x/3.x deployment tests: run once for the node, their results name no GPU (or only the one a
# failure is about), so they say nothing about which GPUs were tested. 4.x has 'software'.
_DEPLOYMENT_KEYS = frozenset((
    "denylist", "nvml_library", "cuda_main_library", "cuda_toolkit_library",
    "permissions_and_os_blocks", "permissions_and_os_related_blocks", "persistence_mode",
    "environment_variables", "environmental_variables", "page_retirement_row_remap",
    "graphics_processes", "inforom", "fabric_manager"))
_RAN = (PASS, WARN, FAIL)
# Where dcgmi prints each of those tests (Diag.cpp DISPLAY_HARDWARE/INTEGRATION/STRESS in 2.x and
# 3.x; the plugin's test class in 4.x, which moved memtest to Hardware). A test under another
# section is a damaged or edited output and proves nothing.
_CATEGORIES = {
    "memory": ("hardware",), "diagnostic": ("hardware",), "pulse_test": ("hardware",),
    "pcie": ("integration",), "memory_bandwidth": ("stress",), "targeted_stress": ("stress",),
    "targeted_power": ("stress",), "memtest": ("stress", "hardware"),
}


def _is_deployment(test):
    return test.get("key") in _DEPLOYMENT_KEYS or test.get("key") == "software" \
        or str(test.get("category") or "").lower() == "deployment"


def level_gaps(tests, level):
    """[(level, test key, 'missing'|'skipped')] keeping the output from proving ``level``.

    Level 1 needs one deployment test that ran; every higher level needs each of its
    LEVEL_TESTS to have run (the tests of the levels below included).
    """
    gaps = []
    tests = [t for t in tests or [] if isinstance(t, dict)]
    for step in range(1, (level or 0) + 1):
        if step == 1:
            deployment = [t for t in tests if _is_deployment(t)]
            if not any(t.get("status") in _RAN for t in deployment):
                gaps.append((1, "deployment", "skipped" if deployment else "missing"))
            continue
        for key in LEVEL_TESTS.get(step, ()):
            found = [t for t in tests if t.get("key") == key]
            placed = [t for t in found if _in_place(t)]
            if not found:
                gaps.append((step, key, "missing"))
            elif not placed:
                gaps.append((step, key, "misplaced"))
            elif not any(t.get("status") in _RAN for t in placed):
                gaps.append((step, key, "skipped"))
    return gaps


def _in_place(test):
    """Whether a level test sits in the section dcgmi prints it in."""
    allowed = _CATEGORIES.get(test.get("key"))
    return allowed is None or str(test.get("category") or "").lower() in allowed


def _misplaced_errors(tests, result):
    for test in tests:
        if test.get("category") and not _in_place(test):
            result["errors"].append(
                "test %r is listed under %s, dcgmi prints it under %s: the output is damaged"
                % (test["name"], test["category"],
                   " or ".join(c.title() for c in _CATEGORIES[test["key"]])))


def proven_level(tests):
    """The highest level (1-4) whose tests all ran, or None when not even level 1 did."""
    proven = None
    for level in (1, 2, 3, 4):
        if [gap for gap in level_gaps(tests, level) if gap[0] == level]:
            break
        proven = level
    return proven


def _listed_level(tests):
    """The highest level any test in the output belongs to (ran or not): what was asked for."""
    listed = None
    keys = set(t.get("key") for t in tests)
    if any(_is_deployment(t) for t in tests):
        listed = 1
    for level in (2, 3, 4):
        if keys & set(LEVEL_TESTS[level] + LEVEL_OPTIONAL_TESTS.get(level, ())):
            listed = level
    return listed


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


def _without_prefixes(lines, result):
    """The lines without srun --label / mpirun --tag-output prefixes (a warning says how many)."""
    clean, prefixed = [], 0
    for raw in lines:
        prefix = launcher_prefix(raw)
        if prefix:
            prefixed += 1
        clean.append(raw[len(prefix):])
    if prefixed:
        result["warnings"].append("launcher prefixes removed from %d lines" % prefixed)
    return clean


def _detect_format(lines):
    for raw in lines:
        stripped = strip_launcher_prefix(raw).strip()
        if _JSON_START.match(stripped):
            return "json"
        if stripped.startswith("|") or stripped.startswith("+-") or stripped.startswith("+="):
            return "text"
    return "text"


def parse_dcgm_diag(text, level=None):
    """Parse ``dcgmi diag`` output (text table or ``-j`` JSON, DCGM 2.x to 4.x).

    ``level`` is the run level the caller asked for (``-r N``); when omitted it is taken from
    an echoed ``dcgmi diag -r N`` command line, if the output contains one.

    Returns a dict with ``tests`` (each with ``name``, ``key``, ``category``, ``status``,
    ``gpus``, ``all_gpus``, ``gpu_results``, ``details``, ``messages``, ``line``), ``overall``
    (``pass`` only when there are tests, none failed, not all were skipped and nothing could
    not be parsed), ``failed_gpus``, ``gpus`` (GPU ids seen), ``counts``, ``format``,
    ``dcgm_version``, ``driver_version``, ``level`` (requested, not proof), ``metadata``,
    ``runtime_error``, ``level_run`` / ``level_listed`` / ``level_evidence`` (the level the
    tests prove, the level of any listed test, the lines behind it), ``gpu_ids`` / ``gpu_count``
    / ``gpu_evidence`` (the GPUs tested; None when the output does not show them), ``evidence``
    per test, ``error_lines``, ``errors`` and ``warnings``.
    """
    result = _empty_result()
    result.update(_known=set(), _declared=set(), _declared_count=None, _gpu_lines=[])
    try:
        if level is not None:
            try:
                result["level"] = int(str(level).strip())
            except ValueError:
                result["warnings"].append("level %r is not a number; ignored" % (level,))
        if text is None or not text.strip():
            for key in [k for k in result if k.startswith("_")]:
                result.pop(key)
            result["errors"].append("empty input: no dcgmi diag output to parse")
            return result
        lines = _without_prefixes(lines_of(text.lstrip("\ufeff")), result)
        result["format"] = _detect_format(lines)
        if result["format"] == "json":
            tests = _parse_json(result, lines)
            _finish_json_tests(tests, result)
        else:
            tests = _parse_text(result, lines)
        _finish(tests, result)
        _coverage(result, tests, lines)
        if result["errors"]:
            result["overall"] = FAIL
    except Exception as exc:  # pylint: disable=broad-except
        # A parser bug must not take the play down with a traceback: report it instead.
        result["errors"].append("internal parser error (%s: %s); please report it with the input"
                                % (type(exc).__name__, exc))
        result["overall"] = FAIL
    for key in [k for k in result if k.startswith("_")]:
        result.pop(key)
    for test in result["tests"]:
        for key in [k for k in test if k.startswith("_")]:
            test.pop(key)
    return result
