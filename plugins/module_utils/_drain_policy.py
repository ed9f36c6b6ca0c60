# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which nodes a health-check run may drain or resume: pure functions, standard library only.

``plan_drains`` turns the per-node states of one run (``node_states``) and each failing node's
first failing check into a plan: the reasons to drain with, the nodes that passed (resume
candidates; the slurm_node module resumes only those drained with our tag), and the blast-radius
cap. When more nodes fail than the cap allows, the plan drains nothing and says why: a check that
fails most of a cluster is more likely broken than the cluster.

Timeouts are not hardware. A stage whose only bad results are tool timeouts (``timeout: true`` in
its finding; the component is the tool) is retried once by the playbook, and the finding's
``retry`` says how that went: ``passed`` (the stage counts as passed), ``timed out again`` (a
repeated timeout: the node is drained, the reason says so), ``failed`` (a real failure: drained).
A timeout that was not retried (no ``retry``) is an ``error`` of the tool: the node is neither
drained nor resumed (``errored``).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

DEFAULT_TAG = "gpucluster:"
REASON_MAX = 120  # characters of the reason after the tag; Slurm keeps it, sinfo -R shows it


def trim(text, limit=REASON_MAX):
    """One line, at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def drain_reason(stage, message, limit=REASON_MAX):
    """'<stage>: <message, trimmed>' (the slurm_node module puts the tag in front)."""
    return trim("%s: %s" % (stage, trim(message or "failed", limit)), limit)


def parse_sinfo_reasons(text):
    """{node: reason} from ``sinfo -R -N -h -o '%N|%E'`` lines (nodes may be hostlists, left as is)."""
    reasons = {}
    for line in (text or "").splitlines():
        if "|" not in line:
            continue
        node, reason = line.split("|", 1)
        if node.strip():
            reasons[node.strip()] = reason.strip()
    return reasons


def timeout_kind(finding):
    """None (not a timeout), 'once' (not retried), 'passed' (retry passed), 'repeated' (retry timed out)."""
    if not isinstance(finding, dict) or not finding.get("timeout"):
        return None
    retry = finding.get("retry")
    if retry == "passed":
        return "passed"
    if retry == "timed out again":
        return "repeated"
    return "once" if not retry else None


def _message(finding):
    """The finding's message; a repeated timeout says it timed out twice."""
    message = (finding or {}).get("message") or "failed"
    if timeout_kind(finding) == "repeated":
        message = "%s (timed out twice: the first attempt and its retry)" % message
    return message


def cap_limit(checked, max_fraction, max_nodes):
    """How many nodes one run may drain: at most max_nodes, and at most max_fraction of the
    checked nodes, but at least one (so a run over a single node can drain it)."""
    by_fraction = max(1, int(math.floor(max_fraction * checked + 1e-9))) if checked else 0
    return min(int(max_nodes), by_fraction)


def plan_drains(states, findings=None, max_fraction=0.10, max_nodes=2, slurm_reasons=None, tag=DEFAULT_TAG):
    """Plan one run's drains and resumes.

    states: {node: {failed_stages, ...} or None} (None: the node never reported; left alone).
    findings: {node: {stage: {check, message}}}: the first failing check of each failing stage.
    slurm_reasons: {node: reason} of nodes Slurm shows drained or down now; nodes outside this
      run already drained with our tag count against max_nodes (the cap is cluster-wide).

    Returns {checked, failing: {node: reason}, evidence: {node: [..]}, passing, unreported,
    drain: {node: reason}, resume: [nodes], refused, limit, drained_elsewhere,
    errored: {node: why} (a tool timeout not retried: neither drained nor resumed), message}.
    """
    if not isinstance(states, dict):
        raise ValueError("states must be a mapping of node to state, got %s" % type(states).__name__)
    if not 0 < float(max_fraction) <= 1:
        raise ValueError("max_fraction must be in (0, 1], got %r" % (max_fraction,))
    if int(max_nodes) < 0:
        raise ValueError("max_nodes must be >= 0, got %r" % (max_nodes,))
    findings = findings or {}
    slurm_reasons = slurm_reasons or {}
    checked = sorted(n for n, s in states.items() if isinstance(s, dict))
    unreported = sorted(n for n, s in states.items() if not isinstance(s, dict))
    failing, evidence, stages_of, errored = {}, {}, {}, {}
    for node in checked:
        found = findings.get(node) or {}
        failed, timeouts = [], []
        for stage in list(states[node].get("failed_stages") or []):
            kind = timeout_kind(found.get(stage))
            if kind == "passed":
                continue  # timed out once, passed when retried: not a failure
            (timeouts if kind == "once" else failed).append(stage)
        if timeouts and not failed:
            errored[node] = "; ".join(drain_reason(stage, (found.get(stage) or {}).get("message")) + " (error of the "
                                      "tool, not hardware: not retried, not drained)" for stage in timeouts)
        if not failed:
            continue
        first = failed[0]
        failing[node] = drain_reason(first, _message(found.get(first)))
        evidence[node] = [dict(stage=stage, check=(found.get(stage) or {}).get("check"),
                               message=trim(_message(found.get(stage)), 500),
                               **({"component": found[stage]["component"]}
                                  if (found.get(stage) or {}).get("component") else {}))
                          for stage in failed]
        stages_of[node] = failed
    passing = [n for n in checked if n not in failing and n not in errored]
    elsewhere = sorted(n for n, r in slurm_reasons.items()
                       if n not in states and tag and str(r).startswith(tag))
    limit = cap_limit(len(checked), float(max_fraction), int(max_nodes))
    refused = False
    message = "%d of %d checked node(s) failed" % (len(failing), len(checked))
    if failing and len(failing) > limit:
        refused = True
        counts = {}
        for node in failing:
            for stage in stages_of[node]:
                counts[stage] = counts.get(stage, 0) + 1
        stages = ", ".join(sorted(counts, key=lambda s: (-counts[s], s)))
        message = ("refused: %d of %d nodes failed %s — check the check before draining them "
                   "(a run may drain at most %d: node_health_max_drain_fraction %s of %d checked, "
                   "node_health_max_drain_nodes %d); nothing was drained"
                   % (len(failing), len(checked), stages, limit, max_fraction, len(checked), int(max_nodes)))
    elif failing and len(failing) + len(elsewhere) > int(max_nodes):
        refused = True
        message = ("refused: %d node(s) failed and %d other node(s) are already drained by us (%s); "
                   "draining them would exceed node_health_max_drain_nodes %d — resume or fix those "
                   "first; nothing was drained"
                   % (len(failing), len(elsewhere), ", ".join(elsewhere), int(max_nodes)))
    elif failing:
        message = "%d of %d checked node(s) failed: %s" % (
            len(failing), len(checked), "; ".join("%s (%s)" % (n, failing[n]) for n in sorted(failing)))
    if errored:
        message += "; %d node(s) with a tool timeout: %s" % (
            len(errored), "; ".join("%s (%s)" % (n, errored[n]) for n in sorted(errored)))
    return {
        "checked": checked,
        "failing": failing,
        "evidence": evidence,
        "passing": passing,
        "unreported": unreported,
        "drain": {} if refused else dict(failing),
        "resume": passing,
        "refused": refused,
        "limit": limit,
        "drained_elsewhere": elsewhere,
        "errored": errored,
        "message": message,
    }
