# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What report.html and metrics.prom show, read from one validated results.json: pure functions.

build_view(document) returns one view model per section of the page: {"state": ok | not_run |
not_kept | error, ...}. Every number, status and sentence is read from the key of the results
contract (schemas/results.schema.json) that holds it, as the producer wrote it:

- the verdict, the failed nodes and the cluster's problems from `verdict`, `nodes`, `cluster`
  (never a second fold of the check statuses);
- the pairwise heatmap from `fabric.matrix`, marks from `fabric.nodes[*].verdict` and
  `fabric.pinned`; the localisation rounds from `fabric.rounds[*].groups` (those two sections:
  _report_fabric);
- the busbw curves from `nccl.curves`; the step times from `workload.ranks`;
- single-node busbw and baseline changes from the metrics of their judges' checks.

A block the schema marks optional and the document does not have is "not_run", or "not_kept"
when the stage did run (it is in `stages`) but the block was not written: a producer gap the page
names instead of drawing an empty chart. Anything present but malformed raises Problem, and the
section becomes an "error" with the path of what is wrong; nothing is defaulted or re-parsed from
the raw tool outputs.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import median_or_none as median
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_fabric import fabric_view, rounds_view
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_read import (
    CHECK_STATUSES, Problem, _absent, check_kind, checks_of, is_number, metric_of, need, need_enum, need_names,
    need_strings, parse_time, stages_of, type_name)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key

NODE_STATUSES = CHECK_STATUSES + ("untested",)
_QUANTILE_KEY = re.compile(r"^([a-z][a-z0-9_]*?)_p(\d{1,3}(?:\.\d+)?)(?:_(ms|s|us))?$")
_TO_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
_PHASE_ORDER = {"compute": 0, "sync": 1, "step": 2}


def _section(builder, *args):
    try:
        return builder(*args)
    except Problem as exc:
        return {"state": "error", "problems": [str(exc)]}


# ------------------------------------------------------------------------------------ header

def header_view(document):
    """The verdict as written (`verdict`), the run, the failed nodes with their failed stages."""
    verdict = need(document, "verdict", "object", "")
    path = "verdict"
    status = need_enum(verdict, "status", ("pass", "fail"), path)
    failed_nodes = need_names(verdict, "failed_nodes", path)
    view = {
        "state": "ok", "status": status, "message": need(verdict, "message", "string", path),
        "nodes_total": need(verdict, "nodes_total", "integer", path),
        "nodes_failed": need(verdict, "nodes_failed", "integer", path),
        "cluster_failed": need(verdict, "cluster_failed", "boolean", path),
        "cluster_problems": need_strings(verdict, "cluster_problems", path), "problems": [],
    }
    run = need(document, "run", "object", "")
    view["run"] = {
        "id": need(run, "id", "name", "run"), "state": need_enum(run, "state", ("running", "complete"), "run"),
        "started": need(run, "started", "string", "run"),
        "finished": need(run, "finished", "string|null", "run", required=False),
        "playbook": need(run, "playbook", "string|null", "run", required=False),
        "replay_of": need(run, "replay_of", "string|null", "run", required=False),
        "profile": need(run, "profile", "string|null", "run", required=False),
        "warnings": need_strings(run, "warnings", "run", required=False) or [],
    }
    started, finished = parse_time(view["run"]["started"]), parse_time(view["run"]["finished"])
    view["run"]["seconds"] = (finished - started).total_seconds() if started and finished else None
    nodes = need(document, "nodes", "object", "")
    failed = []
    for node in failed_nodes:
        entry = nodes.get(node)
        if not isinstance(entry, dict):
            view["problems"].append("verdict/failed_nodes names %s, which nodes does not list" % node)
            failed.append({"node": node, "status": None, "stages": []})
            continue
        stages = need(entry, "stages", "object", "nodes/%s" % node)
        failed.append({"node": node, "status": need_enum(entry, "status", NODE_STATUSES, "nodes/%s" % node),
                       "stages": [s for s in sorted(stages) if stages[s] in BAD]})
    view["failed"] = failed
    if view["nodes_failed"] != len(failed_nodes):
        view["problems"].append("verdict/nodes_failed is %d but verdict/failed_nodes lists %d node(s)"
                                % (view["nodes_failed"], len(failed_nodes)))
    counts = dict((s, 0) for s in CHECK_STATUSES)
    for check in checks_of(document):
        counts[check["status"]] += 1
    view["check_counts"] = counts
    view["checks"] = sum(counts.values())
    return view


