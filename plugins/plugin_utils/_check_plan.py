# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode's plan: what each stage would run on which nodes, read from the tasks' results, told
as each task ends (plan_line) and summed up at the end of the run (summary_lines).

An entry of the plan is a key (stage, what it would run) with the nodes it would run on; nodes that
would run the same commands share one entry. Apart from the results callback
(plugins/callback/acceptance_report.py), which only gathers the entries as its events come: how
each kind of result tells its plan, and the words the console shows, live here.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import hostlist_text
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._estimates import duration_text, workload_estimate

CHECK_MODE_PREFIX = "check mode: would run "


def _short(text, keep=100):
    """A command line for the console: whitespace folded, cut to `keep` characters."""
    text = " ".join(text.split())
    return text if len(text) <= keep else text[:keep - 3] + "..."


def first_round(result, plan):
    """(key, nodes) of a controller stage's first round, planned in check mode (which runs none):
    the fabric burn-in's nccl-tests groups, or the RDMA pair stage's perftest pairs on every rail."""
    groups = [g for g in plan if isinstance(g, (list, tuple))]
    nodes = sorted(set(str(n) for g in groups for n in g))
    key = (str(result["stage_result"].get("stage") or "fabric"),
           "nccl-tests from the controller, first round: %d job(s) of %s node(s)"
           % (len(groups), "/".join(sorted(set(str(len(g)) for g in groups))) or "0"))
    tests = [t for t in plan if isinstance(t, dict) and "server" in t and "client" in t]
    if tests:  # the RDMA pair stage's first round: perftest pairs on every rail
        nodes = sorted(set(str(t[r]) for t in tests for r in ("server", "client")))
        key = (str(result["stage_result"].get("stage") or "rdma"),
               "perftest pairs from the controller, first round: %d test(s) on %d rail(s) in one Slurm step"
               % (len(tests), len(set(t.get("rail") for t in tests))))
    return key, nodes


def would_run(stage, message):
    """The key of a task's "check mode: would run ..." message (the check_<stage> roles' tasks)."""
    return (stage[len("check_"):] if stage.startswith("check_") else stage,
            _short(message[len(CHECK_MODE_PREFIX):], keep=300))


def skipped_commands(plan, host):
    """What a skipped collect task would run (its would_run list), the node's own name as {node}:
    one text for the nodes that run the same commands."""
    return "; ".join(_short(str(p).replace(host, "{node}")) for p in plan) or "nothing"


def plan_line(stage, what, nodes):
    """The console line for one entry, as its task ends."""
    return "check mode: %s would run %s on %s" % (stage, what, hostlist_text(nodes))


def note_estimate(estimates, stage, result):
    """Keep a stage's (expected, at most) seconds from a check-mode result: the collect action's
    estimate_s/limit_s, or the workload's launch line; the slowest node's for a stage."""
    if isinstance(result.get("estimate_s"), (int, float)) and isinstance(result.get("limit_s"), (int, float)):
        found = (float(result["estimate_s"]), float(result["limit_s"]))
    elif stage == "workload" and str(result.get("msg") or "").startswith(CHECK_MODE_PREFIX):
        words = str(result["msg"]).split()
        timeout = words[-2] if len(words) > 2 and words[-3] == "(timeout" else None
        found = workload_estimate(words, timeout)
    else:
        return
    old = estimates.get(stage, (0.0, 0.0))
    estimates[stage] = (max(old[0], found[0]), max(old[1], found[1]))


def estimate_lines(plan, estimates):
    """Per stage and in all, how long the run is expected to take and at most may (its timeouts)."""
    stages = [stage for stage, _what, _nodes in plan]
    timed = [s for s in dict.fromkeys(stages) if s in estimates]
    if not timed:
        return []
    lines = ["expected duration (typical times of an 8-GPU H100/H200 node; at most: the tools' timeouts):"]
    for stage in timed:
        expected, at_most = estimates[stage]
        lines.append("  %s: ~%s (at most %s)" % (stage, duration_text(expected), duration_text(at_most)))
    total = sum(estimates[s][0] for s in timed)
    bound = sum(estimates[s][1] for s in timed)
    rounds = [s for s in dict.fromkeys(stages) if s not in estimates]
    lines.append("  total: ~%s (at most %s), every node at once%s" % (
        duration_text(total), duration_text(bound),
        "; plus %s: rounds until every slow node is pinned" % ", ".join(rounds) if rounds else ""))
    return lines


def summary_lines(plan, estimates=None):
    """The run's check-mode summary: [(stage, what, [nodes])] in the order the stages came, then the
    expected duration of each stage and of the run (estimates: {stage: (expected, at most)})."""
    lines = ["gpucluster.acceptance check mode: nothing was run or measured, no verdict"
             " and no artifacts; %d stage(s) would run:" % len(plan)]
    for stage, what, nodes in plan:
        lines.append("  %s on %s (%d node(s)): %s" % (stage, hostlist_text(nodes), len(set(nodes)), what))
    return lines + estimate_lines(plan, estimates or {})


class CheckPlan(object):
    """Check mode's plan as the results callback gathers it: the entries told so far, those of the
    current task, and each stage's duration estimate."""

    def __init__(self):
        self.entries = []  # [(stage, what, [nodes])] in the order the stages came
        self.pending = {}  # the current task: {(stage, what): [nodes]}
        self.estimates = {}  # {stage: (expected s, at most s)}

    def flush(self, display):
        for (stage, what), nodes in self.pending.items():
            self.entries.append((stage, what, nodes))
            display(plan_line(stage, what, nodes))
        self.pending = {}

    def skipped(self, result, host, stage):
        """A collect task skipped in check mode: what it would run on ``host`` (or on all its nodes)."""
        key = (str(result.get("stage") or stage), skipped_commands(result["would_run"], host))
        note_estimate(self.estimates, key[0], result)
        nodes = result.get("nodes")  # a stage run once for the play (srun): all its nodes
        self.pending.setdefault(key, []).extend(nodes if isinstance(nodes, list) else [host])

    def ok(self, result, host, stage, nodes):
        """A controller stage's first round, or a task's "check mode: would run ..." message on ``nodes``."""
        plan, message = result.get("plan"), result.get("msg")
        if isinstance(plan, list) and isinstance(result.get("stage_result"), dict):
            key, planned = first_round(result, plan)
            self.pending.setdefault(key, []).extend(planned or [host])
        if isinstance(message, str) and message.startswith(CHECK_MODE_PREFIX):
            key = would_run(stage, message)
            note_estimate(self.estimates, key[0], result)
            self.pending.setdefault(key, []).extend(nodes)

    def summary(self):
        return summary_lines(self.entries, self.estimates)
