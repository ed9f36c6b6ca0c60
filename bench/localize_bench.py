# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark of the localisation strategies of plugins/module_utils/_localize.py on a fabric model.

    python bench/localize_bench.py            # full run (N up to 4096, 20 seeds), writes
                                              # bench/results/localize.md and .json
    python bench/localize_bench.py --quick    # smoke run (N 16..256, 3 seeds), prints only

For each N, fault scenario and seed the same faults are injected into a fresh FabricModel
(bench/fabric_model.py) for each strategy, which then runs until its planner stops. Reported per
cell: rounds, node-seconds of test time (and % of exhaustive's), wall time, recall (pinned
injected faults / injected faults), false positives (pinned elements that were not injected:
a node behind a degraded uplink counts as one), suspects left unresolved.

Exhaustive (N-1 rounds of N/2 pairs) is simulated up to --exhaustive-max-n (64) and computed
analytically above: rounds N-1, node-seconds (N-1) * N * duration(2); its recall and false
positives are then not simulated (shown as "n/s"). No Ansible needed.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import fabric_model  # noqa: E402  pylint: disable=wrong-import-position


def _load_localize():
    """The localiser modules of this checkout (plugins/module_utils/_localize*.py, standard library only).

    They import each other by the collection's name, so a checkout that is not installed as
    ansible_collections/gpucluster/acceptance gets a link to itself under a temporary directory."""
    try:
        from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize  # noqa: F401
        import ansible_collections.gpucluster.acceptance as installed
        if os.path.realpath(os.path.dirname(installed.__file__ or "")) != os.path.realpath(REPO):
            raise ImportError("another copy of the collection")
    except ImportError:
        root = tempfile.mkdtemp(prefix="localize-bench-")
        os.makedirs(os.path.join(root, "ansible_collections", "gpucluster"))
        os.symlink(REPO, os.path.join(root, "ansible_collections", "gpucluster", "acceptance"))
        sys.path.insert(0, root)
        for name in [m for m in sys.modules if m.startswith("ansible_collections")]:
            del sys.modules[name]
    from ansible_collections.gpucluster.acceptance.plugins.module_utils import (  # noqa: E402
        _localize, _localize_base, _localize_resolve)
    import localize_strategies  # noqa: E402  pylint: disable=import-outside-toplevel
    localize_strategies.register(_localize, _localize_base, _localize_resolve)
    return _localize


localize_mod = _load_localize()

SIZES = (16, 64, 256, 1024, 4096)
QUICK_SIZES = (16, 64, 256)
STRATEGIES = ("adaptive", "exhaustive", "halving", "random15", "two_pass")
FLOOR = 300.0               # hgx_h100_sxm / hgx_h200 profile: nccl.multi_node_pair_busbw_min (GB/s)
SLOW_RANGE = (0.3, 0.7)     # slow node / degraded uplink bandwidth factor


