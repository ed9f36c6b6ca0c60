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

This module detects the format and shapes the result; the parts live next to it:
_dcgm_diag_text (the table), _dcgm_diag_json (the -j document), _dcgm_diag_levels (the tests of
each level, which level the tests prove), _dcgm_diag_coverage (the level and GPUs the output
proves, with the lines behind them) and _dcgm_diag_common (status words, test keys, GPU ids).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_common import (
    FAIL,
    PASS,
    SKIP,
    WARN,
    _GPU_PREFIX,
    _JSON_START,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_coverage import _coverage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_json import _finish_json_tests, _parse_json
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_levels import (
    LEVEL_NAMES,
    LEVEL_OPTIONAL_TESTS,
    LEVEL_TESTS,
    level_gaps,
    proven_level,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_text import _parse_text
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    launcher_prefix,
    lines_of,
    new_result,
    strip_launcher_prefix,
)

# The interface other modules import from here (the levels live in _dcgm_diag_levels).
__all__ = ["FAIL", "LEVEL_NAMES", "LEVEL_OPTIONAL_TESTS", "LEVEL_TESTS", "PASS", "SKIP", "WARN",
           "level_gaps", "parse_dcgm_diag", "proven_level"]


_GPU_MENTION = re.compile(r"\bGPU\s?(\d{1,3})\b")


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


@capped(16)
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
