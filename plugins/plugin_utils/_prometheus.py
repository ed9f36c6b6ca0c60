# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's results as a Prometheus text-format file for node_exporter's textfile collector.

``render_textfile(results)`` returns the text of ``metrics.prom``: HELP and TYPE lines for every
family, label values escaped as the exposition format wants (backslash, double quote, newline), one
sample per series (duplicates merged), no timestamps (the textfile collector refuses them), base
units (seconds, bytes per second) so that ``promtool check metrics`` finds nothing to lint.

Families (docs/report.md has the list with examples):

* gpucluster_acceptance_verdict, _run_info{run_id,playbook}, _run_timestamp_seconds,
  _run_duration_seconds, _checks{status}, _nodes{status}
* gpucluster_acceptance_node_passed{node}, _node_status{node,stage} (1 pass, 0 fail or error;
  skipped stages have no sample), _check_failed{node,stage,check,component}
* gpucluster_acceptance_busbw_bytes_per_second{node,kind="single_node"|"fabric"}
* gpucluster_acceptance_fabric_verdict{node,verdict}
* gpucluster_acceptance_step_time_seconds{node,rank,phase,quantile} (a summary without _sum/_count)
* gpucluster_acceptance_baseline_change_ratio{node,metric}
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _html_report

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
        if not _html_report.is_number(value) and not isinstance(value, bool):
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


def _seconds(text):
    value = _html_report._parse_time(text)  # pylint: disable=protected-access
    return value.timestamp() if value else None


def quantile_of(text):
    """The quantile of a p<text> key: p50 -> 0.5, p5 -> 0.05, p999 -> 0.999, p99.9 -> 0.999."""
    if "." in text or len(text) <= 2 or text == "100":
        return float(text) / 100.0
    return float("0." + text)


def _run_families(results):
    run = results.get("run") if isinstance(results.get("run"), dict) else {}
    verdict = Family("verdict", "gauge", "1 when the acceptance run passed (no check failed or errored), else 0.")
    verdict.add(1 if results.get("verdict") == "pass" else 0)
    info = Family("run_info", "gauge", "The run whose results these are (always 1).")
    info.add(1, run_id=run.get("id") or "", playbook=run.get("playbook") or "")
    stamp = Family("run_timestamp_seconds", "gauge", "When the acceptance run finished (else started), Unix time.")
    finished, started = _seconds(run.get("finished")), _seconds(run.get("started"))
    stamp.add(finished if finished is not None else started)
    duration = Family("run_duration_seconds", "gauge", "How long the acceptance run took.")
    if finished is not None and started is not None:
        duration.add(finished - started)
    checks = Family("checks", "gauge", "Number of checks of the run by status.", merge="sum")
    for status in ("pass", "fail", "error", "skip"):
        checks.add(0, status=status)
    for check in results.get("checks") or []:
        if isinstance(check, dict):
            checks.add(1, status=check.get("status") or "unknown")
    nodes = Family("nodes", "gauge", "Number of nodes by overall status.", merge="sum")
    for status in ("pass", "fail", "error"):
        nodes.add(0, status=status)
    for node, entry in sorted((results.get("nodes") or {}).items()):
        if node != "cluster" and isinstance(entry, dict):
            nodes.add(1, status=entry.get("status") or "unknown")
    return [verdict, info, stamp, duration, checks, nodes]


def _node_families(results):
    passed = Family("node_passed", "gauge", "1 when the node passed every stage that ran on it, else 0.")
    status = Family("node_status", "gauge", "1 when the node passed the stage, 0 when it failed or errored "
                                            "(skipped stages have no sample).")
    for node, entry in sorted((results.get("nodes") or {}).items(), key=lambda item: _html_report.natural_key(item[0])):
        if not isinstance(entry, dict):
            continue
        passed.add(0 if entry.get("status") in _html_report.BAD else 1, node=node)
        for stage, result in sorted((entry.get("stages") or {}).items()):
            if result == "pass":
                status.add(1, node=node, stage=stage)
            elif result in _html_report.BAD:
                status.add(0, node=node, stage=stage)
    failed = Family("check_failed", "gauge", "Number of failed or errored checks with these labels (usually 1); "
                                             "passing checks have no sample.", merge="sum")
    for check in results.get("checks") or []:
        if isinstance(check, dict) and check.get("status") in _html_report.BAD:
            failed.add(1, node=_html_report._node_name(check.get("node")),  # pylint: disable=protected-access
                       stage=check.get("stage") or "unknown", check=check.get("check") or "unknown",
                       component=check.get("component") or "")
    return [passed, status, failed]


def _measurement_families(results):
    busbw = Family("busbw_bytes_per_second", "gauge",
                   "NCCL all_reduce bus bandwidth: kind single_node = all_reduce_perf on the node's own GPUs at "
                   "large messages; kind fabric = median of the node's pairwise multi-node results.")
    for node, value in sorted(_html_report.single_node_busbw(results).items()):
        busbw.add(value * GB, node=node, kind="single_node")
    for node, value in sorted(_html_report.fabric_busbw(results).items()):
        busbw.add(value * GB, node=node, kind="fabric")
    fabric = Family("fabric_verdict", "gauge", "1 for the fabric localisation's verdict on the node "
                                               "(pinned, suspect, cleared or untested).")
    for node, entry in sorted(_html_report.fabric_verdicts(results).items()):
        fabric.add(1, node=node, verdict=entry["status"])
    steps = Family("step_time_seconds", "summary", "Per-rank training-step time quantiles from the workload test, "
                                                   "by phase (compute: the rank's own work, sync: waiting in the "
                                                   "collective).")
    for row in _html_report.rank_rows(results):
        for (phase, quantile), value in sorted(row["values"].items(), key=lambda item: (item[0][0], quantile_of(item[0][1]))):
            steps.add(value / 1000.0, node=row["node"], rank=row["rank"], phase=phase,
                      quantile=format_value(quantile_of(quantile)))
    flagged = Family("rank_flagged", "gauge", "1 when the workload test flagged the rank as slow, else 0.")
    for row in _html_report.rank_rows(results):
        flagged.add(1 if row["flagged"] else 0, node=row["node"], rank=row["rank"])
    change = Family("baseline_change_ratio", "gauge", "Change against the baseline run, as a ratio "
                                                      "(-0.1 = 10 % lower than the baseline).")
    for node, items in sorted(_html_report.baseline_rows(results).items()):
        for metric, delta, _text in items:
            if delta is not None:
                change.add(delta / 100.0, node=node, metric=metric)
    return [busbw, fabric, steps, flagged, change]


def render_textfile(results):
    """The metrics.prom text (ends with a newline) for one results document."""
    results = results if isinstance(results, dict) else {}
    lines = []
    for family in _run_families(results) + _node_families(results) + _measurement_families(results):
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
