# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The localiser's verdicts: each node's and uplink's verdict from the classified tests, leaf faults, the summary.

Private to the collection. Standard library only.

* Verdicts. Never passed, and a low test where every other element is confirmed: **pinned**
  (**intermittent** when that test was unstable). Passed, and a low test where every other
  element is confirmed and it is the one that is not: **intermittent** (slow in some runs, fine
  in others; never used as a partner). Passed, and no low test left unexplained by an element
  that never passed (or by a single unconfirmed one): **cleared**. Otherwise **suspect** (a low
  test whose partner passed once: confirmation pending; or a low test of confirmed elements
  only: one of them is intermittent). Never tested: **untested**.
* Leaf faults: a leaf none of whose nodes nor its uplink ever passed, every node low with
  cleared partners of other leaves (over cleared uplinks), and low inside the leaf: the leaf
  switch or all its nodes. Its nodes and uplink get the verdict **leaf**.

It is apart from the decoding of results into test outcomes and counters (_localize_decode)
because it only reads them: the counters per test are kept by _localize_decode, the verdicts
here follow from them, and the evidence text (_localize_evidence) from the verdicts.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_evidence as evidence


def _verdict(state, element, leaf_faults):
    if not base.is_uplink(element) and state["nodes"][element]["leaf"] in leaf_faults:
        return base.LEAF
    if base.is_uplink(element) and element[len(base.UPLINK):] in leaf_faults:
        return base.LEAF
    index = state["_index"]
    tids = index["tests_of"].get(element)
    if not tids:
        return base.UNTESTED
    tests = state["tests"]
    passes = index["pass_count"].get(element, 0)
    if passes == 0:
        pins = [t for t in tids if tests[t]["low"] and index["unconfirmed"][t] == 1]
        if pins:
            return base.INTERMITTENT if any(tests[t]["result"] == base.UNSTABLE for t in pins) else base.PINNED
        if not index["low_count"].get(element) and all(tests[t]["result"] == base.PASS for t in tids):
            return base.UNTESTED     # passed only where a pass does not clear it (oversubscribed cross-leaf)
        return base.SUSPECT
    if not index["low_count"].get(element):
        return base.CLEARED
    mine = 0 if passes >= state["config"]["confirm_passes"] else 1
    verdict = base.CLEARED
    for tid in tids:
        if not tests[tid]["low"] or index["uncleared"][tid]:
            continue        # explained by an element that never passed
        unconfirmed = index["unconfirmed"][tid]
        if mine and unconfirmed == 1:
            return base.INTERMITTENT
        if unconfirmed == 0 or mine:
            verdict = base.SUSPECT
    return verdict


def leaf_faults(state):
    """{leaf: 1} for the leaves that fail as a whole (see the module's documentation)."""
    index = state["_index"]
    counts = index["pass_count"]
    tests = state["tests"]
    nodes = state["nodes"]
    found = {}
    if len(state["leaves"]) < 2:
        return found
    for leaf, members in state["leaves"].items():
        if counts.get(base.uplink(leaf), 0):
            continue
        inside = False
        whole = True
        for node in members:
            tids = index["tests_of"].get(node)
            if not tids or counts.get(node, 0):
                whole = False
                break
            across = False
            for tid in tids:
                test = tests[tid]
                if not test["low"]:
                    continue
                if not test["cross"]:
                    inside = True
                elif test["status"] == base.OK and all(
                        counts.get(e, 0) for e in test["elements"]
                        if e != base.uplink(leaf) and (base.is_uplink(e) or nodes[e]["leaf"] != leaf)):
                    across = True
            if not across:
                whole = False
                break
        if whole and (inside or len(members) == 1):
            found[leaf] = 1
    return found


def refresh_verdicts(state, dirty):
    """New verdicts for dirty elements (and every element of a leaf whose leaf-fault status
    changed), then evidence for them and for the elements of small low tests whose other members
    changed verdict (their evidence names those verdicts)."""
    index = state["_index"]
    tests = state["tests"]
    faults = leaf_faults(state)
    before = index.get("leaf_faults") or {}
    for leaf in set(faults) ^ set(before):
        dirty.update(state["leaves"][leaf])
        dirty.add(base.uplink(leaf))
    index["leaf_faults"] = faults
    state["leaf_faults"] = sorted(faults)
    changed = []
    for element in sorted(dirty):
        record = base.record(state, element)
        verdict = _verdict(state, element, faults)
        if record["verdict"] != verdict:
            by_verdict = index["uplinks_by_verdict" if base.is_uplink(element) else "by_verdict"]
            by_verdict[record["verdict"]].pop(element, None)
            by_verdict[verdict][element] = 1
            record["verdict"] = verdict
            changed.append(element)
    refresh = set(dirty)
    for element in changed:
        for tid in index["tests_of"].get(element, ()):
            if tests[tid]["low"] and len(tests[tid]["elements"]) <= 8:
                refresh.update(tests[tid]["elements"])
    stale = index.setdefault("stale", {})
    if state["config"]["evidence_every_round"]:
        for element in sorted(refresh):
            record = base.record(state, element)
            record["evidence"] = evidence.evidence(state, element, record["verdict"])
    else:
        for element in refresh:
            stale[element] = 1


def refresh_evidence(state):
    """Write the evidence of every element whose evidence is out of date (see evidence_every_round)."""
    stale = state["_index"].get("stale") or {}
    for element in sorted(stale):
        record = base.record(state, element)
        record["evidence"] = evidence.evidence(state, element, record["verdict"])
    state["_index"]["stale"] = {}
    return state


def refresh_summary(state):
    index = state["_index"]
    nodes, uplinks = index["by_verdict"], index["uplinks_by_verdict"]
    state["summary"] = {"nodes": dict((v, len(nodes[v])) for v in base.VERDICTS),
                        "uplinks": dict((v, len(uplinks[v])) for v in base.VERDICTS),
                        "tests": len(state["tests"]), "rounds": state["round"]}
    cut = len(base.UPLINK)
    state["pinned"] = {"nodes": sorted(nodes[base.PINNED]), "uplinks": sorted(u[cut:] for u in uplinks[base.PINNED])}
    state["suspects"] = {"nodes": sorted(nodes[base.SUSPECT]), "uplinks": sorted(u[cut:] for u in uplinks[base.SUSPECT])}
    state["intermittent"] = {"nodes": sorted(nodes[base.INTERMITTENT]),
                             "uplinks": sorted(u[cut:] for u in uplinks[base.INTERMITTENT])}
    state["leaf_faults"] = sorted(index.get("leaf_faults") or {})
