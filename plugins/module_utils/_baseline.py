# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep a baseline: record a known-good run's numbers, and compare later runs with them.

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

compare_to_baseline(results, baseline, options) returns check results of stage "baseline", one
per node and metric (check "baseline.<metric>"): a number outside its noise band in the bad
direction fails, naming the baseline value; the band is max(min_band, k x the baseline's own
spread of that metric). A node that is not in the baseline (a replacement) is compared with the
cluster baseline, the median of the baseline's nodes. Missing data is a skip with the reason.

Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import MAD_SCALE
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, mad, median, warning_result)

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
# A rank's time per step in the workload section, first found wins: the compute part (forward and
# backward) depends on the node alone; the whole step also on the all-reduce partners.
_RANK_KEYS = ("compute_p50", "compute_p50_ms", "step_p50", "step_p50_ms")
# Where each version lives in a node state: stage -> fields.
_STATE_VERSIONS = {"preflight": ("driver_version", "vbios_version", "nic_firmware", "dcgm_version"),
                   "nccl_single_node": ("nccl_version",)}

DEFAULT_OPTIONS = {
    "min_band": 0.05,            # the smallest noise band, a fraction (0.05 = +-5 %)
    "k": 3.0,                    # band = max(min_band, k x the baseline's spread)
    "min_bands": {"dcgm_seconds": 0.25},  # per-metric minimum bands (timings are noisier)
    "versions": "warn",          # a version changed since the baseline: warn, fail or ignore
    "pairs": True,               # compare the fabric pair matrix and the full allocation
    "min_spread_nodes": 3,       # fewer baseline values than this: no spread, min_band only
}


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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


# -- comparing --------------------------------------------------------------------------------
def _options(options):
    merged = dict(DEFAULT_OPTIONS)
    merged["min_bands"] = dict(DEFAULT_OPTIONS["min_bands"])
    for key, value in (options or {}).items():
        if key == "min_bands" and isinstance(value, dict):
            merged["min_bands"].update(value)
        elif value is not None:
            merged[key] = value
    if merged["versions"] not in ("warn", "fail", "ignore"):
        raise ValueError("options.versions must be warn, fail or ignore, got %r" % (merged["versions"],))
    for key in ("min_band", "k"):
        if _num(merged[key]) is None or float(merged[key]) < 0:
            raise ValueError("options.%s must be a number >= 0, got %r" % (key, merged[key]))
        merged[key] = float(merged[key])
    return merged


def validate_baseline(baseline):
    """Raise ValueError when baseline is not a schema 1 baseline document."""
    if not isinstance(baseline, dict):
        raise ValueError("the baseline must be a dict (a baseline document), got %s" % type(baseline).__name__)
    if baseline.get("schema") != SCHEMA:
        raise ValueError("unsupported baseline schema %r (this collection reads schema %d)"
                         % (baseline.get("schema"), SCHEMA))
    if not isinstance(baseline.get("nodes"), dict):
        raise ValueError("the baseline document has no nodes")


def band_for(metric, baseline, options):
    """The noise band (a fraction) of a metric: max(min_band, k x the baseline's spread)."""
    opts = _options(options)
    minimum = float((opts["min_bands"] or {}).get(metric, opts["min_band"]))
    spread = _num((baseline.get("spread") or {}).get(metric))
    return max(minimum, opts["k"] * spread) if spread is not None else minimum


def _pct(fraction):
    return "%.1f %%" % (abs(fraction) * 100)


