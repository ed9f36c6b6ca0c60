# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint plan: C from the checkpoint stage, M and R from accounting, the interval and goodput.

Stage checkpoint_plan (playbooks/checkpoint_plan.yml, controller side). Checks:
- checkpoint_plan.write_time   C: the slowest node's shard with every node writing at once
                               (shared path; synchronous), the release time of the asynchronous
                               pattern (local NVMe) and when it is durable; error without any C
- checkpoint_plan.mtbf         M_node from sacct (job-killing failures per node-second of job time)
                               with its interval; "not enough data" (skip) with the bound the data
                               imply when there is no failure or too little node time; error when
                               accounting cannot be read and no M is quoted
- checkpoint_plan.restart      R from requeue chains, else the given or assumed value (said so)
- checkpoint_plan.availability node time in service from node events and the drain history
- checkpoint_plan.interval     per job size: M_job, Young's and Daly's interval, goodput
                               (synchronous and asynchronous), and the goodput floor if one is set
- checkpoint_plan.sensitivity  what each lever buys for the largest job size (C, M, R halved;
                               asynchronous saves), best first
- checkpoint_plan.cost         the effective cost of a useful GPU-hour (with a price)
- checkpoint_plan.providers    the providers file ranked by effective cost (with a file)
Everything is computed from captured texts (sacct, events, history) and the node states, so a
replay of those gives the same plan.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _checkpoint_plan as plan
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _mtbf
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _sacct
from ansible_collections.gpucluster.acceptance.plugins.module_utils._providers import compare_providers
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, is_number, median)

STAGE = "checkpoint_plan"
DEFAULT_RESTART_S = 600.0  # the seed article's R, used only when neither records nor the user give one


_duration = plan.duration


def _stage_metrics(states, stage, key):
    values = {}
    for node, state in sorted((states or {}).items()):
        entry = ((state or {}).get("stages") or {}).get(stage) or {}
        value = (entry.get("metrics") or {}).get(key)
        if entry.get("status") != ERROR and is_number(value) and value >= 0:
            values[node] = float(value)
    return values


def write_time(states, options):
    """{sync_s, async_s, durable_s, source, stage, nodes, slowest, path} or None without any C."""
    if is_number(options.get("write_s")) and options["write_s"] > 0:
        async_s = options.get("async_write_s") if is_number(options.get("async_write_s")) else None
        return {"sync_s": float(options["write_s"]), "async_s": async_s, "durable_s": None, "source": "given",
                "stage": None, "nodes": None, "slowest": None, "path": None}
    for stage in ("checkpoint", "checkpoint_alone"):
        shared = _stage_metrics(states, stage, "shared_write_s")
        local = _stage_metrics(states, stage, "local_write_s")
        chosen, path = (shared, "shared") if shared else (local, "local")
        if not chosen:
            continue
        # A checkpoint is complete when the last rank's shard is written: the slowest node is C.
        slowest = max(chosen, key=lambda n: (chosen[n], n))
        release = _stage_metrics(states, stage, "release_s")
        durable = _stage_metrics(states, stage, "durable_s")
        return {"sync_s": chosen[slowest], "async_s": max(release.values()) if release else None,
                "durable_s": max(durable.values()) if durable else None, "source": "measured", "stage": stage,
                "nodes": len(chosen), "slowest": slowest, "path": path, "median_s": median(list(chosen.values()))}
    return None


