# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Carrying out the slurm_node module's plans (from _slurm_node.decide): the max_drained cap,
read cluster-wide under the drain lock (_cap), the scontrol updates and the one-by-one retry of
the nodes a group update did not settle (apply_plans), and each node's result (node_results).

Apart from the decisions (_slurm_node, pure) and from scontrol itself (_slurm_node_scontrol):
this is the order of the module's steps once it knows what each node needs.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node import is_ours, outcome, summary

_ACTIONS = ("drained", "resumed", "unchanged", "skipped")


def _ours(node, tag):
    flags = node.get("flags") or []
    return ("DRAIN" in flags or node.get("base") == "DOWN") and is_ours(node.get("reason"), tag)


def _cap(slurm, names, plans, params, tag):
    """(refusal or '', other nodes drained with our tag) for a drain under max_drained.

    Every node of the cluster is read here, after the lock was taken: drains another run made
    a moment ago count.
    """
    if params["state"] != "drained" or params["max_drained"] is None:
        return "", []
    everyone = slurm.show_all()
    elsewhere = sorted(n for n, node in everyone.items() if n not in names and _ours(node, tag))
    new = [n for n in names if plans[n]["command"] and not _ours(everyone.get(n) or {}, tag)]
    total = len(elsewhere) + len([n for n in names if _ours(everyone.get(n) or {}, tag)]) + len(new)
    if not new or total <= params["max_drained"]:
        return "", elsewhere
    return ("refused: draining %s would make %d node(s) drained by us, more than node_health_max_drain_nodes "
            "%d (already drained by us, read under the drain lock: %s) — another run may have drained them "
            "meanwhile; resume or fix those first; nothing was drained"
            % (compress_hostlist(new), total, params["max_drained"], ", ".join(elsewhere) or "none")), elsewhere


def apply_plans(slurm, names, plans, want, tag):
    """Run the plans' scontrol updates and read back what each node shows: (failures, after).

    Nodes with the same command and reason are updated in one call; those a group update did not
    settle are updated again one at a time. A node is judged by the state it shows afterwards
    (outcome), not by scontrol's exit code; a failed node's plan becomes ``failed`` with the reason.
    """
    failures = []
    after = {}
    groups = {}
    for name in names:
        plan = plans[name]
        if plan["command"]:
            groups.setdefault((plan["command"], plan["reason"]), []).append(name)
    replies = {}
    for (command, set_reason), members in groups.items():
        rc, text = slurm.update(members, command, set_reason)
        for member in members:
            replies[member] = (rc, text)
    touched = [name for name in names if plans[name]["command"]]
    if touched:
        now = slurm.show(touched)["nodes"]
        retry = [name for name in touched
                 if not outcome(now.get(name), want, plans[name]["reason"], tag)[0]]
        # One node at a time for those a group update did not settle (one bad node can stop a group).
        for name in retry:
            rc, text = slurm.update([name], plans[name]["command"], plans[name]["reason"])
            replies[name] = (rc, text)
        if retry:
            now.update(slurm.show(retry)["nodes"])
        for name in touched:
            ok, detail = outcome(now.get(name), want, plans[name]["reason"], tag)
            rc, text = replies[name]
            after[name] = summary(now.get(name))
            if not ok:
                failures.append("%s: %s (scontrol rc=%d%s)" % (name, detail, rc, ": " + text if text else ""))
                plans[name]["action"] = "failed"
                plans[name]["message"] = "%s; scontrol rc=%d%s" % (detail, rc, ": " + text if text else "")
            elif rc != 0:
                plans[name]["message"] += "; scontrol answered rc=%d (%s) but the node shows %s" % (
                    rc, text or "no message", detail)
    return failures, after


def node_results(names, plans, current, after):
    """(one result per node, the {<action>_nodes: [names]} lists, changed) for the module's output."""
    results = []
    # Not "skipped" etc.: Ansible reads a truthy "skipped" in a result as a skipped task.
    lists = dict(("%s_nodes" % action, []) for action in _ACTIONS)
    for name in names:
        plan = plans[name]
        node_after = after.get(name) if name in after else plan["after"]
        results.append({"name": name, "action": plan["action"], "before": summary(current["nodes"][name]),
                        "after": node_after, "message": plan["message"]})
        if plan["action"] in _ACTIONS:
            lists["%s_nodes" % plan["action"]].append(name)
    changed = any(plan["action"] in ("drained", "resumed", "failed") for plan in plans.values())
    return results, lists, changed
