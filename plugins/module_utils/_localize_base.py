# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared vocabulary of the localiser (_localize): verdicts, test results, configuration defaults,
element names, small statistics, and the planner registry.

An *element* is a node name or ``uplink:<leaf>``. A planner is registered under a mode name with
``register_planner``; the product's planners live in _localize_plan, the benchmark's baselines in
bench/localize_strategies.py. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import random

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import mad_sorted, median

CLEARED = "cleared"
SUSPECT = "suspect"
PINNED = "pinned"
UNTESTED = "untested"
INTERMITTENT = "intermittent"
LEAF = "leaf"
VERDICTS = (PINNED, INTERMITTENT, LEAF, SUSPECT, UNTESTED, CLEARED)
# verdicts that fail the element (a check FAILs on them)
FAULTS = (PINNED, INTERMITTENT, LEAF, SUSPECT)
PASS = "pass"
MARGINAL = "marginal"
LOW = "low"
# some runs of one test (its samples) passed, others were low: low for blame, a sign of intermittency
UNSTABLE = "unstable"
OK = "ok"
TIMEOUT = "timeout"
ERROR = "error"
UPLINK = "uplink:"
UNKNOWN_LEAF = "unknown"
CLASSES = ("intra", "cross")

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
    # passes a partner needs before a low test with it pins or flags anyone: one pass can be the
    # luck of an intermittent node, which must never serve as the known-good partner
    "confirm_passes": 2,
    # a suspect node is re-paired at most this many times after its first low result
    "max_retests": 2,
    # detail lines per evidence list (after the summary line)
    "evidence_lines": 12,
    # False: write evidence only when done (the verdicts still change every round; faster)
    "evidence_every_round": True,
    # what the results measure, as the evidence writes it: GB/s (nccl-tests busbw) or Gb/s (perftest)
    "unit": "GB/s",
}


# ------------------------------------------------------------------------------------ helpers

def is_number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not math.isnan(value) and not math.isinf(value)


def rng(state, salt=""):
    return random.Random("localize|%s|%s|%d|%s" % (state["seed"], state["mode"], state["round"], salt))


def is_uplink(element):
    return element.startswith(UPLINK)


def uplink(leaf):
    return UPLINK + leaf


def name(element):
    """Human name of an element: the node, or '<leaf> uplink'."""
    if is_uplink(element):
        return "%s uplink" % element[len(UPLINK):]
    return element


def gbs(value):
    return "%.0f" % value


def round_robin(items):
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


def pairs_of(nodes):
    """Consecutive pairs; an odd last node joins the last pair (a group of three)."""
    groups = [[nodes[i], nodes[i + 1]] for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2 and groups:
        groups[-1].append(nodes[-1])
    return groups


def stats(values):
    """(median, MAD) of sorted values."""
    center = median(values)
    return center, mad_sorted(values, center)


# ------------------------------------------------------------------------------------ records

def record(state, element):
    if is_uplink(element):
        return state["uplinks"][element[len(UPLINK):]]
    return state["nodes"][element]


def verdict_of(state, element):
    return record(state, element)["verdict"]


def elements(state, group, leaves):
    """A test's elements: its nodes, and the uplinks of its leaves when it crosses leaves."""
    if len(leaves) > 1:
        return list(group) + [uplink(leaf) for leaf in leaves]
    return list(group)


def confirmed(state, element):
    """element passed often enough to pin or flag a partner (config confirm_passes)."""
    return state["_index"]["pass_count"].get(element, 0) >= state["config"]["confirm_passes"]


def settled_marginal(state, element):
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


# ------------------------------------------------------------------------------------ registry

PLANNERS = {}


def register_planner(mode, plan, max_rounds, init=None, after_round=None, defaults=None):
    """Make ``mode`` a planner the localiser accepts.

    plan(state) -> the next round's groups ([] when done); max_rounds(node count) -> default round
    limit; init(state): mode data in state["plan"] at the start; after_round(state, new test ids);
    defaults: the mode's own config defaults (the caller's config still wins)."""
    PLANNERS[mode] = {"plan": plan, "max_rounds": max_rounds, "init": init, "after_round": after_round,
                      "defaults": dict(defaults or {})}


def planner(mode):
    if mode not in PLANNERS:
        raise ValueError("unknown mode %r (expected one of %s)" % (mode, ", ".join(sorted(PLANNERS))))
    return PLANNERS[mode]
