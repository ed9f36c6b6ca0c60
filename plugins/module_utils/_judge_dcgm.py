# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge a dcgmi diag run (parse_dcgm_diag result) against the profile's DCGM level.

Checks:
- dcgm.parse   output missing or unreadable (the parser's errors), or no tests in it
- dcgm.level   the run level differs from dcgm.level (an error: the run does not prove enough)
- dcgm.test    one result per test: fail names the GPUs and DCGM's details; warn is a pass
               with a warning; skip stays skip
- dcgm.overall the parser's overall verdict when it is fail but no single test failed
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names, parse_error_results, profile_get,
    warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import parse_dcgm_diag

TOOL = "dcgmi diag"
_MAX_DETAIL = 400


def _gpu_names(ids):
    return ["GPU%s" % gpu for gpu in ids]


_GPU_PREFIX = re.compile(r"^GPU\s*(\d+)\b")


def _details(test, bad=()):
    """DCGM's messages for the failed GPUs (and those naming no GPU); other GPUs' info is noise."""
    parts = [str(d).strip() for d in (test.get("details") or []) if str(d).strip()]
    if bad:
        wanted = set(str(g) for g in bad)
        kept = [p for p in parts if not _GPU_PREFIX.match(p) or _GPU_PREFIX.match(p).group(1) in wanted]
        parts = kept or parts
    text = " | ".join(parts)
    if len(text) > _MAX_DETAIL:
        text = text[:_MAX_DETAIL - 3] + "..."
    return text


def _metrics(test):
    gpu_results = test.get("gpu_results") or {}
    return {"test": test.get("name"), "category": test.get("category"),
            "status": test.get("status"), "gpus": list(test.get("gpus") or []),
            "gpu_results": dict((str(k), v) for k, v in gpu_results.items())}


def _fail_result(test):
    name = test.get("name") or test.get("key") or "?"
    gpu_results = test.get("gpu_results") or {}
    bad = sorted(g for g, s in gpu_results.items() if s == "fail") or list(test.get("gpus") or [])
    if bad:
        where = " on %s" % join_names(_gpu_names(bad))
    elif test.get("all_gpus"):
        where = " on all GPUs"
    else:
        where = ""
    message = "%s test '%s' failed%s" % (TOOL, name, where)
    detail = _details(test, bad)
    if detail:
        message += ": %s" % detail
    return check_result("dcgm.test", FAIL, message, dict(_metrics(test), failed_gpus=bad),
                        "dcgm:%s" % (test.get("key") or name))


def judge_dcgm(diag, profile):
    """List of check results for one node's dcgmi diag parse result."""
    failed = parse_error_results("dcgm.parse", TOOL, diag)
    if failed:
        # Unreadable output proves nothing passed, but a failure it does show is still reported.
        if isinstance(diag, dict) and diag.get("runtime_error"):
            failed[0]["message"] = "%s could not run: %s" % (TOOL, diag["runtime_error"])
        if isinstance(diag, dict):
            for test in diag.get("tests") or []:
                if isinstance(test, dict) and test.get("status") == "fail":
                    failed.append(_fail_result(test))
        return failed
    results = []
    tests = diag.get("tests") or []
    if not tests:
        return [check_result("dcgm.parse", ERROR, "%s: the output contains no test results"
                             % TOOL, {"tool": TOOL})]

    expected = profile_get(profile, "dcgm.level")
    level = diag.get("level")
    if expected is not None:
        if level is None:
            results.append(check_result(
                "dcgm.level", ERROR, "%s: the run level is unknown; the profile requires level %d "
                "(pass the level to the parser or echo the dcgmi command)" % (TOOL, expected),
                {"expected": expected}))
        elif level != expected:
            results.append(check_result(
                "dcgm.level", ERROR, "%s ran at level %s, the profile requires level %d"
                % (TOOL, level, expected), {"found": level, "expected": expected}))
        else:
            results.append(check_result("dcgm.level", PASS, "%s ran at level %d" % (TOOL, level),
                                        {"found": level, "expected": expected}))

    any_fail = False
    for test in tests:
        name = test.get("name") or test.get("key") or "?"
        status = test.get("status")
        gpu_results = test.get("gpu_results") or {}
        component = "dcgm:%s" % (test.get("key") or name)
        metrics = _metrics(test)
        detail = _details(test)
        if status == "fail":
            any_fail = True
            results.append(_fail_result(test))
        elif status == "warn":
            message = "%s test '%s' warned" % (TOOL, name)
            warned = sorted(g for g, s in gpu_results.items() if s == "warn")
            if warned:
                message += " on %s" % join_names(_gpu_names(warned))
            if detail:
                message += ": %s" % detail
            results.append(warning_result("dcgm.test", message, metrics, component))
        elif status == "skip":
            results.append(check_result("dcgm.test", SKIP, "%s test '%s' was skipped%s"
                                        % (TOOL, name, (": %s" % detail) if detail else ""),
                                        metrics, component))
        elif status == "pass":
            results.append(check_result("dcgm.test", PASS, "%s test '%s' passed" % (TOOL, name),
                                        metrics, component))
        else:
            results.append(check_result("dcgm.test", ERROR, "%s test '%s' has no readable result"
                                        % (TOOL, name), metrics, component))

    overall = diag.get("overall")
    if overall == "fail" and not any_fail:
        bad = list(diag.get("failed_gpus") or [])
        results.append(check_result(
            "dcgm.overall", FAIL, "%s reports an overall failure%s" % (
                TOOL, " on %s" % join_names(_gpu_names(bad)) if bad else ""),
            {"overall": overall, "failed_gpus": bad}))
    elif overall not in ("pass", "fail", "warn", None) and not any_fail:
        results.append(check_result("dcgm.overall", ERROR, "%s overall result %r is not one of "
                                    "pass/fail" % (TOOL, overall), {"overall": overall}))
    if all(t.get("status") == "skip" for t in tests):
        results.append(check_result("dcgm.overall", ERROR, "%s skipped every test: nothing was "
                                    "checked" % TOOL, {}))
    return results


def judge_dcgm_stage(outputs, profile, options):
    """The dcgm stage: (checks, metrics) from the dcgmi diag output."""
    level = options.get("level")
    diag = parse_dcgm_diag(outputs["dcgmi-diag"], level=int(level) if level else None)
    if level:  # the level the stage ran is the level required, whatever the profile's default
        profile = dict(profile, dcgm=dict(profile.get("dcgm") or {}, level=int(level)))
    return judge_dcgm(diag, profile), {}
