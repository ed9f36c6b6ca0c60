# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The localiser's re-pairing step: tests that can turn suspects into pinned or cleared.

Private to the collection. Standard library only.

``plan_resolve(state, aware, limit)`` re-pairs each suspect with a cleared partner of its own
leaf (no uplink involved), else of a leaf whose uplink is cleared, preferring partners that
passed ``confirm_passes`` times (a pin needs one); probes suspect uplinks; and, while anything
is unresolved, confirms cleared nodes (_localize_confirm). A leaf without any cleared node has
its suspects paired across leaves (a whole slow leaf is told from a few slow nodes that way).
Not aware (the benchmark's two_pass): a random cleared partner.

It is apart from the planners (_localize_plan) because it is shared: the adaptive and halving
planners call it after their first rounds, and the benchmark's baselines
(bench/localize_strategies.py) call it directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base
from ansible_collections.gpucluster.acceptance.plugins.module_utils._localize_confirm import (
    _confirm, _confirm_uplinks)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._localize_partners import (
    _Pools, _pair_in_leaf, _tested_with)


def _uplink_looks_degraded(state, leaf):
    """Planning hint only (never a verdict): the uplink of leaf is pinned, or is not cleared and
    its low cross-leaf results look like one shared bottleneck (3 or more, or 2 within 5 %)."""
    record = state["uplinks"].get(leaf)
    if record is None or record["verdict"] == base.CLEARED:
        return False
    if record["verdict"] == base.PINNED:
        return True
    tests = state["tests"]
    lows = [tests[t] for t in state["_index"]["tests_of"].get(base.uplink(leaf), ()) if tests[t]["low"]]
    if len(lows) >= 3:
        return True
    values = [t["busbw"] for t in lows if t["status"] == base.OK]
    return len(values) == 2 and min(values) >= 0.95 * max(values)


def _probed_leaves(state, leaf):
    """({leaf: 1} probed cleanly with leaf: a low cross-leaf test whose nodes are all cleared,
    {leaf: number of cross-leaf tests with leaf})."""
    tests = state["tests"]
    counts = state["_index"]["pass_count"]
    done, tried = {}, {}
    for tid in state["_index"]["tests_of"].get(base.uplink(leaf), ()):
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


def _pending(state, node):
    """node has a low test in which it is the only element never cleared, the others cleared but
    not confirmed: confirming them pins it, another unconfirmed partner would not."""
    index = state["_index"]
    tests = state["tests"]
    return any(tests[t]["low"] and index["uncleared"][t] == 1 and index["unconfirmed"][t] > 1
               for t in index["tests_of"].get(node, ()))


def plan_resolve(state, aware=True, limit=None):
    """Tests that can turn suspects into pinned or cleared.

    aware (adaptive, halving): a suspect node gets a cleared partner in its own leaf, else in a
    leaf whose uplink is cleared; suspect and untested uplinks get probes (a cleared node of the
    leaf with a cleared node of a leaf whose uplink is cleared). Not aware (two_pass): a random
    cleared partner. limit: at most that many groups (halving runs one at a time).
    """
    rng = base.rng(state, "resolve")
    cfg = state["config"]
    nodes = state["nodes"]
    index = state["_index"]
    tests_of = index["tests_of"]
    by_verdict = index["by_verdict"]
    busy = set(by_verdict[base.PINNED])
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
    wanted = sorted((explained_by_uplink(n), n) for n in list(by_verdict[base.SUSPECT]) + list(by_verdict[base.UNTESTED])
                    if _retests(state, n) < cfg["max_retests"] and not base.settled_marginal(state, n))
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
        fresh = [n for n in wanted if nodes[n]["verdict"] == base.UNTESTED]
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
    donors = []
    if multi_leaf:
        donors = [leaf for leaf in sorted(state["leaves"]) if uplink_verdict(leaf) == base.CLEARED]
        rng.shuffle(donors)
    # over an oversubscribed uplink every node is capped: a cross-leaf re-pairing can blame a
    # node but never clear it, so suspects and untested nodes are re-paired inside their leaf
    cross_clears = float(cfg["oversubscription"]) <= 1

    def pair_up(group):
        busy.update(group)
        groups.append(group)

    def confirmed_across(node, before):
        """A confirmed node of another leaf, over confirmed uplinks: a test that can pin."""
        leaf = nodes[node]["leaf"]
        if not cross_clears or uplink_verdict(leaf) != base.CLEARED:
            return None     # (an uplink cleared once is confirmed by a probe this round, see below)
        for donor in donors:
            if donor != leaf and base.confirmed(state, base.uplink(donor)):
                partner = pools.take(pools.leaf(donor), before, confirmed=True)
                if partner is not None:
                    return partner
        return None

    if aware and limit is None and cross_clears:
        _confirm_uplinks(state, pools, donors, pair_up)
    deferred = []
    for node in wanted:
        if full():
            return groups
        if node in busy:
            continue
        before = _tested_with(state, node)
        if aware:
            # a partner that can pin (confirmed, not met), in the leaf, else across leaves; then
            # one not met yet (a partner met before is confirmed instead, see _confirm)
            own = pools.leaf(nodes[node]["leaf"])
            partner = pools.take(own, before, confirmed=True)
            if partner is None:
                partner = confirmed_across(node, before)
            if partner is None and _pending(state, node):
                continue    # its partner that passed once is confirmed instead (_confirm): the pin follows
            if partner is None:
                partner = pools.take(own, before, strict=True)
        else:
            partner = pools.take(pools.all_cleared(), before)
        if partner is None:
            deferred.append(node)
            continue
        busy.add(node)
        groups.append([node, partner])
    if not aware:
        return groups

    def cross_partner(node):
        leaf = nodes[node]["leaf"]
        if not multi_leaf or not cross_clears or uplink_verdict(leaf) == base.PINNED:
            return None
        before = _tested_with(state, node)
        for donor in donors:
            if donor != leaf:
                partner = pools.take(pools.leaf(donor), before)
                if partner is not None:
                    return partner
        return None

    # 1. leaf has no free cleared node but its uplink is cleared or does not look degraded: a
    #    cleared node of another leaf
    rest = []
    for node in deferred:
        if full():
            return groups
        leaf = nodes[node]["leaf"]
        # a leaf with no cleared node at all goes across leaves even when its uplink looks
        # degraded: a whole slow leaf must be told from a few slow nodes by partners outside it
        partner = cross_partner(node) if not looks_degraded(leaf) or not pools.any_cleared(leaf) else None
        if partner is None:
            rest.append(node)
        else:
            pair_up([node, partner])
    # 2. uplink looks degraded: pair suspects of the same leaf that have not met (a pass clears
    #    both without involving the uplink)
    unpaired = _pair_in_leaf(state, rest, pair_up, full)
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
        choice = next((n for n in rest if n not in before and uplink_verdict(nodes[n]["leaf"]) != base.PINNED
                       and uplink_verdict(nodes[first]["leaf"]) != base.PINNED), None)
        if choice is not None:
            rest.remove(choice)
            pair_up([first, choice])
    # probes for suspect and untested uplinks: a cleared node of the leaf with a cleared node of
    # a leaf whose uplink is cleared
    if multi_leaf:
        for leaf in sorted(state["leaves"]):
            if full():
                return groups
            if uplink_verdict(leaf) not in (base.SUSPECT, base.UNTESTED) or base.settled_marginal(state, base.uplink(leaf)):
                continue
            others = [d for d in donors if d != leaf]
            if not others:
                # no leaf with a cleared uplink: leaves not yet probed cleanly with this one, least
                # tested first (a second clean probe between the same two leaves tells nothing new)
                done, tried = _probed_leaves(state, leaf)
                others = sorted((d for d in sorted(state["leaves"])
                                 if d != leaf and d not in done and uplink_verdict(d) != base.PINNED),
                                key=lambda d: tried.get(d, 0))
            used = 0
            for donor in others:
                if used >= cfg["uplink_probes"] or full() or not pools.spare(leaf):
                    break
                if not pools.spare(donor):
                    continue
                pair_up([pools.take(pools.leaf(leaf)), pools.take(pools.leaf(donor))])
                used += 1
    if limit is None:
        _confirm(state, pools, donors if cross_clears else [], pair_up)
    return groups
