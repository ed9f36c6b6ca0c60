# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint plan in the report and the metrics, drawn from results.json's ``checkpoint_plan``
block and the checkpoint_plan stage's checks (one truth: the document the callback validated)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_plan import duration
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_svg import esc

SOURCES = {"measured": "measured here", "accounting": "from Slurm accounting", "given": "as given",
           "quoted": "quoted", "bound": "lower bound (not enough data)", "assumed": "assumed", "none": "none"}


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _pct(value):
    return "%.1f %%" % (value * 100) if _number(value) else "n/a"


def _hours(value):
    if not _number(value):
        return "n/a"
    return "{:,.0f}".format(value) if value >= 100 else ("%.1f" % value if value >= 1 else "%.2g" % value)


def _money(value):
    return "$%.2f" % value if _number(value) else "n/a"


def checkpoint_view(document):
    """None when the run made no checkpoint plan; else the block and its stage's checks."""
    block = document.get("checkpoint_plan")
    if not isinstance(block, dict):
        return None
    checks = [c for c in document.get("checks") or [] if isinstance(c, dict) and c.get("stage") == "checkpoint_plan"]
    return {"block": block, "checks": checks}


def _facts(block):
    write = block.get("write") if isinstance(block.get("write"), dict) else None
    mtbf = block.get("mtbf") if isinstance(block.get("mtbf"), dict) else {}
    restart = block.get("restart") if isinstance(block.get("restart"), dict) else {}
    avail = block.get("availability") if isinstance(block.get("availability"), dict) else {}
    rows = []
    if write:
        where = write.get("slowest")
        rows.append(("C, checkpoint write", "%s%s (%s)" % (
            duration(write.get("sync_s")), (" on %s, %s path" % (where, write.get("path"))) if where else "",
            SOURCES.get(write.get("source"), write.get("source")))))
        if _number(write.get("async_s")):
            rows.append(("C, asynchronous (loop released)", "%s%s" % (
                duration(write["async_s"]), ("; durable after %s" % duration(write.get("durable_s")))
                if _number(write.get("durable_s")) else "")))
    else:
        rows.append(("C, checkpoint write", "not measured"))
    if mtbf.get("status") == "measured":
        rows.append(("M per node", "%s (%d %% interval %s to %s; %s failure(s) in %s node-hours)" % (
            duration(mtbf.get("mtbf_node_s")), round((mtbf.get("confidence") or 0.95) * 100),
            duration(mtbf.get("mtbf_node_s_low")), duration(mtbf.get("mtbf_node_s_high")) if _number(
                mtbf.get("mtbf_node_s_high")) else "unbounded", mtbf.get("failures"), _hours(mtbf.get("exposure_node_hours")))))
    else:
        rows.append(("M per node", "not enough data: %s%s" % (mtbf.get("reason") or "no accounting", (
            "; using %s %s" % (SOURCES.get(mtbf.get("source")), duration(mtbf.get("mtbf_node_s") or mtbf.get(
                "bound_node_s")))) if mtbf.get("source") in ("quoted", "bound") else "")))
    source = "from the requeue records" if restart.get("source") == "measured" else SOURCES.get(
        restart.get("source"), restart.get("source"))
    samples = ", %s requeue(s)" % restart["samples"] if restart.get("samples") else ""
    rows.append(("R, restart", "%s (%s%s)" % (duration(restart.get("restart_s")), source, samples)))
    rows.append(("Availability", "%s (%s)" % (
        _pct(avail.get("availability")), SOURCES.get(avail.get("source"), avail.get("source")))))
    return "<table>%s</table>" % "".join("<tr><th>%s</th><td>%s</td></tr>" % (esc(k), esc(v)) for k, v in rows)


def _jobs(block):
    jobs = [j for j in block.get("jobs") or [] if isinstance(j, dict)]
    if not jobs:
        return '<p class="notrun">No interval: %s.</p>' % esc(
            "no checkpoint write time" if not block.get("write") else "no M (not enough data and none quoted)")
    head = ("<tr><th>job nodes</th><th>GPUs</th><th>M for the job</th><th>checkpoint every (Young)</th>"
            "<th>Daly</th><th>goodput</th><th>lost to writes / rework / restarts</th>"
            "<th>asynchronous: every</th><th>goodput</th></tr>")
    body = []
    for job in jobs:
        lost = job.get("lost") if isinstance(job.get("lost"), dict) else {}
        body.append("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(v) for v in (
            job.get("nodes"), job.get("gpus") or "", duration(job.get("mtbf_s")), duration(job.get("interval_s")),
            duration(job.get("daly_s")), _pct(job.get("goodput")),
            " / ".join(_pct(lost.get(k)) for k in ("write", "rework", "restart")),
            duration(job.get("async_interval_s")), _pct(job.get("async_goodput")))))
    return "<table>%s%s</table>" % (head, "".join(body))


def _sensitivity(block):
    rows = [r for r in block.get("sensitivity") or [] if isinstance(r, dict)]
    if not rows:
        return ""
    body = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
        esc(r.get("label")), esc(duration(r.get("write_s"))), esc(duration(r.get("mtbf_s"))),
        esc(duration(r.get("restart_s"))), esc(duration(r.get("interval_s"))), esc(_pct(r.get("goodput"))),
        esc("%+.1f points" % r["goodput_points"] if _number(r.get("goodput_points")) and r.get("lever") != "base" else ""))
        for r in rows)
    return ("<h3>What each lever buys (%s-node jobs)</h3><table><tr><th>lever</th><th>C</th><th>M</th><th>R</th>"
            "<th>interval</th><th>goodput</th><th>change</th></tr>%s</table>" % (
                esc(block.get("sensitivity_nodes")), body))


