# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html: one self-contained page drawn from a run's validated results.json.

render_html(document, run_dir=None) returns the page: the verdict, a per-node table, the pairwise
bandwidth heatmap, busbw-vs-message-size curves, per-rank step times and the fabric localisation
rounds. What each section shows comes from _report_view (which key of the document it reads, and
whether that part is missing, not kept or malformed); the charts from _report_svg. Inline CSS and
SVG only: no script, no font, image or link outside the page, so it opens the same offline.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report_svg as svg
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_view import (
    BAD, Problem, build_view, is_number)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import STATUSES
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_svg import esc, num
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_rdma import rdma_view, render_rdma
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_transfer import render_transfer, transfer_view
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_checkpoint import checkpoint_view, render_checkpoint
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_nvlink import nvlink_view, render_nvlink

_TONES = {"pass": "pass", "cleared": "pass", "marginal": "warn", "suspect": "warn", "intermittent": "fail", "leaf": "fail", "unstable": "fail",
          "fail": "fail", "low": "fail", "pinned": "fail", "timeout": "fail", "untested": "error", "error": "error"}

_CSS = """
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; color: #1f2328;
       margin: 0 auto; padding: 20px 28px 40px; max-width: 1400px; font-size: 14px; line-height: 1.4;
       background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 34px 0 6px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
p.lead { margin: 4px 0 10px; color: #57606a; max-width: 1000px; }
.meta { color: #57606a; margin: 0 0 14px; }
.meta code { font-size: 12px; }
.verdict { border-radius: 10px; padding: 14px 22px; margin: 12px 0 6px; display: flex; align-items: baseline;
           gap: 24px; flex-wrap: wrap; }
.verdict .word { font-size: 56px; font-weight: 800; letter-spacing: 2px; line-height: 1; }
.verdict .why { font-size: 17px; }
.verdict.pass { background: #1a7f37; color: #fff; }
.verdict.fail { background: #cf222e; color: #fff; }
.verdict.unknown { background: #6e7781; color: #fff; }
.counts { margin: 6px 0 0; color: #57606a; }
nav { margin: 10px 0 0; font-size: 13px; }
nav a { color: #0969da; margin-right: 14px; text-decoration: none; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; vertical-align: top; }
th { background: #f6f8fa; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.st { text-align: center; font-weight: 600; white-space: nowrap; font-size: 12px; }
td.node { font-weight: 700; white-space: nowrap; }
tr.bad td.node { color: #a40e26; }
tr.cluster-row td { border-top: 2px solid #8c959f; }
td.problems { min-width: 300px; font-size: 12px; }
td.problems ul { margin: 0; padding-left: 16px; }
.pass { background: #dafbe1; color: #116329; }
.warn { background: #fff8c5; color: #7d4e00; }
.fail { background: #ffebe9; color: #a40e26; }
.error { background: #fff1e5; color: #953800; }
.none { background: #f6f8fa; color: #57606a; }
.chip { display: inline-block; border-radius: 4px; padding: 1px 6px; margin: 1px 3px 1px 0; font-size: 12px;
        white-space: nowrap; border: 1px solid rgba(0,0,0,0.08); }
.notrun, .notkept { color: #57606a; font-style: italic; background: #f6f8fa; border: 1px dashed #d0d7de;
          padding: 10px 14px; border-radius: 6px; max-width: 900px; }
.notkept { color: #7d4e00; background: #fff8c5; border-color: #d4a72c; }
.broken { color: #953800; background: #fff1e5; padding: 10px 14px; border-radius: 6px; }
.broken ul { margin: 4px 0 0; }
.stage-error { color: #953800; background: #fff1e5; padding: 8px 12px; border-radius: 6px; max-width: 1100px; }
.evidence { font-size: 12px; margin: 6px 0; max-width: 1100px; }
.evidence li { margin: 2px 0; }
details summary { cursor: pointer; color: #0969da; font-size: 12px; }
svg text { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; }
.figure { overflow-x: auto; }
footer { margin-top: 40px; color: #8c959f; font-size: 12px; }
"""


def tone(word):
    return _TONES.get(str(word or "").lower(), "none")


def _chip(text, status, title=None):
    return '<span class="chip %s"%s>%s</span>' % (tone(status), ' title="%s"' % esc(title) if title else "", esc(text))


def _status_cell(status):
    if not status:
        return '<td class="st none" title="did not run there">\u2014</td>'
    return '<td class="st %s">%s</td>' % (tone(status), esc(status.upper() if status in BAD else status))


