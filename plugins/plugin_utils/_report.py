# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Renderers of a validated results.json: junit.xml, the console summary, the final message.

Each is a pure function of the document (see _results): the counts, the failed nodes and the
sentences are the document's own, so every artifact of a run says the same thing.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from xml.etree import ElementTree

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import hostlist_text
from ansible_collections.gpucluster.acceptance.plugins.module_utils._next_steps import next_steps
from ansible_collections.gpucluster.acceptance.plugins.module_utils._run_state import split_text
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results

try:
    from junit_xml import TestCase, TestSuite, to_xml_report_string
    HAS_JUNIT_XML = True
except ImportError:  # the callback reports the missing library once instead of failing per event
    HAS_JUNIT_XML = False


def _case_name(check):
    name = "%s: %s" % (check.get("node") or "cluster", check["check"])
    if check.get("component"):
        name += " [%s]" % check["component"]
    return name


def _failure_text(check):
    """The evidence lines (what the verdict rests on), then the judge's longer detail."""
    parts = list(check.get("evidence") or [])
    if check.get("detail"):
        parts.append(check["detail"])
    return "\n".join(parts) or None


def junit_xml(document):
    """junit.xml: one suite per stage, one case per (stage, check, node[, component]).

    The case's time is the time the tool(s) behind it took; a failure's or error's text is the
    evidence lines; metrics are the case's stdout and the suite's properties.
    """
    checks = document.get("checks") or []
    order = list(document.get("stages") or [])
    order += sorted(set(c.get("stage", "unknown") for c in checks) - set(order))
    suites = []
    for stage in order:
        cases, properties = [], {}
        for check in (c for c in checks if c.get("stage", "unknown") == stage):
            metrics = check.get("metrics") or {}
            case = TestCase(_case_name(check), classname=stage, elapsed_sec=_results.check_seconds(document, check),
                            stdout=json.dumps(metrics, sort_keys=True) if metrics else None)
            if check["status"] == "fail":
                case.add_failure_info(message=check.get("message", ""), output=_failure_text(check))
            elif check["status"] == "error":
                case.add_error_info(message=check.get("message", ""), output=_failure_text(check))
            elif check["status"] == "skip":
                case.add_skipped_info(message=check.get("message", ""))
            cases.append(case)
            for key, value in sorted(metrics.items()):
                if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                    properties["%s.%s.%s" % (check.get("node") or "cluster", check["check"], key)] = value
        if cases:
            suites.append(TestSuite(stage, cases, id=document["run"]["id"], package="gpucluster.acceptance",
                                    properties=properties or None))
    # Indented by ElementTree, not junit_xml's minidom pretty-printer: that one re-parses the whole
    # file (20 s at 4,096 nodes) and pads the evidence lines of every failure with whitespace.
    root = ElementTree.fromstring(to_xml_report_string(suites, prettyprint=False, encoding="utf-8").encode("utf-8"))
    ElementTree.indent(root, space="\t")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def verdict_message(document, results="results.json", summary=True):
    """The playbook's final sentence, from the document's verdict.

    A failed run points to its results file, and to the console summary only where one is printed
    (the results callback prints it at the very end of the run, below this message).
    """
    verdict = document["verdict"]
    if verdict["status"] == "pass":
        return verdict["message"]
    if summary:
        return "%s; see the summary below and %s" % (verdict["message"], results)
    return "%s; see %s" % (verdict["message"], results)


def not_permitted_lines(checks):
    """Checks this user was not permitted to run (component permission, skipped): one line per
    stage and check for every node alike, with the reason once (never one error per node)."""
    found = {}
    for check in checks:
        if check.get("status") == "skip" and check.get("component") == "permission":
            entry = found.setdefault((check.get("stage"), check.get("check")), {"nodes": [], "message": check.get("message", "")})
            entry["nodes"].append(check.get("node"))
    lines = ["skipped, not permitted to this user:"] if found else []
    for (stage, name), entry in sorted(found.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        nodes = [n for n in entry["nodes"] if n]
        lines.append("  %s %s on %d node(s) (%s): %s" % (stage, name, len(nodes), hostlist_text(nodes), entry["message"]))
    return lines


def summary_lines(document, artifact_dir):
    """The console summary: the verdict, then each failed node and cluster problem with its stage."""
    verdict = document["verdict"]
    nodes = document.get("nodes") or {}
    lines = ["gpucluster.acceptance verdict: %s — %d of %d node(s) failed%s, %d check(s)%s"
             % (verdict["status"].upper(), verdict["nodes_failed"], verdict["nodes_total"],
                split_text(document.get("checks") or [], verdict.get("failed_nodes") or []),
                len(document.get("checks") or []),
                ", cluster-level problems" if verdict["cluster_failed"] else "")]
    domains = document.get("nvlink_domains")
    if isinstance(domains, dict) and domains.get("statement"):
        lines.append("NVLink domains: %s" % domains["statement"])
    racks = [c for c in document.get("checks") or [] if c.get("check") == "nvlink_domain.rack"
             and c.get("status") in BAD]
    racked = set(n for c in racks for n in (c.get("metrics") or {}).get("nodes") or [])
    for node in verdict["failed_nodes"]:
        if node in racked:
            continue  # one line for the rack below, not one per tray
        entry = nodes.get(node) or {}
        problems = entry.get("problems") or ["%s: no stage reported a result for this node" % entry.get("status")]
        for problem in problems:
            lines.append("  %s %s" % (node, problem))
    for check in racks:
        lines.append("  %s FAIL nvlink_domain: %s" % (hostlist_text((check.get("metrics") or {}).get("nodes") or []),
                                                      check.get("message", "")))
    rack_problems = set("%s nvlink_domain: %s" % (c["status"].upper(), c.get("message", "")) for c in racks)
    for problem in verdict["cluster_problems"]:
        if problem not in rack_problems:
            lines.append("  cluster %s" % problem)
    lines.extend(not_permitted_lines(document.get("checks") or []))
    steps = next_steps(document.get("checks") or [])
    if steps:  # what to do about each kind of failure (module_utils/_next_steps.py)
        lines.append("next steps:")
        for text, where in steps:
            names = [n for n in where if n != "cluster"]
            hosts = hostlist_text(names) if names else ""
            if "cluster" in where:  # a check about no single node
                hosts = hosts + ", cluster" if hosts else "cluster"
            lines.append("  %s: %s" % (hosts, text))
    if document["run"].get("state") != "complete":
        lines.append("  (the run did not finish: results so far)")
    lines.append("artifacts: %s (report.html, junit.xml, results.json, metrics.prom, raw/)" % artifact_dir)
    return lines
