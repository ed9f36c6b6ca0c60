# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decoding for the localiser (_localize): results to test outcomes, and the counters verdicts follow from.

Each test is a boolean "OR" over its elements (its nodes, plus the uplinks of its leaves when it
crosses leaves): it is low when any element is bad.

* References: intra- and cross-leaf classes; the healthy level is the highest class median
  (cross-leaf times the oversubscription) among classes with ``min_peers`` results, else the
  median of all results, else ``expected_busbw``; the spread the smallest class MAD.
  ``margin = max(min_rel_drop * m, mad_z * MAD / 0.6745)``; below ``m - margin`` (or the floor)
  a result is **low**, from ``clear`` it **passes**, in between it is **marginal**.
* A test with ``samples`` (repeated runs in one allocation) whose samples are both low and
  passing is **unstable**: low for blame, and the sign of an intermittent element.
* Counters per test: elements never cleared (``uncleared``) and elements not yet confirmed,
  i.e. with fewer than ``confirm_passes`` passes (``unconfirmed``).

The verdicts that follow from the counters, and leaf faults, are in _localize_verdicts.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import bisect
import heapq

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base
from ansible_collections.gpucluster.acceptance.plugins.module_utils._localize_verdicts import refresh_verdicts
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import MAD_TO_SIGMA


# ------------------------------------------------------------------------------ references

def refresh_references(state):
    """Reference level, MAD, low threshold and clear level of intra- and cross-leaf results.

    Returns {class: ((old, new threshold), (old, new clear level), (old, new node clear level))}."""
    cfg = state["config"]
    vals = state["_index"]["vals"]
    over = float(cfg["oversubscription"])
    rel = cfg["min_rel_drop"]
    scale = {"intra": 1.0, "cross": 1.0 / over}
    own = dict((cls, vals.get(cls, [])) for cls in base.CLASSES)
    stats = dict((cls, base.stats(own[cls])) for cls in base.CLASSES if len(own[cls]) >= cfg["min_peers"])
    pooled_stats = None
    if len(stats) < len(base.CLASSES) and len(own["intra"]) + len(own["cross"]) >= cfg["min_peers"]:
        pooled_stats = base.stats(list(heapq.merge(own["intra"], [v * over for v in own["cross"]])))
    level, basis = None, "floor only"
    if stats:
        level, best = max((stats[cls][0] / scale[cls], cls) for cls in sorted(stats))
        basis = "median of %s-leaf results" % best
    elif pooled_stats:
        level, basis = pooled_stats[0], "median of all results"
    elif base.is_number(cfg["expected_busbw"]):
        level, basis = float(cfg["expected_busbw"]), "expected_busbw"
    old = state["references"]
    refs = {}
    changed = {}
    for cls in base.CLASSES:
        floor = cfg["floor"] * scale[cls] if base.is_number(cfg["floor"]) else None
        entry = {"floor": floor, "median": None, "mad": None, "n": len(own[cls]), "basis": basis}
        if level is not None:
            median = level * scale[cls]
            if stats:
                # the quietest class: faults inflate the MAD of the class they sit in, noise does not
                spread = min(stats[c][1] / scale[c] for c in stats) * scale[cls]
            elif pooled_stats:
                spread = pooled_stats[1] * scale[cls]
            else:
                spread = 0.0
            margin = max(rel * median, cfg["mad_z"] * spread / MAD_TO_SIGMA)
            threshold = median - margin if floor is None else max(floor, median - margin)
            clear = max(threshold + rel / 2.0 * median, median * (1 - rel / 2.0))
            entry.update({"median": median, "mad": spread})
        elif floor is not None:
            threshold, clear = floor, floor * (1 + rel / 2.0)
        else:
            threshold = clear = None
        entry["threshold"] = threshold
        entry["clear"] = clear
        # a cross-leaf pass clears its nodes only at the intra-leaf clear level
        entry["clear_nodes"] = clear * over if cls == "cross" and over > 1 and clear is not None else None
        refs[cls] = entry
        before = old.get(cls, {})
        levels = (threshold, clear, entry["clear_nodes"])
        if (before.get("threshold"), before.get("clear"), before.get("clear_nodes")) != levels:
            changed[cls] = ((before.get("threshold"), threshold), (before.get("clear"), clear),
                            (before.get("clear_nodes"), entry["clear_nodes"]))
    state["references"] = refs
    return changed


