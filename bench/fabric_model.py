# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric model for the localisation benchmark: what concurrent all_reduce groups would measure.

A node brings its NIC bandwidth times its slow factor; when a group spans more than one leaf,
each node's traffic also goes through its leaf's uplinks, which give each node the healthy NIC
bandwidth divided by the oversubscription and multiplied by the leaf's uplink factor. A node's
share is the smaller of the two (the bottleneck), and the slowest share bounds the group. A
seeded noise of at most +-``noise`` (1.5 %) multiplies each result.

``sim/gpusim/fabric.py`` (``network_peak``) applies the same rule except for a slow node behind
a degraded or oversubscribed uplink, where it multiplies the two factors instead of taking the
smaller; the bottleneck is the physical behaviour (a node whose NIC runs at half speed does not
use its full uplink share), and the product would make two faults compound into a third
result. The simulator's module is not imported either way: it models whole nccl-tests tables
(message sizes, latency) per run, far more than the benchmark needs for millions of results.

Test duration: ``base_s + per_doubling_s * log2(size)`` seconds for a group of ``size`` nodes
(the time of an all_reduce_perf sweep grows mildly with the ring). Node-seconds of a round =
sum over its groups of size * duration; wall seconds of a round = its longest group.
A group that contains a *hanging* node times out after ``timeout_s`` and reports no busbw.
With ``samples`` > 1 a test is that many runs in one allocation (the fabric stage's repeats): each
run draws the intermittent members' state and the noise afresh, the result's busbw is their
median and ``samples`` lists them; an intermittent node is slow in a share p of the runs.
"""

from __future__ import absolute_import, division, print_function

import math
import random

# 8 x 400 Gb/s NDR NICs at 92 % efficiency (sim/gpusim/fabric.py NET_EFFICIENCY): 368 GB/s.
NODE_GBS = 8 * 400 / 8.0 * 0.92


def make_topology(count, leaf_size=32, prefix="gpu"):
    """Nodes gpu0000.. in leaves leaf000.. of leaf_size consecutive nodes."""
    width = max(4, len(str(count - 1)))
    nodes = ["%s%0*d" % (prefix, width, i) for i in range(count)]
    topology = dict((node, {"leaf": "leaf%03d" % (i // leaf_size), "rack": "rack%03d" % (i // leaf_size)})
                    for i, node in enumerate(nodes))
    return nodes, topology


class FabricModel(object):
    """A cluster with injected faults; run_round(groups) answers like real concurrent groups."""

    def __init__(self, nodes, topology, seed=0, node_gbs=NODE_GBS, oversubscription=1.0, noise=0.015,
                 base_s=60.0, per_doubling_s=15.0, timeout_s=600.0, samples=1):
        self.nodes = list(nodes)
        self.leaf = dict((n, topology[n]["leaf"]) for n in self.nodes)
        self.node_gbs = node_gbs
        self.oversubscription = float(oversubscription)
        self.noise = noise
        self.base_s = base_s
        self.per_doubling_s = per_doubling_s
        self.timeout_s = timeout_s
        self.samples = int(samples)  # runs per test in one allocation (>1: results carry "samples")
        self.slow_leaves = set()    # leaves whose switch slows every test touching the leaf
        self.slow = {}          # node -> factor
        self.hang = set()       # nodes whose groups time out
        self.uplink = {}        # leaf -> factor
        self.intermittent = {}  # node -> (factor, p): slow in a share p of the runs it takes part in
        self.rng = random.Random("fabric|%s" % seed)
        self.rounds = 0
        self.node_seconds = 0.0
        self.wall_seconds = 0.0
        self.groups = 0

    # faults
    def inject_slow(self, node, factor):
        self.slow[node] = float(factor)

    def inject_intermittent(self, node, factor, p):
        """Slow (factor) in each run with probability p, healthy otherwise (a flaky cable, a link that
        retrains now and then)."""
        self.intermittent[node] = (float(factor), float(p))

    def inject_hang(self, node):
        self.hang.add(node)

    def inject_uplink(self, leaf, factor):
        self.uplink[leaf] = float(factor)

    def faults(self):
        """Injected faults as the localiser names them: nodes and leaves (uplinks)."""
        return {"nodes": sorted(set(self.slow) | self.hang | set(self.intermittent)), "uplinks": sorted(self.uplink),
                "intermittent": sorted(self.intermittent), "leaves": sorted(self.slow_leaves)}

    def mark_leaf(self, leaf):
        """Record that the injected node faults make up a whole slow leaf (what the localiser should name)."""
        self.slow_leaves.add(leaf)

    # measurement
    def duration(self, size):
        return self.base_s + self.per_doubling_s * math.log(max(size, 2), 2)

    def peak(self, group, flaky=()):
        """Noise-free bus bandwidth (GB/s) of one group of nodes (flaky: intermittent nodes slow in this run)."""
        leaves = set(self.leaf[n] for n in group)
        cross = len(leaves) > 1
        worst = None
        for node in group:
            share = self.node_gbs * self.slow.get(node, 1.0)
            if node in flaky:
                share *= self.intermittent[node][0]
            if cross:
                share = min(share, self.node_gbs / self.oversubscription * self.uplink.get(self.leaf[node], 1.0))
            if worst is None or share < worst:
                worst = share
        return worst

    def run_round(self, groups):
        """Results of one round of concurrent disjoint groups, in the localiser's format."""
        results = []
        longest = 0.0
        for group in groups:
            size = len(group)
            if any(n in self.hang for n in group):
                seconds = self.timeout_s
                results.append({"group": list(group), "busbw": None, "status": "timeout"})
            else:
                seconds = self.duration(size)
                # each run of the test: every intermittent member slow with its p, fresh noise
                values = []
                for _run in range(self.samples):
                    flaky = set(n for n in group if n in self.intermittent and self.rng.random() < self.intermittent[n][1])
                    values.append(round(self.peak(group, flaky) * (1.0 + self.rng.uniform(-self.noise, self.noise)), 2))
                ordered = sorted(values)
                middle = len(ordered) // 2
                value = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0
                result = {"group": list(group), "busbw": round(value, 2), "status": "ok"}
                if self.samples > 1:
                    result["samples"] = values
                results.append(result)
            self.node_seconds += size * seconds
            longest = max(longest, seconds)
        self.rounds += 1
        self.groups += len(groups)
        self.wall_seconds += longest
        return results
