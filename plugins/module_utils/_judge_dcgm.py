# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge a dcgmi diag run (parse_dcgm_diag result) against the level and GPUs the node needs.

Checks (each with evidence: the output lines it rests on):
- dcgm.parse   output missing, or parts of it unreadable (the parser's errors); reported next to
               the findings of the readable rest
- dcgm.level   the level and GPUs the output proves (the tests that ran, the GPUs they ran on),
               not the configured ones: fail when the level is below the required one (the
               stage option ``level``, else dcgm.level) or fewer GPUs than gpus_per_node were
               tested; error when the output does not show the level or the GPUs, or names a
               GPU id the node cannot have
- dcgm.test    one result per test that did not simply pass: fail names the GPUs and DCGM's
               details; warn is a pass with a warning; skip stays skip
- dcgm.tests   the tests that passed on every GPU, in one result (by name and category)
- dcgm.overall the parser's overall verdict when it is fail but no single test failed
A finding (fail) is reported even when other parts of the output are unreadable; a pass only
when the output was read whole.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, is_number, join_names, profile_get, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    LEVEL_NAMES, level_gaps, parse_dcgm_diag)

TOOL = "dcgmi diag"
_MAX_DETAIL = 400


def _gpu_names(ids):
    return ["GPU%s" % gpu for gpu in ids]


_GPU_PREFIX = re.compile(r"^GPU\s*(\d+)\b")
# Parser errors that quote the output line they are about.
_QUOTED = re.compile(r"^(?:line \d+: |after the JSON document, )(?:dcgmi reported: |DCGM reported an "
                     r"error outside any test: )(.*)$")


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
    if test.get("status") in ("pass", "skip") and all(v == test.get("status") for v in gpu_results.values()):
        # A pass needs no per-GPU table (the level check names the GPUs tested): at thousands of
        # nodes these would be most of results.json.
        return {"test": test.get("name"), "category": test.get("category"), "status": test.get("status"),
                "gpus": list(test.get("gpus") or [])}
    return {"test": test.get("name"), "category": test.get("category"),
            "status": test.get("status"), "gpus": list(test.get("gpus") or []),
            "gpu_results": dict((str(k), v) for k, v in gpu_results.items())}


def _evidence(diag, test):
    """The test's rows (text output) or its name and status lines (JSON), as the parser kept them."""
    return [str(line) for line in test.get("evidence") or []]


def _fail_result(diag, test):
    name = test.get("name") or test.get("key") or "?"
    gpu_results = test.get("gpu_results") or {}
    bad = sorted(g for g, s in gpu_results.items() if s == "fail")
    listed = list(test.get("gpus") or [])
    count = diag.get("gpu_count")
    if not bad and test.get("all_gpus") and (not listed or (is_number(count) and len(listed) < count)):
        # "Fail - All" where the GPUs are not all listed (a message names one of them): every
        # GPU the run tested failed, not the one a message happens to name.
        bad = list(diag.get("gpu_ids") or [])
        where = " on all %s GPUs" % count if is_number(count) else " on all GPUs"
    else:
        bad = bad or list(test.get("gpus") or [])
        where = " on %s" % join_names(_gpu_names(bad)) if bad else ""
    message = "%s test '%s' failed%s" % (TOOL, name, where)
    detail = _details(test, bad)
    if detail:
        message += ": %s" % detail
    return check_result("dcgm.test", FAIL, message, dict(_metrics(test), failed_gpus=bad),
                        "dcgm:%s" % (test.get("key") or name),
                        evidence=_evidence(diag, test))


def _passed_result(passed):
    """One result for every test that passed on all its GPUs (a failure, warning or skip has its
    own): the tests by name and category. Per test and GPU these would be most of a large
    cluster's results, and say no more than this."""
    names = [t.get("name") or t.get("key") or "?" for t, _e in passed]
    categories, gpus = {}, set()
    for test, _evidence in passed:
        category = test.get("category") or "?"
        categories[category] = categories.get(category, 0) + 1
        gpus.update(test.get("gpus") or [])
    evidence = [line for _t, lines in passed for line in lines[:1]]
    message = "%s: %d test(s) passed (%s): %s" % (
        TOOL, len(passed), ", ".join("%s %d" % kv for kv in sorted(categories.items())), join_names(names, limit=6))
    metrics = {"passed": names, "categories": categories, "gpus": sorted(gpus)}
    return check_result("dcgm.tests", PASS, message, metrics, evidence=evidence)


