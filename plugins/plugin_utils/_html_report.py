# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One self-contained HTML page from a run's results.json, for the person signing off a cluster.

``render_html(results, run_dir=None)`` returns the page: the verdict, a per-node table (stage
results, single-node busbw, fabric verdict, step times, baseline deltas, the problems), the
pairwise bandwidth heatmap, busbw-vs-message-size curves, per-rank step times and the fabric
localisation rounds. Inline CSS and SVG only: no script, no font, image or link outside the page,
so it opens the same offline, from a CI artifact or an e-mail attachment.

Every section reads its own key of the results and says "not run" when the key is absent (a run
of some stages only, or a results.json written before the stage existed); a section whose data
cannot be drawn says so and the rest of the page is still written. Every string that comes from
the run (node names come from the inventory) is escaped.

The data helpers (``single_node_busbw``, ``fabric_busbw``, ``rank_rows``, ``baseline_rows``,
``nccl_curves``) are shared with the Prometheus textfile writer.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import html
import math
import os
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests

BAD = ("fail", "error")
NCCL_TOOL = "all_reduce_perf"
# Status words of every stage and section, by the colour they get.
_GOOD_WORDS = ("pass", "cleared", "ok")
_WARN_WORDS = ("marginal", "suspect", "warn", "warning", "degraded")
_BAD_WORDS = ("fail", "low", "pinned", "timeout", "flagged", "slow")
_ERROR_WORDS = ("error",)

PALETTE = {
    "pass": ("#dafbe1", "#116329"),
    "warn": ("#fff8c5", "#7d4e00"),
    "fail": ("#ffebe9", "#a40e26"),
    "error": ("#fff1e5", "#953800"),
    "none": ("#f6f8fa", "#57606a"),
}
HEALTHY_LINE = "#4c72b0"
SLOW_LINE = "#d1242f"
NOT_TESTED = "#e6e8eb"
# Heatmap colour stops: share of the reference bandwidth -> RGB (red at half speed, green at full).
_RAMP = ((0.5, (165, 0, 38)), (0.7, (215, 48, 39)), (0.85, (253, 174, 97)), (0.95, (217, 239, 139)),
         (1.0, (26, 152, 80)))