def _level(value, ref):
    if ref["threshold"] is not None and value < ref["threshold"]:
        return base.LOW
    if ref["clear"] is not None and value < ref["clear"]:
        return base.MARGINAL
    return base.PASS


def classify(test, ref):
    """(result, nodes cleared). result: 'low' (below threshold, timed out, failed), 'unstable'
    (its samples both low and passing), 'marginal' (between threshold and clear level: neither
    clears nor blames anyone) or 'pass'. A pass clears every element, except that a cross-leaf
    pass clears its nodes only from the clear level times the oversubscription: an
    oversubscribed uplink caps every node, so a slow node can pass cross-leaf."""
    if test["status"] != base.OK:
        return base.LOW, False
    value = test["busbw"]
    result = _level(value, ref)
    samples = test.get("samples") or ()
    if len(samples) > 1:
        levels = set(_level(v, ref) for v in samples)
        if base.LOW in levels and base.PASS in levels:
            return base.UNSTABLE, False
    if result != base.PASS:
        return result, False
    return base.PASS, ref.get("clear_nodes") is None or value >= ref["clear_nodes"]


def cleared_by(test):
    """Elements a test clears: all when it passed (cross-leaf: its uplinks, and its nodes when
    it passed at node level)."""
    if test["result"] != base.PASS:
        return []
    if test["nodes_cleared"]:
        return test["elements"]
    return [e for e in test["elements"] if base.is_uplink(e)]


# ------------------------------------------------------------------------------ counters

def _bump(state, key, tid, delta, dirty):
    counter = state["_index"][key]
    before = counter[tid]
    counter[tid] = before + delta
    elements = state["tests"][tid]["elements"]
    # verdicts change only around 0 and 1; small tests also refresh their evidence text
    if min(before, before + delta) <= 1 or len(elements) <= 8:
        dirty.update(elements)


def _move_pass(state, element, delta, dirty):
    """pass_count of element += delta; the low tests it is in count it as cleared from its first
    pass and as confirmed from its confirm_passes-th."""
    index = state["_index"]
    before = index["pass_count"].get(element, 0)
    after = before + delta
    index["pass_count"][element] = after
    confirm = state["config"]["confirm_passes"]
    moves = []
    if (before == 0) != (after == 0):
        moves.append("uncleared")
    if (before >= confirm) != (after >= confirm):
        moves.append("unconfirmed")
    if not moves:
        return
    tests = state["tests"]
    for tid in index["tests_of"][element]:
        if tests[tid]["low"] is True:
            for key in moves:
                _bump(state, key, tid, -delta, dirty)


def set_result(state, tid, outcome, dirty):
    """Classify test tid as outcome (result, nodes cleared), keeping the pass/low counters of
    its elements in step."""
    test = state["tests"][tid]
    result, nodes_cleared = outcome
    if test["result"] == result and test["nodes_cleared"] == nodes_cleared:
        return
    elements = test["elements"]
    index = state["_index"]
    low_count = index["low_count"]
    before = cleared_by(test)
    if test["low"]:
        for element in elements:
            low_count[element] -= 1
    test["result"], test["low"], test["nodes_cleared"] = None, None, False
    for element in before:
        _move_pass(state, element, -1, dirty)
    low = result in (base.LOW, base.UNSTABLE)
    test["result"], test["low"], test["nodes_cleared"] = result, low, nodes_cleared
    if low:
        counts = index["pass_count"]
        confirm = state["config"]["confirm_passes"]
        index["uncleared"][tid] = sum(1 for e in elements if counts.get(e, 0) == 0)
        index["unconfirmed"][tid] = sum(1 for e in elements if counts.get(e, 0) < confirm)
        for element in elements:
            low_count[element] = low_count.get(element, 0) + 1
    else:
        index["uncleared"][tid] = 0
        index["unconfirmed"][tid] = 0
        for element in cleared_by(test):
            _move_pass(state, element, +1, dirty)
    dirty.update(elements)


