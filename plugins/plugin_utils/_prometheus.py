# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's results.json as a Prometheus text-format file for node_exporter's textfile collector.

``render_textfile(document)`` returns the text of ``metrics.prom``, read through the same view as
report.html (_report_view): the verdict object as written (verdict.status, failed_nodes, ...),
the per-node summaries, the fabric verdicts and pair matrix, the per-rank step times. HELP and
TYPE lines for every family, label values escaped as the exposition format wants (backslash,
double quote, newline), one sample per series (duplicates merged), no timestamps (the textfile
collector refuses them), base units (seconds, bytes per second), so that ``promtool check
metrics`` finds nothing to lint. A family with nothing to report is left out; a section of the
document that is malformed gives no samples (report.html names the problem).

Families (docs/report.md has the list with examples):

* gpucluster_acceptance_verdict, _run_info{run_id,playbook}, _run_complete,
  _run_timestamp_seconds, _run_duration_seconds, _checks{status}, _nodes{status}, _nodes_failed,
  _cluster_failed
* gpucluster_acceptance_node_passed{node}, _node_status{node,stage} (1 pass, 0 fail or error;
  skipped stages have no sample), _check_failed{node,stage,check,component}
* gpucluster_acceptance_busbw_bytes_per_second{node,kind="single_node"|"fabric"}
* gpucluster_acceptance_fabric_verdict{node,verdict}, _fabric_uplink_verdict{leaf,verdict}
* gpucluster_acceptance_step_time_seconds{node,rank,phase,quantile} (a summary without _sum/_count),
  _rank_flagged{node,rank}
* gpucluster_acceptance_baseline_change_ratio{node,metric}
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report_view as view_of
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_checkpoint import checkpoint_families
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_rdma import rdma_families
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_transfer import transfer_families
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_nvlink import nvlink_families
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_view import BAD, is_number
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key

PREFIX = "gpucluster_acceptance_"
GB = 1e9  # nccl-tests' GB/s are 10^9 bytes per second


