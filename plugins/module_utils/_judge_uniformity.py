# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-wide judges: every node compared with its peers.

- judge_uniformity: software/firmware versions must match across the cluster; the value held by
  a strict majority of nodes is the expected one.
- judge_peers: a performance metric must not be far below (or above) the cluster median by a
  robust measure, even when it clears the profile's absolute floor.

Both return one result per node (component = node name).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, join_names, mad, median,
    peer_outliers, robust_z)

# Words used in messages for the usual fields; any other field name is used as given.
FIELD_LABELS = {
    "driver": "driver",
    "driver_version": "driver",
    "vbios": "VBIOS",
    "vbios_version": "VBIOS",
    "nic_firmware": "NIC firmware",
    "firmware": "firmware",
    "cuda": "CUDA",
    "cuda_version": "CUDA",
    "nccl": "NCCL",
    "nccl_version": "NCCL",
    "ofed": "OFED",
    "kernel": "kernel",
    "bios": "BIOS",
}


def _label(field):
    return FIELD_LABELS.get(field, field.replace("_", " "))


def _missing(value):
    return value is None or (isinstance(value, str) and not value.strip())


def _node_value(value):
    """(single value or None, {device: value} when devices disagree, devices missing a value).

    value may be a scalar, a list (devices by position) or a dict {device: value}.
    """
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
    elif isinstance(value, (list, tuple)):
        items = [("device %d" % i, v) for i, v in enumerate(value)]
    else:
        return (None if _missing(value) else str(value).strip()), {}, []
    present = [(dev, str(v).strip()) for dev, v in items if not _missing(v)]
    absent = [dev for dev, v in items if _missing(v)]
    distinct = sorted(set(v for _dev, v in present))
    if not distinct:
        return None, {}, absent
    if len(distinct) == 1:
        return distinct[0], {}, absent
    return None, dict(present), absent


def judge_uniformity(values_by_node, field, check=None):
    """Versions that must be identical on every node (driver, VBIOS, NIC firmware, CUDA, NCCL).

    values_by_node: {node: value}; a value may be a string, a list of per-device strings or a
    dict {device: string} (per-GPU VBIOS, per-HCA firmware). Devices of one node must agree.
    The value on a strict majority of the nodes is the expected one; a node that differs fails
    ("gpu007 driver 535.129.03 differs from 550.54.15 on 15 of 16 nodes"). Without a majority
    every node fails and the message gives the distribution. A node without a value is an error.
    """
    check = check or "uniformity.%s" % field
    label = _label(field)
    results = []
    node_values = {}  # nodes that take part in the comparison
    for node in sorted(values_by_node, key=str):
        single, split, absent = _node_value(values_by_node[node])
        if split:
            groups = {}
            for dev, val in split.items():
                groups.setdefault(val, []).append(dev)
            parts = ["%s on %s" % (val, join_names(sorted(devs))) for val, devs in
                     sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
            results.append(check_result(
                check, FAIL, "%s has mixed %s versions across its devices: %s"
                % (node, label, "; ".join(parts)),
                {"field": field, "values": dict(split)}, node))
            continue
        if single is None:
            results.append(check_result(
                check, ERROR, "%s reported no %s version" % (node, label),
                {"field": field}, node))
            continue
        node_values[node] = single
        if absent:
            # Some devices did not report: judged on the ones that did, but say so.
            results.append(check_result(
                check, ERROR, "%s reported no %s version for %s"
                % (node, label, join_names(absent)), {"field": field, "value": single}, node))

    if not node_values:
        return results

    counts = {}
    for value in node_values.values():
        counts[value] = counts.get(value, 0) + 1
    total = len(node_values)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top_value, top_count = ranked[0]
    has_majority = top_count * 2 > total

    if has_majority:
        for node in sorted(node_values, key=str):
            value = node_values[node]
            metrics = {"field": field, "value": value, "expected": top_value,
                       "nodes_with_expected": top_count, "nodes": total}
            if value == top_value:
                # A pass's message says it all; one line per node of thousands stays short.
                results.append(check_result(
                    check, PASS, "%s %s %s matches %d of %d nodes"
                    % (node, label, value, top_count, total), {"value": value}, node))
            else:
                results.append(check_result(
                    check, FAIL, "%s %s %s differs from %s on %d of %d nodes"
                    % (node, label, value, top_value, top_count, total), metrics, node))
        return results

    by_value = {}
    for node, value in node_values.items():
        by_value.setdefault(value, []).append(node)
    distribution = "; ".join(
        "%s on %d (%s)" % (value, len(by_value[value]), join_names(sorted(by_value[value], key=str), 4))
        for value, _count in ranked)
    for node in sorted(node_values, key=str):
        results.append(check_result(
            check, FAIL, "%s %s %s: no %s version is shared by a majority of the %d nodes: %s"
            % (node, label, node_values[node], label, total, distribution),
            {"field": field, "value": node_values[node], "distribution": dict(counts),
             "nodes": total}, node))
    return results


def judge_peers(metric_by_node, check, label, unit="", low_is_bad=True, k=3.5,
                min_rel_drop=0.10, min_nodes=3):
    """A node far from the cluster median fails even when it clears the absolute floor.

    metric_by_node: {node: number}. Outliers by peer_outliers() (modified z-score beyond k and
    at least min_rel_drop away from the median, in the bad direction) fail with e.g.
    "gpu017 single-node busbw 301 GB/s is 22 % below the cluster median 386 GB/s". Nodes without
    a number are errors; with fewer than min_nodes numbers every node is skipped.
    """
    unit_txt = (" " + unit) if unit else ""
    results = []
    usable = {}
    for node in sorted(metric_by_node, key=str):
        value = metric_by_node[node]
        if is_number(value):
            usable[node] = value
        else:
            results.append(check_result(
                check, ERROR, "%s has no %s value to compare with its peers" % (node, label),
                {"value": value}, node))
    if len(usable) < max(min_nodes, 1):
        for node in sorted(usable, key=str):
            results.append(check_result(
                check, SKIP, "%s: peer comparison of %s needs at least %d nodes, got %d"
                % (node, label, min_nodes, len(usable)), {"value": usable[node]}, node))
        return results
    outliers = peer_outliers(usable, low_is_bad=low_is_bad, k=k, min_rel_drop=min_rel_drop,
                             min_nodes=min_nodes)
    center = median(list(usable.values()))
    spread = mad(list(usable.values()), center)
    for node in sorted(usable, key=str):
        value = usable[node]
        z = robust_z(value, center, spread)
        rel = (value - center) / abs(center) if center else 0.0
        metrics = {"value": value, "median": center, "mad": spread, "z": z, "rel_diff": rel,
                   "k": k, "min_rel_drop": min_rel_drop, "nodes": len(usable)}
        direction = "below" if rel < 0 else "above"
        pct = int(round(abs(rel) * 100))
        if node in outliers:
            results.append(check_result(
                check, FAIL, "%s %s %s%s is %d %% %s the cluster median %s%s"
                % (node, label, fmt_num(value), unit_txt, pct, direction, fmt_num(center),
                   unit_txt), metrics, node))
        else:
            results.append(check_result(
                check, PASS, "%s %s %s%s is within the peer range (cluster median %s%s, %d %% %s)"
                % (node, label, fmt_num(value), unit_txt, fmt_num(center), unit_txt, pct,
                   direction), {"value": value, "median": center, "rel_diff": rel}, node))
    return results
