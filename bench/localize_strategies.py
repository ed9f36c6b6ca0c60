# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark-only planners: the baselines the product's planners are measured against.

Registered with the localiser's planner registry on import (``register(localize)``), so that
``localize(..., mode="random15")`` runs them through the same decoding as the product's modes:

* ``random15``: 15 random perfect pairings, then decode.
* ``two_pass``: one random perfect pairing, then each suspect re-paired with a random cleared
  node, topology-blind.
"""

from __future__ import absolute_import, division, print_function


def register(localize, base, resolve):
    """Register the baselines with the localiser modules (_localize, _localize_base, _localize_resolve)."""

    def random_matching(state):
        nodes = sorted(state["nodes"])
        base.rng(state, "matching").shuffle(nodes)
        return base.pairs_of(nodes)

    def two_pass(state):
        if state["round"] == 0:
            return random_matching(state)
        if state["round"] == 1:
            return resolve.plan_resolve(state, aware=False)
        return []

    # their published form: one pass makes a partner
    localize.register_planner("random15", random_matching, lambda count: 15, defaults={"confirm_passes": 1})
    localize.register_planner("two_pass", two_pass, lambda count: 2, defaults={"confirm_passes": 1})