def escape_label(value):
    """A label value escaped for the text exposition format."""
    return str(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def escape_help(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return "%d" % value
    return "%.15g" % value


class Family(object):
    """One metric family: name, type, help and its samples, one per label set."""

    def __init__(self, name, kind, help_text, merge="first"):
        self.name = PREFIX + name
        self.kind = kind
        self.help = help_text
        self.merge = merge
        self.samples = {}
        self.order = []

    def add(self, value, **labels):
        if not is_number(value) and not isinstance(value, bool):
            return
        key = tuple(sorted((k, "" if v is None else str(v)) for k, v in labels.items()))
        if key in self.samples:
            if self.merge == "sum":
                self.samples[key] += float(value)
            return
        self.samples[key] = float(value)
        self.order.append(key)

    def lines(self):
        if not self.samples:
            return []
        out = ["# HELP %s %s" % (self.name, escape_help(self.help)), "# TYPE %s %s" % (self.name, self.kind)]
        for key in self.order:
            labels = ",".join('%s="%s"' % (k, escape_label(v)) for k, v in key)
            out.append("%s%s %s" % (self.name, "{%s}" % labels if labels else "", format_value(self.samples[key])))
        return out


def quantile_of(text):
    """The quantile of a p<text> key: p50 -> 0.5, p5 -> 0.05, p999 -> 0.999, p99.9 -> 0.999."""
    if "." in text or len(text) <= 2 or text == "100":
        return float(text) / 100.0
    return float("0." + text)


def _ok(section):
    return section if isinstance(section, dict) and section.get("state") == "ok" else None


def _run_families(head, document):
    run = head["run"]
    verdict = Family("verdict", "gauge", "1 when the acceptance run passed (verdict.status pass), else 0.")
    verdict.add(1 if head["status"] == "pass" else 0)
    info = Family("run_info", "gauge", "The run whose results these are (always 1).")
    info.add(1, run_id=run["id"], playbook=run["playbook"] or "")
    complete = Family("run_complete", "gauge", "1 when results.json was written at the end of the run, 0 while it "
                                               "was still going (a killed run keeps 0).")
    complete.add(1 if run["state"] == "complete" else 0)
    stamp = Family("run_timestamp_seconds", "gauge", "When the acceptance run finished (else started), Unix time.")
    finished, started = view_of.parse_time(run["finished"]), view_of.parse_time(run["started"])
    stamp.add((finished or started).timestamp() if (finished or started) else None)
    duration = Family("run_duration_seconds", "gauge", "How long the acceptance run took.")
    duration.add(run["seconds"])
    checks = Family("checks", "gauge", "Number of checks of the run by status.")
    for status in view_of.CHECK_STATUSES:
        checks.add(head["check_counts"][status], status=status)
    nodes = Family("nodes", "gauge", "Number of nodes by overall status (nodes.<node>.status).", merge="sum")
    for status in view_of.NODE_STATUSES:
        nodes.add(0, status=status)
    for entry in document["nodes"].values():
        nodes.add(1, status=entry["status"])
    failed = Family("nodes_failed", "gauge", "Number of nodes that failed acceptance (verdict.nodes_failed).")
    failed.add(head["nodes_failed"])
    cluster = Family("cluster_failed", "gauge", "1 when a check about no single node failed (verdict.cluster_failed).")
    cluster.add(1 if head["cluster_failed"] else 0)
    return [verdict, info, complete, stamp, duration, checks, nodes, failed, cluster]


def _node_families(head, table, document):
    passed = Family("node_passed", "gauge", "0 when the verdict lists the node as failed (verdict.failed_nodes), else 1.")
    status = Family("node_status", "gauge", "1 when the node passed the stage, 0 when it failed or errored "
                                            "(skipped stages have no sample).")
    bad = set(entry["node"] for entry in head["failed"])
    for row in sorted(table["rows"], key=lambda r: natural_key(r["node"])) if table else []:
        passed.add(0 if row["node"] in bad else 1, node=row["node"])
        for stage, result in sorted(row["stages"].items()):
            if result == "pass":
                status.add(1, node=row["node"], stage=stage)
            elif result in BAD:
                status.add(0, node=row["node"], stage=stage)
    failed = Family("check_failed", "gauge", "Number of failed or errored checks with these labels (usually 1); "
                                             "passing checks have no sample.", merge="sum")
    for check in document["checks"]:
        if check["status"] in BAD:
            failed.add(1, node=check["node"] if check["node"] else "cluster", stage=check["stage"],
                       check=check.get("check") or "unknown", component=check.get("component") or "")
    return [passed, status, failed]


def _measurement_families(view):
    table, fabric, workload = _ok(view["nodes"]), _ok(view["fabric"]), _ok(view["workload"])
    busbw = Family("busbw_bytes_per_second", "gauge",
                   "NCCL all_reduce bus bandwidth: kind single_node = the nccl.busbw check's value (all_reduce_perf on "
                   "the node's own GPUs, large messages); kind fabric = median of the node's pairs in fabric.matrix.")
    for row in sorted(table["rows"], key=lambda r: natural_key(r["node"])) if table else []:
        if is_number(row["busbw"]):
            busbw.add(row["busbw"] * GB, node=row["node"], kind="single_node")
    verdicts = Family("fabric_verdict", "gauge", "1 for the fabric localisation's verdict on the node "
                                                 "(fabric.nodes.<node>.verdict: pinned, suspect, cleared, untested, "
                                                 "error or intermittent).")
    uplinks = Family("fabric_uplink_verdict", "gauge", "1 for the fabric localisation's verdict on a leaf's uplinks.")
    if fabric:
        for node in sorted(fabric["per_node"], key=natural_key):
            busbw.add(fabric["per_node"][node] * GB, node=node, kind="fabric")
        for node in sorted(fabric["nodes"], key=natural_key):
            verdicts.add(1, node=node, verdict=fabric["nodes"][node]["verdict"])
        for leaf in sorted(fabric["uplinks"], key=natural_key):
            uplinks.add(1, leaf=leaf, verdict=fabric["uplinks"][leaf]["verdict"])
    steps = Family("step_time_seconds", "summary", "Per-rank training-step time quantiles from the workload test "
                                                   "(workload.ranks), by phase (compute: the rank's own work, sync: "
                                                   "waiting in the collective, step: both).")
    flagged = Family("rank_flagged", "gauge", "1 when the workload test flagged the rank, else 0.")
    for row in sorted(workload["rows"], key=lambda r: r["rank"]) if workload else []:
        for (phase, quantile), value in sorted(row["values"].items(), key=lambda i: (i[0][0], quantile_of(i[0][1]))):
            steps.add(value / 1000.0, node=row["node"], rank=row["rank"], phase=phase,
                      quantile=format_value(quantile_of(quantile)))
        flagged.add(1 if row["flagged"] else 0, node=row["node"], rank=row["rank"])
    change = Family("baseline_change_ratio", "gauge", "Change against the baseline run, as a ratio "
                                                      "(-0.1 = 10 % lower than the baseline).")
    for row in sorted(table["rows"], key=lambda r: natural_key(r["node"])) if table else []:
        for item in row["baseline"]:
            change.add(item["pct"] / 100.0, node=row["node"], metric=item["metric"])
    return [busbw, verdicts, uplinks, steps, flagged, change]


def render_textfile(document):
    """The metrics.prom text (ends with a newline) of one results document.

    Raises _report_view.Problem when the verdict cannot be read: metrics without a verdict would
    read as a cluster nobody tested.
    """
    view = view_of.build_view(document)
    head = view["header"]
    if head.get("state") != "ok":
        raise view_of.Problem("; ".join(head.get("problems") or ["the verdict cannot be read"]))
    lines = []
    families = (_run_families(head, document) + _node_families(head, _ok(view["nodes"]), document)
                + _measurement_families(view) + transfer_families(document, Family)
                + checkpoint_families(document, Family) + rdma_families(document, Family)
                + nvlink_families(document, Family))
    for family in families:
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
