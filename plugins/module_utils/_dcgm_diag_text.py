# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The text table of ``dcgmi diag`` (DCGM 2.x to 4.x layouts) read into test records.

Private to _dcgm_diag: parse_dcgm_diag detects the format and calls _parse_text, then shapes the
result. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_common import (
    FAIL,
    _RUN_LEVEL,
    _SUCCESS,
    _new_test,
    _status_of,
    _worst,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_crash_line,
    is_shell_echo,
    strip_launcher_prefix,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits


# Names that DCGM prints in the Metadata section (and, in some 3.x builds, before Deployment).
_METADATA_NAMES = frozenset((
    "dcgm version", "driver version detected", "gpu device ids detected",
    "gpu device serials detected", "cpu device ids detected", "number of cpus detected",
    "eud test version", "cpu eud test version",
))

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
            if self.result["level"] is None and is_digits(level.group(1)):
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
