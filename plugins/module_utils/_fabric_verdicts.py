# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric stage's checks from the planner's verdicts, when the stage ran to its end: one
``pair_bandwidth`` check per node (a pinned node named with its cause: slow, nccl-tests built without
MPI=1, wrong results; a node the infrastructure left unmeasured an error) and one ``leaf_uplink``
check per uplink or leaf switch not cleared; and _check, the record of a fabric check (its stage,
node, raw outputs and detail), which the stage uses for its own checks too.

Apart from the stage (_fabric), which runs the rounds and decides whether the stage ended on the
infrastructure (then none of these is written: nobody is blamed). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_judge import _EVIDENCE_LINES
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import STAGE


def _check(check, status, message, metrics=None, component=None, node=None, evidence=None, raw=None, detail=None):
    result = check_result(check, status, message, metrics, component=component, evidence=evidence)
    result["node"] = node
    result["stage"] = STAGE
    result["raw"] = list(raw or [])
    if detail:
        result["detail"] = detail
    return result


def _node_tests(fabric, node):
    """The raw keys of the groups a node took part in, in order."""
    keys = []
    for entry in fabric.rounds:
        for group in entry["groups"]:
            if node in group["nodes"]:
                keys.append(group["key"])
    return keys


def _cause_of(fabric, node):
    """'build' or 'wrong' when every failing run the node took part in failed for that reason."""
    outcomes = set()
    for entry in fabric.rounds:
        for group in entry["groups"]:
            if node in group["nodes"] and group["outcome"] not in ("ok",):
                outcomes.add(group["outcome"])
    if outcomes and outcomes <= {"build"}:
        return "build"
    if outcomes and outcomes <= {"wrong"}:
        return "wrong"
    return None


def _node_checks(fabric, state, nodes, checks):
    failed = []
    for node in nodes:
        info = state["nodes"][node]
        verdict = info["verdict"]
        evidence = list(info.get("evidence") or [])
        metrics = {"verdict": verdict, "leaf": info.get("leaf")}
        component = node
        cause = _cause_of(fabric, node)
        infra = fabric.infra_nodes.get(node)
        if verdict in _localize.FAULTS and cause == "build":
            status, component = FAIL, "nccl-tests build"
            message = "%s: nccl-tests built without MPI=1 (every run including it was independent one-rank " \
                      "runs%s)" % (node, "; each partner passed twice with other nodes" if verdict == _localize.PINNED else "")
        elif verdict in _localize.FAULTS and cause == "wrong":
            status, component = FAIL, "%s data" % node
            message = "%s: wrong results (#wrong / out of bounds) in every run including it" % node
        elif infra is None and _localize.marginal_only(state, node):
            status = PASS       # slower than its peers by less than the margin: what the threshold accepts
            message = evidence[0]
        elif verdict in _localize.FAULTS:
            status = FAIL
            message = evidence[0] if evidence else "%s: %s" % (node, verdict)
        elif infra is not None and verdict != _localize.CLEARED:
            status, component = ERROR, infra["component"] or "launcher"
            message = "%s: not measured: %s" % (node, infra["sentence"])
            evidence = list(infra["evidence"]) + evidence
        elif verdict == _localize.UNTESTED:
            status = ERROR if not fabric.opts.get("replay_dir") else SKIP
            message = evidence[0] if evidence else "%s: not tested" % node
            if fabric.opts.get("replay_dir"):
                message = "%s: not replayable: the captured outputs hold no test of it" % node
        else:
            status = PASS
            message = evidence[0] if evidence else "%s: %s" % (node, verdict)
        checks.append(_check("pair_bandwidth", status, message, metrics, component=component, node=node,
                             evidence=evidence[1:_EVIDENCE_LINES + 1] or evidence[:1], raw=_node_tests(fabric, node),
                             detail="\n".join(evidence)))
        if status in (FAIL, ERROR):
            failed.append(node)
    return failed


def _uplink_checks(state, checks):
    """One failing check per uplink not cleared; a leaf-level fault names the leaf switch (or all
    its nodes) instead of the uplink."""
    for leaf, info in sorted((state.get("uplinks") or {}).items()):
        if info["verdict"] in _localize.FAULTS and not _localize.marginal_only(state, leaf):
            evidence = info.get("evidence") or []
            whole = info["verdict"] == _localize.LEAF
            checks.append(_check("leaf_uplink", FAIL, evidence[0] if evidence else "%s uplink degraded" % leaf,
                                 {"verdict": info["verdict"]},
                                 component="%s leaf switch or all its nodes" % leaf if whole else "%s uplink" % leaf,
                                 evidence=evidence[1:_EVIDENCE_LINES + 1], detail="\n".join(evidence)))
