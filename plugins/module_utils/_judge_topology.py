# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge the node topology read by parse_nvidia_topo (nvidia-smi topo -m) against a profile.

Checks (one result per finding, component names the GPU pair, GPU or NIC; every result carries
the matrix rows it rests on as evidence):
- topology.parse         the parser's errors (an unreadable row, a truncated matrix), reported next
                         to the findings from the rest of the matrix; the only result when no
                         matrix could be read at all
- topology.gpu_count     GPU columns in the matrix vs gpus_per_node (topo -m numbers the GPUs it
                         sees, so a missing one is named by PCI bus id by gpu_health, not here)
- topology.nvlink        every GPU pair's link vs nvlink_per_pair ("GPU2<->GPU5 is SYS, ...")
- topology.nic_count     NICs in the matrix (or the named ones) vs nics_per_node
- topology.nic_affinity  each GPU has a NIC at an accepted PCIe relation (PIX/PXB), and each
                         named NIC has a GPU at one; skipped when the profile sets no relation
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names, parse_error_results, profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import parse_nvidia_topo
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

TOOL = "nvidia-smi topo -m"
ARROW = u"\u2194"  # GPU2<->GPU5 in messages

# PCIe closeness, closest first (PSB is an old name for a single on-board switch, SOC for SYS).
_RANK = {"PIX": 0, "PSB": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}
_GPU_NUM = re.compile(r"^GPU(\d+)$")


def _gpu_key(name):
    match = _GPU_NUM.match(name)
    return (0, int(match.group(1))) if match else (1, name)


def _cell(matrix, a, b):
    value = (matrix.get(a) or {}).get(b)
    if value is None:
        value = (matrix.get(b) or {}).get(a)
    return value


def _nic_label(topo, nic):
    names = topo.get("nic_names") or {}
    devices = topo.get("nic_devices") or {}
    return names.get(nic) or devices.get(nic) or nic


def _rows(topo, *labels):
    """The header and the printed rows of the given devices (all GPU rows when none given)."""
    lines = topo.get("row_lines") or {}
    wanted = labels or sorted((k for k in lines if _GPU_NUM.match(k)), key=_gpu_key)
    return [topo.get("header_line")] + [lines[label] for label in wanted if label in lines]


def _gpu_columns(topo):
    """GPUs of the matrix: every GPU column of the header, read row or not (a garbled row is still a GPU)."""
    columns = [d for d in (topo.get("columns") or []) if _GPU_NUM.match(d)]
    found = set(columns) | set(topo.get("gpus") or [])
    return sorted(found, key=_gpu_key)


def judge_topology(topo, profile):
    """List of check results for one node's nvidia-smi topo -m parse result.

    A parse error is reported as a topology.parse error next to the findings from the rows that
    could be read; only a result with no header or no GPU at all gives the error alone.
    """
    failed = parse_error_results("topology.parse", TOOL, topo)
    if failed and (not isinstance(topo, dict) or topo.get("errors") is None):
        return failed
    results = []
    if failed:
        results.append(check_result("topology.parse", ERROR, failed[0]["message"], failed[0]["metrics"],
                                    evidence=list(topo.get("errors") or [])))
    gpus = _gpu_columns(topo)
    nics = list(topo.get("nics") or [])
    matrix = topo.get("matrix") or {}
    expected_gpus = profile_get(profile, "gpus_per_node")
    if not gpus or not matrix:
        return results or [check_result("topology.gpu_count", ERROR, "%s: the matrix lists no GPUs" % TOOL,
                                        {"tool": TOOL}, evidence=[topo.get("header_line")])]

    if expected_gpus is not None:
        metrics = {"found": len(gpus), "expected": expected_gpus, "gpus": gpus}
        if len(gpus) == expected_gpus:
            results.append(check_result("topology.gpu_count", PASS,
                                        "%s shows %d GPUs (%s), as expected"
                                        % (TOOL, len(gpus), _span(gpus)), metrics,
                                        evidence=_rows(topo)))
        else:
            # topo -m renumbers the GPUs it sees (GPU5 gone: the last one is GPU6), so the
            # missing GPU cannot be named from the matrix: its bus id comes from nvidia-smi -q.
            results.append(check_result(
                "topology.gpu_count", FAIL, "%s shows %d GPUs (%s), expected %d; the matrix "
                "numbers the GPUs it sees, so the missing one is named by PCI bus id in gpu_health "
                "(gpu.count)" % (TOOL, len(gpus), _span(gpus), expected_gpus), metrics,
                evidence=_rows(topo)))

    # NVLink between every pair
    results.extend(_judge_nvlink(gpus, matrix, profile_get(profile, "nvlink_per_pair"), topo))

    # NICs
    results.extend(_judge_nics(topo, gpus, nics, matrix, profile))
    return results