# ------------------------------------------------------------------------------------ nodes

def _summary(entry, path):
    check_kind(entry, "object", path)
    stages = need(entry, "stages", "object", path)
    for stage, status in stages.items():
        if status not in CHECK_STATUSES:
            raise Problem("%s/stages/%s: %r is none of %s" % (path, stage, status, ", ".join(CHECK_STATUSES)))
    return {"status": need_enum(entry, "status", NODE_STATUSES, path), "stages": dict(stages),
            "problems": need_strings(entry, "problems", path)}


def baseline_changes(document):
    """{node: [{metric, pct, status}]} from the baseline stage's checks (metrics metric, rel_diff)."""
    found = {}
    for i, check in enumerate(checks_of(document)):
        if check["stage"] != "baseline" or not check.get("node"):
            continue
        metrics = need(check, "metrics", "object", "checks/%d" % i, required=False) or {}
        rel = metrics.get("rel_diff")
        if rel is None:
            continue
        check_kind(rel, "number", "checks/%d/metrics/rel_diff" % i)
        metric = check_kind(metrics.get("metric"), "name", "checks/%d/metrics/metric" % i)
        found.setdefault(check["node"], []).append({"metric": metric, "pct": 100.0 * rel, "status": check["status"]})
    return found


def nodes_view(document, fabric=None, workload=None):
    """One row per node of `nodes` (bad first), the cluster's row, the columns the run has data for."""
    nodes = need(document, "nodes", "object", "")
    failed = set(need_names(need(document, "verdict", "object", ""), "failed_nodes", "verdict"))
    order = list(stages_of(document))
    rows = []
    for node in nodes:
        row = _summary(nodes[node], "nodes/%s" % node)
        row["node"] = node
        row["failed"] = node in failed
        for stage in sorted(row["stages"]):
            if stage not in order:
                order.append(stage)
        rows.append(row)
    rank = {"error": 0, "untested": 1, "fail": 2}
    rows.sort(key=lambda r: (not r["failed"], rank.get(r["status"], 3), natural_key(r["node"])))
    busbw = metric_of(document, "nccl_single_node", "nccl.busbw", "busbw")
    fabric_nodes = fabric.get("nodes") if fabric and fabric.get("state") == "ok" else None
    steps = workload.get("per_node") if workload and workload.get("state") == "ok" else None
    baseline = baseline_changes(document)
    for row in rows:
        node = row["node"]
        row["busbw"] = busbw.get(node)
        row["busbw_bad"] = row["stages"].get("nccl_single_node") in BAD
        row["fabric"] = fabric_nodes[node]["verdict"] if fabric_nodes and node in fabric_nodes else None
        row["steps"] = steps.get(node) if steps else None
        row["baseline"] = baseline.get(node) or []
    cluster = _summary(need(document, "cluster", "object", ""), "cluster")
    return {"state": "ok" if rows else "not_run", "text": None if rows else "no node was targeted", "rows": rows,
            "stages": order, "cluster": cluster, "has_busbw": bool(busbw),
            "has_fabric": fabric_nodes is not None, "has_steps": bool(steps), "has_baseline": bool(baseline)}


# ------------------------------------------------------------------------------------ curves

def curves_view(document):
    """nccl.curves: one busbw-by-size line per node; a node whose single-node stage failed is marked."""
    nccl = need(document, "nccl", "object", "", required=False)
    curves = need(nccl, "curves", "object", "nccl", required=False) if nccl is not None else None
    if curves is None:
        return _absent(document, "nccl_single_node", "busbw curve (nccl.curves)",
                       "the nccl.busbw checks' metrics kept no curve, so none is drawn")
    nodes = need(document, "nodes", "object", "")
    lines = {}
    for node, points in curves.items():
        path = "nccl/curves/%s" % node
        check_kind(points, "array", path)
        clean = []
        for i, point in enumerate(points):
            check_kind(point, "array", "%s/%d" % (path, i))
            if len(point) != 2 or not all(is_number(p) and p >= 0 for p in point) or point[0] <= 0:
                raise Problem("%s/%d: expected [bytes > 0, GB/s >= 0], got %r" % (path, i, point))
            clean.append((float(point[0]), float(point[1])))
        if clean:
            lines[node] = sorted(clean)
    if not lines:
        return {"state": "not_kept", "text": "nccl.curves holds no point"}
    slow = sorted((n for n in lines if ((nodes.get(n) or {}).get("stages") or {}).get("nccl_single_node") in BAD),
                  key=natural_key)
    per_size = {}
    for points in lines.values():
        for size, value in points:
            per_size.setdefault(size, []).append(value)
    return {"state": "ok", "lines": lines, "slow": slow, "sizes": sorted(per_size),
            "median": [(s, median(v)) for s, v in sorted(per_size.items())] if len(lines) > 2 else []}


