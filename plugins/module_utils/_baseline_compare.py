# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare a run with a baseline: one check per node and metric, a version check per field, pair checks.

Private to the collection. Standard library only.

compare_to_baseline(results, baseline, options) returns check results of stage "baseline", one
per node and metric (check "baseline.<metric>"): a number outside its noise band in the bad
direction fails, naming the baseline value; the band is max(min_band, k x the baseline's own
spread of that metric). A node that is not in the baseline (a replacement) is compared with the
cluster baseline, the median of the baseline's nodes. Missing data is a skip with the reason.
compare_stage_result gives the same as a stage result for the report callback.

It is apart from recording a baseline (_baseline, the document and its schema) because it
judges: options, noise bands and check results.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline import (
    NODE_METRICS, SCHEMA, STAGE, VERSION_FIELDS)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline_run_data import _num, run_data
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, median, warning_result)

DEFAULT_OPTIONS = {
    "min_band": 0.05,            # the smallest noise band, a fraction (0.05 = +-5 %)
    "k": 3.0,                    # band = max(min_band, k x the baseline's spread)
    "min_bands": {"dcgm_seconds": 0.25},  # per-metric minimum bands (timings are noisier)
    "versions": "warn",          # a version changed since the baseline: warn, fail or ignore
    "pairs": True,               # compare the fabric pair matrix and the full allocation
    "min_spread_nodes": 3,       # fewer baseline values than this: no spread, min_band only
}


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
