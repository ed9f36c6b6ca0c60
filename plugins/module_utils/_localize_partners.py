# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Partners for the localiser's re-pairing (_localize_resolve, _localize_confirm): who is free, who has met.

Private to the collection. Standard library only.

* ``_Pools``: the cleared nodes available as partners this round, per leaf and over all leaves
  (built lazily, shuffled, confirmed partners taken first: a pin needs one), and which of them
  are already busy.
* ``_tested_with``: the nodes a node has already been tested with (a second test with the same
  partner tells nothing new).
* ``_pair_in_leaf``: pair nodes of the same leaf that have not met.

It is apart because both the re-pairing of suspects and the confirmation of cleared nodes draw
from the same pools.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base


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