def _items(lines, shown=4):
    head = "".join("<li>%s</li>" % esc(line) for line in lines[:shown])
    more = ""
    if len(lines) > shown:
        more = "<details><summary>%d more</summary><ul>%s</ul></details>" % (
            len(lines) - shown, "".join("<li>%s</li>" % esc(line) for line in lines[shown:]))
    return "<ul>%s</ul>%s" % (head, more)


def _absent(what, section):
    """The paragraph of a section that has nothing to draw, saying why."""
    state = section.get("state")
    if state == "error":
        return ('<div class="broken">%s could not be drawn from this results.json:<ul>%s</ul></div>'
                % (esc(what), "".join("<li>%s</li>" % esc(p) for p in section.get("problems") or [])))
    if state == "not_kept":
        return '<p class="notkept">%s: not drawn: %s.</p>' % (esc(what), esc(section.get("text")))
    return '<p class="notrun">%s: not run (%s).</p>' % (esc(what), esc(section.get("text")))


def _contradictions(problems):
    if not problems:
        return ""
    return ('<div class="broken" id="contradictions">This results.json contradicts itself:<ul>%s</ul></div>'
            % "".join("<li>%s</li>" % esc(p) for p in problems))


# ------------------------------------------------------------------------------------ header

def _header(head):
    if head.get("state") != "ok":
        return "<h1>GPU cluster acceptance</h1>\n" + _absent("The verdict", head)
    run = head["run"]
    failed = []
    for entry in head["failed"][:12]:
        if entry["status"] == "untested":
            failed.append("%s (never reported)" % entry["node"])
        else:
            failed.append("%s (%s)" % (entry["node"], ", ".join(entry["stages"])) if entry["stages"] else entry["node"])
    why = esc(head["message"])
    if failed:
        why += "<br>" + esc("; ".join(failed) + (" and %d more" % (len(head["failed"]) - 12) if len(head["failed"]) > 12 else ""))
    counts = head["check_counts"]
    count_text = ", ".join("%d %s" % (counts[s], s) for s in STATUSES if counts.get(s))
    took = " (%d s)" % round(run["seconds"]) if is_number(run["seconds"]) else ""
    meta = "run <code>%s</code> &middot; %s &middot; profile %s &middot; started %s, finished %s%s" % (
        esc(run["id"]), esc(run["playbook"] or "playbook ?"), esc(run["profile"] or "?"), esc(run["started"] or "?"),
        esc(run["finished"] or "?"), esc(took))
    if run["replay_of"]:
        meta += " &middot; replay of <code>%s</code>" % esc(run["replay_of"])
    out = ["<h1>GPU cluster acceptance</h1>", '<p class="meta">%s</p>' % meta]
    if run["state"] != "complete":
        out.append('<p class="stage-error" id="incomplete">INCOMPLETE: this results.json was written while the run '
                   'was still going (run.state %s); what follows is what it had found by then.</p>' % esc(run["state"]))
    out.append('<div class="verdict %s" id="verdict"><span class="word">%s</span><span class="why">%s</span></div>'
               % (head["status"], esc(head["status"].upper()), why))
    out.append('<p class="counts">%d node(s), %d failed; %d check(s)%s</p>' % (
        head["nodes_total"], head["nodes_failed"], head["checks"], ": " + esc(count_text) if count_text else ""))
    if head["cluster_problems"]:
        out.append('<div class="evidence" id="cluster-problems">Cluster-level problems:%s</div>' % _items(head["cluster_problems"], 6))
    if run["warnings"]:
        out.append('<div class="evidence">Run warnings:%s</div>' % _items(run["warnings"], 6))
    return "\n".join(out) + "\n"


def _nav():
    links = (("nodes", "Nodes"), ("fabric", "Pairwise bandwidth"), ("curves", "NCCL curves"),
             ("workload", "Step times"), ("rounds", "Localisation rounds"))
    return "<nav>%s &middot; artifacts: %s</nav>\n" % (
        " ".join('<a href="#%s">%s</a>' % (anchor, text) for anchor, text in links),
        " ".join('<a href="%s">%s</a>' % (name, name) for name in ("results.json", "junit.xml", "metrics.prom", "raw/")))


# ------------------------------------------------------------------------------------ sections