def _accounting(inputs, options):
    """Parse sacct, events and history; returns (parsed dict, problems)."""
    sacct = inputs.get("sacct") or {}
    text, rc = sacct.get("output"), sacct.get("rc")
    problems = []
    parsed = {"records": [], "events": [], "history": [], "errors": []}
    if text is None and rc is None:
        problems.append("sacct was not run: checkpoint_plan_accounting is false")
        return parsed, problems
    if _sacct.looks_unconfigured(rc, text if rc not in (0, None) else ""):
        problems.append("sacct rc=%s: %s" % (rc, " ".join((text or "no output").split())[:300]))
        return parsed, problems
    records = _sacct.parse_sacct(text)
    parsed["records"], parsed["errors"] = records["records"], list(records["errors"])
    events = inputs.get("events") or {}
    if events.get("output") is not None and events.get("rc") in (0, None):
        found = _sacct.parse_events(events["output"])
        parsed["events"] = found["events"]
        parsed["errors"] += found["errors"]
    elif events:
        parsed["errors"].append("sacctmgr list event rc=%s: %s" % (events.get("rc"),
                                                                   " ".join((events.get("output") or "").split())[:200]))
    if inputs.get("history"):
        found = _sacct.parse_drain_history(inputs["history"])
        parsed["history"] = found["entries"]
        parsed["errors"] += found["errors"]
    return parsed, problems


def _mtbf_check(parsed, problems, options):
    counted = tuple(options.get("count_kinds") or _sacct.DEFAULT_COUNTED)
    partitions = tuple(options.get("partitions") or ())
    confidence = float(options.get("confidence", 0.95))
    records = [r for r in parsed["records"] if not partitions or r["partition"] in partitions]
    failures = _sacct.classify(records, parsed["events"])
    by_kind = dict((kind, len([f for f in failures if f["kind"] == kind])) for kind in _sacct.KINDS)
    drains = [e for e in parsed["history"] if e["action"] == "drain"]
    by_kind["drain"] = len(drains)
    exposure = _sacct.exposure_node_s(records)
    count = sum(by_kind[k] for k in counted)
    estimate = _mtbf.mtbf_estimate(count, exposure, confidence, float(options.get("min_node_hours", 0.0)))
    estimate.update(failures_by_kind=by_kind, counted_kinds=list(counted), jobs=len(set(r["job"] for r in records)),
                    records=len(records), evidence=[f["line"] for f in failures if f["kind"] in counted][:12])
    quoted = options.get("mtbf_node_h")
    quoted = float(quoted) * 3600.0 if is_number(quoted) and quoted > 0 else None
    metrics = dict(estimate)
    if problems:
        metrics.update(source="quoted" if quoted else "none", mtbf_node_s=quoted)
        text = "not enough data: accounting could not be read (%s)" % "; ".join(problems)
        if quoted:
            return check_result("checkpoint_plan.mtbf", SKIP, text + "; using the quoted M_node = %s"
                                % _duration(quoted), metrics, "accounting"), metrics
        return check_result("checkpoint_plan.mtbf", ERROR, text + ": no M, so no interval (set "
                            "checkpoint_plan_mtbf_node_h to plan with a quoted one)", metrics, "accounting"), metrics
    kinds = ", ".join("%d %s" % (by_kind[k], k) for k in counted)
    others = ", ".join("%d %s" % (by_kind[k], k) for k in _sacct.KINDS if k not in counted and by_kind[k])
    tail = (" (not counted: %s)" % others) if others else ""
    if estimate["status"] == _mtbf.MEASURED:
        metrics["source"] = "accounting"
        high = estimate["mtbf_node_s_high"]
        message = "M_node = %s (%d %% interval %s to %s) from %s in %s node-hours of %d job(s)%s" % (
            _duration(estimate["mtbf_node_s"]), round(confidence * 100), _duration(estimate["mtbf_node_s_low"]),
            _duration(high) if high else "unbounded", kinds, _fmt(estimate["exposure_node_hours"]), estimate["jobs"],
            tail)
        return check_result("checkpoint_plan.mtbf", PASS, message, metrics, evidence=estimate["evidence"]), metrics
    metrics["source"] = "quoted" if quoted else ("bound" if estimate["bound_node_s"] else "none")
    if quoted:
        metrics["mtbf_node_s"] = quoted
    use = ("; using the quoted M_node = %s" % _duration(quoted)) if quoted else (
        "; the plan below uses that bound (a conservative interval)" if estimate["bound_node_s"] else "")
    return check_result("checkpoint_plan.mtbf", SKIP, "not enough data: %s%s%s" % (estimate["reason"], tail, use),
                        metrics, "accounting"), metrics