def _judge_number(node, subject, metric, label, unit, value, reference, band, higher_is_better, extra):
    """One check comparing value with its reference; subject starts the sentence."""
    metrics = dict(extra)
    metrics.update({"value": value, "baseline": reference, "band": band, "metric": metric})
    check = "baseline." + metric
    if reference == 0:
        return check_result(check, SKIP, "%s: the baseline %s is 0; cannot compare" % (subject, label), metrics, node)
    rel = (value - reference) / abs(reference)
    metrics["rel_diff"] = rel
    unit_text = " %s" % unit if unit else ""
    ref_text = extra.get("reference_text", "its baseline")
    direction = "below" if rel < 0 else "above"
    worse = rel < 0 if higher_is_better else rel > 0
    if abs(rel) <= band:
        return check_result(check, PASS, "%s %s %s%s is within ±%s of %s %s%s (%s %s)"
                            % (subject, label, fmt_num(value), unit_text, _pct(band), ref_text,
                               fmt_num(reference), unit_text, _pct(rel), direction), metrics, node)
    sentence = ("%s %s %s%s is %s %s %s %s%s (band ±%s)"
                % (subject, label, fmt_num(value), unit_text, _pct(rel), direction, ref_text, fmt_num(reference),
                   unit_text, _pct(band)))
    if worse:
        return check_result(check, FAIL, sentence, metrics, node)
    return warning_result(check, sentence + "; better than the baseline: re-record it if this is the new normal",
                          metrics, node)


def _node_checks(node, record, baseline, opts, present):
    """Checks of one node of the run against its own baseline or the cluster's."""
    results = []
    base_nodes = baseline["nodes"]
    own = base_nodes.get(node)
    source = (baseline.get("source_run") or {}).get("id")
    for metric, label, unit, higher in NODE_METRICS:
        if metric not in present:
            continue
        check = "baseline." + metric
        value = _num(record.get(metric)) if record is not None else None
        if value is None:
            results.append(check_result(check, SKIP, "%s: no %s in this run (stage not run, or it failed to measure); "
                                        "not compared with the baseline" % (node, label), {"metric": metric}, node))
            continue
        extra = {"baseline_run": source}
        if own is not None:
            reference = _num(own.get(metric))
            if reference is None:
                results.append(check_result(check, SKIP, "%s: the baseline has no %s for %s; not compared"
                                            % (node, label, node), {"metric": metric, "value": value}, node))
                continue
            extra["reference"] = "node"
            subject = node
        else:
            others = [_num(rec.get(metric)) for other, rec in base_nodes.items() if other != node]
            others = [v for v in others if v is not None]
            if not others:
                results.append(check_result(check, SKIP, "%s is new since the baseline and the baseline has no %s "
                                            "of other nodes; not compared" % (node, label),
                                            {"metric": metric, "value": value, "reference": "cluster"}, node))
                continue
            reference = median(others)
            extra.update({"reference": "cluster", "baseline_nodes": len(others),
                          "reference_text": "the cluster baseline (median of %d nodes)" % len(others)})
            if node in (baseline.get("excluded") or {}):
                subject = "%s (excluded from the baseline run, so compared with the cluster)" % node
            else:
                subject = "%s (new since the baseline)" % node
        band = band_for(metric, baseline, opts)
        results.append(_judge_number(node, subject, metric, label, unit, value, reference, band, higher, extra))
    if opts["versions"] != "ignore":
        results.extend(_version_checks(node, record or {}, own, baseline, opts))
    return results


def _version_checks(node, record, own, baseline, opts):
    results = []
    cluster_versions = (baseline.get("cluster") or {}).get("versions") or {}
    for field, label in VERSION_FIELDS:
        check = "baseline." + field
        value = record.get(field)
        if own is not None and own.get(field) not in (None, ""):
            reference, whose = str(own[field]), "its baseline"
        elif cluster_versions.get(field) not in (None, ""):
            reference, whose = str(cluster_versions[field]), "the cluster baseline"
        else:
            if value not in (None, ""):
                results.append(check_result(check, SKIP, "%s: the baseline records no %s version; not compared"
                                            % (node, label), {"value": value}, node))
            continue
        metrics = {"value": value, "baseline": reference}
        if value in (None, ""):
            results.append(check_result(check, SKIP, "%s: no %s version in this run; not compared with %s %s"
                                        % (node, label, whose, reference), metrics, node))
        elif str(value) == reference:
            results.append(check_result(check, PASS, "%s %s %s as in %s" % (node, label, value, whose), metrics, node))
        else:
            sentence = ("%s %s %s differs from %s %s; re-record the baseline after an intended upgrade"
                        % (node, label, value, whose, reference))
            if opts["versions"] == "fail":
                results.append(check_result(check, FAIL, sentence, metrics, node))
            else:
                results.append(warning_result(check, sentence, metrics, node))
    return results