def _providers(block):
    found = block.get("providers") if isinstance(block.get("providers"), dict) else None
    if not found:
        return ""
    questions = [q for q in found.get("questions") or [] if isinstance(q, dict)]
    head = "".join("<th title=\"%s\">%s</th>" % (esc(q.get("question")), esc(q.get("id"))) for q in questions)
    body = []
    for row in found.get("ranked") or []:
        if not isinstance(row, dict):
            continue
        answers = row.get("answers") if isinstance(row.get("answers"), dict) else {}
        cells = [row.get("rank") or "-", row.get("name"), _money(row.get("price_per_gpu_hour")),
                 "%s (%s)" % (duration(row.get("mtbf_node_s")), row.get("mtbf_source")),
                 "%s h" % row.get("replacement_h"), _pct(row.get("goodput")), _pct(row.get("availability")),
                 _money(row.get("effective_cost")), "%s / %s" % (row.get("score"), row.get("score_max"))]
        cells += ["-" if answers.get(q.get("id")) is None else answers.get(q.get("id")) for q in questions]
        body.append("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(c) for c in cells))
    errors = "".join("<li>%s</li>" % esc(e) for e in found.get("errors") or [])
    legend = "".join("<li><b>%s</b>: %s</li>" % (esc(q.get("id")), esc(q.get("question"))) for q in questions)
    return ("<h3>Providers by the effective cost of a useful GPU-hour (%s-node jobs)</h3><table><tr><th>rank</th>"
            "<th>provider</th><th>list price</th><th>M per node</th><th>replacement</th><th>goodput</th>"
            "<th>availability</th><th>effective cost</th><th>contract score</th>%s</tr>%s</table>%s"
            "<p>Contract questions (2 = firm yes in the contract, 1 = partly, 0 = no):</p><ul>%s</ul>" % (
                esc(found.get("job_nodes")), head, "".join(body),
                ("<ul class=\"bad\">%s</ul>" % errors) if errors else "", legend))


def render_checkpoint(view):
    block = view["block"]
    parts = [_facts(block), _jobs(block), _sensitivity(block)]
    cost = block.get("cost") if isinstance(block.get("cost"), dict) else None
    if cost:
        parts.append("<p>A useful GPU-hour costs <b>%s</b> at the list price %s (goodput %s x availability %s).</p>" % (
            esc(_money(cost.get("effective"))), esc(_money(cost.get("price_per_gpu_hour"))),
            esc(_pct(cost.get("goodput"))), esc(_pct(cost.get("availability")))))
    parts.append(_providers(block))
    bad = [c for c in view["checks"] if c.get("status") in BAD]
    if bad:
        items = ["<li><code>%s</code> %s</li>" % (esc(c.get("check")), esc(c.get("message"))) for c in bad]
        parts.append("<ul>%s</ul>" % "".join(items))
    return "\n".join(p for p in parts if p)


def checkpoint_families(document, family):
    """Metric families of the checkpoint plan (``family`` is _prometheus.Family)."""
    view = checkpoint_view(document)
    if not view:
        return []
    block = view["block"]
    write = family("checkpoint_write_seconds", "gauge", "Checkpoint write time C: kind sync (slowest node, all at "
                   "once), async (training loop released) or durable.")
    mtbf = family("mtbf_node_seconds", "gauge", "Mean time between job-killing failures per node: estimate, low "
                  "and high of its interval, or bound when there is not enough data.")
    restart = family("restart_seconds", "gauge", "Restart time R from failure to the requeued job's start.")
    avail = family("availability_ratio", "gauge", "Share of node time in service in the accounting window.")
    interval = family("checkpoint_interval_seconds", "gauge", "Recommended compute time between checkpoints per "
                      "job size (method young or daly).")
    goodput = family("goodput_ratio", "gauge", "Useful share of wall time per job size, synchronous or asynchronous "
                     "checkpoints.")
    cost = family("effective_gpu_hour_cost", "gauge", "List price of a GPU-hour over goodput x availability.")
    provider = family("provider_effective_gpu_hour_cost", "gauge", "Effective cost of a useful GPU-hour per provider "
                      "of the providers file.")
    found = block.get("write") if isinstance(block.get("write"), dict) else {}
    for kind, key in (("sync", "sync_s"), ("async", "async_s"), ("durable", "durable_s")):
        write.add(found.get(key), kind=kind)
    found = block.get("mtbf") if isinstance(block.get("mtbf"), dict) else {}
    if found.get("status") == "measured":
        for kind, key in (("estimate", "mtbf_node_s"), ("low", "mtbf_node_s_low"), ("high", "mtbf_node_s_high")):
            mtbf.add(found.get(key), kind=kind)
    else:
        mtbf.add(found.get("bound_node_s"), kind="bound")
    restart.add((block.get("restart") or {}).get("restart_s"), source=(block.get("restart") or {}).get("source", ""))
    avail.add((block.get("availability") or {}).get("availability"))
    for job in block.get("jobs") or []:
        if not isinstance(job, dict):
            continue
        nodes = str(job.get("nodes"))
        interval.add(job.get("interval_s"), nodes=nodes, method=block.get("method", "young"), mode="sync")
        interval.add(job.get("async_interval_s"), nodes=nodes, method=block.get("method", "young"), mode="async")
        goodput.add(job.get("goodput"), nodes=nodes, mode="sync")
        goodput.add(job.get("async_goodput"), nodes=nodes, mode="async")
    if isinstance(block.get("cost"), dict):
        cost.add(block["cost"].get("effective"), nodes=str(block["cost"].get("nodes")))
    for row in ((block.get("providers") or {}).get("ranked") or []):
        if isinstance(row, dict):
            provider.add(row.get("effective_cost"), provider=str(row.get("name")))
    return [write, mtbf, restart, avail, interval, goodput, cost, provider]
