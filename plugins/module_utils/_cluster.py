# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-wide checks over every node's stage metrics: version uniformity, peer comparison, GPU identity.

Checks:
- uniform_<field>   driver, VBIOS, NIC firmware, DCGM and NCCL versions identical on all nodes
- peers_<metric>    single-node busbw far below the peers' median
- peers_samples_per_s  loader throughput far below the peers' (data_loader, data_loader_alone)
- loader.contention the loader's throughput with every node reading at once against alone
- peers_local_write_mb_s, peers_shared_write_mb_s  checkpoint writes (torch.save + fsync) to the
                    local NVMe far below the peers' (checkpoint, checkpoint_alone), to the shared
                    file system alone (checkpoint_alone: a node's own client, without contention)
- checkpoint.contention  per node, its shared-path checkpoint write with every node writing at once
                    against alone, and what the nodes wrote together
- sdc.*             every GPU's SDC probe results and GEMM throughput against all GPUs of the same
                    part and software in the run (_judge_sdc_fleet)
- nvlink_domain.*   rack profiles: trays grouped by the NVLink domain their GPUs registered in,
                    misplaced and surplus trays, rack-level faults, usable capacity (_nvlink_domains)
- gpu.identity      per node: the tools that list GPUs (nvidia-smi -L / --query-gpu in preflight,
                    nvidia-smi -q / --query-gpu in gpu_health, topo -m in topology, dcgmi in dcgm)
                    agree on the GPUs (count, bus ids, UUIDs); a disagreement fails the node in
                    the stage of the tool that disagrees, naming which tool saw which GPUs. Where
                    the profile has no GPU bus-id layout that fits the node, a node showing fewer
                    GPUs than the layout most of its peers show fails in gpu_health with the
                    missing bus ids named.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, fmt_num, is_number, join_names, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    name_missing, profile_layout)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import normalize_bus_id
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_uniformity import (
    judge_peers, judge_uniformity)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_sdc_fleet import judge_sdc_fleet
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import judge_nvlink_domains

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
    ("data_loader", "samples_per_s", "loader throughput (all nodes at once)", "samples/s"),
    ("data_loader_alone", "samples_per_s", "loader throughput (alone)", "samples/s"),
    ("checkpoint", "local_write_mb_s", "local NVMe checkpoint write (all nodes at once)", "MB/s"),
    ("checkpoint_alone", "local_write_mb_s", "local NVMe checkpoint write (alone)", "MB/s"),
    ("checkpoint_alone", "shared_write_mb_s", "shared file system checkpoint write (alone)", "MB/s"),
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


def judge_cluster(states, profile=None, nvlink=None, racks=None):
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
    results.extend(judge_gpu_identity(states, profile))
    contention = judge_loader_contention(states)
    if contention:
        results.append(_stage_result("data_loader", contention))
    contention = judge_checkpoint_contention(states)
    if contention:
        results.append(_stage_result("checkpoint", contention))
    sdc = judge_sdc_fleet(states, profile)
    if sdc:
        results.append(_stage_result("sdc", sdc))
    domains = judge_nvlink_domains(states, profile, mnnvl=nvlink, racks=racks)
    if domains:
        results.append(domains)
    return results


def judge_loader_contention(states):
    """Per node, what its loaders delivered with every node reading at once against alone."""
    alone = _metric(states, "data_loader_alone", "samples_per_s")
    together = _metric(states, "data_loader", "samples_per_s")
    checks = []
    for node in sorted(set(alone) & set(together)):
        if not (is_number(alone[node]) and is_number(together[node]) and alone[node] > 0):
            continue
        ratio = together[node] / alone[node]
        checks.append(check_result(
            "loader.contention", PASS, "%s loader with all nodes reading at once: %s samples/s, %d %% of the %s it "
            "delivers alone" % (node, fmt_num(together[node]), int(round(ratio * 100)), fmt_num(alone[node])),
            {"alone": alone[node], "together": together[node], "ratio": round(ratio, 4)}, node))
    return checks


