# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pin slow nodes and degraded leaf uplinks with rounds of concurrent multi-node NCCL tests.

A *round* is a set of disjoint groups of nodes; every group runs ``all_reduce_perf`` at the same
time and reports its bus bandwidth. A group is as fast as its slowest member, and a group that
spans leaves is also as fast as the slowest uplink of the leaves it spans. So each test is a
boolean "OR" over its *elements* (its nodes, plus the uplinks of its leaves when it crosses
leaves): it is low when any element is bad.

Decoding (the same for every mode):

* Peer classes: intra-leaf and cross-leaf results (pairs and larger groups together). The
  healthy level ``H`` is the highest class median (cross-leaf medians times the
  oversubscription) among classes with at least ``min_peers`` results, else the median of all
  results pooled, else ``expected_busbw``; so a degraded uplink that drags down many cross-leaf
  results of a small cluster cannot drag the reference down with it. A class's reference ``m``
  is ``H`` (divided by the oversubscription for cross-leaf), its spread the smallest class MAD
  (a degraded uplink inflates the MAD of cross-leaf results, noise inflates both). Without any
  reference only the floor judges (cross-leaf floor: divided by the
  oversubscription too).
* ``margin = max(min_rel_drop * m, mad_z * MAD / 0.6745)`` (the rule of
  ``_judge_common.peer_outliers``: 10 % and a modified z-score of 3.5). A result is **low**
  below ``threshold = max(floor, m - margin)`` or when it timed out or failed; it **passes** from
  ``clear = max(threshold + min_rel_drop/2 * m, m * (1 - min_rel_drop/2))`` (floor only:
  ``floor * (1 + min_rel_drop/2)``); in between it is **marginal**. With a few percent of noise
  healthy results stay within 5 % of the median, so noise neither flags nor blames; in a noisy
  cluster the MAD term lowers the threshold.
* An element is **cleared** when it took part in a test that passed.
* An element is **pinned** when it was never in a passing test and some low test has it as the
  only element not cleared ("every pair is low, and each partner passed with another node").
* An element in a low or marginal test that is neither is a **suspect**; so is a cleared element
  of a low test all of whose elements are cleared (an inconsistent, possibly intermittent
  result). An element never tested is **untested**.

Pinned therefore means *proved by the results*: a faulty element can only get a healthy one
blamed by passing somewhere, i.e. by measuring at least ``clear`` in one test and below
``threshold`` in another, at least ``min_rel_drop/2`` (5 %) apart, which noise narrower than
+-2.5 % cannot do. A degraded uplink is pinned
rather than the nodes behind it because those nodes pass their intra-leaf tests. A shortfall
smaller than the margin is reported (suspect, marginal), never pinned.

Modes (planners):

* ``adaptive`` (default): round 1 pairs every node; in each leaf a share (``cross_fraction``)
  is paired with nodes of other leaves (a round-robin over leaves, so a leaf's cross pairs go
  to different leaves) and the rest within the leaf. Later rounds re-pair each suspect node with
  a cleared node of its own leaf (no uplink involved), else of a leaf with a cleared uplink,
  and probe each suspect uplink with a cleared node of its leaf and a cleared node of a leaf
  whose uplink is cleared. Where a leaf has no cleared node left and its uplink looks degraded
  (a planning hint, never a verdict), its suspects are paired with each other inside the leaf.
  A marginal element whose partners all passed is not tested again. Nodes with nothing to prove
  stay idle. It stops when no suspect can be tested further or at the round limit.
* ``exhaustive``: every pair once, a round-robin tournament (N-1 rounds).
* ``halving``: test the whole allocation as one group, split a low group in halves and test
  each, one group per round (sequential); then resolve what is left one test per round.
* ``random15``: 15 random perfect pairings, then decode (benchmark baseline).
* ``two_pass``: one random perfect pairing, then each suspect re-paired with a random cleared
  node, topology-blind (benchmark baseline).

API: ``new_state``, ``plan_round``, ``analyse_round`` and ``localize``. The state is plain JSON
(dicts with string keys, lists, numbers, strings, booleans, None) and deterministic for a given
seed. ``analyse_round`` updates the state in place and returns it. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import bisect
import heapq
import math
import random

MODES = ("adaptive", "exhaustive", "halving", "random15", "two_pass")
CLEARED = "cleared"
SUSPECT = "suspect"
PINNED = "pinned"
UNTESTED = "untested"
VERDICTS = (PINNED, SUSPECT, UNTESTED, CLEARED)
PASS = "pass"
MARGINAL = "marginal"
LOW = "low"
OK = "ok"
TIMEOUT = "timeout"
ERROR = "error"
UPLINK = "uplink:"
UNKNOWN_LEAF = "unknown"
CLASSES = ("intra", "cross")
MAD_TO_SIGMA = 0.6745

DEFAULTS = {
    # GB/s: a pair below it is low (the profile's nccl.multi_node_pair_busbw_min); None: none.
    "floor": None,
    # GB/s: reference when a class has fewer than min_peers results (None: floor only).
    "expected_busbw": None,
    # margin = max(min_rel_drop * median, mad_z * MAD / 0.6745): a result is low below
    # median - margin (or the floor), passes from median - margin / 2, marginal in between
    "min_rel_drop": 0.10,
    "mad_z": 3.5,
    # results needed in a class before the median is trusted
    "min_peers": 8,
    # leaf uplink oversubscription (2.0 for 2:1): cross-leaf floor and reference are divided by
    # it, and above 1 a cross-leaf pass clears its nodes only at the intra-leaf level
    "oversubscription": 1.0,
    # adaptive round 1: share of each leaf paired with other leaves
    "cross_fraction": 0.5,
    # adaptive: tests per suspect uplink per round
    "uplink_probes": 2,
    # a suspect node is re-paired at most this many times after its first low result
    "max_retests": 2,
    # detail lines per evidence list (after the summary line)
    "evidence_lines": 12,
    # False: write evidence only when done (the verdicts still change every round; faster)
    "evidence_every_round": True,
    # what the results measure, as the evidence writes it: GB/s (nccl-tests busbw) or Gb/s (perftest)
    "unit": "GB/s",
}

DEFAULT_ROUNDS = {"adaptive": 5, "random15": 15, "two_pass": 2}


