# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run measured, read for a baseline: from a results.json document or from node states.

Private to the collection. Standard library only.

run_data(run, run_dir, fabric, workload) returns, per node, the single-node busbw, the DCGM diag
time, the workload step p50 (per rank and its median) and the versions (driver, VBIOS, NIC
firmware, DCGM, NCCL), each node's status, the fabric pair busbw and the full-allocation busbw.
A results document carries all of it; node states (a run in progress) take the fabric stage
result and the workload section beside them. A single-node busbw no check carries is re-parsed
from the kept all_reduce_perf output under run_dir.

It is apart from recording a baseline (_baseline) and comparing with one (_baseline_compare)
because both read a run the same way.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, is_number, median)

# A rank's time per step in the workload section, first found wins: the compute part (forward and
# backward) depends on the node alone; the whole step also on the all-reduce partners.
_RANK_KEYS = ("compute_p50", "compute_p50_ms", "step_p50", "step_p50_ms")
# Where each version lives in a node state: stage -> fields.
_STATE_VERSIONS = {"preflight": ("driver_version", "vbios_version", "nic_firmware", "dcgm_version"),
                   "nccl_single_node": ("nccl_version",)}


def _num(value):
    """A finite float, or None."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    return float(value) if is_number(value) else None


def is_results_document(data):
    """True for an acceptance results.json document (not a dict of node states)."""
    return isinstance(data, dict) and isinstance(data.get("checks"), list) and isinstance(data.get("nodes"), dict)


# -- reading a run ------------------------------------------------------------------------------
def _parse_busbw_file(path):
    """Single-node busbw re-parsed from a kept all_reduce_perf output, or None."""
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
    try:
        with open(path) as handle:
            parsed = parse_nccl_tests(handle.read())
    except (IOError, OSError, UnicodeDecodeError):
        return None
    if parsed.get("errors"):
        return None
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    return _num(busbw)


def _workload_ranks(workload):
    """{node: {rank (str): step p50}} from a results document's workload section."""
    per_node = {}
    ranks = (workload or {}).get("ranks") if isinstance(workload, dict) else None
    for rank, record in sorted((ranks or {}).items(), key=lambda item: str(item[0])):
        if not isinstance(record, dict) or not record.get("node"):
            continue
        value = None
        for key in _RANK_KEYS:
            value = _num(record.get(key))
            if value is not None:
                break
        if value is not None:
            per_node.setdefault(str(record["node"]), {})[str(rank)] = value
    return per_node


def _fabric_pairs(fabric):
    """{"a|b": busbw} (names sorted) from a fabric document's matrix {a: {b: busbw}}."""
    pairs = {}
    if isinstance(fabric, dict) and isinstance(fabric.get("document"), dict):
        fabric = fabric["document"]  # a fabric stage result
    matrix = (fabric or {}).get("matrix") if isinstance(fabric, dict) else None
    for first, row in sorted((matrix or {}).items()):
        for second, value in sorted((row or {}).items() if isinstance(row, dict) else []):
            if isinstance(value, dict):
                value = value.get("busbw")
            value = _num(value)
            if value is None or first == second:
                continue
            key = "|".join(sorted((str(first), str(second))))
            pairs[key] = max(pairs[key], value) if key in pairs else value
    return pairs


def _full_allocation(checks):
    for check in checks or []:
        if check.get("check") == "full_allocation" and check.get("status") in (PASS, FAIL):
            metrics = check.get("metrics") or {}
            busbw = _num(metrics.get("busbw"))
            if busbw is not None:
                return busbw, metrics.get("nodes")
    return None, None


