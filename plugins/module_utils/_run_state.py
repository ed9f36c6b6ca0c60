# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bookkeeping of a run, in one place: the node-state fold, stale runs, fail-fast, the verdict.

Every stage folds its result for a node into that node's state (fold_stage); a state left by
another run is never read (state_of_run); fail-fast asks which nodes failed a stage
(stage_failed_nodes); and the verdict of the whole run (run_verdict) is computed from the list of
checks — the one definition of a failed node that results.json, junit.xml, the report, the
metrics, the console summary and the playbook's final message all show.

A node state is {run_id, failed_stages: [...], folds (stages folded in), stages: {stage: {status,
metrics}}, last: {stage, node, checks, raw}} (raw: the index of the stage's tool outputs; the
outputs themselves travel beside the fact, see without_outputs). A check is {stage, node, check, status, message, component,
evidence, metrics, ...}; node None means a check about the cluster (the full-allocation run, a
leaf uplink, the fabric stage as a whole), which is never counted as a node.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.gpucluster.acceptance.plugins.module_utils._next_steps import error_kind

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD, FAIL, PASS, RANK, SKIP
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import worst as _worst
# A node that was targeted and has no check at all (it never reported).
UNTESTED = "untested"


def worst(statuses, empty=PASS):
    """The worst of the statuses (``empty``, a pass here, when there are none)."""
    return _worst(statuses, empty)


# ---------------------------------------------------------------------------- node states

def _fact(variables, name):
    value = variables.get(name)
    if not isinstance(value, dict):
        value = (variables.get("ansible_facts") or {}).get(name)
    return value if isinstance(value, dict) else None


# The host whose facts hold collect_node_states (the srun transport's task is delegated to it).
STATES_HOST = "localhost"


def plural_states(hostvars):
    """{node: state} a stage run once for the play left on the controller, or None."""
    raw_get = getattr(hostvars, "raw_get", None)
    try:
        variables = raw_get(STATES_HOST) if raw_get else hostvars[STATES_HOST]
    except (KeyError, TypeError):
        return None
    return _fact(variables, "collect_node_states") if isinstance(variables, Mapping) else None


def node_state_of(variables, node=None, plural=None, run_id=None):
    """A host's node state from its variables (task vars or hostvars), wherever it is.

    An action or set_fact puts collect_node_state at the top level; facts are also under
    ansible_facts (the only place when inject_facts_as_vars is off). The top level wins: it is the
    newest where both exist. A stage run once for the play (the srun transport) leaves every node's
    state in collect_node_states {node: state} on the controller (``plural``; read through the
    variables' hostvars when not given); of the two the state with more stages folded in is the
    newer (each fold counts itself).
    """
    try:
        single = _fact(variables, "collect_node_state")
        node = node or variables.get("inventory_hostname")
        if plural is None:
            plural = _fact(variables, "collect_node_states")
        if plural is None and variables.get("hostvars") is not None:
            plural = plural_states(variables.get("hostvars"))
    except AttributeError:
        return None
    mine = plural.get(node) if plural and node is not None else None
    candidates = [c for c in (mine, single) if isinstance(c, dict)]
    if run_id:  # a state of another run (a persistent fact cache) never wins over this run's
        candidates = [c for c in candidates if c.get("run_id") == run_id] or candidates[-1:]
    if not candidates:
        return None
    return max(candidates, key=lambda c: int(c.get("folds") or 0))


def state_of_run(state, run_id):
    """The node's state if it belongs to this run, else an empty one.

    A state left by an earlier run (a persistent fact cache, AWX fact storage) must never count:
    its stages passed or failed on another day. Without a run_id every state counts.
    """
    if not isinstance(state, dict):
        return {}
    if run_id and state.get("run_id") != run_id:
        return {}
    return state


def fold_stage(state, stage, checks, metrics=None, raw=None, node="node", run_id=None):
    """The node's new state after one stage: its status, metrics and this stage's checks.

    Only what carries over is copied ('last' is replaced; copying the previous stage's raw
    outputs was most of the cost per host).
    """
    status = worst((c.get("status") for c in checks), empty=SKIP)
    state = state_of_run(state, run_id)
    new = dict(state)
    if run_id:
        new["run_id"] = run_id
    new["failed_stages"] = list(state.get("failed_stages") or [])
    new["folds"] = int(state.get("folds") or 0) + 1
    new["stages"] = dict(state.get("stages") or {})
    if status in BAD and stage not in new["failed_stages"]:
        new["failed_stages"].append(stage)
    new["stages"][stage] = {"status": status, "metrics": dict(metrics or {})}
    new["last"] = {"stage": stage, "node": node, "checks": list(checks), "raw": raw or {}}
    return new


def without_outputs(state):
    """(the state a node's fact keeps, {tool: output}): the raw tool outputs leave the fact.

    A fact stays in the controller's memory for every host until the node's next stage replaces
    it, and every forked worker gets a copy; at thousands of nodes the outputs were most of it.
    The actions return them beside the fact (``raw_outputs``), the results callback writes them
    under raw/ as they arrive, and the fact keeps the index (rc, seconds, complete, command)."""
    last = state.get("last") if isinstance(state, dict) else None
    raw = last.get("raw") if isinstance(last, dict) else None
    if not isinstance(raw, dict) or not raw:
        return state, {}
    outputs, index = {}, {}
    for tool, record in raw.items():
        if isinstance(record, dict) and "output" in record:
            outputs[tool] = record["output"]
            record = dict((key, value) for key, value in record.items() if key != "output")
        index[tool] = record
    new = dict(state)
    new["last"] = dict(last, raw=index)
    return new, outputs