def _restart_check(parsed, options):
    found = _sacct.restarts(parsed["records"])
    seconds = [r["seconds"] for r in found]
    given = options.get("restart_s")
    if seconds:
        value = median(seconds)
        metrics = {"restart_s": value, "source": "measured", "samples": len(seconds), "max_s": max(seconds)}
        return check_result("checkpoint_plan.restart", PASS, "R = %s, the median of %d failure-to-restart time(s) in "
                            "the requeue records (longest %s)" % (_duration(value), len(seconds), _duration(max(seconds))),
                            metrics, evidence=["job %s: %s at %s, running again at %s" % (
                                r["job"], r["failed_state"], r["failed_end"].isoformat(), r["restart_start"].isoformat())
                                for r in found[:6]]), metrics
    if is_number(given) and given >= 0:
        metrics = {"restart_s": float(given), "source": "given", "samples": 0}
        return check_result("checkpoint_plan.restart", SKIP, "R = %s as given (no requeued job in the records)"
                            % _duration(float(given)), metrics), metrics
    metrics = {"restart_s": DEFAULT_RESTART_S, "source": "assumed", "samples": 0}
    return check_result("checkpoint_plan.restart", SKIP, "R not in the records (no requeued job): assumed %s; set "
                        "checkpoint_plan_restart_s to your measured restart" % _duration(DEFAULT_RESTART_S),
                        metrics), metrics


def _availability_check(parsed, inputs, options):
    given = options.get("availability")
    if is_number(given) and 0 < given <= 1:
        metrics = {"availability": float(given), "source": "given"}
        return check_result("checkpoint_plan.availability", SKIP, "availability %.1f %% as given" % (given * 100),
                            metrics), metrics
    window = inputs.get("window") or {}
    start, end = _sacct.parse_time(window.get("start")), _sacct.parse_time(window.get("end"))
    nodes = inputs.get("nodes") or 0
    if not (start and end and end > start and nodes):
        metrics = {"availability": 1.0, "source": "assumed"}
        return check_result("checkpoint_plan.availability", SKIP, "availability not measured (no window or node "
                            "count): 100 % assumed", metrics), metrics
    spans = _sacct.down_intervals(parsed["events"], parsed["history"], start, end)
    down = sum((e - s).total_seconds() for items in spans.values() for s, e in items)
    window_s = (end - start).total_seconds()
    value = plan.availability(down, nodes, window_s)
    closed = [(e - s).total_seconds() for items in spans.values() for s, e in items if e < end]
    metrics = {"availability": value, "source": "accounting", "down_node_hours": down / 3600.0,
               "window_s": window_s, "nodes": nodes, "out_of_service": len([1 for items in spans.values() for _s in items]),
               "replacement_s": median(closed) if closed else None}
    message = "availability %.2f %%: %d node(s) out of service for %s node-hours of %s in the window%s" % (
        value * 100, len(spans), _fmt(down / 3600.0), _fmt(nodes * window_s / 3600.0),
        ("; median time back in service %s" % _duration(metrics["replacement_s"])) if closed else "")
    return check_result("checkpoint_plan.availability", PASS, message, metrics,
                        evidence=["%s out %s .. %s" % (n, s.isoformat(), e.isoformat())
                                  for n, items in sorted(spans.items()) for s, e in items][:8]), metrics


def _fmt(value):
    return "{:,.0f}".format(value) if value >= 100 else ("%.1f" % value if value >= 1 else "%.3g" % value)