def run_data(run, run_dir=None, fabric=None, workload=None):
    """What a run measured, from a results document or from {node: state} (node states).

    Returns {"nodes": {node: {metric or version: value}}, "status": {node: pass|fail|...},
    "pairs": {...}, "full_allocation_busbw", "full_allocation_nodes", "run": {...}}.
    fabric / workload: the fabric stage result (or its document) and the workload section, for
    node states (a results document carries its own).
    """
    if is_results_document(run):
        return _from_results(run, run_dir)
    if not isinstance(run, dict):
        raise ValueError("expected a results.json document or a dict of node states, got %s" % type(run).__name__)
    nodes, status = {}, {}
    for node, state in sorted(run.items()):
        if not isinstance(state, dict):
            continue  # never reported
        stages = state.get("stages") or {}
        record = {}
        nccl = stages.get("nccl_single_node") or {}
        if nccl.get("status") != ERROR:
            busbw = _num((nccl.get("metrics") or {}).get("busbw"))
            if busbw is not None:
                record["single_node_busbw"] = busbw
        for stage, fields in _STATE_VERSIONS.items():
            metrics = (stages.get(stage) or {}).get("metrics") or {}
            for field in fields:
                if metrics.get(field) not in (None, ""):
                    record[field] = str(metrics[field])
        nodes[node] = record
        status[node] = FAIL if state.get("failed_stages") else PASS
    for node, ranks in _workload_ranks(workload).items():
        if node in nodes:
            nodes[node]["step_p50_ranks"] = ranks
            nodes[node]["step_p50"] = median(list(ranks.values()))
    full_busbw, full_nodes = _full_allocation((fabric or {}).get("checks") if isinstance(fabric, dict) else None)
    return {"nodes": nodes, "status": status, "pairs": _fabric_pairs(fabric), "full_allocation_busbw": full_busbw,
            "full_allocation_nodes": full_nodes, "run": {}}


def _from_results(results, run_dir):
    nodes = dict((str(node), {}) for node in results["nodes"])
    status = dict((str(node), (info or {}).get("status")) for node, info in results["nodes"].items())
    for check in results["checks"]:
        node, metrics = check.get("node"), check.get("metrics") or {}
        if node not in nodes:
            continue
        name, stage = check.get("check"), check.get("stage")
        if stage == "nccl_single_node" and name == "nccl.busbw" and check.get("status") in (PASS, FAIL):
            busbw = _num(metrics.get("busbw"))
            if busbw is not None:
                nodes[node]["single_node_busbw"] = busbw
        elif name == "driver_version" and metrics.get("found"):
            nodes[node].setdefault("driver_version", str(metrics["found"]))
        elif name and name.startswith("uniform_") and metrics.get("value") not in (None, ""):
            nodes[node][name[len("uniform_"):]] = str(metrics["value"])
    raw = results.get("raw") or {}
    for node, record in nodes.items():
        tools = raw.get(node) or {}
        dcgm = tools.get("dcgmi-diag") or {}
        seconds = _num(dcgm.get("seconds"))
        if seconds is not None and dcgm.get("rc", 0) == 0 and dcgm.get("complete", True):
            record["dcgm_seconds"] = seconds
        nccl = tools.get("all_reduce_perf") or {}
        if "single_node_busbw" not in record and run_dir and nccl:
            # results.json leaves the usual path (raw/<node>/<tool>.txt) out
            busbw = _parse_busbw_file(os.path.join(run_dir, nccl.get("path") or "raw/%s/all_reduce_perf.txt" % node))
            if busbw is not None:
                record["single_node_busbw"] = busbw
    for node, ranks in _workload_ranks(results.get("workload")).items():
        if node in nodes:
            nodes[node]["step_p50_ranks"] = ranks
            nodes[node]["step_p50"] = median(list(ranks.values()))
    full_busbw, full_nodes = _full_allocation(c for c in results["checks"] if c.get("stage") == "fabric")
    run = dict(results.get("run") or {})
    verdict = results.get("verdict")
    run["verdict"] = verdict.get("status") if isinstance(verdict, dict) else verdict
    return {"nodes": nodes, "status": status, "pairs": _fabric_pairs(results.get("fabric")),
            "full_allocation_busbw": full_busbw, "full_allocation_nodes": full_nodes, "run": run}
