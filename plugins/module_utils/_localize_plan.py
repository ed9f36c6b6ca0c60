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

The re-pairing the adaptive and halving planners go on with is ``plan_resolve`` in
_localize_resolve, shared with the benchmark's baselines (bench/localize_strategies.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import random

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base
from ansible_collections.gpucluster.acceptance.plugins.module_utils._localize_resolve import plan_resolve


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