def _ids_text(ids):
    ids = sorted(ids)
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return "%d-%d" % (ids[0], ids[-1])
    return ", ".join(str(i) for i in ids)


def _found_text(level, count, ids):
    """'level 1 (Deployment tests only) on 4 GPUs (0-3)' from what the output proved."""
    parts = []
    if level is None:
        parts.append("no proven level")
    else:
        parts.append("level %d (%s)" % (level, LEVEL_NAMES.get(level, "?")))
    if count is None:
        parts.append("on GPUs the output does not show")
    else:
        parts.append("on %d GPU%s (%s)" % (count, "" if count == 1 else "s",
                                           _ids_text(ids) if ids else "ids not shown"))
    return " ".join(parts)


def _gaps_text(tests, level):
    gaps = level_gaps(tests, level)
    parts = []
    for why, text in (("missing", "not in the output"), ("skipped", "skipped"),
                      ("misplaced", "under the wrong section")):
        keys = [key for _lvl, key, kind in gaps if kind == why]
        if keys:
            parts.append("%s %s" % (join_names(keys), text))
    return "; ".join(parts)


def judge_level(diag, required_level, required_gpus):
    """The dcgm.level check: level and GPUs proven by the output vs the ones required."""
    tests = [t for t in diag.get("tests") or [] if isinstance(t, dict)]
    level = diag.get("level_run")
    count = diag.get("gpu_count")
    ids = diag.get("gpu_ids") if isinstance(diag.get("gpu_ids"), list) else None
    level = level if is_number(level) else None
    count = count if is_number(count) else None
    metrics = {"found": level, "expected": required_level, "gpu_count": count, "gpu_ids": ids,
               "gpus_expected": required_gpus, "listed": diag.get("level_listed"),
               "requested": diag.get("level")}
    evidence = list(diag.get("level_evidence") or []) + list(diag.get("gpu_evidence") or [])
    found = _found_text(level, count, ids)
    need = []
    if required_level is not None:
        need.append("level %d" % required_level)
    if required_gpus is not None:
        need.append("on %d GPUs" % required_gpus)
    required = "the profile requires %s" % " ".join(need) if need else ""
    problems = []
    if level is None:
        problems.append("the output does not show which tests ran (no deployment test result)")
    if count is None:
        problems.append("the output does not show which GPUs were tested (no per-GPU results, "
                        "GPU list or device ids)")
    if required_gpus is not None and ids:
        beyond = [gpu for gpu in ids if gpu >= required_gpus]
        if beyond:
            problems.append("GPU id %s is beyond the %d GPUs of the node: implausible output"
                            % (_ids_text(beyond), required_gpus))
    if required_gpus is not None and count is not None and count > required_gpus:
        problems.append("%s GPUs tested, more than the %s of the node: implausible output"
                        % (count, required_gpus))
    if problems:
        return check_result("dcgm.level", ERROR, "%s ran %s: %s%s" % (
            TOOL, found, "; ".join(problems), "; %s" % required if required else ""),
            metrics, evidence=evidence)
    short_level = required_level is not None and level < required_level
    short_gpus = required_gpus is not None and count < required_gpus
    if short_level or short_gpus:
        why = ""
        if short_level:
            gaps = _gaps_text(tests, required_level)
            if gaps:
                why = " (for level %d, %s)" % (required_level, gaps)
        return check_result("dcgm.level", FAIL, "%s ran %s%s; %s" % (TOOL, found, why, required),
                            metrics, evidence=evidence)
    ran = len([t for t in tests if t.get("status") in ("pass", "warn", "fail")])
    return check_result("dcgm.level", PASS, "%s ran %s, %d tests ran%s" % (
        TOOL, found, ran, "; %s" % required if required else ""), metrics, evidence=evidence)