# ------------------------------------------------------------------------------------ workload

def workload_view(document):
    """workload.ranks: per rank its step-time quantiles (ms) by phase, flagged ranks, per-node summary."""
    if "workload" not in document:
        return _absent(document, "workload", "per-rank rows (workload.ranks)",
                       "no step times to draw")
    workload = need(document, "workload", "object", "")
    unit = need(workload, "unit", "string", "workload", required=False)
    if unit is not None and unit not in _TO_MS:
        raise Problem("workload/unit: %r is none of ms, s, us" % unit)
    rows, seen = [], set()
    for i, entry in enumerate(need(workload, "ranks", "array", "workload")):
        path = "workload/ranks/%d" % i
        rank = need(entry if isinstance(entry, dict) else None, "rank", "integer", path)
        if rank in seen:
            raise Problem("%s: rank %d appears twice" % (path, rank))
        seen.add(rank)
        status = need_enum(entry, "status", CHECK_STATUSES, path, required=False)
        values = {}
        for key in sorted(entry):
            match = _QUANTILE_KEY.match(key)
            if not match or entry[key] is None:
                continue
            check_kind(entry[key], "number", "%s/%s" % (path, key))
            suffix = match.group(3) or unit
            if suffix is None:
                raise Problem("%s/%s: a time without a unit (no _ms/_s/_us suffix and no workload/unit)" % (path, key))
            values[(match.group(1), match.group(2))] = float(entry[key]) * _TO_MS[suffix]
        rows.append({"rank": rank, "node": need(entry, "node", "string|null", path, required=False) or "?",
                     "gpu": need(entry, "gpu", "string|integer|null", path, required=False),
                     "status": status, "values": values,
                     "flagged": need(entry, "flagged", "boolean", path, required=False) is True or status in BAD})
    rows.sort(key=lambda r: (natural_key(r["node"]), r["rank"]))
    phases = sorted(set(p for r in rows for (p, _q) in r["values"]), key=lambda p: (_PHASE_ORDER.get(p, 3), p))
    per_node = {}
    for row in rows:
        entry = per_node.setdefault(row["node"], {"compute": None, "sync": None, "flagged": False, "ranks": 0})
        entry["ranks"] += 1
        entry["flagged"] = entry["flagged"] or row["flagged"]
        compute, sync = row["values"].get(("compute", "50")), row["values"].get(("sync", "50"))
        if compute is not None and (entry["compute"] is None or compute > entry["compute"]):
            entry["compute"] = compute  # the node's slowest rank
        if sync is not None and (entry["sync"] is None or sync < entry["sync"]):
            entry["sync"] = sync  # its least wait: the rank the others wait for waits least
    view = {"state": "ok", "rows": rows, "phases": phases, "per_node": per_node,
            "expected_ranks": need(workload, "expected_ranks", "integer|null", "workload", required=False),
            "flagged_nodes": sorted(set(r["node"] for r in rows if r["flagged"]), key=natural_key)}
    if not rows:
        view.update(state="empty", text="workload.ranks holds no rank")
    elif not phases:
        view.update(state="empty", text="%d rank(s), none with step-time quantiles (<phase>_p<q>_ms)" % len(rows))
    return view


# ------------------------------------------------------------------------------------ the whole

def build_view(document):
    """The view model of every section; a section whose part of the document is malformed is an error."""
    if not isinstance(document, dict):
        raise Problem("(document): expected an object, got %s" % type_name(document))
    view = {"schema": document.get("schema") if isinstance(document.get("schema"), str) else None}
    view["header"] = _section(header_view, document)
    view["fabric"] = _section(fabric_view, document)
    view["rounds"] = _section(rounds_view, document)
    view["curves"] = _section(curves_view, document)
    view["workload"] = _section(workload_view, document)
    view["nodes"] = _section(nodes_view, document, view["fabric"], view["workload"])
    return view
