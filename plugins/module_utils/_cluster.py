# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-wide checks over every node's stage metrics: version uniformity and peer comparison."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import ERROR, FAIL
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_uniformity import (
    judge_peers, judge_uniformity)

# Version fields that must be identical on every node: the majority value is the expected one.
UNIFORM_FIELDS = (
    ("preflight", "driver_version"),
    ("preflight", "vbios_version"),
    ("preflight", "nic_firmware"),
    ("preflight", "dcgm_version"),
    ("nccl_single_node", "nccl_version"),
)
# Numbers where a node far below its peers fails even above the profile's floor.
PEER_METRICS = (
    ("nccl_single_node", "busbw", "single-node busbw", "GB/s"),
)


def _metric(states, stage, key):
    values = {}
    for node, state in sorted(states.items()):
        stage_state = ((state or {}).get("stages") or {}).get(stage)
        if stage_state and stage_state.get("status") != ERROR and key in (stage_state.get("metrics") or {}):
            values[node] = stage_state["metrics"][key]
    return values


def _stage_result(stage, checks):
    for check in checks:
        check["node"] = check.get("component")
        check["stage"] = stage
    return {"stage": stage, "checks": checks,
            "failed_nodes": sorted(set(c["node"] for c in checks if c["status"] in (FAIL, ERROR) and c["node"]))}


def judge_cluster(states, profile=None):
    """List of stage results ({stage, checks, failed_nodes}) for the report and the verdict.

    states: {node: the node's state from judge_stage, or None for a node that never reported}.
    """
    results = []
    for stage, key in UNIFORM_FIELDS:
        values = _metric(states, stage, key)
        if len(values) >= 2:
            checks = judge_uniformity(values, key, check="uniform_" + key)
            results.append(_stage_result(stage, checks))
    options = (profile or {}).get("peers") or {}
    for stage, key, label, unit in PEER_METRICS:
        values = _metric(states, stage, key)
        if values:
            checks = judge_peers(values, "peers_" + key, label, unit, k=options.get("k", 3.5),
                                 min_rel_drop=options.get("min_rel_drop", 0.10),
                                 min_nodes=options.get("min_nodes", 3))
            results.append(_stage_result(stage, checks))
    return results