def _span(gpus):
    """'GPU0-GPU6' for a contiguous run, else the names."""
    numbers = [_gpu_key(g)[1] for g in gpus if _gpu_key(g)[0] == 0]
    if len(numbers) == len(gpus) and numbers and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return "GPU%d-GPU%d" % (numbers[0], numbers[-1]) if len(numbers) > 1 else "GPU%d" % numbers[0]
    return join_names(gpus)


def _judge_nvlink(gpus, matrix, expected, topo):
    if not expected:
        return [check_result("topology.nvlink", SKIP,
                             "profile sets no NVLink expectation (nvlink_per_pair is null)")]
    if len(gpus) < 2:
        return [check_result("topology.nvlink", SKIP,
                             "fewer than two GPUs: no GPU pairs to check")]
    results = []
    bad = 0
    pairs = 0
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            pairs += 1
            value = _cell(matrix, a, b)
            component = "%s%s%s" % (a, ARROW, b)
            if value is None:
                bad += 1
                results.append(check_result(
                    "topology.nvlink", ERROR, "%s has no value in the %s matrix"
                    % (component, TOOL), {"expected": expected}, component, evidence=_rows(topo, a, b)))
            elif value != expected:
                bad += 1
                results.append(check_result(
                    "topology.nvlink", FAIL, "%s is %s, expected %s" % (component, value, expected),
                    {"found": value, "expected": expected}, component, evidence=_rows(topo, a, b)))
    if not bad:
        results.append(check_result("topology.nvlink", PASS, "all %d GPU pairs are %s"
                                    % (pairs, expected), {"pairs": pairs, "expected": expected},
                                    evidence=_rows(topo)))
    return results


