# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a run's check results into the verdict, results.json, junit.xml and the console summary.

Pure functions over plain data so the callback stays thin and the tests can call them directly.
A check is {stage, node, check, status: pass|fail|error|skip, message, metrics, component}.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

try:
    from junit_xml import TestCase, TestSuite, to_xml_report_string
    HAS_JUNIT_XML = True
except ImportError:  # the callback reports the missing library once instead of failing per event
    HAS_JUNIT_XML = False

BAD = ("fail", "error")
# Worst status wins when a node's checks are summarised.
_RANK = {"skip": 0, "pass": 1, "fail": 2, "error": 3}


def worst(statuses):
    """The worst of the statuses ('pass' for none)."""
    best = "pass"
    for status in statuses:
        if _RANK.get(status, 3) > _RANK[best]:
            best = status
    return best


def node_summary(checks, nodes=()):
    """{node: {status, stages: {stage: status}, problems: [sentences]}} over every node seen."""
    summary = dict((node, {"status": "pass", "stages": {}, "problems": []}) for node in nodes)
    for check in checks:
        node = check.get("node") or "cluster"
        entry = summary.setdefault(node, {"status": "pass", "stages": {}, "problems": []})
        stage = check.get("stage", "unknown")
        entry["stages"][stage] = worst([entry["stages"].get(stage, "skip"), check["status"]])
        if check["status"] in BAD:
            entry["problems"].append("%s %s: %s" % (check["status"].upper(), stage, check.get("message", "")))
    for entry in summary.values():
        entry["status"] = worst(entry["stages"].values()) if entry["stages"] else "pass"
        if entry["status"] == "skip":
            entry["status"] = "pass"
    return summary


def verdict(checks):
    """'pass' when no check failed or errored (and at least one ran), else 'fail'."""
    if not checks:
        return "fail"
    return "fail" if any(c["status"] in BAD for c in checks) else "pass"


def _case_name(check):
    name = "%s: %s" % (check.get("node") or "cluster", check["check"])
    if check.get("component"):
        name += " [%s]" % check["component"]
    return name


def junit_xml(checks, run_id, stage_order=()):
    """junit.xml text: one suite per stage, one case per (stage, check, node[, component])."""
    stages = list(stage_order) + sorted(set(c.get("stage", "unknown") for c in checks) - set(stage_order))
    suites = []
    for stage in stages:
        cases, properties = [], {}
        for check in (c for c in checks if c.get("stage", "unknown") == stage):
            metrics = check.get("metrics") or {}
            case = TestCase(_case_name(check), classname=stage, elapsed_sec=check.get("seconds"),
                            stdout=json.dumps(metrics, sort_keys=True) if metrics else None)
            if check["status"] == "fail":
                case.add_failure_info(message=check.get("message", ""), output=check.get("detail"))
            elif check["status"] == "error":
                case.add_error_info(message=check.get("message", ""), output=check.get("detail"))
            elif check["status"] == "skip":
                case.add_skipped_info(message=check.get("message", ""))
            cases.append(case)
            for key, value in sorted(metrics.items()):
                if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                    properties["%s.%s.%s" % (check.get("node") or "cluster", check["check"], key)] = value
        if cases:
            suites.append(TestSuite(stage, cases, id=run_id, package="gpucluster.acceptance",
                                    properties=properties or None))
    return to_xml_report_string(suites, prettyprint=True, encoding="utf-8")


def summary_lines(checks, nodes, artifact_dir):
    """The console summary: verdict, then each bad node with the stage and reason."""
    per_node = node_summary(checks, nodes)
    bad = sorted(n for n, e in per_node.items() if e["status"] in BAD)
    lines = ["gpucluster.acceptance verdict: %s — %d node(s), %d check(s), %d bad node(s)"
             % (verdict(checks).upper(), len([n for n in per_node if n != "cluster"]), len(checks), len(bad))]
    for node in bad:
        for problem in per_node[node]["problems"]:
            lines.append("  %s %s" % (node, problem))
    lines.append("artifacts: %s (report.html, junit.xml, results.json, metrics.prom, raw/)" % artifact_dir)
    return lines


def results_document(run, checks, nodes, raw_index):
    """The results.json document."""
    return {
        "schema": 1,
        "run": run,
        "verdict": verdict(checks),
        "nodes": node_summary(checks, nodes),
        "checks": checks,
        "raw": raw_index,
    }