def _cluster_checks(data, baseline, opts):
    results = []
    base_pairs = baseline.get("pairs") or {}
    band = band_for("pair_busbw", baseline, opts)
    for key in sorted(set(data["pairs"]) & set(base_pairs)):
        value, reference = data["pairs"][key], _num(base_pairs[key])
        if reference is None:
            continue
        first, second = key.split("|", 1)
        check = _judge_number(None, "%s↔%s" % (first, second), "pair_busbw", "pair busbw", "GB/s", value,
                              reference, band, True, {"pair": key, "reference": "pair"})
        check["component"] = key
        results.append(check)
    base_full = _num(baseline.get("full_allocation_busbw"))
    full = data["full_allocation_busbw"]
    if base_full is not None or full is not None:
        check_name = "baseline.full_allocation_busbw"
        if base_full is None or full is None:
            results.append(check_result(check_name, SKIP, "full-allocation busbw: %s; not compared"
                                        % ("the baseline has none" if base_full is None else "none in this run"),
                                        {"value": full, "baseline": base_full}, "full allocation"))
        elif baseline.get("full_allocation_nodes") != data["full_allocation_nodes"]:
            results.append(check_result(check_name, SKIP, "full-allocation busbw: this run spans %s nodes, the baseline "
                                        "%s; not compared" % (data["full_allocation_nodes"],
                                                              baseline.get("full_allocation_nodes")),
                                        {"value": full, "baseline": base_full}, "full allocation"))
        else:
            results.append(_judge_number("full allocation", "the full allocation", "full_allocation_busbw", "busbw",
                                         "GB/s", full, base_full, band_for("full_allocation_busbw", baseline, opts),
                                         True, {"reference": "cluster"}))
    for check in results:
        check["node"] = None
    return results


def compare_to_baseline(results, baseline, options=None, run_dir=None, fabric=None, workload=None):
    """Check results (stage "baseline", each with node) comparing a run with a baseline document.

    results: a results.json document or {node: state}. options: see DEFAULT_OPTIONS. Nodes of
    the baseline that are not in the run are not reported (a --limit run compares its nodes).
    Pair and full-allocation checks have node None and the pair ("a|b") or "full allocation"
    as component. Raises ValueError for a baseline that is not a schema 1 document.
    """
    validate_baseline(baseline)
    opts = _options(options)
    data = run_data(results, run_dir, fabric=fabric, workload=workload)
    present = set()
    for record in list(data["nodes"].values()) + list(baseline["nodes"].values()):
        present.update(m[0] for m in NODE_METRICS if is_number((record or {}).get(m[0])))
    checks = []
    for node in sorted(data["nodes"]):
        for check in _node_checks(node, data["nodes"][node], baseline, opts, present):
            check["node"] = node
            checks.append(check)
    if opts.get("pairs", True):
        checks.extend(_cluster_checks(data, baseline, opts))
    for check in checks:
        check["stage"] = STAGE
    return checks


def compare_stage_result(results, baseline, options=None, run_dir=None, fabric=None, workload=None):
    """compare_to_baseline as a stage result {stage, checks, failed_nodes} for the report callback."""
    checks = compare_to_baseline(results, baseline, options, run_dir=run_dir, fabric=fabric, workload=workload)
    failed = sorted(set(c["node"] for c in checks if c["status"] in (FAIL, ERROR) and c["node"]))
    return {"stage": STAGE, "checks": checks, "failed_nodes": failed,
            "failed_cluster_checks": [c["component"] for c in checks if c["status"] in (FAIL, ERROR) and not c["node"]]}