def node_states(hostvars, nodes, run_id=""):
    """{node: its state of this run, or None when it has none (it never reported)}."""
    states = {}
    # Ansible's HostVars: read a host's variables raw (facts are data, not templates); its
    # templating view would copy the whole collect_node_states of every host, N times over.
    raw_get = getattr(hostvars, "raw_get", None)
    plural = plural_states(hostvars)
    for node in nodes:
        try:
            variables = raw_get(node) if raw_get else hostvars[node]
            state = node_state_of(variables, node, plural, run_id) if isinstance(variables, Mapping) else None
        except KeyError:
            state = None
        states[node] = state_of_run(state, run_id) or None
    return states


def stage_failed_nodes(states, stage):
    """Sorted nodes whose state says they failed (or errored in) the stage: fail-fast's question."""
    return sorted(node for node, state in (states or {}).items()
                  if isinstance(state, dict) and stage in (state.get("failed_stages") or []))


def passed_nodes(states, targets):
    """Nodes that passed every per-node stage; every target when no per-node stage ran."""
    reported = dict((n, s) for n, s in (states or {}).items() if isinstance(s, dict))
    if not reported:
        return sorted(targets or [])
    return sorted(n for n, s in reported.items() if not s.get("failed_stages"))


def any_failed(states):
    """True when a node's state names a failed stage (nodes that never reported do not count)."""
    return any(isinstance(s, dict) and bool(s.get("failed_stages")) for s in (states or {}).values())


# ---------------------------------------------------------------------------- the verdict

def _entry():
    return {"status": PASS, "stages": {}, "problems": []}


def _add(entry, check):
    stage = check.get("stage") or "unknown"
    status = check.get("status")
    entry["stages"][stage] = worst([entry["stages"].get(stage, SKIP), status])
    if status in BAD or status not in RANK:
        entry["problems"].append("%s %s: %s" % (str(status).upper(), stage, check.get("message", "")))


def _close(entry, untested=PASS):
    entry["status"] = worst(entry["stages"].values(), empty=untested)
    if entry["status"] == SKIP:
        entry["status"] = PASS if untested == PASS else untested


def summarise(checks, nodes=()):
    """(per node {node: {status, stages, problems}}, the cluster's {status, stages, problems}).

    nodes: every targeted node, so one that never reported is listed (status 'untested' when
    others did report, so a dead node cannot pass by saying nothing).
    """
    per_node = dict((node, _entry()) for node in nodes or ())
    cluster = _entry()
    for check in checks:
        node = check.get("node")
        if node is None or node == "":
            _add(cluster, check)
        else:
            _add(per_node.setdefault(node, _entry()), check)
    anyone = any(e["stages"] for e in per_node.values())
    for entry in per_node.values():
        _close(entry, untested=UNTESTED if anyone else PASS)
    _close(cluster)
    return per_node, cluster


def failed_nodes(per_node):
    """The nodes that failed: any failed or errored check, or never reported. Sorted, once each."""
    return sorted(n for n, e in per_node.items() if e["status"] in BAD + (UNTESTED,))


def failure_split(checks, bad_nodes):
    """(nodes with a failed check: a fault was measured, {kind: nodes} for the other bad nodes).

    A bad node without a failed check was not judged: nothing was measured there. Its kinds are
    what its errors say did not work (_next_steps.error_kind: scheduler, transport, launcher,
    permission, probe, tool ...), 'no result' for a node that never reported."""
    bad = set(bad_nodes)
    measured = set(c.get("node") for c in checks if c.get("node") in bad and c.get("status") == FAIL)
    kinds = {}
    for check in checks:
        node = check.get("node")
        if node in bad and node not in measured and check.get("status") not in (PASS, FAIL, SKIP):
            kind = error_kind(check)
            kinds.setdefault("transport" if kind == "ssh" else kind, set()).add(node)
    silent = bad - measured - set(n for found in kinds.values() for n in found)
    if silent:
        kinds["no result"] = silent
    return sorted(measured), dict((kind, sorted(found)) for kind, found in kinds.items())


def split_text(checks, bad_nodes):
    """' (1 with a measured fault; 2 not judged — scheduler error: 2)', or '' when every bad node was
    judged (had a failed check)."""
    measured, kinds = failure_split(checks, bad_nodes)
    unjudged = len(set(bad_nodes) - set(measured))
    if not unjudged:
        return ""
    why = ", ".join("%s: %d" % (kind if kind == "no result" else kind + " error", len(found))
                    for kind, found in sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    return " (%d with a measured fault; %d not judged \u2014 %s)" % (len(measured), unjudged, why)


def run_verdict(checks, nodes=()):
    """The run's verdict: {status, nodes_total, nodes_failed, failed_nodes, cluster_failed,
    cluster_problems, message}. 'fail' when a node or the cluster has a failed or errored check,
    or when nothing was checked at all."""
    per_node, cluster = summarise(checks, nodes)
    bad = failed_nodes(per_node)
    cluster_bad = cluster["status"] in BAD
    status = FAIL if bad or cluster_bad or not checks else PASS
    total = len(per_node)
    if status == PASS:
        message = "all %d node(s) passed" % total
    elif not checks:
        message = "nothing was checked: no stage reported a result"
    else:
        parts = []
        if bad or not cluster_bad:
            listed = ": " + ", ".join(bad) if bad else ""
            parts.append("%d of %d node(s) failed acceptance%s%s" % (len(bad), total, listed, split_text(checks, bad)))
        if cluster_bad:
            stages = sorted(s for s, st in cluster["stages"].items() if st in BAD)
            parts.append("cluster-level problems in %s" % ", ".join(stages))
        message = "; ".join(parts)
    return {"status": status, "nodes_total": total, "nodes_failed": len(bad), "failed_nodes": bad,
            "cluster_failed": cluster_bad, "cluster_problems": list(cluster["problems"]), "message": message,
            "nodes": per_node, "cluster": cluster}