def _node_table(view):
    table = view["nodes"]
    if table.get("state") != "ok":
        return _absent("Per-node results", table)
    head = ["Node", "Result"] + ['<span title="%s">%s</span>' % (esc(s), esc(s.replace("_", " "))) for s in table["stages"]]
    if table["has_busbw"]:
        head.append("Single-node busbw<br>GB/s")
    if table["has_fabric"]:
        head.append("Fabric<br>verdict")
    if table["has_steps"]:
        head.append("Step p50 ms<br>compute / sync")
    if table["has_baseline"]:
        head.append("vs baseline")
    head.append("Problems")
    out = ['<table id="nodes-table"><thead><tr>%s</tr></thead><tbody>' % "".join("<th>%s</th>" % h for h in head)]

    def row_html(klass, attrs, name, entry, extra):
        cells = ['<td class="node">%s</td>' % esc(name), _status_cell(entry["status"])]
        cells.extend(_status_cell(entry["stages"].get(stage)) for stage in table["stages"])
        cells.extend(extra)
        cells.append('<td class="problems">%s</td>' % (_items(entry["problems"]) if entry["problems"] else ""))
        return '<tr class="%s"%s>%s</tr>' % (klass, attrs, "".join(cells))

    for row in table["rows"]:
        extra = []
        if table["has_busbw"]:
            extra.append('<td class="num%s">%s</td>' % (" fail" if row["busbw_bad"] else "", num(row["busbw"])))
        if table["has_fabric"]:
            extra.append(_status_cell(row["fabric"]))
        if table["has_steps"]:
            step = row["steps"]
            extra.append('<td class="num%s">%s</td>' % (" fail" if step and step["flagged"] else "",
                                                        esc("%s / %s" % (num(step["compute"]), num(step["sync"]))) if step else "\u2014"))
        if table["has_baseline"]:
            extra.append('<td class="num">%s</td>' % ("<br>".join(
                '<span class="%s">%s %+.1f %%</span>' % (tone(c["status"]), esc(c["metric"].replace("_", " ")), c["pct"])
                for c in row["baseline"]) or "\u2014"))
        out.append(row_html("bad" if row["failed"] else "ok", ' data-node="%s"' % esc(row["node"]), row["node"], row, extra))
    blanks = ['<td class="none"></td>'] * (int(table["has_busbw"]) + int(table["has_fabric"]) + int(table["has_steps"])
                                           + int(table["has_baseline"]))
    out.append(row_html("cluster-row%s" % (" bad" if table["cluster"]["status"] in BAD else ""), ' data-cluster="1"',
                        "cluster (no single node)", table["cluster"], blanks))
    out.append("</tbody></table>")
    note = ('<p class="lead">The nodes the verdict failed first. Stage cells: the stage\'s result on that node as '
            'results.json records it (nodes.&lt;node&gt;.stages; \u2014: the stage did not run there). The last row '
            'holds the checks about no single node (the full-allocation run, leaf uplinks, a stage that could not '
            'run). Single-node busbw: the nccl.busbw check\'s value, red when the node failed that stage.%s</p>'
            % (" Step p50: the node's slowest rank's compute and its least sync wait." if table["has_steps"] else ""))
    return note + "\n".join(out)


