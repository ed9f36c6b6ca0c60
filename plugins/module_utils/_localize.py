# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pin slow nodes, NICs and degraded leaf uplinks with rounds of concurrent multi-node tests.

A *round* is a set of disjoint groups of nodes; every group runs its test (``all_reduce_perf``,
or a perftest pair on one rail) at the same time and reports its bandwidth, optionally with
``samples`` (repeated runs in the same allocation). A group is as fast as its slowest member, and
a group that spans leaves is also as fast as the slowest uplink of the leaves it spans.

Verdicts (see _localize_verdicts): **pinned** (proved by the results: never passed, and low with
partners that each passed more than once elsewhere), **intermittent** (slow in some runs and fine
in others, its runs as evidence; never cleared and never used as a known-good partner),
**leaf** (a leaf-level fault: the leaf switch or all its nodes, with the cross-leaf evidence),
**suspect** (not separated yet), **untested**, **cleared**. Planning (_localize_plan): modes
``adaptive`` (default, a few rounds), ``exhaustive`` (every pair) and ``halving`` (bisection);
more planners can be registered (``register_planner``; the benchmark's baselines live in
bench/localize_strategies.py). Evidence text: _localize_evidence.

API: ``new_state``, ``plan_round``, ``analyse_round``, ``localize``, ``refresh_evidence`` and
``public_state``. The state is plain JSON (dicts with string keys, lists, numbers, strings,
booleans, None) and deterministic for a given seed. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_decode as decode
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_verdicts as verdicts
# imported for its side effect: it registers the product's planners
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_plan  # noqa: F401  pylint: disable=unused-import

# the vocabulary, for the stages that read the verdicts
CLEARED, SUSPECT, PINNED, UNTESTED = base.CLEARED, base.SUSPECT, base.PINNED, base.UNTESTED
INTERMITTENT, LEAF, VERDICTS, FAULTS = base.INTERMITTENT, base.LEAF, base.VERDICTS, base.FAULTS
PASS, MARGINAL, LOW, UNSTABLE = base.PASS, base.MARGINAL, base.LOW, base.UNSTABLE
OK, TIMEOUT, ERROR = base.OK, base.TIMEOUT, base.ERROR
UPLINK, UNKNOWN_LEAF, DEFAULTS = base.UPLINK, base.UNKNOWN_LEAF, base.DEFAULTS
register_planner = base.register_planner
MODES = tuple(sorted(base.PLANNERS))    # the product's planners (the benchmark registers more)
refresh_evidence = verdicts.refresh_evidence


def modes():
    """The planner modes registered (the product's: adaptive, exhaustive, halving)."""
    return sorted(base.PLANNERS)


def new_state(nodes, topology=None, mode="adaptive", seed=0, max_rounds=None, config=None):
    """Fresh localisation state for ``nodes``.

    topology: {node: {"leaf": str, "rail": ..., "rack": ...}}; only ``leaf`` is used. A node
    without a leaf goes to leaf "unknown" (with a warning). config: keys of DEFAULTS.
    max_rounds: None gives the mode's default (adaptive 3, exhaustive N-1 (N odd: N), halving 4N+16).
    """
    chosen = base.planner(mode)
    cfg = dict(base.DEFAULTS)
    cfg.update(chosen["defaults"])
    for key, value in (config or {}).items():
        if key not in base.DEFAULTS:
            raise ValueError("unknown config key %r" % key)
        cfg[key] = value
    if not cfg["oversubscription"] or cfg["oversubscription"] <= 0:
        raise ValueError("oversubscription must be > 0")
    if not isinstance(cfg["confirm_passes"], int) or cfg["confirm_passes"] < 1:
        raise ValueError("confirm_passes must be an integer >= 1")
    topology = topology or {}
    names = sorted(set(str(n) for n in nodes))
    warnings = []
    leaf_of = {}
    missing = []
    for node in names:
        info = topology.get(node) or {}
        leaf = info.get("leaf") if isinstance(info, dict) else None
        if leaf is None or str(leaf) == "":
            missing.append(node)
            leaf = base.UNKNOWN_LEAF
        leaf_of[node] = str(leaf)
    if missing:
        warnings.append("%d node(s) without a leaf in the topology, placed in leaf '%s': %s"
                        % (len(missing), base.UNKNOWN_LEAF, ", ".join(missing[:10])
                           + (" ..." if len(missing) > 10 else "")))
    leaves = {}
    for node in names:
        leaves.setdefault(leaf_of[node], []).append(node)
    if max_rounds is None:
        max_rounds = chosen["max_rounds"](len(names))
    state = {
        "version": 2,
        "mode": mode,
        "seed": seed,
        "round": 0,
        "max_rounds": int(max_rounds),
        "done": False,
        "config": cfg,
        "nodes": dict((n, {"leaf": leaf_of[n], "verdict": base.UNTESTED,
                           "evidence": ["%s: not tested yet" % n]}) for n in names),
        "leaves": leaves,
        "uplinks": {},
        "tests": [],
        "rounds": [],
        "matrix": {},
        "references": {},
        "pinned": {"nodes": [], "uplinks": []},
        "suspects": {"nodes": [], "uplinks": []},
        "intermittent": {"nodes": [], "uplinks": []},
        "leaf_faults": [],
        "summary": {},
        "warnings": warnings,
        "plan": {},
        "next_round": [],
        "_index": {"tests_of": {}, "pass_count": {}, "low_count": {}, "uncleared": [], "unconfirmed": [],
                   "vals": {}, "ids": {},
                   "by_verdict": dict((v, {}) for v in base.VERDICTS),
                   "uplinks_by_verdict": dict((v, {}) for v in base.VERDICTS)},
    }
    by_verdict = state["_index"]["by_verdict"]
    for node in names:
        by_verdict[base.UNTESTED][node] = 1
    if len(leaves) > 1:
        for leaf in sorted(leaves):
            state["uplinks"][leaf] = {"verdict": base.UNTESTED, "nodes": len(leaves[leaf]),
                                      "evidence": ["%s uplink: no cross-leaf test yet" % leaf]}
            state["_index"]["uplinks_by_verdict"][base.UNTESTED][base.uplink(leaf)] = 1
    else:
        state["warnings"].append("one leaf: no uplink between leaves to test")
    if chosen["init"]:
        chosen["init"](state)
    verdicts.refresh_summary(state)
    state["next_round"] = _plan(state)
    state["done"] = not state["next_round"]
    return state


