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


def summary_lines(plan):
    """The run's check-mode summary: [(stage, what, [nodes])] in the order the stages came."""
    lines = ["gpucluster.acceptance check mode: nothing was run or measured, no verdict"
             " and no artifacts; %d stage(s) would run:" % len(plan)]
    for stage, what, nodes in plan:
        lines.append("  %s on %s (%d node(s)): %s" % (stage, hostlist_text(nodes), len(set(nodes)), what))
    return lines