def _parse_problem(diag):
    """The dcgm.parse error for the parser's errors, or None."""
    errors = [str(e) for e in diag.get("errors") or []]
    if not errors:
        return None
    quoted = [match.group(1) for match in (_QUOTED.match(e) for e in errors) if match]
    if diag.get("runtime_error"):
        message = "%s could not run: %s" % (TOOL, diag["runtime_error"])
    elif quoted and len(quoted) == len(errors) and not diag.get("tests"):
        # Every problem is dcgmi's own error and no test ran: it refused to run, in its words.
        message = "%s did not run: %s" % (TOOL, "; ".join(quoted))
    else:
        message = "%s: output unreadable: %s" % (TOOL, "; ".join(errors))
    lines = quoted + [line for line in diag.get("error_lines") or [] if line not in quoted]
    return check_result("dcgm.parse", ERROR, message, {"tool": TOOL, "errors": errors},
                        evidence=lines)


def judge_dcgm(diag, profile, level=None):
    """List of check results for one node's dcgmi diag parse result.

    level: the level the stage requires (the stage option); None: the profile's dcgm.level.
    """
    if diag is None:
        return [check_result("dcgm.parse", ERROR, "%s: no output was collected" % TOOL,
                             {"tool": TOOL})]
    if not isinstance(diag, dict):
        return [check_result("dcgm.parse", ERROR, "%s: expected a parsed result (dict), got %s"
                             % (TOOL, type(diag).__name__), {"tool": TOOL})]
    results = []
    unreadable = _parse_problem(diag)
    if unreadable:
        results.append(unreadable)
    complete = unreadable is None
    tests = [t for t in diag.get("tests") or [] if isinstance(t, dict)]
    if not tests:
        if complete:
            results.append(check_result("dcgm.parse", ERROR, "%s: the output contains no test "
                                        "results" % TOOL, {"tool": TOOL}))
        return results

    required = level if level is not None else profile_get(profile, "dcgm.level")
    check = judge_level(diag, required, profile_get(profile, "gpus_per_node"))
    if complete or check["status"] != PASS:
        results.append(check)

    any_fail = False
    passed = []
    for test in tests:
        name = test.get("name") or test.get("key") or "?"
        status = test.get("status")
        gpu_results = test.get("gpu_results") or {}
        component = "dcgm:%s" % (test.get("key") or name)
        metrics = _metrics(test)
        detail = _details(test)
        evidence = _evidence(diag, test)
        if status == "fail":
            any_fail = True
            results.append(_fail_result(diag, test))
        elif not complete:
            continue   # from a damaged output only the failures count
        elif status == "warn":
            message = "%s test '%s' warned" % (TOOL, name)
            warned = sorted(g for g, s in gpu_results.items() if s == "warn")
            if warned:
                message += " on %s" % join_names(_gpu_names(warned))
            if detail:
                message += ": %s" % detail
            results.append(warning_result("dcgm.test", message, metrics, component,
                                          evidence=evidence))
        elif status == "skip":
            results.append(check_result("dcgm.test", SKIP, "%s test '%s' was skipped%s"
                                        % (TOOL, name, (": %s" % detail) if detail else ""),
                                        metrics, component, evidence=evidence))
        elif status == "pass":
            passed.append((test, evidence))
        else:
            results.append(check_result("dcgm.test", ERROR, "%s test '%s' has no readable result"
                                        % (TOOL, name), metrics, component, evidence=evidence))

    if passed:
        results.append(_passed_result(passed))
    overall = diag.get("overall")
    if overall == "fail" and not any_fail and complete:
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
    """The dcgm stage: (checks, metrics) from the dcgmi diag output.

    metrics: level (the level the output proves), gpu_count and gpu_ids (the GPUs dcgmi tested),
    None where the output does not show them.
    """
    text = outputs.get("dcgmi-diag")
    if text is None:
        return [check_result("dcgm.parse", SKIP, "dcgmi-diag was not captured: the DCGM "
                             "diagnostic not judged", tool="dcgmi-diag")], {}
    level = options.get("level")
    try:
        level = int(level) if level not in (None, "") else None
    except (TypeError, ValueError):
        return [check_result("dcgm.level", ERROR, "the stage option level %r is not a number"
                             % (level,))], {}
    diag = parse_dcgm_diag(text, level=level)
    metrics = {"level": diag.get("level_run"), "gpu_count": diag.get("gpu_count"),
               "gpu_ids": diag.get("gpu_ids")}
    return judge_dcgm(diag, profile, level=level), metrics