# ------------------------------------------------------------------------------ recording

def _warn_ignored(state, rnd, group, unknown):
    state["warnings"].append("round %d: result for %s ignored (%s)" % (
        rnd, ",".join(group) or "an empty group",
        "unknown node(s) %s" % ",".join(unknown) if unknown
        else "fewer than two nodes" if len(set(group)) < 2
        else "a node twice in one round"))


def _samples(result, status):
    samples = result.get("samples")
    if status != base.OK or not isinstance(samples, (list, tuple)):
        return None
    values = [float(v) for v in samples if base.is_number(v)]
    return values if len(values) > 1 else None


def record_round(state, results):
    """Append one round's results as tests; returns the new test ids."""
    index = state["_index"]
    nodes = state["nodes"]
    rnd = state["round"]
    new = []
    seen = set()
    for result in results or []:
        group = [str(n) for n in (result.get("group") or [])]
        unknown = [n for n in group if n not in nodes]
        if unknown or len(group) < 2 or len(set(group)) != len(group) or seen.intersection(group):
            _warn_ignored(state, rnd, group, unknown)
            continue
        seen.update(group)
        status = str(result.get("status") or base.OK).lower()
        busbw = result.get("busbw")
        if status == base.OK and not base.is_number(busbw):
            status = base.ERROR
        if status not in (base.OK, base.TIMEOUT):
            status = base.ERROR
        leaves = sorted(set(nodes[n]["leaf"] for n in group))
        cross = len(leaves) > 1
        cls = "cross" if cross else "intra"
        test = {"round": rnd, "group": sorted(group), "leaves": leaves, "cross": cross,
                "class": cls, "busbw": float(busbw) if status == base.OK else None, "status": status,
                "result": None, "low": None, "nodes_cleared": False,
                "elements": base.elements(state, sorted(group), leaves)}
        samples = _samples(result, status)
        if samples:
            test["samples"] = samples
        tid = len(state["tests"])
        state["tests"].append(test)
        index["uncleared"].append(0)
        index["unconfirmed"].append(0)
        for element in test["elements"]:
            index["tests_of"].setdefault(element, []).append(tid)
            index["pass_count"].setdefault(element, 0)
        if status == base.OK:
            vals = index["vals"].setdefault(cls, [])
            ids = index["ids"].setdefault(cls, [])
            at = bisect.bisect_right(vals, test["busbw"])
            vals.insert(at, test["busbw"])
            ids.insert(at, tid)
        if len(group) == 2:
            first, second = test["group"]
            state["matrix"].setdefault(first, {})[second] = test["busbw"]
            state["matrix"].setdefault(second, {})[first] = test["busbw"]
        new.append(tid)
    return new


def judge_round(state, new):
    """Move the references with the new results, reclassify the old results they cross, classify
    the new ones, then refresh verdicts; returns nothing (the state is updated)."""
    index = state["_index"]
    dirty = set()
    changed = refresh_references(state)
    refs = state["references"]
    for cls, moves in sorted(changed.items()):
        vals = index["vals"].get(cls, [])
        ids = index["ids"].get(cls, [])
        todo = set()
        for before, after in moves:
            bounds = [float("-inf") if x is None else x for x in (before, after)]
            todo.update(range(bisect.bisect_left(vals, min(bounds)), bisect.bisect_left(vals, max(bounds))))
        # unstable tests are judged by their samples, which the moves may cross anywhere
        todo_ids = set(ids[i] for i in todo) | set(t for t in index.get("sampled", ()) if state["tests"][t]["class"] == cls)
        for tid in sorted(todo_ids):
            if state["tests"][tid]["result"] is not None:
                set_result(state, tid, classify(state["tests"][tid], refs[cls]), dirty)
    for tid in new:
        test = state["tests"][tid]
        if test.get("samples"):
            index.setdefault("sampled", []).append(tid)
        set_result(state, tid, classify(test, refs[test["class"]]), dirty)
    refresh_verdicts(state, dirty)
