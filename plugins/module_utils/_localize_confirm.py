# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Confirmation tests for the localiser: a second pass for cleared nodes and cleared uplinks.

Private to the collection. Standard library only.

One pass can be the luck of an intermittent node; an element that passed ``confirm_passes`` times
is a partner that pins. ``_confirm_uplinks`` probes each uplink cleared fewer times before the
suspects take its leaf's cleared nodes; ``_confirm`` gives idle cleared nodes that passed fewer
times another test, so that the next round has known-good partners and a low test whose partner
passed once can still pin after the fact.

It is apart from the re-pairing of suspects (_localize_resolve, which calls it) because it tests
nodes that are already cleared, not the suspects.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base
from ansible_collections.gpucluster.acceptance.plugins.module_utils._localize_partners import (
    _pair_in_leaf, _tested_with)


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