def _job_rows(write, mtbf_node_s, restart_s, options, gpus_per_node):
    method = options.get("method", "young")
    model = options.get("model", "first_order")
    rows = []
    for nodes in options.get("job_nodes") or ():
        mtbf_job = mtbf_node_s / nodes
        sync = plan.cadence(write["sync_s"], mtbf_job, restart_s, method, model)
        row = {"nodes": nodes, "gpus": nodes * gpus_per_node if gpus_per_node else None, "mtbf_s": mtbf_job,
               "interval_s": sync["interval_s"], "young_s": plan.young_interval(write["sync_s"], mtbf_job),
               "daly_s": plan.daly_interval(write["sync_s"], mtbf_job), "goodput": sync["goodput"], "lost": sync["lost"]}
        if write.get("async_s"):
            found = plan.cadence(write["async_s"], mtbf_job, restart_s, method, model)
            row.update(async_interval_s=found["interval_s"], async_goodput=found["goodput"])
        rows.append(row)
    return rows


def judge_checkpoint_plan(inputs, options=None):
    """(checks, document) for the checkpoint plan; see the module docstring."""
    options = options or {}
    checks = []
    write = write_time(inputs.get("states"), options)
    if write is None:
        checks.append(check_result("checkpoint_plan.write_time", ERROR, "no checkpoint write time: the checkpoint "
                                   "stage measured none (run it, or set checkpoint_plan_write_s)", {}, "checkpoint"))
    else:
        where = ("given" if write["source"] == "given" else "slowest of %d node(s), %s (%s path, %s)" % (
            write["nodes"], write["slowest"], write["path"], "all at once" if write["stage"] == "checkpoint" else "alone"))
        extra = ""
        if write.get("async_s"):
            extra = "; asynchronous: the loop is released after %s%s" % (
                _duration(write["async_s"]), (", durable after %s" % _duration(write["durable_s"]))
                if write.get("durable_s") else "")
        checks.append(check_result("checkpoint_plan.write_time", PASS, "C = %s (%s)%s" % (
            _duration(write["sync_s"]), where, extra), dict(write)))
    parsed, problems = _accounting(inputs, options)
    if parsed["errors"]:
        checks.append(check_result("checkpoint_plan.parse", ERROR, "accounting output: %d unreadable line(s): %s" % (
            len(parsed["errors"]), "; ".join(parsed["errors"][:3])), {"errors": parsed["errors"][:20]}, "accounting"))
    mtbf_result, mtbf = _mtbf_check(parsed, problems, options)
    checks.append(mtbf_result)
    restart_result, restart = _restart_check(parsed, options)
    checks.append(restart_result)
    avail_result, avail = _availability_check(parsed, inputs, options)
    checks.append(avail_result)
    mtbf_node_s = mtbf.get("mtbf_node_s") or (mtbf.get("bound_node_s") if mtbf.get("source") == "bound" else None)
    gpus = inputs.get("gpus_per_node") or 0
    document = {"write": write, "mtbf": _public(mtbf), "restart": restart, "availability": avail,
                "method": options.get("method", "young"), "model": options.get("model", "first_order"),
                "jobs": [], "sensitivity": []}
    if write is not None and mtbf_node_s:
        rows = _job_rows(write, mtbf_node_s, restart["restart_s"], options, gpus)
        document["jobs"] = rows
        floor = options.get("min_goodput")
        for row in rows:
            bound = " (at the bound on M)" if mtbf.get("source") == "bound" else ""
            text = "%d node(s): M_job %s%s, checkpoint every %s (Daly %s), goodput %.1f %%" % (
                row["nodes"], _duration(row["mtbf_s"]), bound, _duration(row["interval_s"]), _duration(row["daly_s"]),
                row["goodput"] * 100)
            if row.get("async_goodput") is not None:
                text += "; asynchronous saves: every %s, goodput %.1f %%" % (
                    _duration(row["async_interval_s"]), row["async_goodput"] * 100)
            status = PASS
            if is_number(floor) and row["goodput"] < floor:
                status = FAIL
                text += ": below the %.1f %% floor" % (floor * 100)
            checks.append(check_result("checkpoint_plan.interval", status, text, row, "job_%d" % row["nodes"]))
        if rows:
            largest = rows[-1]
            document["sensitivity"] = plan.sensitivity(write["sync_s"], largest["mtbf_s"], restart["restart_s"],
                                                       document["method"], document["model"], write.get("async_s"))
            document["sensitivity_nodes"] = largest["nodes"]
            checks.append(check_result("checkpoint_plan.sensitivity", PASS, _levers(document["sensitivity"],
                                                                                    largest["nodes"]),
                                       {"rows": document["sensitivity"]}, "job_%d" % largest["nodes"]))
        price = options.get("price_per_gpu_hour")
        if is_number(price) and price >= 0 and rows:
            row = rows[-1]
            cost = plan.effective_gpu_hour_cost(price, row["goodput"], avail["availability"])
            document["cost"] = {"price_per_gpu_hour": float(price), "nodes": row["nodes"], "goodput": row["goodput"],
                                "availability": avail["availability"], "effective": cost}
            checks.append(check_result("checkpoint_plan.cost", PASS, "a useful GPU-hour costs %s at the list price %s "
                                       "(goodput %.1f %% x availability %.1f %%, %d-node jobs)" % (
                                           _money(cost), _money(price), row["goodput"] * 100,
                                           avail["availability"] * 100, row["nodes"]), document["cost"]))
    if inputs.get("providers") is not None:
        compared = compare_providers(inputs["providers"], write and write["sync_s"], restart["restart_s"],
                                     mtbf.get("mtbf_node_s") if mtbf.get("source") == "accounting" else None)
        document["providers"] = compared
        ranked = [r for r in compared["ranked"] if r.get("rank")]
        status = ERROR if compared["errors"] else PASS
        message = "; ".join("%d. %s %s" % (r["rank"], r["name"], _money(r["effective_cost"])) for r in ranked) or \
            "no provider could be ranked"
        if compared["errors"]:
            message += " (providers file: %s)" % "; ".join(compared["errors"][:3])
        checks.append(check_result("checkpoint_plan.providers", status, "by effective cost of a useful GPU-hour: " +
                                   message, {"ranked": len(ranked)}, "providers"))
    return checks, document