_RAMP_TICKS = (0.5, 0.7, 0.85, 0.95, 1.0)
# Up to this many nodes the heatmap draws every cell (with its tooltip); above, only tested pairs.
MAX_EVERY_CELL = 128
# A node's curve or number this far below the peers' median is highlighted as slow.
SLOW_SHARE = 0.9

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
td.problems { min-width: 300px; font-size: 12px; }
th.stage { font-size: 12px; max-width: 90px; }
td.problems ul { margin: 0; padding-left: 16px; }
.pass { background: #dafbe1; color: #116329; }
.warn { background: #fff8c5; color: #7d4e00; }
.fail { background: #ffebe9; color: #a40e26; }
.error { background: #fff1e5; color: #953800; }
.none { background: #f6f8fa; color: #57606a; }
.chip { display: inline-block; border-radius: 4px; padding: 1px 6px; margin: 1px 3px 1px 0; font-size: 12px;
        white-space: nowrap; border: 1px solid rgba(0,0,0,0.08); }
.notrun { color: #57606a; font-style: italic; background: #f6f8fa; border: 1px dashed #d0d7de;
          padding: 10px 14px; border-radius: 6px; max-width: 900px; }
.broken { color: #953800; background: #fff1e5; padding: 10px 14px; border-radius: 6px; }
.evidence { font-size: 12px; margin: 6px 0; max-width: 1100px; }
.evidence li { margin: 2px 0; }
details summary { cursor: pointer; color: #0969da; font-size: 12px; }
svg text { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; }
.figure { overflow-x: auto; }
footer { margin-top: 40px; color: #8c959f; font-size: 12px; }
"""


# ------------------------------------------------------------------------------------ small helpers

def esc(value):
    """HTML-escaped text of any value (quotes too, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def num(value, digits=1):
    """A number for a table cell; '—' when missing."""
    if not is_number(value):
        return "\u2014"
    return "%.*f" % (digits, value)


def natural_key(name):
    """Sort key that puts gpu2 before gpu10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.lower())
                 for part in re.split(r"(\d+)", str(name)) if part != "")


def median(values):
    values = sorted(v for v in values if is_number(v))
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def tone(status):
    """The colour class of a status word: pass, warn, fail, error or none."""
    word = str(status or "").lower()
    if word in _GOOD_WORDS:
        return "pass"
    if word in _WARN_WORDS:
        return "warn"
    if word in _ERROR_WORDS:
        return "error"
    if word in _BAD_WORDS:
        return "fail"
    return "none"


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _node_name(value):
    return "cluster" if value in (None, "") else str(value)


def _short(name, limit=32):
    """A label no longer than limit characters (the full name stays in the tooltip)."""
    name = str(name)
    return name if len(name) <= limit else name[:limit - 1] + "\u2026"


def _size_label(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return "%d%s" % (size // scale, unit)
    return "%dB" % size if size == int(size) else "%gB" % size


def _nice_max(value):
    """(top, step): a round axis maximum at or above value and its tick step (1, 2, 2.5 or 5 times a
    power of ten, four to eight ticks)."""
    if not is_number(value) or value <= 0:
        return 1.0, 0.2
    raw = value / 5.0
    power = 10 ** math.floor(math.log10(raw))
    step = 10 * power
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            step = factor * power
            break
    return math.ceil(value / step - 1e-9) * step, step


def _ticks(top, step):
    count = int(round(top / step))
    return [step * i for i in range(count + 1)]


def _fmt_tick(value):
    return ("%d" % value) if value == int(value) else ("%g" % round(value, 2))


# ------------------------------------------------------------------------------------ data helpers

def stage_order(results):
    """Stages in the order the run met them (first appearance among the checks)."""
    order = []
    for check in _list(results.get("checks")):
        stage = _dict(check).get("stage")
        if stage and stage not in order:
            order.append(stage)
    for entry in _dict(results.get("nodes")).values():
        for stage in sorted(_dict(_dict(entry).get("stages"))):
            if stage not in order:
                order.append(stage)
    return order


def single_node_busbw(results):
    """{node: GB/s} from the nccl_single_node stage's nccl.busbw checks."""
    found = {}
    for check in _list(results.get("checks")):
        check = _dict(check)
        if check.get("stage") == "nccl_single_node" and check.get("check") == "nccl.busbw":
            value = _dict(check.get("metrics")).get("busbw")
            if is_number(value):
                found[_node_name(check.get("node"))] = value
    return found


def pairwise(results):
    """{a: {b: GB/s or None}} from fabric.pairwise, made symmetric."""
    matrix = {}
    for first, row in _dict(_dict(results.get("fabric")).get("pairwise")).items():
        for second, value in _dict(row).items():
            value = value if is_number(value) else None
            for a, b in ((str(first), str(second)), (str(second), str(first))):
                current = matrix.setdefault(a, {}).get(b)
                if current is None:
                    matrix[a][b] = value
    return matrix


def fabric_verdicts(results):
    """{node: {status, evidence: [str]}} from fabric.verdicts."""
    found = {}
    for node, entry in _dict(_dict(results.get("fabric")).get("verdicts")).items():
        entry = entry if isinstance(entry, dict) else {"status": entry}
        evidence = entry.get("evidence")
        if isinstance(evidence, str):
            evidence = [evidence]
        found[str(node)] = {"status": str(entry.get("status") or entry.get("verdict") or "unknown"),
                            "evidence": [str(e) for e in _list(evidence)], "leaf": entry.get("leaf"),
                            "busbw": entry.get("busbw")}
    return found


def fabric_busbw(results):
    """{node: GB/s}: a node's own fabric bandwidth, the median of its pairwise results (a pair is
    as fast as its slower node, so a healthy node's median is the healthy level and a slow node's
    every result is low), or the busbw its fabric verdict gives."""
    found = {}
    for node, row in pairwise(results).items():
        value = median([v for v in row.values() if is_number(v)])
        if value is not None:
            found[node] = value
    for node, entry in fabric_verdicts(results).items():
        if is_number(entry.get("busbw")):
            found[node] = entry["busbw"]
    return found


_QUANTILE_KEY = re.compile(r"^([a-z][a-z0-9_]*?)_p(\d{1,3}(?:\.\d+)?)(?:_(ms|s|us))?$")
_TO_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001}


def rank_rows(results):
    """[{rank, node, gpu, flagged, values: {(phase, quantile_text): ms}}] from workload.ranks, by rank.

    Keys <phase>_p<q> in workload.unit (ms by default, s or us), or <phase>_p<q>_ms / _s / _us."""
    workload = _dict(results.get("workload"))
    ranks = workload.get("ranks")
    if isinstance(ranks, list):
        ranks = dict((str(_dict(r).get("rank", i)), r) for i, r in enumerate(ranks))
    flagged_list = set(str(r) for r in _list(workload.get("flagged")))
    default_scale = _TO_MS.get(str(workload.get("unit") or "ms"), 1.0)
    rows = []
    for rank, entry in _dict(ranks).items():
        entry = _dict(entry)
        values = {}
        for key, value in sorted(entry.items(), key=lambda item: str(item[0])):
            match = _QUANTILE_KEY.match(str(key))
            if match and is_number(value):
                scale = _TO_MS[match.group(3)] if match.group(3) else default_scale
                values.setdefault((match.group(1), match.group(2)), float(value) * scale)
        status = str(entry.get("status") or "").lower()
        flagged = bool(entry.get("flagged")) or str(rank) in flagged_list or status in BAD + _BAD_WORDS
        rows.append({"rank": str(rank), "node": _node_name(entry.get("node")), "gpu": entry.get("gpu"),
                     "flagged": flagged, "values": values})
    rows.sort(key=lambda r: natural_key(r["rank"]))
    return rows


def node_step_times(results):
    """{node: {"compute": ms, "sync": ms, "flagged": bool}}: the node's slowest rank's compute p50 and
    its sync p50, from workload.ranks, else from the workload stage's checks (metrics compute_p50_ms,
    sync_p50_ms)."""
    found = {}
    for row in rank_rows(results):
        entry = found.setdefault(row["node"], {"compute": None, "sync": None, "flagged": False})
        for phase in ("compute", "sync"):
            value = row["values"].get((phase, "50"))
            if value is not None and (entry[phase] is None or value > entry[phase]):
                entry[phase] = value
        entry["flagged"] = entry["flagged"] or row["flagged"]
    if found:
        return found
    for check in _list(results.get("checks")):
        check = _dict(check)
        metrics = _dict(check.get("metrics"))
        if check.get("stage") != "workload" or not is_number(metrics.get("compute_p50_ms")):
            continue
        entry = found.setdefault(_node_name(check.get("node")), {"compute": None, "sync": None, "flagged": False})
        for phase in ("compute", "sync"):
            value = metrics.get("%s_p50_ms" % phase)
            if is_number(value) and (entry[phase] is None or value > entry[phase]):
                entry[phase] = float(value)
        entry["flagged"] = entry["flagged"] or check.get("status") in BAD
    return found


def _baseline_items(entry):
    """[(metric, delta_pct or None, text)] of one node's baseline entry: each metric a dict with
    delta_pct, rel_diff (a fraction), ratio, value and baseline, or delta. Bare numbers are not
    read (a baseline document holds the values themselves, not changes)."""
    items = []
    for metric, value in sorted(_dict(entry).items()):
        if not isinstance(value, dict):
            continue
        delta = None
        for key in ("delta_pct", "delta_percent", "change_pct"):
            if is_number(value.get(key)):
                delta = float(value[key])
                break
        else:
            if is_number(value.get("rel_diff")):
                delta = 100.0 * value["rel_diff"]
            elif is_number(value.get("ratio")):
                delta = 100.0 * (value["ratio"] - 1.0)
            elif is_number(value.get("value")) and is_number(value.get("baseline")) and value["baseline"]:
                delta = 100.0 * (value["value"] - value["baseline"]) / value["baseline"]
        label = str(metric).replace("_", " ")
        if delta is not None:
            items.append((str(metric), delta, "%s %+.1f %%" % (label, delta)))
        elif is_number(value.get("delta")):
            items.append((str(metric), None, "%s %+g" % (label, value["delta"])))
    return items


def baseline_rows(results):
    """{node: [(metric, delta_pct or None, text)]} from the baseline section ({nodes: {node: {metric:
    {...}}}} or {node: {metric: {...}}}), else from the baseline stage's checks (metrics metric,
    rel_diff)."""
    baseline = _dict(results.get("baseline"))
    nodes = baseline.get("nodes") if isinstance(baseline.get("nodes"), dict) else baseline
    found = {}
    for node, entry in _dict(nodes).items():
        items = _baseline_items(entry) if isinstance(entry, dict) else []
        if items:
            found[str(node)] = items
    if found:
        return found
    per_node = {}
    for check in _list(results.get("checks")):
        check = _dict(check)
        metrics = _dict(check.get("metrics"))
        if check.get("stage") == "baseline" and is_number(metrics.get("rel_diff")):
            metric = metrics.get("metric") or str(check.get("check") or "").replace("baseline.", "", 1)
            per_node.setdefault(_node_name(check.get("node")), {})[str(metric)] = {"rel_diff": metrics["rel_diff"]}
    for node, entry in per_node.items():
        found[node] = _baseline_items(entry)
    return found


def _curve_of(text):
    """[(size, busbw)] from one nccl-tests output: out-of-place busbw, averaged per size."""
    sums = {}
    for row in _list(parse_nccl_tests(text).get("rows")):
        side = _dict(row.get("oop")) or _dict(row.get("ip"))
        if is_number(row.get("size")) and row["size"] > 0 and is_number(side.get("busbw")):
            total = sums.setdefault(row["size"], [0.0, 0])
            total[0] += side["busbw"]
            total[1] += 1
    return [(size, total[0] / total[1]) for size, total in sorted(sums.items())]


def nccl_curves(results, run_dir=None):
    """{node: [(bytes, GB/s)]}: results' nccl_curves ({node: [[bytes, GB/s], ...]} or {node: {bytes: GB/s}})
    when present, else parsed from raw/<node>/all_reduce_perf.txt under run_dir."""
    curves = {}
    given = results.get("nccl_curves")
    if not isinstance(given, dict):
        given = _dict(_dict(results.get("nccl")).get("curves"))
    for node, points in given.items():
        if isinstance(points, dict):
            points = list(points.items())
        clean = []
        for point in _list(points):
            if isinstance(point, (list, tuple)) and len(point) == 2:
                try:
                    size = float(point[0])
                except (TypeError, ValueError):
                    continue
                if size > 0 and is_number(point[1]):
                    clean.append((size, float(point[1])))
        if clean:
            curves[str(node)] = sorted(clean)
    if curves or not run_dir:
        return curves
    for node, tools in _dict(results.get("raw")).items():
        entry = _dict(_dict(tools).get(NCCL_TOOL))
        path = entry.get("path")
        if not isinstance(path, str) or not path:
            continue
        full = os.path.normpath(os.path.join(run_dir, path))
        if not full.startswith(os.path.normpath(run_dir) + os.sep) or not os.path.isfile(full):
            continue
        with open(full, "r", encoding="utf-8", errors="replace") as handle:
            points = _curve_of(handle.read())
        if points:
            curves[str(node)] = points
    return curves


# ------------------------------------------------------------------------------------ pieces of page

def _not_run(what):
    return '<p class="notrun">%s: not run (no such results in this run).</p>' % esc(what)


def _broken(what, error):
    return '<p class="broken">%s could not be drawn from this results.json: %s</p>' % (esc(what), esc(error))


def _status_cell(status):
    if not status:
        return '<td class="st none" title="not run">\u2014</td>'
    word = str(status)
    shown = word.upper() if word.lower() in BAD else word
    return '<td class="st %s">%s</td>' % (tone(word), esc(shown))


def _chip(text, status, title=None):
    return '<span class="chip %s"%s>%s</span>' % (
        tone(status), ' title="%s"' % esc(title) if title else "", esc(text))


def _parse_time(text):
    if not isinstance(text, str):
        return None
    try:
        value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def _header(results):
    run = _dict(results.get("run"))
    nodes = _dict(results.get("nodes"))
    checks = [_dict(c) for c in _list(results.get("checks"))]
    real_nodes = [n for n in nodes if n != "cluster"]
    bad = sorted((n for n, e in nodes.items() if _dict(e).get("status") in BAD), key=natural_key)
    word = str(results.get("verdict") or "unknown").lower()
    klass = word if word in ("pass", "fail") else "unknown"
    if bad:
        names = []
        for node in bad[:12]:
            stages = [s for s, st in sorted(_dict(_dict(nodes[node]).get("stages")).items()) if st in BAD]
            names.append("%s (%s)" % (node, ", ".join(stages)) if stages else node)
        why = "%d of %d node(s) failed: %s%s" % (len(bad), len(real_nodes), "; ".join(names),
                                                 " and %d more" % (len(bad) - 12) if len(bad) > 12 else "")
    elif word == "pass":
        why = "all %d node(s) passed every stage that ran" % len(real_nodes)
    elif not checks:
        why = "no check ran"
    else:
        why = "see the checks below"
    counts = {}
    for check in checks:
        counts[check.get("status")] = counts.get(check.get("status"), 0) + 1
    count_text = ", ".join("%d %s" % (counts[s], s) for s in ("pass", "fail", "error", "skip") if counts.get(s))
    started, finished = _parse_time(run.get("started")), _parse_time(run.get("finished"))
    took = ""
    if started and finished:
        took = " (%d s)" % round((finished - started).total_seconds())
    meta = "run <code>%s</code> &middot; %s &middot; started %s, finished %s%s" % (
        esc(run.get("id") or "?"), esc(run.get("playbook") or "playbook ?"), esc(run.get("started") or "?"),
        esc(run.get("finished") or "?"), esc(took))
    return ("<h1>GPU cluster acceptance</h1>\n<p class=\"meta\">%s</p>\n"
            "<div class=\"verdict %s\" id=\"verdict\"><span class=\"word\">%s</span><span class=\"why\">%s</span></div>\n"
            "<p class=\"counts\">%d node(s), %d check(s)%s</p>\n"
            % (meta, klass, esc(word.upper()), esc(why), len(real_nodes), len(checks),
               ": " + esc(count_text) if count_text else ""))


def _nav():
    links = (("nodes", "Nodes"), ("fabric", "Pairwise bandwidth"), ("curves", "NCCL curves"),
             ("workload", "Step times"), ("rounds", "Localisation rounds"))
    return "<nav>%s &middot; artifacts: %s</nav>\n" % (
        " ".join('<a href="#%s">%s</a>' % (anchor, text) for anchor, text in links),
        " ".join('<a href="%s">%s</a>' % (name, name) for name in ("results.json", "junit.xml", "metrics.prom", "raw/")))


def _node_table(results):
    nodes = _dict(results.get("nodes"))
    if not nodes:
        return _not_run("Per-node results")
    stages = stage_order(results)
    single = single_node_busbw(results)
    verdicts = fabric_verdicts(results)
    steps = node_step_times(results)
    baseline = baseline_rows(results)
    peers = median(single.values())
    has_steps = bool(steps)
    has_fabric = bool(verdicts)
    has_baseline = bool(baseline)
    metrics = set(m for items in baseline.values() for m, _d, _t in items)
    one_metric = metrics.pop() if len(metrics) == 1 else None
    order = {"error": 0, "fail": 1}
    names = sorted(nodes, key=lambda n: (order.get(_dict(nodes[n]).get("status"), 2), natural_key(n)))
    head = ["Node", "Result"] + ['<span title="%s">%s</span>' % (esc(s), esc(s.replace("_", " "))) for s in stages]
    head.append("Single-node busbw<br>GB/s")
    if has_fabric:
        head.append("Fabric")
    if has_steps:
        head.append("Step p50 ms<br>compute / sync")
    if has_baseline:
        head.append("vs baseline" + ("<br>%s" % esc(one_metric.replace("_", " ")) if one_metric else ""))
    head.append("Problems")
    out = ['<table id="nodes-table"><thead><tr>%s</tr></thead><tbody>' % "".join("<th>%s</th>" % h for h in head)]
    for node in names:
        entry = _dict(nodes[node])
        status = entry.get("status")
        cells = ['<td class="node">%s</td>' % esc(node), _status_cell(status)]
        node_stages = _dict(entry.get("stages"))
        cells.extend(_status_cell(node_stages.get(stage)) for stage in stages)
        value = single.get(node)
        slow = is_number(value) and is_number(peers) and value < SLOW_SHARE * peers
        cells.append('<td class="num%s">%s</td>' % (" fail" if slow else "", num(value)))
        if has_fabric:
            verdict = verdicts.get(node)
            cells.append(_status_cell(verdict["status"]) if verdict else _status_cell(None))
        if has_steps:
            step = steps.get(node)
            if step:
                text = "%s / %s" % (num(step["compute"]), num(step["sync"]))
                cells.append('<td class="num%s">%s</td>' % (" fail" if step["flagged"] else "", esc(text)))
            else:
                cells.append('<td class="num">\u2014</td>')
        if has_baseline:
            items = baseline.get(node) or []
            worse = any(d is not None and d <= -100 * (1 - SLOW_SHARE) for _m, d, _t in items)
            texts = [("%+.1f %%" % d) if one_metric and d is not None else t for _m, d, t in items]
            cells.append('<td class="num%s">%s</td>' % (" fail" if worse else "", "<br>".join(esc(t) for t in texts) or "\u2014"))
        problems = [str(p) for p in _list(entry.get("problems"))]
        if problems:
            shown = "".join("<li>%s</li>" % esc(p) for p in problems[:4])
            more = ""
            if len(problems) > 4:
                more = "<details><summary>%d more</summary><ul>%s</ul></details>" % (
                    len(problems) - 4, "".join("<li>%s</li>" % esc(p) for p in problems[4:]))
            cells.append('<td class="problems"><ul>%s</ul>%s</td>' % (shown, more))
        else:
            cells.append('<td class="problems"></td>')
        out.append('<tr class="%s" data-node="%s">%s</tr>' % ("bad" if status in BAD else "ok", esc(node), "".join(cells)))
    out.append("</tbody></table>")
    note = ('<p class="lead">Failed and errored nodes first. Stage cells: the worst check of the stage on '
            'that node (\u2014: the stage did not run there). Single-node busbw: all_reduce_perf on the '
            'node\'s own GPUs, large messages; red when more than %d %% below the peers\' median.%s</p>'
            % (round(100 * (1 - SLOW_SHARE)),
               " Step p50: the slowest rank of the node." if has_steps else ""))
    return note + "\n".join(out)


def _ramp(share):
    """RGB hex for a share of the reference bandwidth."""
    share = max(_RAMP[0][0], min(_RAMP[-1][0], share))
    for (low, low_rgb), (high, high_rgb) in zip(_RAMP, _RAMP[1:]):
        if share <= high:
            t = (share - low) / (high - low)
            rgb = [int(round(a + (b - a) * t)) for a, b in zip(low_rgb, high_rgb)]
            return "#%02x%02x%02x" % tuple(rgb)
    return "#%02x%02x%02x" % _RAMP[-1][1]


def _heatmap(results):
    fabric = results.get("fabric")
    matrix = pairwise(results)
    verdicts = fabric_verdicts(results)
    if not isinstance(fabric, dict) or not (matrix or verdicts):
        return _not_run("Fabric pairwise tests")
    names = set(matrix) | set(verdicts)
    for row in matrix.values():
        names.update(row)
    leaf = dict((n, str(verdicts.get(n, {}).get("leaf") or "")) for n in names)
    names = sorted(names, key=lambda n: (natural_key(leaf[n]), natural_key(n)))
    count = len(names)
    values = [v for row in matrix.values() for v in row.values() if is_number(v)]
    reference = fabric.get("reference") if is_number(fabric.get("reference")) else median(values)
    cell = max(4, min(30, 640 // max(count, 1)))
    font = max(7, min(12, cell - 2))
    marked = dict((n, verdicts[n]["status"].lower()) for n in names
                  if n in verdicts and tone(verdicts[n]["status"]) in ("fail", "error", "warn"))
    shown = dict((n, ("%s \u25b6 " % marked[n].upper() if n in marked else "") + _short(n)) for n in names)
    label_w = 20 + int(0.7 * font * max([len(t) for t in shown.values()] + [4]))
    top = 16 + int(0.87 * label_w)
    grid = cell * count
    legend_x = label_w + grid + 30
    width = legend_x + 190
    height = top + max(grid, 360) + 20
    svg = ['<svg id="heatmap" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img" aria-label="pairwise bus bandwidth">' % (width, height, width, height)]
    svg.append('<defs><linearGradient id="heatmap-ramp" x1="0" y1="1" x2="0" y2="0">%s</linearGradient></defs>'
               % "".join('<stop offset="%.3f" stop-color="%s"/>' % ((s - 0.5) / 0.5, _ramp(s)) for s, _rgb in _RAMP))
    every_cell = count <= MAX_EVERY_CELL
    if not every_cell:  # one grey square under the tested pairs keeps a big, sparse page small
        svg.append('<rect class="untested-background" x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                   % (label_w, top, grid, grid, NOT_TESTED))
    for i, first in enumerate(names):
        for j, second in enumerate(names):
            x, y = label_w + j * cell, top + i * cell
            value = matrix.get(first, {}).get(second)
            if not every_cell and not is_number(value):
                continue
            if i == j:
                fill, title, klass = "#ffffff", "%s" % first, "cell diag"
            elif is_number(value):
                share = value / reference if reference else 1.0
                fill = _ramp(share)
                title = "%s \u2194 %s: %.1f GB/s (%d %% of the median)" % (first, second, value, round(100 * share))
                klass = "cell low" if share < SLOW_SHARE else "cell"
            else:
                fill, title, klass = NOT_TESTED, "%s \u2194 %s: not tested" % (first, second), "cell untested"
            svg.append('<rect class="%s" x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ffffff" '
                       'stroke-width="%s" data-a="%s" data-b="%s"%s><title>%s</title></rect>'
                       % (klass, x, y, cell, cell, fill, "0.5" if cell > 6 else "0", esc(first), esc(second),
                          ' data-busbw="%.2f"' % value if is_number(value) else "", esc(title)))
    # leaf boundaries
    for i in range(1, count):
        if leaf[names[i]] != leaf[names[i - 1]]:
            pos = i * cell
            svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#1f2328" stroke-width="1.5"/>'
                       % (label_w, top + pos, label_w + grid, top + pos))
            svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#1f2328" stroke-width="1.5"/>'
                       % (label_w + pos, top, label_w + pos, top + grid))
    for i, name in enumerate(names):
        status = marked.get(name)
        colour = "#a40e26" if status and tone(status) != "warn" else ("#7d4e00" if status else "#1f2328")
        weight = "700" if status else "400"
        text = shown[name]
        mid = i * cell + cell / 2.0
        if cell >= 7:
            svg.append('<text class="row-label%s" x="%d" y="%.1f" font-size="%d" text-anchor="end" '
                       'dominant-baseline="middle" fill="%s" font-weight="%s">%s</text>'
                       % (" marked" if status else "", label_w - 6, top + mid, font, colour, weight, esc(text)))
            svg.append('<text class="col-label%s" transform="translate(%.1f,%d) rotate(-60)" font-size="%d" '
                       'dominant-baseline="middle" fill="%s" font-weight="%s">%s</text>'
                       % (" marked" if status else "", label_w + mid, top - 6, font, colour, weight, esc(text)))
        if status:
            dash = ' stroke-dasharray="4 3"' if tone(status) == "warn" else ""
            svg.append('<rect class="outline" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#1f2328" '
                       'stroke-width="2.5"%s><title>%s: %s</title></rect>'
                       % (label_w, top + i * cell, grid, cell, dash, esc(name), esc(status)))
            svg.append('<rect class="outline" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#1f2328" '
                       'stroke-width="2.5"%s/>' % (label_w + i * cell, top, cell, grid, dash))
    # legend
    bar_h = max(120, min(grid, 260))
    svg.append('<text x="%d" y="%d" font-size="12" font-weight="600">busbw, GB/s</text>' % (legend_x, top - 10))
    svg.append('<rect x="%d" y="%d" width="18" height="%d" fill="url(#heatmap-ramp)" stroke="#8c959f"/>'
               % (legend_x, top, bar_h))
    if reference:
        for share in _RAMP_TICKS:
            y = top + bar_h - (share - 0.5) / 0.5 * bar_h
            svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#57606a"/>' % (legend_x + 18, y, legend_x + 23, y))
            svg.append('<text x="%d" y="%.1f" font-size="11" dominant-baseline="middle">%.0f (%d %%)</text>'
                       % (legend_x + 26, y, share * reference, round(100 * share)))
    y = top + bar_h + 22
    svg.append('<rect x="%d" y="%d" width="18" height="14" fill="%s" stroke="#8c959f"/><text x="%d" y="%d" font-size="11">not tested</text>'
               % (legend_x, y, NOT_TESTED, legend_x + 26, y + 11))
    svg.append('<rect x="%d" y="%d" width="18" height="14" fill="none" stroke="#1f2328" stroke-width="2.5"/>'
               '<text x="%d" y="%d" font-size="11">pinned / failed node</text>' % (legend_x, y + 22, legend_x + 26, y + 33))
    svg.append('<rect x="%d" y="%d" width="18" height="14" fill="none" stroke="#1f2328" stroke-width="2.5" '
               'stroke-dasharray="4 3"/><text x="%d" y="%d" font-size="11">suspect node</text>'
               % (legend_x, y + 44, legend_x + 26, y + 55))
    svg.append("</svg>")
    tested = sum(1 for i, a in enumerate(names) for b in names[i + 1:] if is_number(matrix.get(a, {}).get(b)))
    lead = ('<p class="lead">Bus bandwidth of each pair of nodes tested together (all_reduce_perf across the '
            'network); %d of %d pairs tested%s. Colour: share of the median of all pairs%s. A slow node shows as '
            'a red row and column; nodes the localisation pinned are outlined and named on the axes.'
            '%s</p>' % (tested, count * (count - 1) // 2,
                        ", mode %s" % esc(fabric.get("mode")) if fabric.get("mode") else "",
                        " (%.0f GB/s)" % reference if reference else "",
                        " Thick lines separate leaves." if len(set(leaf.values())) > 1 else ""))
    return lead + '<div class="figure">%s</div>' % "".join(svg) + _verdict_list(verdicts) + _uplink_list(fabric)


def _uplink_list(fabric):
    """Leaf uplinks the localisation did not clear (fabric.uplinks: {leaf: {status|verdict, evidence}})."""
    items = []
    for leaf, entry in sorted(_dict(fabric.get("uplinks")).items(), key=lambda item: natural_key(item[0])):
        entry = _dict(entry)
        status = str(entry.get("status") or entry.get("verdict") or "unknown")
        if tone(status) in ("fail", "error", "warn"):
            evidence = entry.get("evidence")
            first = evidence if isinstance(evidence, str) else (_list(evidence) or [""])[0]
            items.append("<li>%s leaf %s uplink: %s</li>" % (_chip(status, status), esc(leaf), esc(first)))
    return '<ul class="evidence">%s</ul>' % "".join(items) if items else ""


def _verdict_list(verdicts):
    if not verdicts:
        return ""
    marked = sorted((n for n, v in verdicts.items() if tone(v["status"]) != "pass"),
                    key=lambda n: (tone(verdicts[n]["status"]) != "fail", natural_key(n)))
    counts = {}
    for entry in verdicts.values():
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    out = ['<p class="evidence">Fabric verdicts: %s</p>' % ", ".join(
        _chip("%d %s" % (counts[s], s), s) for s in sorted(counts))]
    if marked:
        out.append('<ul class="evidence">')
        for node in marked[:20]:
            entry = verdicts[node]
            lines = entry["evidence"] or ["(no evidence recorded)"]
            rest = ""
            if len(lines) > 1:
                rest = "<details><summary>%d test(s)</summary><ul>%s</ul></details>" % (
                    len(lines) - 1, "".join("<li>%s</li>" % esc(line) for line in lines[1:]))
            out.append("<li>%s %s%s</li>" % (_chip(entry["status"], entry["status"]), esc(lines[0]), rest))
        out.append("</ul>")
    return "\n".join(out)


def _axis_y(svg, left, top, width, height, axis, label, fmt=_fmt_tick):
    top_value, step = axis
    for value in _ticks(top_value, step):
        y = top + height - value / top_value * height
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eaeef2"/>' % (left, y, left + width, y))
        svg.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" dominant-baseline="middle" '
                   'fill="#57606a">%s</text>' % (left - 6, y, fmt(value)))
    svg.append('<text transform="translate(%d,%.1f) rotate(-90)" font-size="12" text-anchor="middle" '
               'fill="#1f2328">%s</text>' % (left - 46, top + height / 2.0, esc(label)))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>' % (left, top, left, top + height))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>'
               % (left, top + height, left + width, top + height))


def _curves(results, run_dir):
    curves = nccl_curves(results, run_dir)
    if not curves:
        if "nccl_single_node" in stage_order(results) and not run_dir:
            return ('<p class="notrun">Curves not drawn: the raw nccl-tests outputs were not given '
                    '(render with the run directory).</p>')
        return _not_run("NCCL single-node tests")
    single = single_node_busbw(results)
    nodes = _dict(results.get("nodes"))
    large = dict((n, single.get(n, pts[-1][1])) for n, pts in curves.items())
    peers = median(large.values())
    slow = set(n for n, v in large.items()
               if (is_number(peers) and v < SLOW_SHARE * peers)
               or _dict(_dict(nodes.get(n)).get("stages")).get("nccl_single_node") in BAD)
    sizes = sorted(set(s for pts in curves.values() for s, _v in pts))
    low_x, high_x = math.log(sizes[0], 2), math.log(sizes[-1], 2)
    if high_x - low_x < 1:
        low_x, high_x = low_x - 0.5, high_x + 0.5
    axis = _nice_max(max(v for pts in curves.values() for _s, v in pts) * 1.04)
    top_value = axis[0]
    left, top, width, height = 70, 20, 820, 330
    total_w, total_h = left + width + 170, top + height + 50

    def x_of(size):
        return left + (math.log(size, 2) - low_x) / (high_x - low_x) * width

    def y_of(value):
        return top + height - max(0.0, min(value, top_value)) / top_value * height

    svg = ['<svg id="busbw-curves" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img" aria-label="busbw against message size">' % (total_w, total_h, total_w, total_h)]
    _axis_y(svg, left, top, width, height, axis, "busbw, GB/s")
    step = max(1, int(math.ceil(len(sizes) / 14.0)))
    for k, size in enumerate(sizes):
        x = x_of(size)
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#8c959f"/>' % (x, top + height, x, top + height + 4))
        if k % step == 0:
            svg.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#57606a">%s</text>'
                       % (x, top + height + 17, _size_label(size)))
    svg.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">message size, bytes (log2 scale)</text>'
               % (left + width // 2, top + height + 38))
    ordered = sorted(curves, key=lambda n: (n in slow, natural_key(n)))
    for node in ordered:
        points = " ".join("%.1f,%.1f" % (x_of(s), y_of(v)) for s, v in curves[node])
        is_slow = node in slow
        svg.append('<polyline class="curve%s" data-node="%s" points="%s" fill="none" stroke="%s" stroke-width="%s" '
                   'stroke-opacity="%s"><title>%s: %s GB/s at the largest size</title></polyline>'
                   % (" slow" if is_slow else "", esc(node), points, SLOW_LINE if is_slow else HEALTHY_LINE,
                      "3" if is_slow else "1.3", "1" if is_slow else "0.55", esc(node), num(curves[node][-1][1])))
    # median of all nodes per size
    per_size = {}
    for pts in curves.values():
        for size, value in pts:
            per_size.setdefault(size, []).append(value)
    if len(curves) > 2:
        points = " ".join("%.1f,%.1f" % (x_of(s), y_of(median(v))) for s, v in sorted(per_size.items()))
        svg.append('<polyline points="%s" fill="none" stroke="#1f2328" stroke-width="1.5" stroke-dasharray="6 4"/>' % points)
    legend_y = top + 8
    # labels at the right end, slow nodes first, spread so they do not overlap
    labels = sorted(((y_of(curves[n][-1][1]), n) for n in slow), key=lambda t: t[0])
    last = legend_y + 44
    for y, node in labels[:12]:
        y = max(y, last + 13)
        last = y
        svg.append('<text class="curve-label" x="%d" y="%.1f" font-size="12" font-weight="700" fill="%s" '
                   'dominant-baseline="middle">%s</text>' % (left + width + 8, y, SLOW_LINE, esc(node)))
    legend = (("healthy nodes (%d)" % (len(curves) - len(slow)), HEALTHY_LINE, "1.5", ""),
              ("median", "#1f2328", "1.5", ' stroke-dasharray="6 4"'),
              ("slow (%d)" % len(slow), SLOW_LINE, "3", ""))
    for k, (text, colour, stroke, dash) in enumerate(legend):
        y = legend_y + 18 * k
        svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>'
                   '<text x="%d" y="%d" font-size="11">%s</text>'
                   % (left + width + 8, y, left + width + 30, y, colour, stroke, dash, left + width + 34, y + 4, esc(text)))
    svg.append("</svg>")
    lead = ('<p class="lead">all_reduce_perf on each node\'s own GPUs: out-of-place bus bandwidth at each '
            'message size, one line per node. Red: nodes more than %d %% below the median at large messages '
            'or failing the stage%s.</p>' % (round(100 * (1 - SLOW_SHARE)), (": " + ", ".join(
                esc(n) for n in sorted(slow, key=natural_key))) if slow else " (none)"))
    return lead + '<div class="figure">%s</div>' % "".join(svg)


def _step_panel(svg, rows, phase, left, top, width, height, unit):
    present = [r for r in rows if (phase, "50") in r["values"]]
    values = [v for r in present for (p, _q), v in r["values"].items() if p == phase]
    axis = _nice_max(max(values) * 1.05 if values else 1.0)
    top_value = axis[0]
    _axis_y(svg, left, top, width, height, axis, "%s, %s" % (phase, unit))
    count = len(rows)
    slot = width / float(max(count, 1))
    position = dict((r["rank"], i) for i, r in enumerate(rows))

    def y_of(value):
        return top + height - max(0.0, min(value, top_value)) / top_value * height

    mid = median(r["values"][(phase, "50")] for r in present)
    for row in present:
        x = left + (position[row["rank"]] + 0.5) * slot
        vals = row["values"]
        p50 = vals[(phase, "50")]
        hi_keys = sorted((float(q), q) for (p, q) in vals if p == phase)
        p_top = vals[(phase, hi_keys[-1][1])]
        box_q = [q for _f, q in hi_keys if q not in ("50",)]
        box_top = vals[(phase, box_q[0])] if box_q else p50
        colour = SLOW_LINE if row["flagged"] else HEALTHY_LINE
        title = "rank %s (%s GPU %s) %s: %s" % (row["rank"], row["node"], row["gpu"], phase, ", ".join(
            "p%s %.2f" % (q, vals[(phase, q)]) for _f, q in hi_keys))
        box_w = max(1.0, min(8.0, slot * 0.6))
        svg.append('<g class="rank%s" data-rank="%s" data-node="%s"><title>%s</title>'
                   '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>'
                   '<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.35" stroke="%s" '
                   'stroke-width="0.6"/><circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/></g>'
                   % (" flagged" if row["flagged"] else "", esc(row["rank"]), esc(row["node"]), esc(title),
                      x, y_of(p50), x, y_of(p_top), colour,
                      x - box_w / 2, y_of(box_top), box_w, max(0.5, y_of(p50) - y_of(box_top)), colour, colour,
                      x, y_of(p50), max(1.2, min(3.0, slot / 2.5)), colour))
    if mid is not None:
        y = y_of(mid)
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#1f2328" stroke-dasharray="6 4"/>'
                   '<text x="%d" y="%.1f" font-size="11" dominant-baseline="middle">median p50 %.1f</text>'
                   % (left, y, left + width, y, left + width + 6, y, mid))
    # node boundaries and labels
    start = 0
    for i in range(1, count + 1):
        if i == count or rows[i]["node"] != rows[start]["node"]:
            if i < count:
                x = left + i * slot
                svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d0d7de"/>' % (x, top, x, top + height))
            span = (i - start) * slot
            flagged = any(r["flagged"] for r in rows[start:i])
            if span >= 34 or flagged:
                x = left + (start + i) / 2.0 * slot
                svg.append('<text class="node-label" transform="translate(%.1f,%d) rotate(-40)" font-size="10" '
                           'text-anchor="end" fill="%s" font-weight="%s">%s</text>'
                           % (x, top + height + 12, SLOW_LINE if flagged else "#57606a", "700" if flagged else "400",
                              esc(rows[start]["node"])))
            start = i


def _step_times(results):
    rows = rank_rows(results)
    if not isinstance(results.get("workload"), dict) or not rows:
        return _not_run("Workload (training-step) test")
    unit = "ms"
    phases = []
    for row in rows:
        for (phase, _q) in row["values"]:
            if phase not in phases:
                phases.append(phase)
    phases.sort(key=lambda p: ({"compute": 0, "sync": 1}.get(p, 2), p))
    left, width, height, gap = 70, 940, 190, 80
    total_h = 20 + len(phases) * (height + gap)
    svg = ['<svg id="step-times" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img" aria-label="step times per rank">' % (left + width + 140, total_h, left + width + 140, total_h)]
    for k, phase in enumerate(phases):
        _step_panel(svg, rows, phase, left, 20 + k * (height + gap), width, height, unit)
    svg.append("</svg>")
    flagged = sorted(set(r["node"] for r in rows if r["flagged"]), key=natural_key)
    lead = ('<p class="lead">Per rank (x: rank, grouped by node): dot = p50, box = p50 to p95, whisker to the '
            'highest quantile recorded. Compute is the rank\'s own work, sync the wait in the collective: a slow '
            'rank computes longer and its peers wait for it. %d rank(s) on %d node(s); flagged in red%s.</p>'
            % (len(rows), len(set(r["node"] for r in rows)),
               ": " + ", ".join(esc(n) for n in flagged) if flagged else " (none)"))
    return lead + '<div class="figure">%s</div>' % "".join(svg)


def _rounds(results):
    rounds = _list(_dict(results.get("fabric")).get("rounds"))
    if not rounds:
        return _not_run("Fabric localisation")
    out = ['<table id="rounds-table"><thead><tr><th>Round</th><th>Groups</th><th>Low / marginal</th>'
           '<th>Groups: nodes, busbw GB/s, status</th></tr></thead><tbody>']
    for number, entry in enumerate(rounds, 1):
        entry = _dict(entry)
        groups = [_dict(g) for g in _list(entry.get("groups"))]
        groups.sort(key=lambda g: ({"fail": 0, "error": 0, "warn": 1}.get(tone(g.get("status")), 2),
                                   natural_key(",".join(str(n) for n in _list(g.get("nodes"))))))
        chips = []
        bad = warn = 0
        for group in groups:
            status = str(group.get("status") or "unknown")
            bad += tone(status) in ("fail", "error")
            warn += tone(status) == "warn"
            text = "%s %s %s" % (" + ".join(str(n) for n in _list(group.get("nodes"))),
                                 num(group.get("busbw")) if is_number(group.get("busbw")) else "\u2014", status)
            chips.append(_chip(text, status))
        out.append('<tr><td class="num">%s</td><td class="num">%d</td><td class="num%s">%d / %d</td><td>%s</td></tr>'
                   % (esc(entry.get("round", number)), len(groups), " fail" if bad else "", bad, warn, " ".join(chips)))
    out.append("</tbody></table>")
    lead = ('<p class="lead">Each round runs disjoint groups at the same time; a group is as fast as its '
            'slowest member (and, across leaves, the slowest uplink). Low and marginal groups first.</p>')
    return lead + "\n".join(out)


def _section(anchor, title, builder, *args):
    try:
        body = builder(*args)
    except Exception as exc:  # pylint: disable=broad-except  # one bad section must not cost the page
        body = _broken(title, "%s: %s" % (type(exc).__name__, exc))
    return '<section id="%s">\n<h2>%s</h2>\n%s\n</section>\n' % (anchor, esc(title), body)


def render_html(results, run_dir=None):
    """The report page (str) for one results document; run_dir (the run's artifact directory) lets
    the busbw curves be read from raw/<node>/all_reduce_perf.txt when results has no nccl_curves."""
    results = results if isinstance(results, dict) else {}
    run = _dict(results.get("run"))
    title = "Acceptance %s: %s" % (str(results.get("verdict") or "unknown").upper(), run.get("id") or "run")
    try:
        header = _header(results)
    except Exception as exc:  # pylint: disable=broad-except
        header = "<h1>GPU cluster acceptance</h1>" + _broken("The verdict", exc)
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n" % (esc(title), _CSS),
        header,
        _nav(),
        _section("nodes", "Nodes", _node_table, results),
        _section("fabric", "Pairwise bandwidth (fabric)", _heatmap, results),
        _section("curves", "NCCL single-node: busbw against message size", _curves, results, run_dir),
        _section("workload", "Step times per rank (workload)", _step_times, results),
        _section("rounds", "Fabric localisation rounds", _rounds, results),
        "<footer>gpucluster.acceptance report, schema %s. Self-contained: nothing on this page is loaded "
        "from elsewhere.</footer>\n</body>\n</html>\n" % esc(results.get("schema", "?")),
    ]
    return "".join(parts)
