# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning for the localiser (_localize): which disjoint groups the next round runs.

The product's planners, registered with _localize_base.register_planner:

* ``adaptive`` (default): round 1 pairs every node, a share of each leaf (``cross_fraction``)
  with nodes of other leaves; later rounds re-pair each suspect with a cleared partner of its
  own leaf (no uplink involved), else of a leaf whose uplink is cleared, preferring partners
  that passed ``confirm_passes`` times (a pin needs one); probe suspect uplinks; and, while
  anything is unresolved, *confirm*: every idle cleared node that passed fewer than
  ``confirm_passes`` times is paired with another, so that the next round has known-good
  partners and a low test whose partner passed once can still pin after the fact. A leaf
  without any cleared node has its suspects paired across leaves (a whole slow leaf is told
  from a few slow nodes that way). Marginal elements whose partners all passed are not
  retested; elements pinned, intermittent or in a leaf fault stay idle.
* ``exhaustive``: every pair once, a round-robin tournament (N-1 rounds).
* ``halving``: the whole allocation as one group, a low group split in halves, one group per
  round; then the adaptive re-pairing, one test per round.

``plan_resolve(state, aware, limit)`` is the re-pairing step, shared with the benchmark's
baselines (bench/localize_strategies.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import random

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base


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
    rng = base.rng(state, "first")
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
        schedule = base.round_robin(order)
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
            groups.extend(base.pairs_of(pool))
    if len(singles) > 1:
        groups.extend(base.pairs_of(singles))
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


def _pair_in_leaf(state, candidates, pair_up, full=lambda: False):
    """Pair candidates of the same leaf that have not met (until full()); returns the ones left."""
    nodes = state["nodes"]
    rest = sorted(candidates, key=lambda n: (nodes[n]["leaf"], n))
    left = []
    while rest and not full():
        first = rest.pop(0)
        before = _tested_with(state, first)
        choice = next((n for n in rest if n not in before and nodes[n]["leaf"] == nodes[first]["leaf"]), None)
        if choice is None:
            left.append(first)
            continue
        rest.remove(choice)
        pair_up([first, choice])
    return left


def _pending(state, node):
    """node has a low test in which it is the only element never cleared, the others cleared but
    not confirmed: confirming them pins it, another unconfirmed partner would not."""
    index = state["_index"]
    tests = state["tests"]
    return any(tests[t]["low"] and index["uncleared"][t] == 1 and index["unconfirmed"][t] > 1
               for t in index["tests_of"].get(node, ()))


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
            pool = [n for n in self.state["leaves"].get(leaf, ()) if nodes[n]["verdict"] == base.CLEARED]
            self.rng.shuffle(pool)
            # taken from the end: confirmed partners first (a pin needs one)
            pool.sort(key=lambda n: base.confirmed(self.state, n))
            self.by_leaf[leaf] = pool
        return self.by_leaf[leaf]

    def any_cleared(self, leaf):
        """leaf has a cleared node at all (busy or not)."""
        nodes = self.state["nodes"]
        return any(nodes[n]["verdict"] == base.CLEARED for n in self.state["leaves"].get(leaf, ()))

    def spare(self, leaf):
        return any(n not in self.busy for n in self.leaf(leaf))

    def take(self, pool, avoid=(), strict=False, confirmed=False):
        """A free node of pool, preferably not in avoid (strict: only such a node; confirmed: only
        a node that passed confirm_passes times); None when there is none."""
        while pool and pool[-1] in self.busy:
            pool.pop()
        for i in range(len(pool) - 1, -1, -1):
            node = pool[i]
            if node not in self.busy and node not in avoid and (not confirmed or base.confirmed(self.state, node)):
                self.busy.add(node)
                return node
        if strict or confirmed:
            return None
        while pool:
            node = pool.pop()
            if node not in self.busy:
                self.busy.add(node)
                return node
        return None

    def all_cleared(self):
        if self.everyone is None:
            nodes = self.state["nodes"]
            self.everyone = [n for n in sorted(nodes) if nodes[n]["verdict"] == base.CLEARED]
            self.rng.shuffle(self.everyone)
            self.everyone.sort(key=lambda n: base.confirmed(self.state, n))
        return self.everyone


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


def _confirm_uplinks(state, pools, donors, pair_up):
    """A probe for each uplink cleared fewer than confirm_passes times (a cleared node of the leaf
    with one of a leaf whose uplink is cleared), before the suspects take the leaf's cleared
    nodes: the suspects' cross-leaf tests of this round pin only over confirmed uplinks."""
    for leaf in sorted(state["leaves"]):
        record = state["uplinks"].get(leaf)
        if record is None or record["verdict"] != base.CLEARED or base.confirmed(state, base.uplink(leaf)):
            continue
        if not pools.spare(leaf):
            continue
        first = pools.take(pools.leaf(leaf))
        before = _tested_with(state, first)
        second = None
        for donor in donors:
            if donor != leaf and pools.spare(donor):
                second = pools.take(pools.leaf(donor), before, strict=True)
                if second is not None:
                    break
        if second is None:
            pools.busy.discard(first)   # (a probe with a partner met before tells nothing new)
        else:
            pair_up([first, second])


def _confirm(state, pools, donors, pair_up):
    """Give idle cleared nodes that passed fewer than confirm_passes times another test, in pairs
    inside their leaf, else with a node of their leaf, else across leaves: one pass can be the
    luck of an intermittent node; two make it a partner that pins, this round or after the fact."""
    nodes = state["nodes"]
    waiting = [n for n in sorted(nodes) if nodes[n]["verdict"] == base.CLEARED and n not in pools.busy
               and not base.confirmed(state, n)]
    waiting.sort(key=lambda n: (nodes[n]["leaf"], n))
    # a confirmed partner first: a low result then blames this node alone (intermittent when it
    # passed before), where two unconfirmed partners would only tell that one of them is
    alone = []
    for node in waiting:
        if node in pools.busy:
            continue
        pools.busy.add(node)
        partner = pools.take(pools.leaf(nodes[node]["leaf"]), _tested_with(state, node), confirmed=True)
        if partner is None:
            pools.busy.discard(node)
            alone.append(node)
        else:
            pair_up([node, partner])
    odd = _pair_in_leaf(state, alone, pair_up)
    # the odd ones: a cleared node of their leaf, else a confirmed one of a leaf whose uplink is
    # cleared, else each other across leaves
    rest = []
    for node in odd:
        if node in pools.busy:
            continue            # taken as another odd node's partner
        pools.busy.add(node)    # not its own partner
        before = _tested_with(state, node)
        partner = pools.take(pools.leaf(nodes[node]["leaf"]), before)
        over_cleared_uplink = nodes[node]["leaf"] in donors
        for donor in donors if over_cleared_uplink else ():
            if partner is not None:
                break
            if donor != nodes[node]["leaf"]:
                partner = pools.take(pools.leaf(donor), before, confirmed=True)
        if partner is None:
            pools.busy.discard(node)
            rest.append(node)
        else:
            pair_up([node, partner])
    rest = [n for n in rest if n not in pools.busy and nodes[n]["leaf"] in donors]
    while donors and len(rest) > 1:
        first = rest.pop(0)
        before = _tested_with(state, first)
        choice = next((n for n in rest if n not in before), None)
        if choice is not None:
            rest.remove(choice)
            pair_up([first, choice])


# ------------------------------------------------------------------------------ the product's planners

def _plan_adaptive(state):
    if state["round"] == 0:
        return _plan_adaptive_first(state)
    return plan_resolve(state, aware=True)


def _init_exhaustive(state):
    order = sorted(state["nodes"])
    random.Random("localize|%s|exhaustive|order" % state["seed"]).shuffle(order)
    state["plan"]["order"] = order


def _init_halving(state):
    nodes = state["nodes"]
    names = sorted(nodes, key=lambda n: (nodes[n]["leaf"], n))
    state["plan"]["queue"] = [names] if len(names) >= 2 else []


def _plan_halving(state):
    queue = state["plan"].get("queue") or []
    if queue:
        return [list(queue[0])]
    return plan_resolve(state, aware=True, limit=1)


def _advance_halving(state, new):
    """The tested group leaves the queue; a low group of 4 or more comes back as two halves."""
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


base.register_planner("adaptive", _plan_adaptive, lambda count: 3)
base.register_planner("exhaustive", _plan_tournament, lambda count: max(count - 1, 0) if count % 2 == 0 else count,
                      init=_init_exhaustive)
# one test per round has no room for confirmation rounds: a pass makes a partner (use adaptive
# where intermittent faults are expected)
base.register_planner("halving", _plan_halving, lambda count: 4 * count + 16, init=_init_halving,
                      after_round=_advance_halving, defaults={"confirm_passes": 1})