def _levers(rows, nodes):
    """'for 64-node jobs: asynchronous saves to local NVMe would cut C from 60 s to 8 s: every 11 min, +4.1 points; ...'"""
    base = rows[0]
    words = {"write_half": "halving C (%s to %s)", "mtbf_half": "M halved (%s to %s)",
             "restart_half": "halving R (%s to %s)", "async": "asynchronous saves to local NVMe would cut C from %s to %s"}
    keys = {"write_half": "write_s", "mtbf_half": "mtbf_s", "restart_half": "restart_s", "async": "write_s"}
    parts = []
    for row in sorted(rows[1:], key=lambda r: -r["goodput_points"]):
        what = words[row["lever"]] % (_duration(base[keys[row["lever"]]]), _duration(row[keys[row["lever"]]]))
        parts.append("%s: every %s, %+.1f points" % (what, _duration(row["interval_s"]), row["goodput_points"]))
    return "for %d-node jobs at goodput %.1f %%: %s" % (nodes, base["goodput"] * 100, "; ".join(parts))


def _money(value):
    return "n/a" if value is None else "$%.2f" % value


def _public(mtbf):
    keep = ("status", "source", "failures", "exposure_node_hours", "confidence", "rate_per_node_hour", "mtbf_node_s",
            "mtbf_node_s_low", "mtbf_node_s_high", "bound_node_s", "reason", "failures_by_kind", "counted_kinds",
            "jobs", "records")
    return dict((k, mtbf.get(k)) for k in keep if k in mtbf)