def leaf_size_for(count, leaf_size):
    """Nodes per leaf: leaf_size, but at most N/4 so that every cluster has at least four leaves."""
    return max(1, min(leaf_size, count // 4))


# The hard scenarios (intermittent, whole slow leaf, clustered, per NIC): (name, kind, count, target).
# "intermittent" nodes are slow in half of the large-message rows of a test (a link that retrains
# now and then: each row is timed on its own); "intermittent/test" ones in half of their tests,
# every row of a test alike, which no planner can flag in a test it passes (reported, no target).
HARD = (("intermittent=2 p=0.5", "intermittent", 2, True), ("intermittent/test=2 p=0.5", "intermittent_test", 2, False),
        ("slow leaf", "leaf", 0, True), ("clustered=3", "clustered", 3, True))
SAMPLES = 6         # large-message rows per test: 2, 4 and 8 GiB of the usual -e 8G sweep, out-of-place and in-place (the fabric stage's samples)
RAILS = 8           # NICs per node: the perftest stage localises each rail on its own
NIC_GBS = 392.0     # one NDR NIC in ib_write_bw --report_gbits (Gb/s)
NIC_FLOOR = 360.0   # 90 % of 400 Gb/s


def scenarios(count, hard=True):
    """(name, slow, degraded uplink, hanging among the slow, in target, kind)."""
    out = []
    for k in sorted(set((0, 1, 2, 4, count // 32))):
        out.append(("k=%d" % k, k, False, 0, k <= count / 32.0, "slow"))
    out.append(("uplink", 0, True, 0, True, "slow"))
    mixed = max(1, count // 32)
    out.append(("uplink+k=%d%s" % (mixed, ", %d hang" % (mixed // 4) if mixed // 4 else ""),
                mixed, True, mixed // 4, mixed <= count / 32.0, "slow"))
    if hard:
        out.extend((name, k, False, 0, target, kind) for name, kind, k, target in HARD)
        nics = max(2, count // 8)
        out.append(("NICs=%d of %d" % (nics, count * RAILS), nics, False, 0, True, "nic"))
    return out


def build_model(count, leaf_size, scenario, seed, oversubscription, noise, slow_range=SLOW_RANGE):
    """(nodes, topology, make, config): make() -> a FabricModel, or one per rail for NIC faults."""
    name, slow, uplink, hang, _target, kind = scenario
    nodes, topology = fabric_model.make_topology(count, leaf_size_for(count, leaf_size))
    rng = random.Random("bench|%d|%s|%d" % (count, name, seed))
    leaves = sorted(set(t["leaf"] for t in topology.values()))
    config = {"floor": FLOOR, "oversubscription": oversubscription, "evidence_every_round": False}
    if kind == "nic":
        bad = rng.sample([(node, rail) for node in nodes for rail in range(RAILS)], slow)
        factors = [rng.uniform(*slow_range) for _bad in bad]

        def make_rails():
            models = []
            for rail in range(RAILS):
                model = fabric_model.FabricModel(nodes, topology, seed="%d|%s|%d|%d" % (count, name, seed, rail),
                                                 node_gbs=NIC_GBS, oversubscription=oversubscription, noise=noise)
                for (node, on), factor in zip(bad, factors):
                    if on == rail:
                        model.inject_slow(node, factor)
                models.append(model)
            return models
        return nodes, topology, make_rails, dict(config, floor=NIC_FLOOR, unit="Gb/s")
    leaf = rng.choice(leaves)
    if kind == "leaf":  # every node of one leaf slow
        faulty = [n for n in nodes if topology[n]["leaf"] == leaf]
    elif kind == "clustered":  # k slow nodes in one leaf
        faulty = rng.sample([n for n in nodes if topology[n]["leaf"] == leaf], slow)
    else:
        faulty = rng.sample(nodes, slow)
    bad_leaf = rng.choice(leaves) if uplink else None
    uplink_factor = rng.uniform(*slow_range)
    factors = [rng.uniform(*slow_range) for _node in faulty]
    samples = SAMPLES if kind == "intermittent" else 1

    def make():
        model = fabric_model.FabricModel(nodes, topology, seed="%d|%s|%d" % (count, name, seed),
                                         oversubscription=oversubscription, noise=noise, samples=samples)
        for i, node in enumerate(faulty):
            if i < hang:
                model.inject_hang(node)
            elif kind in ("intermittent", "intermittent_test"):
                model.inject_intermittent(node, factors[i], 0.5)
            else:
                model.inject_slow(node, factors[i])
        if kind == "leaf":
            model.mark_leaf(leaf)
        if bad_leaf is not None:
            model.inject_uplink(bad_leaf, uplink_factor)
        return model
    return nodes, topology, make, config


def _run_rails(strategy, nodes, topology, make, seed, config):
    """Every rail localised on its own, all rails in the same rounds: the rounds and node time of
    the slowest rail, the faults of all rails (a fault is node/rail)."""
    totals = None
    for rail, model in enumerate(make()):
        one = run_one(strategy, nodes, topology, lambda m=model: m, seed + 1000 * rail, config)
        if totals is None:
            totals = one
            continue
        for key in ("rounds", "node_seconds", "wall_seconds"):
            totals[key] = max(totals[key], one[key])
        for key, value in one.items():
            if key not in ("rounds", "node_seconds", "wall_seconds"):
                totals[key] += value
    return totals


def run_one(strategy, nodes, topology, make, seed, config):
    model = make()
    started = time.time()
    state = localize_mod.localize(nodes, topology, model.run_round, mode=strategy, seed=seed, config=config)
    elapsed = time.time() - started
    faults = model.faults()
    injected = set(faults["nodes"]) | set("uplink:" + leaf for leaf in faults["uplinks"])
    flagged_as = {}     # element -> the failing verdict it got
    for kind, records in (("node", state["nodes"]), ("uplink", state["uplinks"])):
        for name, record in records.items():
            if record["verdict"] in ("pinned", "intermittent", "leaf"):
                flagged_as[name if kind == "node" else "uplink:" + name] = record["verdict"]
    # a leaf fault names the leaf (its switch or all its nodes): its uplink counts with its nodes
    leaf_hit = set()
    for leaf in state.get("leaf_faults") or ():
        members = set(state["leaves"][leaf]) | {"uplink:" + leaf}
        if members & injected:
            leaf_hit |= members
    pinned = set(flagged_as)
    suspects = set(state["suspects"]["nodes"]) | set("uplink:" + leaf for leaf in state["suspects"]["uplinks"])
    cleared = set()
    for element in injected:
        record = state["uplinks"][element[7:]] if element.startswith("uplink:") else state["nodes"][element]
        if record["verdict"] == "cleared":
            cleared.add(element)
    intermittent = set(faults.get("intermittent") or ())
    return {
        "rounds": state["round"], "node_seconds": model.node_seconds, "wall_seconds": model.wall_seconds,
        "injected": len(injected), "found": len(injected & pinned), "false_positives": len(pinned - injected - leaf_hit),
        "flagged": len(injected & (pinned | suspects)),
        "wrongly_cleared": len(cleared),
        "suspects_left": len(state["suspects"]["nodes"]) + len(state["suspects"]["uplinks"]),
        "intermittent": len(intermittent),
        "intermittent_flagged": sum(1 for n in intermittent if flagged_as.get(n) in ("intermittent", "pinned")),
        "leaf_faults": len(faults.get("leaves") or ()),
        "leaf_faults_found": sum(1 for leaf in faults.get("leaves") or () if leaf in (state.get("leaf_faults") or ())),
        "seconds": elapsed,
    }


def analytic_exhaustive(count):
    model = fabric_model.FabricModel([], {})
    rounds = count - 1 if count % 2 == 0 else count
    pair = model.duration(2)
    return {"rounds": rounds, "node_seconds": rounds * (count - count % 2) * pair, "wall_seconds": rounds * pair}


def aggregate(runs):
    injected = sum(r["injected"] for r in runs)
    return {
        "seeds": len(runs),
        "rounds_mean": sum(r["rounds"] for r in runs) / float(len(runs)),
        "rounds_max": max(r["rounds"] for r in runs),
        "node_seconds_mean": sum(r["node_seconds"] for r in runs) / float(len(runs)),
        "wall_seconds_mean": sum(r["wall_seconds"] for r in runs) / float(len(runs)),
        "injected": injected,
        "found": sum(r["found"] for r in runs),
        "recall": (sum(r["found"] for r in runs) / float(injected)) if injected else None,
        "seeds_full_recall": sum(1 for r in runs if r["found"] == r["injected"]),
        "flagged": (sum(r["flagged"] for r in runs) / float(injected)) if injected else None,
        "false_positives": sum(r["false_positives"] for r in runs),
        "wrongly_cleared": sum(r["wrongly_cleared"] for r in runs),
        "suspects_left_mean": sum(r["suspects_left"] for r in runs) / float(len(runs)),
        "cpu_seconds": sum(r["seconds"] for r in runs),
        "intermittent": sum(r.get("intermittent", 0) for r in runs),
        "intermittent_flagged": sum(r.get("intermittent_flagged", 0) for r in runs),
        "leaf_faults": sum(r.get("leaf_faults", 0) for r in runs),
        "leaf_faults_found": sum(r.get("leaf_faults_found", 0) for r in runs),
        "simulated": True,
    }


def run(sizes=SIZES, seeds=20, strategies=STRATEGIES, leaf_size=32, oversubscription=1.0, noise=0.015,
        exhaustive_max_n=64, log=None, slow_range=SLOW_RANGE, hard=True):
    """All cells; returns {"config": ..., "cells": [...], "targets": ...}."""
    cells = []
    started = time.time()
    for count in sizes:
        for scenario in scenarios(count, hard):
            name, in_target = scenario[0], scenario[4]
            per = dict((s, []) for s in strategies)
            for seed in range(seeds):
                nodes, topology, make, config = build_model(count, leaf_size, scenario, seed, oversubscription, noise,
                                                            slow_range)
                for strategy in strategies:
                    if strategy == "exhaustive" and count > exhaustive_max_n:
                        continue
                    runner = _run_rails if scenario[5] == "nic" else run_one
                    per[strategy].append(runner(strategy, nodes, topology, make, seed, config))
            for strategy in strategies:
                if per[strategy]:
                    cell = aggregate(per[strategy])
                else:
                    cell = dict(analytic_exhaustive(count), seeds=0, simulated=False,
                                rounds_mean=None, rounds_max=None, node_seconds_mean=None)
                    cell.update(analytic_exhaustive(count))
                    cell["rounds_mean"] = cell["rounds_max"] = cell["rounds"]
                    cell["node_seconds_mean"] = cell["node_seconds"]
                    cell["wall_seconds_mean"] = cell["wall_seconds"]
                    cell.update({"recall": None, "seeds_full_recall": None, "false_positives": None, "flagged": None,
                                 "wrongly_cleared": None, "suspects_left_mean": None, "cpu_seconds": 0.0})
                cell.update({"n": count, "leaf_size": leaf_size_for(count, leaf_size), "scenario": name,
                             "strategy": strategy, "in_target": in_target})
                cells.append(cell)
            if log:
                log("N=%d %s done (%.0f s)" % (count, name, time.time() - started))
    by_key = dict(((c["n"], c["scenario"], c["strategy"]), c) for c in cells)
    for cell in cells:
        exhaustive = by_key.get((cell["n"], cell["scenario"], "exhaustive"))
        if exhaustive is None:
            exhaustive = dict(analytic_exhaustive(cell["n"]), node_seconds_mean=analytic_exhaustive(cell["n"])["node_seconds"])
        cell["pct_of_exhaustive"] = 100.0 * cell["node_seconds_mean"] / exhaustive["node_seconds_mean"]
    result = {
        "config": {"sizes": list(sizes), "seeds": seeds, "strategies": list(strategies), "leaf_size": leaf_size,
                   "oversubscription": oversubscription, "noise": noise, "floor": FLOOR,
                   "node_gbs": fabric_model.NODE_GBS, "slow_range": list(slow_range),
                   "exhaustive_max_n": exhaustive_max_n,
                   "duration": "%.0f s + %.0f s * log2(group size)" % (60.0, 15.0)},
        "cells": cells,
        "runtime_seconds": time.time() - started,
    }
    result["targets"] = check_targets(cells)
    return result


def check_targets(cells):
    """The project's targets for adaptive, with the cells that miss them."""
    adaptive = [c for c in cells if c["strategy"] == "adaptive" and c["in_target"]]
    misses = {"rounds": [], "recall": [], "false_positives": [], "node_seconds": [], "intermittent": [],
              "leaf_faults": []}
    for cell in adaptive:
        where = "N=%d %s" % (cell["n"], cell["scenario"])
        if cell["rounds_max"] > 3:
            misses["rounds"].append("%s: up to %d rounds" % (where, cell["rounds_max"]))
        if cell["recall"] is not None and cell["seeds_full_recall"] != cell["seeds"]:
            misses["recall"].append("%s: recall %.1f %%" % (where, 100 * cell["recall"]))
        if cell["false_positives"]:
            misses["false_positives"].append("%s: %d" % (where, cell["false_positives"]))
        if cell.get("intermittent") and cell["intermittent_flagged"] != cell["intermittent"]:
            misses["intermittent"].append("%s: %d of %d flagged" % (where, cell["intermittent_flagged"],
                                                                    cell["intermittent"]))
        if cell.get("leaf_faults") and cell["leaf_faults_found"] != cell["leaf_faults"]:
            misses["leaf_faults"].append("%s: %d of %d leaves" % (where, cell["leaf_faults_found"], cell["leaf_faults"]))
        if cell["n"] == 1024 and cell["pct_of_exhaustive"] > 2.0:
            misses["node_seconds"].append("%s: %.2f %%" % (where, cell["pct_of_exhaustive"]))
    at_1024 = [c["pct_of_exhaustive"] for c in adaptive if c["n"] == 1024]
    return {
        "cells_checked": len(adaptive),
        "max_rounds": max([c["rounds_max"] for c in adaptive] or [0]),
        "max_pct_of_exhaustive_at_1024": max(at_1024) if at_1024 else None,
        "misses": misses,
        "met": not any(misses.values()),
    }


# ------------------------------------------------------------------------------ report

def _fmt_recall(cell):
    if cell["recall"] is None:
        return "n/s" if not cell["simulated"] else "—"
    return "%.1f %%" % (100 * cell["recall"])


def _ratio(cell, found, total):
    if not cell.get("simulated"):
        return "n/s"
    return "%d/%d" % (cell[found], cell[total]) if cell.get(total) else "—"


def _fmt(cell, key, pattern):
    value = cell.get(key)
    return "n/s" if value is None else pattern % value


def _command_line(cfg):
    parts = []
    if cfg["sizes"] != list(SIZES) or cfg["seeds"] != 20:
        parts.append(" --sizes %s --seeds %d" % (",".join(str(s) for s in cfg["sizes"]), cfg["seeds"]))
    if list(cfg["strategies"]) != list(STRATEGIES):
        parts.append(" --strategies %s" % ",".join(cfg["strategies"]))
    if tuple(cfg["slow_range"]) != SLOW_RANGE:
        parts.append(" --slow-range %g,%g" % tuple(cfg["slow_range"]))
    if cfg["oversubscription"] != 1.0:
        parts.append(" --oversubscription %g" % cfg["oversubscription"])
    if cfg["noise"] != 0.015:
        parts.append(" --noise %g" % cfg["noise"])
    if cfg["exhaustive_max_n"] != 64:
        parts.append(" --exhaustive-max-n %d" % cfg["exhaustive_max_n"])
    if cfg["leaf_size"] != 32:
        parts.append(" --leaf-size %d" % cfg["leaf_size"])
    return "".join(parts)


def markdown(result):
    cfg = result["config"]
    lines = ["# Localisation benchmark", "",
             "Generated by `python bench/localize_bench.py%s`; model: `bench/fabric_model.py`, planner and "
             "analyser: `plugins/module_utils/_localize.py`, explained in `docs/localisation.md`."
             % (_command_line(cfg)), "",
             "- %d seeds per cell; healthy node %.0f GB/s, slow nodes and the degraded uplink at %.1f–%.1f x; "
             "noise ±%.1f %%; pair floor %.0f GB/s; oversubscription %g:1." % (
                 cfg["seeds"], cfg["node_gbs"], cfg["slow_range"][0], cfg["slow_range"][1], 100 * cfg["noise"],
                 cfg["floor"], cfg["oversubscription"]),
             "- Leaves of %d nodes (at most N/4, so N=16 has leaves of 4 and N=64 of 16). Test duration %s; "
             "node-hours = Σ groups size × duration; wall = Σ rounds longest group." % (cfg["leaf_size"], cfg["duration"]),
             "- Scenarios: k=… slow nodes; `uplink`: one leaf's uplinks degraded; `uplink+k=…`: both, a quarter "
             "of the slow nodes hanging (their groups time out); `intermittent`: nodes slow in half of the %d "
             "large-message rows of a test (each row timed on its own); `intermittent/test`: slow in half of their "
             "tests, every row alike (no target: a test it passes cannot flag it); `slow leaf`: every node of one "
             "leaf slow; `clustered=3`: 3 slow nodes in one leaf; `NICs=k of N×8`: k slow NICs, each of the %d rails "
             "localised on its own (perftest, Gb/s, floor %.0f). ✔ marks cells inside the target range "
             "(k ≤ N/32, and the hard scenarios but intermittent/test)." % (SAMPLES, RAILS, NIC_FLOOR),
             "- Exhaustive is simulated for N ≤ %d; above, its rounds and node-seconds are computed "
             "(N−1 rounds of N/2 pairs) and recall/FP are not simulated (n/s)." % cfg["exhaustive_max_n"],
             "- recall = pinned injected faults / injected faults over all seeds (seeds with all found); flagged = "
             "injected faults pinned, intermittent, in a leaf fault or left suspect; found/FP = elements pinned, "
             "intermittent or in a leaf fault that were (not) injected (a node "
             "behind a degraded uplink counts), summed over seeds; left = suspects left unresolved (mean per "
             "seed).", ""]
    targets = result["targets"]
    lines.append("## Targets (adaptive, cells inside the target range)")
    lines.append("")

    def verdict(key):
        return "met" if not targets["misses"][key] else "MISSED: " + "; ".join(targets["misses"][key])
    lines.append("- at most 3 rounds: %s (max %d)" % (verdict("rounds"), targets["max_rounds"]))
    lines.append("- recall 100 %% in every seed: %s" % verdict("recall"))
    lines.append("- no false positive: %s" % verdict("false_positives"))
    lines.append("- every intermittent node flagged intermittent or pinned: %s" % verdict("intermittent"))
    lines.append("- every whole slow leaf reported as a leaf fault: %s" % verdict("leaf_faults"))
    if targets["max_pct_of_exhaustive_at_1024"] is not None:
        lines.append("- ≤ 2 %% of exhaustive's node-seconds at N=1024: %s (max %.2f %%)" % (
            "met" if not targets["misses"]["node_seconds"] else "MISSED", targets["max_pct_of_exhaustive_at_1024"]))
    lines.append("")
    sizes = sorted(set(c["n"] for c in result["cells"]))
    lines.extend(summary_table(result))
    for count in sizes:
        cells = [c for c in result["cells"] if c["n"] == count]
        lines.append("## N = %d (leaves of %d)" % (count, cells[0]["leaf_size"]))
        lines.append("")
        lines.append("| scenario | strategy | rounds mean (max) | node-h | % of exhaustive | wall h | recall (seeds) "
                     "| flagged | FP | left | intermittent flagged | leaf faults |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for cell in cells:
            seeds = "" if cell["seeds_full_recall"] is None or cell["recall"] is None else \
                " (%d/%d)" % (cell["seeds_full_recall"], cell["seeds"])
            rounds = ("%.1f (%d)" % (cell["rounds_mean"], cell["rounds_max"])) if cell["simulated"] else \
                "%d (computed)" % cell["rounds_max"]
            flagged = "n/s" if not cell["simulated"] else "—" if cell["flagged"] is None else \
                "%.1f %%" % (100 * cell["flagged"])
            lines.append("| %s%s | %s | %s | %.1f | %s | %.2f | %s%s | %s | %s | %s | %s | %s |" % (
                cell["scenario"], " ✔" if cell["in_target"] else "", cell["strategy"], rounds,
                cell["node_seconds_mean"] / 3600.0, "%.2f %%" % cell["pct_of_exhaustive"],
                cell["wall_seconds_mean"] / 3600.0, _fmt_recall(cell), seeds, flagged,
                _fmt(cell, "false_positives", "%d"), _fmt(cell, "suspects_left_mean", "%.1f"),
                _ratio(cell, "intermittent_flagged", "intermittent"), _ratio(cell, "leaf_faults_found", "leaf_faults")))
        lines.append("")
    lines.append("Benchmark runtime: %.0f s." % result["runtime_seconds"])
    lines.append("")
    return "\n".join(lines)


def summary_table(result):
    """One row per N and strategy over the cells inside the target range."""
    lines = ["## Summary: cells inside the target range (k ≤ N/32, uplink, uplink+k, and the hard scenarios "
             "but intermittent/test)", "",
             "| N | strategy | rounds mean (max) | node-h (range) | % of exhaustive (max) | recall | seeds all found "
             "| FP | left (mean) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    strategies = []
    for cell in result["cells"]:
        if cell["strategy"] not in strategies:
            strategies.append(cell["strategy"])
    for count in sorted(set(c["n"] for c in result["cells"])):
        for strategy in strategies:
            cells = [c for c in result["cells"] if c["n"] == count and c["strategy"] == strategy and c["in_target"]]
            if not cells:
                continue
            hours = [c["node_seconds_mean"] / 3600.0 for c in cells]
            if not cells[0]["simulated"]:
                lines.append("| %d | %s | %d (computed) | %.0f | 100 %% | n/s | n/s | n/s | n/s |"
                             % (count, strategy, cells[0]["rounds_max"], hours[0]))
                continue
            injected = sum(c["injected"] for c in cells)
            found = sum(c["found"] for c in cells)
            seeds = sum(c["seeds"] for c in cells if c["injected"])
            full = sum(c["seeds_full_recall"] for c in cells if c["injected"])
            lines.append("| %d | %s | %.1f (%d) | %.1f–%.1f | %.2f %% | %s | %d/%d | %d | %.1f |" % (
                count, strategy, sum(c["rounds_mean"] for c in cells) / len(cells), max(c["rounds_max"] for c in cells),
                min(hours), max(hours), max(c["pct_of_exhaustive"] for c in cells),
                "%.1f %%" % (100.0 * found / injected) if injected else "—", full, seeds,
                sum(c["false_positives"] for c in cells), sum(c["suspects_left_mean"] for c in cells) / len(cells)))
    lines.append("")
    return lines


def example_state():
    """A small adaptive run (N=64, leaves of 16, one degraded uplink, two slow nodes, one hanging)."""
    nodes, topology = fabric_model.make_topology(64, 16)
    model = fabric_model.FabricModel(nodes, topology, seed="example")
    model.inject_slow("gpu0005", 0.55)
    model.inject_hang("gpu0040")
    model.inject_uplink("leaf002", 0.5)
    state = localize_mod.localize(nodes, topology, model.run_round, seed=7, config={"floor": FLOOR})
    return localize_mod.public_state(state)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--quick", action="store_true", help="N 16..256, 3 seeds, print only")
    parser.add_argument("--sizes", help="comma-separated N (default 16,64,256,1024,4096)")
    parser.add_argument("--seeds", type=int, help="seeds per cell (default 20, quick 3)")
    parser.add_argument("--strategies", help="comma-separated, default all: " + ",".join(STRATEGIES))
    parser.add_argument("--leaf-size", type=int, default=32)
    parser.add_argument("--oversubscription", type=float, default=1.0)
    parser.add_argument("--noise", type=float, default=0.015)
    parser.add_argument("--exhaustive-max-n", type=int, default=64)
    parser.add_argument("--slow-range", default="%g,%g" % SLOW_RANGE,
                        help="bandwidth factor range of slow nodes and the degraded uplink (default 0.3,0.7)")
    parser.add_argument("--classic", action="store_true",
                        help="only the classic scenarios (k slow nodes, a degraded uplink), without the hard ones")
    parser.add_argument("--out", help="output prefix (default bench/results/localize; quick: none)")
    parser.add_argument("--render", metavar="JSON", help="only print the markdown of an earlier JSON result")
    args = parser.parse_args(argv)
    if args.render:
        with open(args.render) as handle:
            print(markdown(json.load(handle)))
        return 0
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    seeds = args.seeds or (3 if args.quick else 20)
    strategies = tuple(args.strategies.split(",")) if args.strategies else STRATEGIES
    out = args.out or (None if args.quick else os.path.join(HERE, "results", "localize"))

    def log(message):
        sys.stderr.write(message + "\n")
    slow_range = tuple(float(x) for x in args.slow_range.split(","))
    result = run(sizes, seeds, strategies, args.leaf_size, args.oversubscription, args.noise,
                 args.exhaustive_max_n, log=log, slow_range=slow_range, hard=not args.classic)
    text = markdown(result)
    print(text)
    if out:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out + ".md", "w") as handle:
            handle.write(text + "\n")
        with open(out + ".json", "w") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
            handle.write("\n")
        with open(out + ".example.json", "w") as handle:
            json.dump(example_state(), handle, indent=1, sort_keys=True, ensure_ascii=False)
            handle.write("\n")
    return 0 if result["targets"]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