# ------------------------------------------------------------------------------------ helpers

def _is_number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not math.isnan(value) and not math.isinf(value)


def _rng(state, salt=""):
    return random.Random("localize|%s|%s|%d|%s" % (state["seed"], state["mode"], state["round"], salt))


def _is_uplink(element):
    return element.startswith(UPLINK)


def _uplink(leaf):
    return UPLINK + leaf


def _name(element):
    """Human name of an element: the node, or '<leaf> uplink'."""
    if _is_uplink(element):
        return "%s uplink" % element[len(UPLINK):]
    return element


def _gbs(value):
    return "%.0f" % value


def _median_sorted(values):
    count = len(values)
    mid = count // 2
    if count % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2.0


def _mad_sorted(values, center):
    """Median absolute deviation of sorted values around center, walking out from the center."""
    count = len(values)
    right = bisect.bisect_left(values, center)
    left = right - 1
    wanted = (count - 1) // 2, count // 2
    found = []
    for rank in range(count // 2 + 1):
        dev_left = center - values[left] if left >= 0 else None
        dev_right = values[right] - center if right < count else None
        if dev_right is None or (dev_left is not None and dev_left <= dev_right):
            dev = dev_left
            left -= 1
        else:
            dev = dev_right
            right += 1
        if rank in wanted:
            found.append(dev)
    return sum(found) / len(found)


def _round_robin(items):
    """Circle-method tournament: a list of rounds, each a list of (a, b) pairs (byes dropped)."""
    items = list(items)
    if len(items) % 2:
        items.append(None)
    count = len(items)
    rounds = []
    for _round in range(count - 1):
        pairs = []
        for i in range(count // 2):
            first, second = items[i], items[count - 1 - i]
            if first is not None and second is not None:
                pairs.append((first, second))
        rounds.append(pairs)
        items = [items[0], items[-1]] + items[1:-1]
    return rounds


def _pairs_of(nodes):
    """Consecutive pairs; an odd last node joins the last pair (a group of three)."""
    groups = [[nodes[i], nodes[i + 1]] for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2 and groups:
        groups[-1].append(nodes[-1])
    return groups


# ------------------------------------------------------------------------------------ state

def new_state(nodes, topology=None, mode="adaptive", seed=0, max_rounds=None, config=None):
    """Fresh localisation state for ``nodes``.

    topology: {node: {"leaf": str, "rail": ..., "rack": ...}}; only ``leaf`` is used. A node
    without a leaf goes to leaf "unknown" (with a warning). config: keys of DEFAULTS.
    max_rounds: None gives the mode's default (adaptive 5, random15 15, two_pass 2, exhaustive
    N-1 (N odd: N), halving 4N+16).
    """
    if mode not in MODES:
        raise ValueError("unknown mode %r (expected one of %s)" % (mode, ", ".join(MODES)))
    cfg = dict(DEFAULTS)
    for key, value in (config or {}).items():
        if key not in DEFAULTS:
            raise ValueError("unknown config key %r" % key)
        cfg[key] = value
    if not cfg["oversubscription"] or cfg["oversubscription"] <= 0:
        raise ValueError("oversubscription must be > 0")
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
            leaf = UNKNOWN_LEAF
        leaf_of[node] = str(leaf)
    if missing:
        warnings.append("%d node(s) without a leaf in the topology, placed in leaf '%s': %s"
                        % (len(missing), UNKNOWN_LEAF, ", ".join(missing[:10])
                           + (" ..." if len(missing) > 10 else "")))
    leaves = {}
    for node in names:
        leaves.setdefault(leaf_of[node], []).append(node)
    count = len(names)
    if max_rounds is None:
        if mode == "exhaustive":
            max_rounds = max(count - 1, 0) if count % 2 == 0 else count
        elif mode == "halving":
            max_rounds = 4 * count + 16
        else:
            max_rounds = DEFAULT_ROUNDS[mode]
    state = {
        "version": 1,
        "mode": mode,
        "seed": seed,
        "round": 0,
        "max_rounds": int(max_rounds),
        "done": False,
        "config": cfg,
        "nodes": dict((n, {"leaf": leaf_of[n], "verdict": UNTESTED,
                           "evidence": ["%s: not tested yet" % n]}) for n in names),
        "leaves": leaves,
        "uplinks": {},
        "tests": [],
        "rounds": [],
        "matrix": {},
        "references": {},
        "pinned": {"nodes": [], "uplinks": []},
        "suspects": {"nodes": [], "uplinks": []},
        "summary": {},
        "warnings": warnings,
        "plan": {},
        "next_round": [],
        "_index": {"tests_of": {}, "pass_count": {}, "low_count": {}, "uncleared": [], "vals": {}, "ids": {},
                   "by_verdict": dict((v, {}) for v in VERDICTS),
                   "uplinks_by_verdict": dict((v, {}) for v in VERDICTS)},
    }
    by_verdict = state["_index"]["by_verdict"]
    for node in names:
        by_verdict[UNTESTED][node] = 1
    if len(leaves) > 1:
        for leaf in sorted(leaves):
            state["uplinks"][leaf] = {"verdict": UNTESTED, "nodes": len(leaves[leaf]),
                                      "evidence": ["%s uplink: no cross-leaf test yet" % leaf]}
            state["_index"]["uplinks_by_verdict"][UNTESTED][_uplink(leaf)] = 1
    else:
        state["warnings"].append("one leaf: no uplink between leaves to test")
    if mode == "halving":
        state["plan"]["queue"] = [sorted(names, key=lambda n: (leaf_of[n], n))] if count >= 2 else []
    if mode == "exhaustive":
        order = list(names)
        random.Random("localize|%s|exhaustive|order" % seed).shuffle(order)
        state["plan"]["order"] = order
    _refresh_summary(state)
    state["next_round"] = _plan(state)
    state["done"] = not state["next_round"]
    return state


def _record(state, element):
    if _is_uplink(element):
        return state["uplinks"][element[len(UPLINK):]]
    return state["nodes"][element]


def _verdict_of(state, element):
    return _record(state, element)["verdict"]


def _elements(state, group, leaves):
    if len(leaves) > 1:
        return list(group) + [_uplink(leaf) for leaf in leaves]
    return list(group)


# ------------------------------------------------------------------------------ planning

def plan_round(state):
    """Groups (lists of node names, pairwise disjoint) to run concurrently in the next round.

    An empty list means there is nothing left worth testing (the state is done)."""
    if state.get("done"):
        return []
    return [list(group) for group in state.get("next_round") or []]


def _plan(state):
    if state["round"] >= state["max_rounds"] or len(state["nodes"]) < 2:
        return []
    mode = state["mode"]
    if mode == "adaptive":
        if state["round"] == 0:
            return _plan_adaptive_first(state)
        return _plan_resolve(state, aware=True)
    if mode == "exhaustive":
        return _plan_tournament(state)
    if mode == "halving":
        queue = state["plan"].get("queue") or []
        if queue:
            return [list(queue[0])]
        return _plan_resolve(state, aware=True, limit=1)
    if mode == "random15":
        return _random_matching(state)
    if mode == "two_pass":
        if state["round"] == 0:
            return _random_matching(state)
        if state["round"] == 1:
            return _plan_resolve(state, aware=False)
        return []
    return []


def _random_matching(state):
    nodes = sorted(state["nodes"])
    _rng(state, "matching").shuffle(nodes)
    return _pairs_of(nodes)


def _plan_tournament(state):
    order = list(state["plan"]["order"])
    if len(order) % 2:
        order.append(None)
    count = len(order)
    rnd = state["round"]
    if rnd >= count - 1:
        return []
    rest = order[1:]
    shift = rnd % (count - 1)
    rest = rest[-shift:] + rest[:-shift] if shift else rest
    arrangement = [order[0]] + rest
    groups = []
    for i in range(count // 2):
        first, second = arrangement[i], arrangement[count - 1 - i]
        if first is not None and second is not None:
            groups.append([first, second])
    return groups


def _cross_quota(size, fraction):
    """Nodes of a leaf of ``size`` to pair across leaves: near fraction*size, leaving an even rest."""
    if size <= 0 or fraction <= 0:
        return 0
    target = fraction * size
    quota = min(size, max(1, int(round(target))))
    if (size - quota) % 2:
        options = [q for q in (quota - 1, quota + 1) if 1 <= q <= size]
        options.sort(key=lambda q: (abs(q - target), q))
        quota = options[0]
    return quota


def _plan_adaptive_first(state):
    """Round 1: every node in one pair; a share of each leaf paired across leaves."""
    rng = _rng(state, "first")
    leaves = sorted(state["leaves"])
    pools = {}
    for leaf in leaves:
        pool = list(state["leaves"][leaf])
        rng.shuffle(pool)
        pools[leaf] = pool
    groups = []
    if len(leaves) > 1:
        fraction = state["config"]["cross_fraction"]
        quota = dict((leaf, _cross_quota(len(pools[leaf]), fraction)) for leaf in leaves)
        order = list(leaves)
        rng.shuffle(order)
        schedule = _round_robin(order)
        progress = True
        while progress and any(quota.values()):
            progress = False
            for pairs in schedule:
                for first, second in pairs:
                    if quota[first] > 0 and quota[second] > 0:
                        groups.append([pools[first].pop(), pools[second].pop()])
                        quota[first] -= 1
                        quota[second] -= 1
                        progress = True
        # every leaf gets at least one cross-leaf pair, so that every uplink is tested
        covered = set(state["nodes"][n]["leaf"] for g in groups for n in g)
        for leaf in order:
            if leaf in covered or not pools[leaf]:
                continue
            others = [x for x in order if x != leaf and pools[x]]
            if not others:
                break
            others.sort(key=lambda x: (x in covered, -len(pools[x])))
            partner = others[0]
            groups.append([pools[leaf].pop(), pools[partner].pop()])
            covered.update((leaf, partner))
    singles = []
    for leaf in leaves:
        pool = pools[leaf]
        if len(pool) == 1:
            singles.append(pool[0])
        else:
            groups.extend(_pairs_of(pool))
    if len(singles) > 1:
        groups.extend(_pairs_of(singles))
    elif singles:
        # one node alone: join a cross-leaf pair if there is one, else any group
        target = next((g for g in groups if len(set(state["nodes"][n]["leaf"] for n in g)) > 1),
                      groups[-1] if groups else None)
        if target is not None:
            target.append(singles[0])
    return groups


def _uplink_looks_degraded(state, leaf):
    """Planning hint only (never a verdict): the uplink of leaf is pinned, or is not cleared and
    its low cross-leaf results look like one shared bottleneck (3 or more, or 2 within 5 %)."""
    record = state["uplinks"].get(leaf)
    if record is None or record["verdict"] == CLEARED:
        return False
    if record["verdict"] == PINNED:
        return True
    tests = state["tests"]
    lows = [tests[t] for t in state["_index"]["tests_of"].get(_uplink(leaf), ()) if tests[t]["low"]]
    if len(lows) >= 3:
        return True
    values = [t["busbw"] for t in lows if t["status"] == OK]
    return len(values) == 2 and min(values) >= 0.95 * max(values)


def _settled_marginal(state, element):
    """element was never cleared and has a marginal test whose other elements are all cleared:
    the shortfall is its own, but inside the margin; testing it again would not blame it. (Its
    low tests, if any, hold another element not cleared yet, which is tested instead.)"""
    index = state["_index"]
    counts = index["pass_count"]
    if counts.get(element, 0):
        return False
    tests = state["tests"]
    for tid in index["tests_of"].get(element, ()):
        test = tests[tid]
        if test["result"] == MARGINAL and all(counts.get(e, 0) for e in test["elements"] if e != element):
            return True
    return False


def _probed_leaves(state, leaf):
    """({leaf: 1} probed cleanly with leaf: a low cross-leaf test whose nodes are all cleared,
    {leaf: number of cross-leaf tests with leaf})."""
    tests = state["tests"]
    counts = state["_index"]["pass_count"]
    done, tried = {}, {}
    for tid in state["_index"]["tests_of"].get(_uplink(leaf), ()):
        test = tests[tid]
        for other in test["leaves"]:
            if other != leaf:
                tried[other] = tried.get(other, 0) + 1
                if test["low"] and len(test["leaves"]) == 2 and all(counts.get(n, 0) for n in test["group"]):
                    done[other] = 1
    return done, tried


def _retests(state, node):
    """Pair tests of node after its first low result (the re-pairings it has had)."""
    tests = state["tests"]
    low_seen = False
    count = 0
    for tid in state["_index"]["tests_of"].get(node, ()):
        if low_seen and len(tests[tid]["group"]) == 2:
            count += 1
        elif tests[tid]["low"]:
            low_seen = True
    return count


def _tested_with(state, node):
    partners = set()
    tests = state["tests"]
    for tid in state["_index"]["tests_of"].get(node, ()):
        partners.update(tests[tid]["group"])
    partners.discard(node)
    return partners


class _Pools(object):
    """Cleared nodes available as partners this round, per leaf (built lazily, shuffled)."""

    def __init__(self, state, rng, busy):
        self.state = state
        self.rng = rng
        self.busy = busy
        self.by_leaf = {}
        self.everyone = None

    def leaf(self, leaf):
        if leaf not in self.by_leaf:
            nodes = self.state["nodes"]
            pool = [n for n in self.state["leaves"].get(leaf, ()) if nodes[n]["verdict"] == CLEARED]
            self.rng.shuffle(pool)
            self.by_leaf[leaf] = pool
        return self.by_leaf[leaf]

    def spare(self, leaf):
        return any(n not in self.busy for n in self.leaf(leaf))

    def take(self, pool, avoid=()):
        """A free node of pool, preferably not in avoid; None when the pool is used up."""
        while pool and pool[-1] in self.busy:
            pool.pop()
        for i in range(len(pool) - 1, -1, -1):
            node = pool[i]
            if node not in self.busy and node not in avoid:
                self.busy.add(node)
                return node
        while pool:
            node = pool.pop()
            if node not in self.busy:
                self.busy.add(node)
                return node
        return None

    def all_cleared(self):
        if self.everyone is None:
            nodes = self.state["nodes"]
            self.everyone = [n for n in sorted(nodes) if nodes[n]["verdict"] == CLEARED]
            self.rng.shuffle(self.everyone)
        return self.everyone


def _plan_resolve(state, aware=True, limit=None):
    """Tests that can turn suspects into pinned or cleared.

    aware (adaptive, halving): a suspect node gets a cleared partner in its own leaf, else in a
    leaf whose uplink is cleared; suspect and untested uplinks get probes (a cleared node of the
    leaf with a cleared node of a leaf whose uplink is cleared). Not aware (two_pass): a random
    cleared partner. limit: at most that many groups (halving runs one at a time).
    """
    rng = _rng(state, "resolve")
    cfg = state["config"]
    nodes = state["nodes"]
    index = state["_index"]
    tests_of = index["tests_of"]
    by_verdict = index["by_verdict"]
    busy = set(by_verdict[PINNED])
    pools = _Pools(state, rng, busy)
    groups = []

    def full():
        return limit is not None and len(groups) >= limit

    likely = {}

    def looks_degraded(leaf):
        if leaf not in likely:
            likely[leaf] = _uplink_looks_degraded(state, leaf)
        return likely[leaf]

    def explained_by_uplink(node):
        """Every low test of node crossed leaves, one of whose uplinks looks degraded."""
        tests = state["tests"]
        lows = [tests[t] for t in tests_of.get(node, ()) if tests[t]["low"]]
        return bool(lows) and all(t["cross"] and any(looks_degraded(x) for x in t["leaves"]) for t in lows)

    # cleared partners go first to the suspects that an uplink does not explain
    wanted = sorted((explained_by_uplink(n), n) for n in list(by_verdict[SUSPECT]) + list(by_verdict[UNTESTED])
                    if _retests(state, n) < cfg["max_retests"] and not _settled_marginal(state, n))
    wanted = [n for _explained, n in wanted]
    multi_leaf = len(state["leaves"]) > 1

    def uplink_verdict(leaf):
        record = state["uplinks"].get(leaf)
        return record["verdict"] if record else None

    groups_first = []
    if aware:
        # untested nodes (never tested, or passed only over an oversubscribed uplink) are most
        # likely healthy: pair them with each other inside their leaf, the odd one with a
        # cleared node; cleared partners are kept for the suspects
        fresh = [n for n in wanted if nodes[n]["verdict"] == UNTESTED]
        fresh.sort(key=lambda n: (nodes[n]["leaf"], n))
        # (an untested node has met others only where a pass does not clear it: meeting again
        # inside the leaf is informative)
        odd = []
        while fresh and limit is None:
            first = fresh.pop(0)
            choice = next((n for n in fresh if nodes[n]["leaf"] == nodes[first]["leaf"]), None)
            if choice is None:
                odd.append(first)
                continue
            fresh.remove(choice)
            busy.update((first, choice))
            groups_first.append([first, choice])
        # an odd one whose leaf has no cleared node to spare joins a pair of its leaf
        for node in odd:
            leaf = nodes[node]["leaf"]
            if node in busy or pools.spare(leaf):
                continue
            group = next((g for g in groups_first if len(g) == 2 and nodes[g[0]]["leaf"] == leaf), None)
            if group is not None:
                group.append(node)
                busy.add(node)
    groups.extend(groups_first)
    deferred = []
    for node in wanted:
        if full():
            return groups
        if node in busy:
            continue
        before = _tested_with(state, node)
        if aware:
            partner = pools.take(pools.leaf(nodes[node]["leaf"]), before)
        else:
            partner = pools.take(pools.all_cleared(), before)
        if partner is None:
            deferred.append(node)
            continue
        busy.add(node)
        groups.append([node, partner])
    if not aware:
        return groups
    donors = []
    if multi_leaf:
        donors = [leaf for leaf in sorted(state["leaves"]) if uplink_verdict(leaf) == CLEARED]
        rng.shuffle(donors)

    # over an oversubscribed uplink every node is capped: a cross-leaf re-pairing can blame a
    # node but never clear it, so suspects and untested nodes are re-paired inside their leaf
    cross_clears = float(cfg["oversubscription"]) <= 1

    def cross_partner(node):
        leaf = nodes[node]["leaf"]
        if not multi_leaf or not cross_clears or uplink_verdict(leaf) == PINNED:
            return None
        before = _tested_with(state, node)
        for donor in donors:
            if donor != leaf:
                partner = pools.take(pools.leaf(donor), before)
                if partner is not None:
                    return partner
        return None

    def pair_up(group):
        busy.update(group)
        groups.append(group)

    # 1. leaf has no free cleared node but its uplink is cleared or does not look degraded: a
    #    cleared node of another leaf
    rest = []
    for node in deferred:
        if full():
            return groups
        partner = cross_partner(node) if not looks_degraded(nodes[node]["leaf"]) else None
        if partner is None:
            rest.append(node)
        else:
            pair_up([node, partner])
    # 2. uplink looks degraded: pair suspects of the same leaf that have not met (a pass clears
    #    both without involving the uplink)
    rest.sort(key=lambda n: (nodes[n]["leaf"], n))
    unpaired = []
    while rest and not full():
        first = rest.pop(0)
        before = _tested_with(state, first)
        choice = next((n for n in rest if n not in before and nodes[n]["leaf"] == nodes[first]["leaf"]), None)
        if choice is None:
            unpaired.append(first)
            continue
        rest.remove(choice)
        pair_up([first, choice])
    # 3. then a cleared node of another leaf (a pass clears the node and its uplink)
    rest = []
    for node in unpaired:
        if full():
            return groups
        partner = cross_partner(node)
        if partner is None:
            rest.append(node)
        else:
            pair_up([node, partner])
    # 4. last resort: suspects of different leaves that have not met
    while cross_clears and len(rest) > 1 and not full():
        first = rest.pop(0)
        before = _tested_with(state, first)
        choice = next((n for n in rest if n not in before and uplink_verdict(nodes[n]["leaf"]) != PINNED
                       and uplink_verdict(nodes[first]["leaf"]) != PINNED), None)
        if choice is not None:
            rest.remove(choice)
            pair_up([first, choice])
    # probes for suspect and untested uplinks: a cleared node of the leaf with a cleared node of
    # a leaf whose uplink is cleared
    if multi_leaf:
        for leaf in sorted(state["leaves"]):
            if full():
                return groups
            if uplink_verdict(leaf) not in (SUSPECT, UNTESTED) or _settled_marginal(state, _uplink(leaf)):
                continue
            others = [d for d in donors if d != leaf]
            if not others:
                # no leaf with a cleared uplink: leaves not yet probed cleanly with this one, least
                # tested first (a second clean probe between the same two leaves tells nothing new)
                done, tried = _probed_leaves(state, leaf)
                others = sorted((d for d in sorted(state["leaves"])
                                 if d != leaf and d not in done and uplink_verdict(d) != PINNED),
                                key=lambda d: tried.get(d, 0))
            used = 0
            for donor in others:
                if used >= cfg["uplink_probes"] or full() or not pools.spare(leaf):
                    break
                if not pools.spare(donor):
                    continue
                pair_up([pools.take(pools.leaf(leaf)), pools.take(pools.leaf(donor))])
                used += 1
    return groups


# ------------------------------------------------------------------------------ analysis

def _class_of(cross):
    return "cross" if cross else "intra"


def _stats(values):
    center = _median_sorted(values)
    return center, _mad_sorted(values, center)


def _refresh_references(state):
    """Reference level, MAD, low threshold and clear level of intra- and cross-leaf results.

    The healthy level H is the highest class median (cross-leaf medians times the
    oversubscription) among classes with min_peers results, else the median of all results
    pooled, else expected_busbw: a degraded uplink that drags down many cross-leaf results (a
    small cluster) cannot drag the reference with it. A class's reference is H (divided by the
    oversubscription for cross-leaf), its spread the smallest class MAD (else that of all).
    Returns {class: ((old, new threshold), (old, new clear level), (old, new node clear level))}."""
    cfg = state["config"]
    vals = state["_index"]["vals"]
    over = float(cfg["oversubscription"])
    rel = cfg["min_rel_drop"]
    scale = {"intra": 1.0, "cross": 1.0 / over}
    own = dict((cls, vals.get(cls, [])) for cls in CLASSES)
    stats = dict((cls, _stats(own[cls])) for cls in CLASSES if len(own[cls]) >= cfg["min_peers"])
    pooled_stats = None
    if len(stats) < len(CLASSES) and len(own["intra"]) + len(own["cross"]) >= cfg["min_peers"]:
        pooled_stats = _stats(list(heapq.merge(own["intra"], [v * over for v in own["cross"]])))
    level, basis = None, "floor only"
    if stats:
        level, best = max((stats[cls][0] / scale[cls], cls) for cls in sorted(stats))
        basis = "median of %s-leaf results" % best
    elif pooled_stats:
        level, basis = pooled_stats[0], "median of all results"
    elif _is_number(cfg["expected_busbw"]):
        level, basis = float(cfg["expected_busbw"]), "expected_busbw"
    old = state["references"]
    refs = {}
    changed = {}
    for cls in CLASSES:
        floor = cfg["floor"] * scale[cls] if _is_number(cfg["floor"]) else None
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


def _classify(test, ref):
    """(result, nodes cleared). result: 'low' (below threshold, timed out, failed), 'marginal'
    (between threshold and clear level: neither clears nor blames anyone) or 'pass'. A pass
    clears every element, except that a cross-leaf pass clears its nodes only from the clear
    level times the oversubscription: an oversubscribed uplink caps every node, so a slow node
    can pass cross-leaf."""
    if test["status"] != OK:
        return LOW, False
    value = test["busbw"]
    if ref["threshold"] is not None and value < ref["threshold"]:
        return LOW, False
    if ref["clear"] is not None and value < ref["clear"]:
        return MARGINAL, False
    return PASS, ref.get("clear_nodes") is None or value >= ref["clear_nodes"]


def _cleared_by(test):
    """Elements a test clears: all when it passed (cross-leaf: its uplinks, and its nodes when
    it passed at node level)."""
    if test["result"] != PASS:
        return []
    if test["nodes_cleared"]:
        return test["elements"]
    return [e for e in test["elements"] if _is_uplink(e)]


def _bump(state, tid, delta, dirty):
    uncleared = state["_index"]["uncleared"]
    before = uncleared[tid]
    uncleared[tid] = before + delta
    elements = state["tests"][tid]["elements"]
    # verdicts change only around 0 and 1; small tests also refresh their evidence text
    if min(before, before + delta) <= 1 or len(elements) <= 8:
        dirty.update(elements)


def _inc_pass(state, element, dirty):
    index = state["_index"]
    count = index["pass_count"].get(element, 0) + 1
    index["pass_count"][element] = count
    if count == 1:
        tests = state["tests"]
        for tid in index["tests_of"][element]:
            if tests[tid]["low"] is True:
                _bump(state, tid, -1, dirty)


def _dec_pass(state, element, dirty):
    index = state["_index"]
    count = index["pass_count"][element] - 1
    index["pass_count"][element] = count
    if count == 0:
        tests = state["tests"]
        for tid in index["tests_of"][element]:
            if tests[tid]["low"] is True:
                _bump(state, tid, +1, dirty)


def _set_result(state, tid, outcome, dirty):
    """Classify test tid as outcome (result, nodes cleared), keeping the pass/low counters of
    its elements in step."""
    test = state["tests"][tid]
    result, nodes_cleared = outcome
    if test["result"] == result and test["nodes_cleared"] == nodes_cleared:
        return
    elements = test["elements"]
    index = state["_index"]
    low_count = index["low_count"]
    before = _cleared_by(test)
    if test["result"] == LOW:
        for element in elements:
            low_count[element] -= 1
    test["result"], test["low"], test["nodes_cleared"] = None, None, False
    for element in before:
        _dec_pass(state, element, dirty)
    test["result"], test["low"], test["nodes_cleared"] = result, result == LOW, nodes_cleared
    if result == LOW:
        counts = index["pass_count"]
        index["uncleared"][tid] = sum(1 for e in elements if counts.get(e, 0) == 0)
        for element in elements:
            low_count[element] = low_count.get(element, 0) + 1
    else:
        index["uncleared"][tid] = 0
        for element in _cleared_by(test):
            _inc_pass(state, element, dirty)
    dirty.update(elements)


def analyse_round(state, results):
    """Record one round's results and update every verdict; returns the (same, updated) state.

    results: [{"group": [nodes], "busbw": GB/s or None, "status": "ok"|"timeout"|"error"}].
    A timeout or an error counts as a low result. Unknown nodes are ignored with a warning.
    """
    index = state["_index"]
    nodes = state["nodes"]
    state["round"] += 1
    rnd = state["round"]
    dirty = set()
    new = []
    seen = set()
    for result in results or []:
        group = [str(n) for n in (result.get("group") or [])]
        unknown = [n for n in group if n not in nodes]
        if unknown or len(group) < 2 or len(set(group)) != len(group) or seen.intersection(group):
            state["warnings"].append("round %d: result for %s ignored (%s)" % (
                rnd, ",".join(group) or "an empty group",
                "unknown node(s) %s" % ",".join(unknown) if unknown
                else "fewer than two nodes" if len(set(group)) < 2
                else "a node twice in one round"))
            continue
        seen.update(group)
        status = str(result.get("status") or OK).lower()
        busbw = result.get("busbw")
        if status == OK and not _is_number(busbw):
            status = ERROR
        if status not in (OK, TIMEOUT):
            status = ERROR
        leaves = sorted(set(nodes[n]["leaf"] for n in group))
        cross = len(leaves) > 1
        cls = _class_of(cross)
        test = {"round": rnd, "group": sorted(group), "leaves": leaves, "cross": cross,
                "class": cls, "busbw": float(busbw) if status == OK else None, "status": status,
                "result": None, "low": None, "nodes_cleared": False, "elements": _elements(state, sorted(group), leaves)}
        tid = len(state["tests"])
        state["tests"].append(test)
        index["uncleared"].append(0)
        for element in test["elements"]:
            index["tests_of"].setdefault(element, []).append(tid)
            index["pass_count"].setdefault(element, 0)
        if status == OK:
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
    planned = state.get("next_round") or []
    if planned and len(new) < len(planned):
        state["warnings"].append("round %d: %d of %d planned groups came back with a result"
                                 % (rnd, len(new), len(planned)))
    # thresholds may move with the new results: reclassify the old results they cross
    changed = _refresh_references(state)
    refs = state["references"]
    for cls, moves in sorted(changed.items()):
        vals = index["vals"].get(cls, [])
        ids = index["ids"].get(cls, [])
        todo = set()
        for before, after in moves:
            bounds = [float("-inf") if x is None else x for x in (before, after)]
            todo.update(range(bisect.bisect_left(vals, min(bounds)), bisect.bisect_left(vals, max(bounds))))
        for i in sorted(todo):
            tid = ids[i]
            if state["tests"][tid]["result"] is not None:
                _set_result(state, tid, _classify(state["tests"][tid], refs[cls]), dirty)
    for tid in new:
        test = state["tests"][tid]
        _set_result(state, tid, _classify(test, refs[test["class"]]), dirty)
    low_now = sum(1 for t in new if state["tests"][t]["low"])
    if len(new) >= 4 and low_now * 2 > len(new) and state["mode"] != "halving":
        state["warnings"].append("round %d: %d of %d results are low: check the floor (%s GB/s) or look for a "
                                 "fabric-wide problem" % (rnd, low_now, len(new), state["config"]["floor"]))
    # halving: the queue advances with the tested set
    if state["mode"] == "halving":
        _advance_queue(state, new)
    _refresh_verdicts(state, dirty)
    _refresh_summary(state)
    state["rounds"].append({
        "round": rnd, "groups": len(new), "nodes": sum(len(state["tests"][t]["group"]) for t in new),
        "low": sum(1 for t in new if state["tests"][t]["low"]),
        "marginal": sum(1 for t in new if state["tests"][t]["result"] == MARGINAL),
        "timeouts": sum(1 for t in new if state["tests"][t]["status"] == TIMEOUT),
        "errors": sum(1 for t in new if state["tests"][t]["status"] == ERROR)})
    state["next_round"] = _plan(state)
    state["done"] = not state["next_round"]
    if state["done"]:
        refresh_evidence(state)
    return state


def _advance_queue(state, new):
    queue = state["plan"].get("queue") or []
    for tid in new:
        test = state["tests"][tid]
        members = set(test["group"])
        for i, entry in enumerate(queue):
            if set(entry) == members:
                queue.pop(i)
                if test["low"] and len(entry) >= 4:
                    half = len(entry) // 2
                    queue[i:i] = [entry[:half], entry[half:]]
                break
    state["plan"]["queue"] = queue


def _verdict(state, element):
    index = state["_index"]
    tids = index["tests_of"].get(element)
    if not tids:
        return UNTESTED
    tests = state["tests"]
    uncleared = index["uncleared"]
    if index["pass_count"].get(element, 0) > 0:
        if not index["low_count"].get(element):
            return CLEARED
        for tid in tids:
            if tests[tid]["low"] and uncleared[tid] == 0:
                return SUSPECT
        return CLEARED
    for tid in tids:
        if tests[tid]["low"] and uncleared[tid] == 1:
            return PINNED
    if not index["low_count"].get(element) and all(tests[tid]["result"] == PASS for tid in tids):
        return UNTESTED     # passed only where a pass does not clear it (oversubscribed cross-leaf)
    return SUSPECT


def _refresh_verdicts(state, dirty):
    """New verdicts for dirty elements, then evidence for them and for the elements of small low
    tests whose other members changed verdict (their evidence names those verdicts)."""
    index = state["_index"]
    tests = state["tests"]
    changed = []
    for element in sorted(dirty):
        record = _record(state, element)
        verdict = _verdict(state, element)
        if record["verdict"] != verdict:
            by_verdict = index["uplinks_by_verdict" if _is_uplink(element) else "by_verdict"]
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
            record = _record(state, element)
            record["evidence"] = _evidence(state, element, record["verdict"])
    else:
        for element in refresh:
            stale[element] = 1


def refresh_evidence(state):
    """Write the evidence of every element whose evidence is out of date (see evidence_every_round)."""
    stale = state["_index"].get("stale") or {}
    for element in sorted(stale):
        record = _record(state, element)
        record["evidence"] = _evidence(state, element, record["verdict"])
    state["_index"]["stale"] = {}
    return state


def _refresh_summary(state):
    index = state["_index"]
    nodes, uplinks = index["by_verdict"], index["uplinks_by_verdict"]
    state["summary"] = {"nodes": dict((v, len(nodes[v])) for v in VERDICTS),
                        "uplinks": dict((v, len(uplinks[v])) for v in VERDICTS),
                        "tests": len(state["tests"]), "rounds": state["round"]}
    cut = len(UPLINK)
    state["pinned"] = {"nodes": sorted(nodes[PINNED]), "uplinks": sorted(u[cut:] for u in uplinks[PINNED])}
    state["suspects"] = {"nodes": sorted(nodes[SUSPECT]), "uplinks": sorted(u[cut:] for u in uplinks[SUSPECT])}


# ------------------------------------------------------------------------------ evidence

def _result_text(state, test):
    if test["status"] == TIMEOUT:
        return "timed out"
    if test["status"] == ERROR:
        return "failed (error)"
    ref = state["references"][test["class"]]
    value = test["busbw"]
    if ref["threshold"] is None:
        return "%.1f GB/s (no floor or peers to judge by)" % value
    if test["result"] == LOW:
        return "%.1f GB/s < %.1f" % (value, ref["threshold"])
    if test["result"] == MARGINAL:
        return "%.1f GB/s in [%.1f, %.1f)" % (value, ref["threshold"], ref["clear"])
    return "%.1f GB/s >= %.1f" % (value, ref["clear"])


def _others_text(state, tid, element):
    test = state["tests"][tid]
    if len(test["elements"]) > 5:
        uncleared = state["_index"]["uncleared"][tid]
        if state["_index"]["pass_count"].get(element, 0) == 0:
            uncleared -= 1
        return "%d of the other %d nodes and uplinks not cleared" % (uncleared, len(test["elements"]) - 1)
    others = [e for e in test["elements"] if e != element]
    return "others: " + ", ".join("%s %s" % (_name(o), _verdict_of(state, o)) for o in others)


def _test_line(state, tid, element):
    test = state["tests"][tid]
    group = test["group"]
    if _is_uplink(element):
        if len(group) == 2:
            what = "%s (%s) with %s (%s)" % (group[0], state["nodes"][group[0]]["leaf"], group[1],
                                             state["nodes"][group[1]]["leaf"])
        else:
            what = "group of %d nodes over %d leaves" % (len(group), len(test["leaves"]))
    else:
        if len(group) == 2:
            what = "pair with %s" % (group[1] if group[0] == element else group[0])
        else:
            what = "group of %d nodes" % len(group)
        if test["cross"]:
            what += " (cross-leaf %s)" % "/".join(test["leaves"][:4]) + ("/..." if len(test["leaves"]) > 4 else "")
        else:
            what += " (same leaf %s)" % test["leaves"][0]
    line = "round %d: %s: %s -> %s" % (test["round"], what, _result_text(state, test), test["result"])
    if test["result"] != PASS:
        line += "; " + _others_text(state, tid, element)
    return line


def _low_summary(state, tids):
    tests = state["tests"]
    values = [tests[t]["busbw"] for t in tids if tests[t]["status"] == OK]
    timeouts = sum(1 for t in tids if tests[t]["status"] == TIMEOUT)
    errors = sum(1 for t in tids if tests[t]["status"] == ERROR)
    parts = []
    if values:
        parts.append("\u2264 %s GB/s" % _gbs(max(values)))
    if timeouts:
        parts.append("timed out" if timeouts == len(tids) else "%d timed out" % timeouts)
    if errors:
        parts.append("failed" if errors == len(tids) else "%d failed" % errors)
    return ", ".join(parts)


def _reference_text(state, tid, uplink):
    ref = state["references"].get(state["tests"][tid]["class"], {})
    if ref.get("median") is not None:
        return "median of %s %s" % ("cross-leaf peers" if uplink else "others", _gbs(ref["median"]))
    if ref.get("floor") is not None:
        return "floor %s" % _gbs(ref["floor"])
    return "no reference"


def _uncleared_others(state, tids, element):
    """Text naming the elements other than element that are not cleared in tests tids."""
    tests = state["tests"]
    index = state["_index"]
    counts = index["pass_count"]
    own = 1 if counts.get(element, 0) == 0 else 0
    names = set()
    big = None
    for tid in tids:
        members = tests[tid]["elements"]
        if len(members) <= 8:
            names.update(e for e in members if e != element and counts.get(e, 0) == 0)
        else:
            others = max(0, index["uncleared"][tid] - own)
            if others and (big is None or others < big[0]):
                big = (others, len(tests[tid]["group"]), tests[tid]["round"])
    names = sorted(names)
    parts = [_name(n) for n in names[:4]]
    if len(names) > 4:
        parts.append("%d more" % (len(names) - 4))
    if big:
        parts.append("%d other uncleared node(s)/uplink(s) of the %d-node group of round %d" % big)
    return ", ".join(parts)


def _evidence(state, element, verdict):
    """The element's evidence lines, bandwidths in the unit the results are in."""
    unit = state["config"].get("unit") or "GB/s"
    lines = _evidence_lines(state, element, verdict)
    return lines if unit == "GB/s" else [line.replace("GB/s", unit) for line in lines]


def _evidence_lines(state, element, verdict):
    index = state["_index"]
    tests = state["tests"]
    uncleared = index["uncleared"]
    tids = index["tests_of"].get(element, [])
    name = _name(element)
    uplink = _is_uplink(element)
    if not tids:
        return ["%s: %s" % (name, "no cross-leaf test yet" if uplink else "not tested yet")]
    lows = [t for t in tids if tests[t]["result"] == LOW]
    passes = [t for t in tids if tests[t]["result"] == PASS]
    marginal = [t for t in tids if tests[t]["result"] == MARGINAL]
    all_pairs = all(len(tests[t]["group"]) == 2 for t in tids)
    noun = ("cross-leaf pairs" if all_pairs else "cross-leaf tests") if uplink else ("pairs" if all_pairs else "tests")
    summary = None
    if verdict == UNTESTED:
        values = [tests[t]["busbw"] for t in passes]
        return ["%s: passed %d cross-leaf %s (\u2265 %s GB/s), where the %g:1 oversubscription caps every "
                "node: not tested at full speed yet" % (name, len(passes), noun, _gbs(min(values)),
                                                        state["config"]["oversubscription"])] + \
            [_test_line(state, tid, element) for tid in tids[:state["config"]["evidence_lines"]]]
    if verdict == PINNED:
        clean = [t for t in lows if uncleared[t] == 1]
        rest = _uncleared_others(state, [t for t in lows if uncleared[t] != 1], element)
        if uplink:
            tail = "its nodes passed other tests and each partner leaf passed cross-leaf with another leaf"
        else:
            tail = "each partner passed with another node"
        if rest:
            tail = "in %d of them %s (the others also hold %s)" % (
                len(clean), tail.replace("each partner", "every partner").replace(
                    "its nodes", "every other node"), rest)
        summary = "%s: %d of %d %s %s, %s; %s" % (
            name, len(lows), len(tids), noun, _low_summary(state, lows),
            _reference_text(state, lows[0], uplink), tail)
    elif verdict == SUSPECT:
        inconsistent = [t for t in lows if uncleared[t] == 0]
        if passes and inconsistent:
            summary = ("%s: passed %d of %d %s, but low in round %d although every node%s in that test "
                       "passed elsewhere: intermittent or marginal, retest"
                       % (name, len(passes), len(tids), noun, tests[inconsistent[0]]["round"],
                          " and uplink" if tests[inconsistent[0]]["cross"] else ""))
        elif not lows:
            values = [tests[t]["busbw"] for t in marginal]
            ref = state["references"][tests[marginal[0]]["class"]]
            if ref["median"]:
                where = "%.0f-%.0f %% below the median %s" % (
                    100 * (1 - max(values) / ref["median"]), 100 * (1 - min(values) / ref["median"]),
                    _gbs(ref["median"]))
            else:
                where = "just above the floor %s" % _gbs(ref["floor"])
            summary = ("%s: %d of %d %s marginal (%s-%s GB/s, %s): slower than its peers, but inside "
                       "the margin where noise could be the cause; not blamed"
                       % (name, len(marginal), len(tids), noun, _gbs(min(values)), _gbs(max(values)), where))
            if _settled_marginal(state, element):
                summary += "; each partner passed elsewhere, so the shortfall is its own"
        else:
            summary = "%s: %d of %d %s %s, %s; not yet separated from %s" % (
                name, len(lows), len(tids), noun, _low_summary(state, lows),
                _reference_text(state, lows[0], uplink), _uncleared_others(state, lows, element) or "?")
            if uplink and len(state["leaves"]) == 2:
                summary += ("; with two leaves every cross-leaf test uses both uplinks, so pair tests "
                            "cannot tell which one is degraded")
    else:
        values = [tests[t]["busbw"] for t in passes if tests[t]["status"] == OK]
        summary = "%s: passed %d of %d %s (\u2265 %s GB/s)" % (
            name, len(passes), len(tids), noun, _gbs(min(values)) if values else "?")
        if lows:
            summary += "; %d low result(s) explained by %s" % (
                len(lows), _uncleared_others(state, lows, element) or "?")
    limit = state["config"]["evidence_lines"]
    if verdict == CLEARED:
        chosen = (lows + marginal)[:limit]
        chosen += passes[:max(0, min(2, limit - len(chosen)))]
    else:
        chosen = (lows + marginal + passes)[:limit]
    chosen.sort()
    lines = [summary] + [_test_line(state, tid, element) for tid in chosen]
    if len(tids) > len(chosen) and verdict != CLEARED:
        lines.append("... and %d more tests" % (len(tids) - len(chosen)))
    return lines


# ------------------------------------------------------------------------------ driver

def localize(nodes, topology, run_group, mode="adaptive", seed=0, max_rounds=None, config=None):
    """Run rounds until done: run_group(groups) -> results (see analyse_round). Returns the state."""
    state = new_state(nodes, topology, mode=mode, seed=seed, max_rounds=max_rounds, config=config)
    while not state["done"]:
        groups = plan_round(state)
        if not groups:
            break
        analyse_round(state, run_group(groups))
    state["done"] = True
    refresh_evidence(state)
    return state


def public_state(state):
    """The state without the internal index (for results.json)."""
    return dict((k, v) for k, v in state.items() if not k.startswith("_"))