def _fabric_facts(fabric):
    out = []
    if fabric["error"]:
        out.append('<p class="stage-error" id="fabric-error">The fabric stage ended on a %s error: %s. No node is '
                   'blamed for it.</p>' % (esc(fabric["error"]["component"]), esc(fabric["error"]["message"])))
    elif fabric["status"] != "pass":
        for check in fabric["cluster_checks"]:
            if check["status"] != "pass":
                out.append('<p class="evidence">%s %s</p>' % (_chip(check["status"], check["status"]), esc(check["message"])))
    if fabric["preflight"]:
        out.append('<p class="evidence" id="fabric-preflight">%s %s</p>' % (
            _chip(fabric["preflight"]["status"], fabric["preflight"]["status"]), esc(fabric["preflight"]["message"])))
    full = fabric["full_allocation"]
    if full and full["busbw"] is not None:
        out.append('<p class="evidence">Full allocation: %s node(s), %s GB/s %s</p>'
                   % (esc(full["nodes"]), num(full["busbw"]), _chip(full["status"] or "?", full["status"])))
    counts = fabric["verdict_counts"]
    if counts:
        out.append('<p class="evidence">Fabric verdicts: %s</p>'
                   % ", ".join(_chip("%d %s" % (counts[s], s), s) for s in sorted(counts)))
    marked = sorted((n for n, e in fabric["nodes"].items() if e["verdict"] not in ("cleared",)),
                    key=lambda n: (fabric["nodes"][n]["verdict"] != "pinned", natural_key(n)))
    if marked:
        out.append('<ul class="evidence" id="fabric-evidence">')
        for node in marked[:20]:
            entry = fabric["nodes"][node]
            lines = entry["evidence"] or ["%s: %s (no evidence recorded)" % (node, entry["verdict"])]
            rest = ""
            if len(lines) > 1:
                rest = "<details><summary>%d test(s)</summary><ul>%s</ul></details>" % (
                    len(lines) - 1, "".join("<li>%s</li>" % esc(line) for line in lines[1:]))
            out.append('<li data-node="%s">%s %s%s</li>' % (esc(node), _chip(entry["verdict"], entry["verdict"]), esc(lines[0]), rest))
        out.append("</ul>")
    uplinks = [(leaf, e) for leaf, e in sorted(fabric["uplinks"].items(), key=lambda i: natural_key(i[0]))
               if e["verdict"] != "cleared"]
    if uplinks:
        out.append('<ul class="evidence" id="uplinks">%s</ul>' % "".join(
            "<li>%s leaf %s uplink: %s</li>" % (_chip(e["verdict"], e["verdict"]), esc(leaf), esc((e["evidence"] or [""])[0]))
            for leaf, e in uplinks))
    for warning in fabric["warnings"]:
        out.append('<p class="evidence">warning: %s</p>' % esc(warning))
    return "\n".join(out)


def _heatmap(view):
    fabric = view["fabric"]
    if fabric.get("state") != "ok":
        return _absent("Fabric pairwise tests", fabric)
    facts = _contradictions(fabric["problems"]) + _fabric_facts(fabric)
    if not fabric["names"]:
        return facts + '<p class="notrun">No node took part in a multi-node test (fabric.nodes and fabric.matrix are empty).</p>'
    count = len(fabric["names"])
    tested = sum(1 for v in fabric["pairs"].values() if is_number(v))
    lead = ('<p class="lead">Bus bandwidth of each pair of nodes tested together (fabric.matrix, all_reduce_perf '
            'across the network): %d of %d pairs tested%s. Colour: share of %s%s; grey: not tested as a pair. '
            'Nodes the localisation pinned (fabric.nodes verdict, fabric.pinned) are outlined and named on both '
            'axes%s.%s</p>' % (
                tested, count * (count - 1) // 2, ", mode %s" % esc(fabric["mode"]) if fabric["mode"] else "",
                esc(fabric["reference_source"] or "the reference"),
                " (%.0f GB/s)" % fabric["reference"] if fabric["reference"] else "",
                ": " + ", ".join(esc(n) for n in fabric["pinned"]) if fabric["pinned"] else " (none)",
                " Thick lines separate leaves." if len(set(fabric["leaf"].values())) > 1 else ""))
    return lead + '<div class="figure">%s</div>' % svg.heatmap(fabric) + facts


def _curves(view):
    curves = view["curves"]
    if curves.get("state") != "ok":
        return _absent("NCCL single-node busbw curves", curves)
    slow = curves["slow"]
    lead = ('<p class="lead">all_reduce_perf on each node\'s own GPUs (nccl.curves, as the single-node judge read '
            'it): out-of-place bus bandwidth at each message size, one line per node. Red: nodes that failed the '
            'nccl_single_node stage%s.</p>' % ((": " + ", ".join(esc(n) for n in slow)) if slow else " (none)"))
    return lead + '<div class="figure">%s</div>' % svg.curves(curves)


def _step_times(view):
    workload = view["workload"]
    if workload.get("state") != "ok":
        return _absent("Workload (training-step) test", workload)
    rows, flagged = workload["rows"], workload["flagged_nodes"]
    expected = workload["expected_ranks"]
    lead = ('<p class="lead">Per rank (workload.ranks; x: rank, grouped by node): dot = p50, box = p50 to p95, whisker '
            'to the highest quantile recorded. Compute is the rank\'s own work, sync the wait in the collective: a slow '
            'rank computes longer and its peers wait for it. %d rank(s)%s on %d node(s); flagged by the judge, in red%s.</p>'
            % (len(rows), " of %d expected" % expected if isinstance(expected, int) and expected != len(rows) else "",
               len(set(r["node"] for r in rows)), ": " + ", ".join(esc(n) for n in flagged) if flagged else " (none)"))
    return lead + '<div class="figure">%s</div>' % svg.step_times(workload)