def _plan(state):
    if state["round"] >= state["max_rounds"] or len(state["nodes"]) < 2:
        return []
    return base.planner(state["mode"])["plan"](state)


def plan_round(state):
    """Groups (lists of node names, pairwise disjoint) to run concurrently in the next round.

    An empty list means there is nothing left worth testing (the state is done)."""
    if state.get("done"):
        return []
    return [list(group) for group in state.get("next_round") or []]


def analyse_round(state, results):
    """Record one round's results and update every verdict; returns the (same, updated) state.

    results: [{"group": [nodes], "busbw": GB/s or None, "status": "ok"|"timeout"|"error",
    "samples": [optional repeated measurements]}]. A timeout or an error counts as a low result.
    Unknown nodes are ignored with a warning.
    """
    state["round"] += 1
    rnd = state["round"]
    new = decode.record_round(state, results)
    planned = state.get("next_round") or []
    if planned and len(new) < len(planned):
        state["warnings"].append("round %d: %d of %d planned groups came back with a result"
                                 % (rnd, len(new), len(planned)))
    decode.judge_round(state, new)
    tests = state["tests"]
    low_now = sum(1 for t in new if tests[t]["low"])
    if len(new) >= 4 and low_now * 2 > len(new) and state["mode"] != "halving":
        state["warnings"].append("round %d: %d of %d results are low: check the floor (%s GB/s) or look for a "
                                 "fabric-wide problem" % (rnd, low_now, len(new), state["config"]["floor"]))
    after = base.planner(state["mode"])["after_round"]
    if after:
        after(state, new)
    verdicts.refresh_summary(state)
    state["rounds"].append({
        "round": rnd, "groups": len(new), "nodes": sum(len(tests[t]["group"]) for t in new),
        "low": sum(1 for t in new if tests[t]["result"] == base.LOW),
        "unstable": sum(1 for t in new if tests[t]["result"] == base.UNSTABLE),
        "marginal": sum(1 for t in new if tests[t]["result"] == base.MARGINAL),
        "timeouts": sum(1 for t in new if tests[t]["status"] == base.TIMEOUT),
        "errors": sum(1 for t in new if tests[t]["status"] == base.ERROR)})
    state["next_round"] = _plan(state)
    state["done"] = not state["next_round"]
    if state["done"]:
        verdicts.refresh_evidence(state)
    return state


def localize(nodes, topology, run_group, mode="adaptive", seed=0, max_rounds=None, config=None):
    """Run rounds until done: run_group(groups) -> results (see analyse_round). Returns the state."""
    state = new_state(nodes, topology, mode=mode, seed=seed, max_rounds=max_rounds, config=config)
    while not state["done"]:
        groups = plan_round(state)
        if not groups:
            break
        analyse_round(state, run_group(groups))
    state["done"] = True
    verdicts.refresh_evidence(state)
    return state


def marginal_only(state, element):
    """element is a suspect only through marginal results (inside the margin, never low): what
    the profile's threshold accepts. The stages report it and pass it."""
    name = element if element in state["nodes"] else base.uplink(element)
    index = state["_index"]
    tids = index["tests_of"].get(name) or ()
    return (base.verdict_of(state, name) == base.SUSPECT and not index["low_count"].get(name)
            and any(state["tests"][t]["result"] == base.MARGINAL for t in tids))


def public_state(state):
    """The state without the internal index (for results.json)."""
    return dict((k, v) for k, v in state.items() if not k.startswith("_"))