def judge_checkpoint_contention(states):
    """Per node, its shared-path checkpoint write with every node writing at once against alone."""
    alone = _metric(states, "checkpoint_alone", "shared_write_mb_s")
    together = _metric(states, "checkpoint", "shared_write_mb_s")
    both = [n for n in sorted(set(alone) & set(together))
            if is_number(alone[n]) and is_number(together[n]) and alone[n] > 0 and together[n] > 0]
    aggregate = sum(together[n] for n in both)
    checks = []
    for node in both:
        ratio = together[node] / alone[node]
        checks.append(check_result(
            "checkpoint.contention", PASS, "%s checkpoint writes to the shared file system with %d nodes at once: "
            "%s MB/s, %d %% of the %s MB/s it writes alone (the %d nodes together %s MB/s)" % (
                node, len(both), fmt_num(together[node]), int(round(ratio * 100)), fmt_num(alone[node]), len(both),
                fmt_num(aggregate)),
            {"alone_mb_s": alone[node], "together_mb_s": together[node], "ratio": round(ratio, 4),
             "contention_factor": round(1.0 / ratio, 4), "aggregate_mb_s": aggregate, "nodes": len(both)}, node))
    return checks


# -------------------------------------------------------------------------------- GPU identity

# Where the stages record what their GPU-listing tools saw: (stage, tool, label).
IDENTITY_TOOLS = (
    ("preflight", "nvidia-smi-list", "nvidia-smi -L"),
    ("preflight", "nvidia-smi-versions", "nvidia-smi --query-gpu"),
    ("gpu_health", "nvidia-smi-q", "nvidia-smi -q"),
    ("gpu_health", "nvidia-smi-csv", "nvidia-smi --query-gpu"),
    ("topology", "nvidia-smi-topo", "nvidia-smi topo -m"),
    ("dcgm", "dcgmi-diag", "dcgmi diag"),
)
_LABELS = dict(((stage, tool), label) for stage, tool, label in IDENTITY_TOOLS)


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _node_views(state):
    """[{stage, tool, label, count, bus_ids, uuids, gpu_ids}] of one node's GPU-listing tools."""
    views = []
    stages = (state or {}).get("stages") or {}
    for stage in ("preflight", "gpu_health", "topology", "dcgm"):
        metrics = (stages.get(stage) or {}).get("metrics") or {}
        per_tool = metrics.get("gpu_identity") if isinstance(metrics.get("gpu_identity"), dict) else None
        if per_tool:
            items = sorted(per_tool.items())
        elif _count(metrics.get("gpu_count")) is not None:
            tool = dict((s, t) for s, t, _l in reversed(IDENTITY_TOOLS)).get(stage, stage)
            items = [(tool, {"count": metrics["gpu_count"], "bus_ids": metrics.get("gpu_bus_ids"),
                             "uuids": metrics.get("gpu_uuids"), "gpu_ids": metrics.get("gpu_ids")})]
        else:
            continue
        for tool, seen in items:
            if not isinstance(seen, dict) or _count(seen.get("count")) is None:
                continue
            buses = seen.get("bus_ids")
            buses = sorted(set(b for b in (normalize_bus_id(x) for x in buses if isinstance(x, str)) if b)) \
                if isinstance(buses, (list, tuple)) and buses else None
            uuids = sorted(set(u for u in seen.get("uuids") or [] if isinstance(u, str))) or None
            views.append({"stage": stage, "tool": tool, "label": "%s (%s)" % (_LABELS.get((stage, tool), tool), stage),
                          "count": seen["count"], "bus_ids": buses, "uuids": uuids,
                          "gpu_ids": seen.get("gpu_ids"), "unreachable": seen.get("unreachable")})
    return views


def _describe(view):
    text = "%s: %d GPU%s" % (view["label"], view["count"], "" if view["count"] == 1 else "s")
    if view.get("bus_ids"):
        text += " (%s)" % join_names(view["bus_ids"], limit=16)
    elif isinstance(view.get("gpu_ids"), (list, tuple)) and view["gpu_ids"]:
        text += " (ids %s)" % ",".join(str(i) for i in view["gpu_ids"])
    if view.get("unreachable"):
        text += ", cannot reach %s" % join_names(view["unreachable"])
    return text


