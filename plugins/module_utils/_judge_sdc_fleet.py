# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SDC probe across the cluster: every GPU against all GPUs of the same part and software.

Reads the sdc stage's metrics of every node (_judge_sdc.fleet_metrics) and returns checks of the
sdc stage, each naming its node:
- sdc.fleet_consistency  a GPU whose result (the checksum most of its iterations gave) differs
                         from the one most GPUs of the same part, software, size and seed gave,
                         when its own node could not tell (fewer than 3 GPUs, or a whole node
                         agreeing on a wrong answer). A GPU its node already named is not named
                         twice. Error for a group where no checksum has a majority.
- sdc.peers              a GPU whose GEMM TFLOPS are far below the median of the same part in
                         this run (robust z-score beyond peers.k and at least
                         sdc.peer_min_rel_drop below), per precision; one pass per node.
Pure function of the states: a replay gives the same checks.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, fmt_num, median, peer_outliers, profile_get)

STAGE = "sdc"


def _sdc_metrics(states):
    out = {}
    for node, state in sorted((states or {}).items()):
        stage = ((state or {}).get("stages") or {}).get(STAGE) or {}
        metrics = (stage.get("metrics") or {}).get("sdc")
        if isinstance(metrics, dict) and isinstance(metrics.get("gpus"), dict) and metrics["gpus"]:
            out[node] = metrics
    return out


def _group_key(metrics):
    return (metrics.get("part"), metrics.get("software"), bool(metrics.get("simulated")),
            metrics.get("size"), metrics.get("seed"))


def _label(node, bus, entry):
    return "%s GPU%s (%s)" % (node, entry.get("index"), bus)


def _consistency(group):
    """group: [(node, metrics)] of one part/software -> checks."""
    votes = {}
    for node, metrics in group:
        for bus, entry in metrics["gpus"].items():
            for workload, checksum in (entry.get("checksum") or {}).items():
                votes.setdefault(workload, {}).setdefault(checksum, []).append((node, bus))
    checks, named = [], {}
    for workload in sorted(votes):
        counts = votes[workload]
        total = sum(len(v) for v in counts.values())
        best, members = max(sorted(counts.items(), key=lambda kv: str(kv[0])), key=lambda kv: len(kv[1]))
        if total < 3 or len(members) * 2 <= total:
            nodes = sorted(set(n for m in counts.values() for n, _b in m))
            if len(counts) > 1:
                for node in nodes:
                    checks.append(check_result(
                        "sdc.fleet_consistency", ERROR,
                        "%s: %s results of %d GPUs of this part disagree with no majority (%d distinct): which GPU "
                        "is wrong cannot be told" % (node, workload, total, len(counts)),
                        {"workload": workload, "gpus": total, "distinct": len(counts)}, node))
            continue
        for checksum, where in counts.items():
            if checksum == best:
                continue
            for node, bus in where:
                named.setdefault((node, bus), []).append(workload)
    metrics_by = dict(group)
    for (node, bus), workloads in sorted(named.items()):
        metrics = metrics_by[node]
        if bus in (metrics.get("suspects") or []):
            continue  # its node already named it (sdc.consistency)
        entry = metrics["gpus"][bus]
        checks.append(check_result(
            "sdc.fleet_consistency", FAIL,
            "%s computed results that differ from those of most GPUs of the same part and software: %s"
            % (_label(node, bus, entry), ", ".join(sorted(workloads))),
            {"bus_id": bus, "gpu": entry.get("index"), "workloads": sorted(workloads)}, node))
    return checks


def _peers(group, profile):
    options = profile.get("peers") or {}
    k = options.get("k", 3.5)
    min_nodes = options.get("min_nodes", 3)
    drop = float(profile_get(profile, "sdc.peer_min_rel_drop", 0.10))
    values = {}
    for node, metrics in group:
        for bus, entry in metrics["gpus"].items():
            for workload, tflops in (entry.get("tflops") or {}).items():
                values.setdefault(workload, {})[(node, bus)] = tflops
    slow = {}
    compared = {}
    for workload in sorted(values):
        by_gpu = values[workload]
        if len(by_gpu) < max(min_nodes, 3):
            continue
        center = median(list(by_gpu.values()))
        for key in by_gpu:
            compared.setdefault(key[0], set()).add(key[1])
        for key in peer_outliers(by_gpu, low_is_bad=True, k=k, min_rel_drop=drop, min_nodes=min_nodes):
            slow.setdefault(key, []).append((workload, by_gpu[key], center))
    checks = []
    metrics_by = dict(group)
    for (node, bus), rows in sorted(slow.items()):
        entry = metrics_by[node]["gpus"][bus]
        parts = ["%s %s TFLOPS is %d %% below the median %s" % (w, fmt_num(v), int(round((1 - v / c) * 100)), fmt_num(c))
                 for w, v, c in rows]
        checks.append(check_result(
            "sdc.peers", FAIL, "%s is slower than the other GPUs of the same part%s: %s"
            % (_label(node, bus, entry), " (simulated device clock)" if metrics_by[node].get("simulated") else "",
               "; ".join(parts)),
            {"bus_id": bus, "gpu": entry.get("index"), "tflops": dict((w, v) for w, v, _c in rows)}, node))
    slow_nodes = set(n for n, _b in slow)
    for node in sorted(compared):
        if node not in slow_nodes:
            checks.append(check_result(
                "sdc.peers", PASS, "%s: all %d GPUs within the peer range of GEMM throughput" % (node, len(compared[node])),
                {"gpus": len(compared[node])}, node))
    return checks


def judge_sdc_fleet(states, profile=None):
    """Checks of the sdc stage comparing every node's GPUs with the rest of the cluster."""
    profile = profile or {}
    groups = {}
    for node, metrics in _sdc_metrics(states).items():
        groups.setdefault(_group_key(metrics), []).append((node, metrics))
    checks = []
    for key in sorted(groups, key=str):
        group = groups[key]
        checks.extend(_consistency(group))
        checks.extend(_peers(group, profile))
    return checks