def _judge_nics(topo, gpus, nics, matrix, profile):
    results = []
    expected = profile_get(profile, "nics_per_node")
    names = profile_get(profile, "nic_names")
    relations = profile_get(profile, "nic_gpu_relation")
    label_of = dict((nic, _nic_label(topo, nic)) for nic in nics)
    by_label = dict((label, nic) for nic, label in label_of.items())

    # Which NICs are compute NICs: the named ones if the profile names them, else all.
    if names:
        missing = [n for n in names if n not in by_label]
        compute = [by_label[n] for n in names if n in by_label]
        for name in missing:
            results.append(check_result("topology.nic_count", FAIL,
                                        "compute NIC %s is missing from the topology" % name,
                                        {"nic": name}, name, evidence=[topo.get("header_line")]))
    else:
        compute = list(nics)

    if expected is not None and not names:
        metrics = {"found": len(compute), "expected": expected}
        if len(compute) >= expected:
            results.append(check_result(
                "topology.nic_count", PASS, "%d NICs in the topology (at least %d expected)"
                % (len(compute), expected), metrics, evidence=[topo.get("header_line")]))
        else:
            results.append(check_result(
                "topology.nic_count", FAIL, "%d NICs in the topology, expected at least %d"
                % (len(compute), expected), metrics, evidence=[topo.get("header_line")]))
    elif names and len(compute) == len(names):
        results.append(check_result("topology.nic_count", PASS,
                                    "all %d named compute NICs are present" % len(names),
                                    {"found": len(compute), "expected": len(names)},
                                    evidence=[topo.get("header_line")]))

    if not relations:
        results.append(check_result(
            "topology.nic_affinity", SKIP,
            "profile sets no expected NIC-GPU relation (nic_gpu_relation is null)"))
        return results
    if not compute:
        if expected:
            results.append(check_result("topology.nic_affinity", FAIL,
                                        "no NICs in the topology, so no GPU has a nearby NIC",
                                        {"accepted": list(relations)}, evidence=[topo.get("header_line")]))
        return results

    accepted = set(relations)
    accepted_txt = "/".join(relations)
    bad = 0
    # Each GPU needs a compute NIC at an accepted relation.
    for gpu in gpus:
        best_rank, best_rel, best_nics = None, None, []
        for nic in compute:
            rel = _cell(matrix, gpu, nic)
            rank = _RANK.get(rel)
            if rank is None:
                continue
            if best_rank is None or rank < best_rank:
                best_rank, best_rel, best_nics = rank, rel, [label_of[nic]]
            elif rank == best_rank:
                best_nics.append(label_of[nic])
        if best_rel is None:
            bad += 1
            results.append(check_result(
                "topology.nic_affinity", ERROR, "%s has no readable relation to any NIC in the %s "
                "matrix" % (gpu, TOOL), {"accepted": list(relations)}, gpu, evidence=_rows(topo, gpu)))
        elif best_rel not in accepted:
            bad += 1
            results.append(check_result(
                "topology.nic_affinity", FAIL, "%s has no NIC at %s; the closest is %s via %s"
                % (gpu, accepted_txt, join_names(best_nics), best_rel),
                {"found": best_rel, "nics": best_nics, "accepted": list(relations)}, gpu,
                evidence=_rows(topo, gpu)))
    # Each named compute NIC needs a GPU at an accepted relation.
    if names:
        for nic in compute:
            best_rank, best_rel, best_gpus = None, None, []
            for gpu in gpus:
                rel = _cell(matrix, gpu, nic)
                rank = _RANK.get(rel)
                if rank is None:
                    continue
                if best_rank is None or rank < best_rank:
                    best_rank, best_rel, best_gpus = rank, rel, [gpu]
                elif rank == best_rank:
                    best_gpus.append(gpu)
            if best_rel is not None and best_rel not in accepted:
                bad += 1
                results.append(check_result(
                    "topology.nic_affinity", FAIL, "%s has no GPU at %s; the closest is %s via %s"
                    % (label_of[nic], accepted_txt, join_names(best_gpus), best_rel),
                    {"found": best_rel, "gpus": best_gpus, "accepted": list(relations)},
                    label_of[nic], evidence=_rows(topo, nic)))
    # Enough NICs close to some GPU for one compute NIC per GPU group.
    if not names and expected:
        local = []
        for nic in compute:
            rels = [_cell(matrix, gpu, nic) for gpu in gpus]
            if any(rel in accepted for rel in rels):
                local.append(label_of[nic])
        if len(local) < expected:
            bad += 1
            results.append(check_result(
                "topology.nic_affinity", FAIL, "only %d NICs are %s to a GPU (%s), expected %d"
                % (len(local), accepted_txt, join_names(local) or "none", expected),
                {"gpu_local_nics": local, "expected": expected, "accepted": list(relations)},
                evidence=_rows(topo)))
    if not bad:
        results.append(check_result(
            "topology.nic_affinity", PASS, "every GPU has a NIC at %s" % accepted_txt,
            {"accepted": list(relations)}, evidence=_rows(topo)))
    return results


def judge_topology_stage(outputs, profile, options):
    """The topology stage: (checks, metrics) from the stage's outputs (None: not captured).

    metrics: gpu_count, the GPUs the matrix shows (topo -m prints no bus ids), for the
    cluster-wide gpu.identity check.
    """
    text = outputs.get("nvidia-smi-topo")
    if text is None:
        return [check_result("topology.parse", SKIP, "%s was not captured: topology not judged" % TOOL,
                             tool="nvidia-smi-topo")], {}
    topo = parse_nvidia_topo(text)
    metrics = {}
    if topo.get("header_line") is not None:
        metrics["gpu_count"] = len(_gpu_columns(topo))
        metrics["nic_gpu"] = nic_gpus(topo)
    return judge_topology(topo, profile), metrics


def nic_gpus(topo):
    """{NIC name (mlx5_0): {gpu: index, relation: PIX}}: the GPU nearest each NIC, which the RDMA pair
    stage puts its buffer on for GPUDirect (perftest --use_cuda)."""
    out = {}
    for nic, info in sorted((topo.get("nic_affinity") or {}).items()):
        gpus = [g for g in (info or {}).get("gpus") or [] if str(g).startswith("GPU") and is_digits(str(g)[3:])]
        if gpus:
            out[str(info.get("name") or nic)] = {"gpu": int(str(gpus[0])[3:]), "relation": info.get("relation")}
    return out