def _mode(values):
    """The most common value; ties go to the largest (a tool that lost a GPU sees fewer)."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], [-len(kv[0])] if isinstance(kv[0], tuple)
                                                  else [-kv[0]]))[0][0]


def _disagreements(views):
    """{stage: [views that disagree]} and the reference count / bus ids the others agree on."""
    ref_count = _mode([v["count"] for v in views])
    # On a tie, nvidia-smi -q (the detailed report) is the reference, then the CSVs.
    order = {("gpu_health", "nvidia-smi-q"): 0, ("gpu_health", "nvidia-smi-csv"): 1}
    views = sorted(views, key=lambda v: order.get((v["stage"], v["tool"]), 2))
    with_buses = [v for v in views if v.get("bus_ids") and v["count"] == ref_count]
    ref_buses = _mode([tuple(v["bus_ids"]) for v in with_buses]) if with_buses else None
    with_uuids = [v for v in views if v.get("uuids") and v["count"] == ref_count]
    ref_uuids = _mode([tuple(v["uuids"]) for v in with_uuids]) if with_uuids else None
    odd = {}
    for view in views:
        if view["count"] != ref_count or (ref_buses and view.get("bus_ids") and tuple(view["bus_ids"]) != ref_buses) \
                or (ref_uuids and view.get("uuids") and tuple(view["uuids"]) != ref_uuids) or view.get("unreachable"):
            odd.setdefault(view["stage"], []).append(view)
    return odd, ref_count, ref_buses


def _peer_layout(node_buses):
    """The bus-id set a strict majority of the nodes that report bus ids show, or None."""
    sets = [tuple(b) for b in node_buses.values() if b]
    if len(sets) < 3:
        return None
    layout = _mode(sets)
    return list(layout) if sets.count(layout) * 2 > len(sets) else None


def _primary_buses(views):
    for stage, tool in (("gpu_health", "nvidia-smi-q"), ("gpu_health", "nvidia-smi-csv"),
                        ("preflight", "nvidia-smi-versions")):
        for view in views:
            if view["stage"] == stage and view["tool"] == tool and view.get("bus_ids"):
                return view["bus_ids"]
    return None


def judge_gpu_identity(states, profile=None):
    """gpu.identity results, one stage result per stage that has a check ({stage, checks, failed_nodes})."""
    per_node = dict((node, _node_views(state)) for node, state in sorted((states or {}).items()) if state)
    node_buses = dict((node, _primary_buses(views)) for node, views in per_node.items())
    peers = _peer_layout(node_buses)
    layout = profile_layout(profile)
    by_stage = {}
    for node, views in per_node.items():
        if not views:
            continue
        evidence = [_describe(v) for v in views]
        odd, ref_count, ref_buses = _disagreements(views) if len(views) > 1 else ({}, views[0]["count"], None)
        for stage, bad in sorted(odd.items()):
            others = [v for v in views if v not in bad]
            text = "; ".join(_describe(v) for v in bad)
            missing = []
            for view in bad:
                if ref_buses and view.get("bus_ids"):
                    missing.extend(sorted(set(ref_buses) - set(view["bus_ids"])))
            agreed = ("the other tools see %d GPU%s" % (ref_count, "" if ref_count == 1 else "s")) if others \
                else "no two tools agree"
            message = "%s: the GPU-listing tools disagree: %s; %s (%s)%s" % (
                node, text, agreed, "; ".join(_describe(v) for v in others) or "none",
                ", missing from %s: %s" % (bad[0]["label"], join_names(missing)) if missing else "")
            by_stage.setdefault(stage, []).append(check_result(
                "gpu.identity", FAIL, message,
                {"views": dict((v["label"], {"count": v["count"], "bus_ids": v.get("bus_ids"),
                                             "uuids": v.get("uuids")}) for v in views),
                 "expected_count": ref_count}, node, evidence=evidence))
        if odd:
            continue
        buses = node_buses.get(node)
        fits_profile = bool(layout) and buses is not None and not name_missing(buses, layout)["reason"]
        if peers and buses and not fits_profile and set(buses) < set(peers):
            found = name_missing(buses, peers, len(peers))
            gone = ", ".join("%s (slot %d of the peers' layout)" % (bus, slot) for slot, bus in found["missing"])
            by_stage.setdefault("gpu_health", []).append(check_result(
                "gpu.identity", FAIL, "%s shows %d GPUs where most of its peers show %d: missing %s"
                % (node, len(buses), len(peers), gone),
                {"missing": [b for _s, b in found["missing"]], "peer_layout": peers}, node, evidence=evidence))
            continue
        stage = "gpu_health" if any(v["stage"] == "gpu_health" for v in views) else views[0]["stage"]
        message = "%s: %s agree%s on %d GPU%s" % (
            node, join_names([v["label"] for v in views]), "" if len(views) > 1 else "s",
            ref_count, "" if ref_count == 1 else "s")
        if peers and buses and not fits_profile and set(buses) != set(peers) and not set(buses) < set(peers):
            by_stage.setdefault(stage, []).append(warning_result(
                "gpu.identity", message + "; its bus ids are not the layout most peers show (%s)"
                % join_names(sorted(set(buses) - set(peers))), {"count": ref_count}, node, evidence=evidence))
        else:
            by_stage.setdefault(stage, []).append(check_result(
                "gpu.identity", PASS, message, {"count": ref_count}, node, evidence=evidence))
    return [_stage_result(stage, checks) for stage, checks in sorted(by_stage.items())]