def _rounds(view):
    rounds = view["rounds"]
    if rounds.get("state") == "empty":
        return '<p class="notrun">%s.</p>' % esc(rounds["text"][:1].upper() + rounds["text"][1:])
    if rounds.get("state") != "ok":
        return _absent("Fabric localisation", rounds)
    counts = rounds["status_counts"]
    lead = ('<p class="lead">Each round (fabric.rounds) runs disjoint groups at the same time; a group is as fast as '
            'its slowest member (and, across leaves, the slowest uplink). %d round(s), %d group(s): %s. Low and '
            'marginal groups first in each round.</p>' % (len(rounds["rounds"]), rounds["groups"], ", ".join(
                "%d %s" % (counts[s], s.replace("_", " ")) for s in sorted(counts))))
    links = [(r["round"], g) for r in rounds["rounds"] for g in r["groups"] if g["raw"] and g["status"] != "pass"]
    raw = ""
    if links:
        raw = '<p class="evidence">Raw outputs of the groups that did not pass: %s</p>' % " ".join(
            '<a href="%s">round %d: %s</a>' % (esc(g["raw"]), number, esc("+".join(g["nodes"]))) for number, g in links[:40])
    return lead + '<div class="figure">%s</div>' % svg.rounds(rounds) + raw


def _section(anchor, title, builder, view):
    try:
        body = builder(view)
    except Exception as exc:  # pylint: disable=broad-except  # one bad section must not cost the page
        body = _absent(title, {"state": "error", "problems": ["%s: %s" % (type(exc).__name__, exc)]})
    return '<section id="%s">\n<h2>%s</h2>\n%s\n</section>\n' % (anchor, esc(title), body)


def render_html(document, run_dir=None):
    """The report page (str) of one results.json document.

    run_dir (the run's artifact directory) is accepted for the callers' sake; nothing is read from
    it: the page is drawn from the document alone, and links to raw outputs are relative to it.
    """
    try:
        view = build_view(document)
        head = view["header"]
    except Problem as exc:
        view, head = None, {"state": "error", "problems": [str(exc)]}
    status = head.get("status") if head.get("state") == "ok" else "unknown"
    run_id = head["run"]["id"] if head.get("state") == "ok" else "run"
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        "<title>Acceptance %s: %s</title>\n<style>%s</style>\n</head>\n<body>\n" % (esc(str(status).upper()), esc(run_id), _CSS),
        _header(head),
        _contradictions(head.get("problems") if head.get("state") == "ok" else None),
    ]
    if view:
        parts.extend([
            _nav(),
            _section("nodes", "Nodes", _node_table, view),
            _section("fabric", "Pairwise bandwidth (fabric)", _heatmap, view),
            _section("curves", "NCCL single-node: busbw against message size", _curves, view),
            _section("workload", "Step times per rank (workload)", _step_times, view),
            _section("rounds", "Fabric localisation rounds", _rounds, view),
        ])
    nvlink = nvlink_view(document) if isinstance(document, dict) else None
    if nvlink is not None:  # only rack-scale profiles have one
        parts.append(_section("nvlink", "NVLink domains (rack scale)", lambda _view: render_nvlink(nvlink), view))
    rdma = rdma_view(document) if isinstance(document, dict) else None
    if rdma is not None:  # only runs with the rdma stage have one
        parts.append(_section("rdma", "RDMA per rail and NIC (perftest pairs)", lambda _view: render_rdma(rdma), view))
    transfer = transfer_view(document) if isinstance(document, dict) else None
    if transfer is not None:  # only runs of playbooks/data_transfer.yml have one
        parts.append(_section("transfer", "Data transfer", lambda _view: render_transfer(transfer), view))
    checkpoint = checkpoint_view(document) if isinstance(document, dict) else None
    if checkpoint is not None:  # only runs of playbooks/checkpoint_plan.yml have one
        parts.append(_section("checkpoint", "Checkpoint cadence, goodput and cost", lambda _view: render_checkpoint(checkpoint),
                              view))
    parts.append("<footer>gpucluster.acceptance report, results schema %s. Self-contained: nothing on this page is "
                 "loaded from elsewhere.</footer>\n</body>\n</html>\n" % esc((view or {}).get("schema") or "?"))
    return "".join(parts)
