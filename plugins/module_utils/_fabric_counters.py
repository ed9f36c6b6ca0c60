# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand port counters of every node read before and after the fabric stage's traffic.

A link that flaps (link_downed, link_error_recovery) or errs only under the all-reduce's traffic is
invisible to the infiniband stage's idle window: each node's sysfs counters are read in one Slurm
step over all nodes before the stage's first launch and again after its last round, kept as
``raw/_fabric/counters-before.txt`` / ``counters-after.txt`` (replayed like the groups), and judged
per node with the infiniband stage's limits (_judge_infiniband.judge_counters), "during the fabric
stage". A step that cannot read them is an error naming the launcher, never a node's fault.

Each task prints ``### node <name>`` and ``grep -H`` of ``<root>/*/ports/*/counters/*``; the root
reaches the shell as an argument (``@node@`` in it becomes the node's name), never pasted into it.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import LAUNCHER, classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import ERROR, check_result
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import judge_counters

BEFORE_KEY = "counters-before"
AFTER_KEY = "counters-after"
DURING = "the fabric stage"
# POSIX sh: @node@ replaced by a loop of prefix/suffix expansions, not sed (a node name with '/' or
# '&' would end or change sed's replacement).
_SNAPSHOT = ('me=${SLURMD_NODENAME:-$(hostname -s)}; r=$1; out=; '
             'while case $r in *@node@*) true ;; *) false ;; esac; do out=$out${r%%@node@*}$me; r=${r#*@node@}; done; '
             'r=$out$r; printf "### node %s\\n" "$me"; grep -H . "$r"/*/ports/*/counters/*; true')
_NODE = re.compile(r"^### node (\S+)\s*$")
_LABEL = re.compile(r"^\s*(\d+): ")


def snapshot_argv(nodes, opts):
    """One srun step, one task per node, each printing its own counters (lines labelled by task)."""
    return ([opts.get("srun", "srun"), "--nodelist=%s" % ",".join(nodes), "-N%d" % len(nodes),
             "--ntasks-per-node=1", "--label"] + [str(a) for a in opts.get("launcher_args") or []]
            + ["sh", "-c", _SNAPSHOT, "sh", opts["counters_root"].rstrip("/") or "/"])


def split_by_node(text):
    """{node: its counter lines} from the step's output, whose tasks' lines srun interleaves: each
    line's task label leads to the node that task's header named."""
    out, node_of, pending = {}, {}, {}
    for raw in (text or "").splitlines():
        if raw.startswith("$ "):
            continue
        match = _LABEL.match(raw)
        task, line = (match.group(1), raw[match.end():]) if match else (None, raw)
        header = _NODE.match(line)
        if header:
            node_of[task] = header.group(1)
            out.setdefault(header.group(1), []).extend(pending.pop(task, []))
            continue
        if task in node_of:
            out[node_of[task]].append(line)
        else:  # a line of a task whose header srun has not forwarded yet
            pending.setdefault(task, []).append(line)
    return dict((n, "\n".join(lines) + "\n") for n, lines in out.items())


def _step_problem(record, when):
    if record.get("missing"):
        return None, "the counters %s the fabric stage are not in the captured outputs" % when
    if record.get("error"):
        return LAUNCHER, "the counters %s the fabric stage could not be read: %s" % (when, record["error"])
    if record.get("timed_out"):
        return LAUNCHER, "reading the counters %s the fabric stage hung: killed after its timeout" % when
    found = classify_failure(record.get("output") or "", record.get("rc"))
    if found and record.get("rc") not in (0, None):
        return found["component"], "the counters %s the fabric stage could not be read: %s (%s): %s" % (
            when, found["cause"], found["component"], found["message"])
    if record.get("rc") not in (0, None):
        lines = [line.strip() for line in (record.get("output") or "").splitlines()
                 if line.strip() and not line.startswith("$ ") and "### node" not in line]
        return LAUNCHER, "the step reading the counters %s the fabric stage exited with status %s%s" % (
            when, record["rc"], (": " + lines[-1][:200]) if lines else "")
    return None, None


def counter_checks(nodes, before, after, limits):
    """(checks, failed nodes): ib.counters per node (node set) from the two step records."""
    checks = []
    for record, when in ((before, "before"), (after, "after")):
        component, problem = _step_problem(record, when)
        if problem:
            status = ERROR if component else "skip"
            checks.append(dict(check_result("ib.counters", status, problem, {}, component=component or "counters"),
                               node=None))
            return checks, []
    first, last = split_by_node(before.get("output")), split_by_node(after.get("output"))
    profile = {"infiniband": {"counter_limits": dict(limits or {})}}
    # A node the step did not reach, or a root with no counters under it, is the launcher's or the
    # configuration's problem: one cluster error, no node blamed.
    unread = [n for n in nodes if n not in first or n not in last]
    parsed = dict((n, (parse_ib_counters(first[n]), parse_ib_counters(last[n]))) for n in nodes if n not in unread)
    empty = [n for n, (_old, new) in parsed.items() if not new.get("counters")]
    if unread:
        checks.append(dict(check_result("ib.counters", ERROR, "the step reading the counters around the fabric stage "
                                        "printed nothing for %s: not judged there" % ", ".join(unread), {},
                                        component=LAUNCHER), node=None))
    if parsed and len(empty) == len(parsed):
        checks.append(dict(check_result("ib.counters", ERROR, "no InfiniBand port counters under the counters root "
                                        "on any node (check_fabric_counters_root): not judged", {},
                                        component="counters"), node=None))
        return checks, []
    failed = []
    for node in nodes:
        if node not in parsed:
            continue
        old, new = parsed[node]
        ports = []
        for ca in sorted(new.get("counters") or {}):
            for port in sorted(new["counters"][ca]):
                ports.append((ca, {"port": port}))
        if not ports:  # others have counters: this node's adapters are missing
            checks.append(dict(check_result("ib.counters", ERROR, "%s: no InfiniBand port counters under the "
                                            "counters root" % node, {}, component="counters"), node=node))
            failed.append(node)
            continue
        results = judge_counters(ports, old, new, profile, during=DURING)
        for result in results:
            result["node"] = node
            if result["status"] in BAD:
                failed.append(node)
            if result["status"] == "pass":
                result["message"] = "%s: %s" % (node, result["message"])
        checks.extend(results)
    return checks, sorted(set(failed))
