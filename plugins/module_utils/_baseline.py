# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep a baseline: record a known-good run's numbers in a versioned document.

baseline_from_results(results) builds a versioned baseline document from an acceptance run's
results.json (or from the per-node states of a run in progress):

    {"schema": 1, "created": "2026-...Z", "source_run": {"id", "verdict", "started", ...},
     "cluster": {"name", "versions": {field: majority value}, "medians": {metric: median},
                 "node_count"},
     "nodes": {node: {"single_node_busbw", "dcgm_seconds", "driver_version", ..., "step_p50",
                      "step_p50_ranks": {rank: p50}}},
     "excluded": {node: why it is not in the baseline (it did not pass)},
     "pairs": {"a|b": busbw}, "full_allocation_busbw", "full_allocation_nodes",
     "spread": {metric: robust CV across nodes (1.4826 x MAD / median)}}

Comparing a later run with it is compare_to_baseline in _baseline_compare; what a run measured
(run_data) is read by _baseline_run_data for both.

Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import MAD_SCALE
from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline_run_data import run_data
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    PASS, is_number, mad, median)

SCHEMA = 1
STAGE = "baseline"
# Scale that makes the MAD of normally distributed data estimate its standard deviation.

# Numbers compared per node: name -> (label, unit, higher is better).
NODE_METRICS = (
    ("single_node_busbw", "single-node busbw", "GB/s", True),
    ("dcgm_seconds", "DCGM diag time", "s", False),
    ("step_p50", "workload step p50", "ms", False),
)
VERSION_FIELDS = (
    ("driver_version", "driver"),
    ("vbios_version", "VBIOS"),
    ("nic_firmware", "NIC firmware"),
    ("dcgm_version", "DCGM"),
    ("nccl_version", "NCCL"),
)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- statistics -------------------------------------------------------------------------------
def robust_cv(values, min_values=3):
    """1.4826 x MAD / |median| of the finite values; None with fewer than min_values or median 0."""
    usable = [v for v in values if is_number(v)]
    if len(usable) < max(min_values, 1):
        return None
    center = median(usable)
    if center == 0:
        return None
    return MAD_SCALE * mad(usable, center) / abs(center)


def _majority(values):
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    if not counts:
        return None
    return sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))[0][0]


# -- recording --------------------------------------------------------------------------------
def baseline_from_results(results, run_dir=None, cluster=None, created=None, fabric=None, workload=None,
                          include_failed=False):
    """A baseline document (schema 1) from a results document or node states.

    Only nodes that passed the run are recorded (the others are listed under "excluded" with
    the reason) unless include_failed. run_dir (the run's artifact directory) lets a node's
    single-node busbw be re-parsed from raw/<node>/all_reduce_perf.txt when no check carries it.
    """
    data = run_data(results, run_dir, fabric=fabric, workload=workload)
    nodes, excluded = {}, {}
    for node, record in sorted(data["nodes"].items()):
        state = data["status"].get(node)
        if state not in (PASS, None) and not include_failed:
            excluded[node] = "the node's status in the run was %s" % state
            continue
        if not record:
            excluded[node] = "the run measured nothing on this node"
            continue
        nodes[node] = dict(record)
    versions = {}
    for field in [f[0] for f in VERSION_FIELDS]:
        value = _majority([rec[field] for rec in nodes.values() if rec.get(field) not in (None, "")])
        if value is not None:
            versions[field] = value
    medians, spread = {}, {}
    for metric in [m[0] for m in NODE_METRICS]:
        values = [rec[metric] for rec in nodes.values() if is_number(rec.get(metric))]
        if values:
            medians[metric] = median(values)
            cv = robust_cv(values)
            if cv is not None:
                spread[metric] = cv
    pairs = dict((k, v) for k, v in data["pairs"].items()
                 if all(n in nodes for n in k.split("|")) or include_failed)
    if pairs:
        medians["pair_busbw"] = median(list(pairs.values()))
        cv = robust_cv(list(pairs.values()))
        if cv is not None:
            spread["pair_busbw"] = cv
    source = dict((k, v) for k, v in data["run"].items() if k in ("id", "started", "finished", "playbook", "verdict"))
    return {
        "schema": SCHEMA,
        "created": created or _now(),
        "source_run": source,
        "cluster": {"name": cluster, "versions": versions, "medians": medians, "node_count": len(nodes)},
        "nodes": nodes,
        "excluded": excluded,
        "pairs": pairs,
        "full_allocation_busbw": data["full_allocation_busbw"],
        "full_allocation_nodes": data["full_allocation_nodes"],
        "spread": spread,
    }
