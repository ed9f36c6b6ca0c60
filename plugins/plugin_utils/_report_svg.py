# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's charts as inline SVG, each drawn from its section of the view (_report_view).

heatmap(fabric): node x node pairwise busbw, pinned nodes outlined; curves(curves): busbw against
message size; step_times(workload): per-rank step-time quantiles; rounds(rounds): every group of
every localisation round with its status. Inline SVG only (no script, no external reference);
every string from the run is escaped.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import html
import math

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_fabric import MARK_DASHED, MARK_NAMED, MARK_SOLID
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_read import is_number
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import median_or_none as median

HEALTHY_LINE = "#4c72b0"
SLOW_LINE = "#d1242f"
NOT_TESTED = "#e6e8eb"
OUTLINE = "#1f2328"
# Heatmap colour stops: share of the reference bandwidth -> RGB (red at half speed, green at full).
RAMP = ((0.5, (165, 0, 38)), (0.7, (215, 48, 39)), (0.85, (253, 174, 97)), (0.95, (217, 239, 139)),
        (1.0, (26, 152, 80)))
# Up to this many nodes the heatmap draws every cell (with its tooltip); above, only tested pairs.
MAX_EVERY_CELL = 128
# A cell below this share of the reference gets the class "low" (it is drawn in the red half).
LOW_SHARE = 0.9
# Localisation groups drawn one by one per round; above, the passing ones are drawn as one box.
MAX_GROUPS_DRAWN = 64
# Fill and text colour of a group box by its status.
GROUP_COLOURS = {
    "pass": ("#dafbe1", "#116329"), "marginal": ("#fff8c5", "#7d4e00"), "low": ("#ffebe9", "#a40e26"),
    "unstable": ("#ffebe9", "#a40e26"), "timeout": ("#ffebe9", "#a40e26"), "error": ("#fff1e5", "#953800"),
    "not_replayable": ("#f6f8fa", "#57606a"),
}
_MARK_WORD = {"pinned": "PINNED", "leaf": "LEAF FAULT", "suspect": "SUSPECT", "intermittent": "INTERMITTENT", "error": "ERROR"}


def esc(value):
    """HTML-escaped text of any value (quotes too, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def num(value, digits=1):
    return "%.*f" % (digits, value) if is_number(value) else "\u2014"


def short(name, limit=32):
    """A label no longer than limit characters (the full name stays in the tooltip)."""
    name = str(name)
    return name if len(name) <= limit else name[:limit - 1] + "\u2026"


def size_label(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return "%d%s" % (size // scale, unit)
    return "%dB" % size if size == int(size) else "%gB" % size


def nice_max(value):
    """(top, step): a round axis maximum at or above value and its tick step."""
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


def _fmt_tick(value):
    return ("%d" % value) if value == int(value) else ("%g" % round(value, 2))


def ramp(share):
    """RGB hex for a share of the reference bandwidth."""
    share = max(RAMP[0][0], min(RAMP[-1][0], share))
    for (low, low_rgb), (high, high_rgb) in zip(RAMP, RAMP[1:]):
        if share <= high:
            t = (share - low) / (high - low)
            return "#%02x%02x%02x" % tuple(int(round(a + (b - a) * t)) for a, b in zip(low_rgb, high_rgb))
    return "#%02x%02x%02x" % RAMP[-1][1]


def _axis_y(svg, left, top, width, height, axis, label):
    top_value, step = axis
    for i in range(int(round(top_value / step)) + 1):
        value = step * i
        y = top + height - value / top_value * height
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eaeef2"/>' % (left, y, left + width, y))
        svg.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end" dominant-baseline="middle" '
                   'fill="#57606a">%s</text>' % (left - 6, y, _fmt_tick(value)))
    svg.append('<text transform="translate(%d,%.1f) rotate(-90)" font-size="12" text-anchor="middle" '
               'fill="#1f2328">%s</text>' % (left - 46, top + height / 2.0, esc(label)))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>' % (left, top, left, top + height))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>'
               % (left, top + height, left + width, top + height))


# ------------------------------------------------------------------------------------ heatmap

def mark_label(fabric, node):
    """The axis label of a node: 'PINNED ▶ name' for a marked node, else the name (shortened)."""
    mark = fabric["marks"].get(node)
    if not mark:
        return short(node)
    verdict = (fabric["nodes"].get(node) or {}).get("verdict")
    word = _MARK_WORD.get(verdict, "PINNED" if mark == MARK_SOLID else str(verdict).upper())
    return "%s \u25b6 %s" % (word, short(node))


def heatmap(fabric):
    """<svg id="heatmap">: one cell per pair of fabric nodes, coloured by its share of the reference."""
    names, leaf, pairs, reference = fabric["names"], fabric["leaf"], fabric["pairs"], fabric["reference"]
    count = len(names)
    cell = max(4, min(30, 640 // max(count, 1)))
    font = max(7, min(12, cell - 2))
    shown = dict((n, mark_label(fabric, n)) for n in names)
    label_w = 20 + int(0.7 * font * max([len(t) for t in shown.values()] + [4]))
    top = 16 + int(0.87 * label_w)
    grid = cell * count
    legend_x = label_w + grid + 30
    width, height = legend_x + 190, top + max(grid, 360) + 20
    svg = ['<svg id="heatmap" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="pairwise bus '
           'bandwidth" data-nodes="%d" data-cell="%d">' % (width, height, width, height, count, cell)]
    svg.append('<defs><linearGradient id="heatmap-ramp" x1="0" y1="1" x2="0" y2="0">%s</linearGradient></defs>'
               % "".join('<stop offset="%.3f" stop-color="%s"/>' % ((s - 0.5) / 0.5, ramp(s)) for s, _rgb in RAMP))
    every_cell = count <= MAX_EVERY_CELL
    if not every_cell:  # one grey square under the tested pairs keeps a big, sparse page small
        svg.append('<rect class="untested-background" x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                   % (label_w, top, grid, grid, NOT_TESTED))
    if every_cell:
        cells = [(i, j) for i in range(len(names)) for j in range(len(names))]
    else:  # only the tested pairs: walking every cell of thousands of nodes is quadratic
        index = dict((n, i) for i, n in enumerate(names))
        cells = set()
        for (first, second), value in pairs.items():
            if first in index and second in index and first != second and is_number(value):
                cells.update(((index[first], index[second]), (index[second], index[first])))
        cells = sorted(cells)
    for i, j in cells:
        first, second = names[i], names[j]
        value = pairs.get(tuple(sorted((first, second)))) if i != j else None
        if i == j:
            fill, title, klass = "#ffffff", first, "cell diag"
        elif is_number(value):
            share = value / reference if reference else 1.0
            fill = ramp(share)
            title = "%s \u2194 %s: %.1f GB/s (%d %% of %s)" % (
                first, second, value, round(100 * share), fabric["reference_source"])
            klass = "cell low" if share < LOW_SHARE else "cell"
        else:
            fill, title, klass = NOT_TESTED, "%s \u2194 %s: not tested" % (first, second), "cell untested"
        svg.append('<rect class="%s" x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ffffff" '
                   'stroke-width="%s" data-a="%s" data-b="%s"%s><title>%s</title></rect>'
                   % (klass, label_w + j * cell, top + i * cell, cell, cell, fill, "0.5" if cell > 6 else "0",
                      esc(first), esc(second), ' data-busbw="%.2f"' % value if is_number(value) else "", esc(title)))
    for i in range(1, count):  # leaf boundaries
        if leaf[names[i]] != leaf[names[i - 1]]:
            pos = i * cell
            svg.append('<line class="leaf-boundary" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"/>'
                       '<line class="leaf-boundary" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"/>'
                       % (label_w, top + pos, label_w + grid, top + pos, OUTLINE,
                          label_w + pos, top, label_w + pos, top + grid, OUTLINE))
    for i, name in enumerate(names):
        mark = fabric["marks"].get(name)
        colour = "#a40e26" if mark in (MARK_SOLID, MARK_NAMED) else ("#7d4e00" if mark else "#1f2328")
        weight = "700" if mark else "400"
        mid = i * cell + cell / 2.0
        klass = " marked" if mark else ""
        if cell >= 7:
            svg.append('<text class="row-label%s" x="%d" y="%.1f" font-size="%d" text-anchor="end" '
                       'dominant-baseline="middle" fill="%s" font-weight="%s">%s</text>'
                       % (klass, label_w - 6, top + mid, font, colour, weight, esc(shown[name])))
            svg.append('<text class="col-label%s" transform="translate(%.1f,%d) rotate(-60)" font-size="%d" '
                       'dominant-baseline="middle" fill="%s" font-weight="%s">%s</text>'
                       % (klass, label_w + mid, top - 6, font, colour, weight, esc(shown[name])))
        if mark in (MARK_SOLID, MARK_DASHED):
            dash = ' stroke-dasharray="4 3"' if mark == MARK_DASHED else ""
            verdict = (fabric["nodes"].get(name) or {}).get("verdict") or "pinned"
            for x, y, w, h in ((label_w, top + i * cell, grid, cell), (label_w + i * cell, top, cell, grid)):
                svg.append('<rect class="outline %s" data-node="%s" x="%d" y="%d" width="%d" height="%d" fill="none" '
                           'stroke="%s" stroke-width="2.5"%s><title>%s: %s</title></rect>'
                           % (mark, esc(name), x, y, w, h, OUTLINE, dash, esc(name), esc(verdict)))
    bar_h = max(120, min(grid, 260))
    svg.append('<text x="%d" y="%d" font-size="12" font-weight="600">busbw, GB/s</text>' % (legend_x, top - 10))
    svg.append('<rect x="%d" y="%d" width="18" height="%d" fill="url(#heatmap-ramp)" stroke="#8c959f"/>'
               % (legend_x, top, bar_h))
    if reference:
        for share in (0.5, 0.7, 0.85, 0.95, 1.0):
            y = top + bar_h - (share - 0.5) / 0.5 * bar_h
            svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#57606a"/>'
                       '<text x="%d" y="%.1f" font-size="11" dominant-baseline="middle">%.0f (%d %%)</text>'
                       % (legend_x + 18, y, legend_x + 23, y, legend_x + 26, y, share * reference, round(100 * share)))
    y = top + bar_h + 22
    for k, (fill, stroke, dash, text) in enumerate((
            (NOT_TESTED, "#8c959f", "", "not tested"), ("none", OUTLINE, "", "pinned node"),
            ("none", OUTLINE, ' stroke-dasharray="4 3"', "suspect / intermittent"))):
        width_attr = ' stroke-width="2.5"' if fill == "none" else ""
        svg.append('<rect x="%d" y="%d" width="18" height="14" fill="%s" stroke="%s"%s%s/>'
                   '<text x="%d" y="%d" font-size="11">%s</text>'
                   % (legend_x, y + 22 * k, fill, stroke, width_attr, dash, legend_x + 26, y + 22 * k + 11, text))
    svg.append("</svg>")
    return "".join(svg)


# ------------------------------------------------------------------------------------ curves

def curves(view):
    """<svg id="busbw-curves">: busbw against message size (log2), one line per node, the median dashed."""
    lines, slow, sizes = view["lines"], set(view["slow"]), view["sizes"]
    low_x, high_x = math.log(sizes[0], 2), math.log(sizes[-1], 2)
    if high_x - low_x < 1:
        low_x, high_x = low_x - 0.5, high_x + 0.5
    axis = nice_max(max(v for pts in lines.values() for _s, v in pts) * 1.04)
    top_value = axis[0]
    left, top, width, height = 70, 20, 820, 330
    total_w, total_h = left + width + 170, top + height + 50

    def x_of(size):
        return left + (math.log(size, 2) - low_x) / (high_x - low_x) * width

    def y_of(value):
        return top + height - max(0.0, min(value, top_value)) / top_value * height

    svg = ['<svg id="busbw-curves" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
           'aria-label="busbw against message size">' % (total_w, total_h, total_w, total_h)]
    _axis_y(svg, left, top, width, height, axis, "busbw, GB/s")
    step = max(1, int(math.ceil(len(sizes) / 14.0)))
    for k, size in enumerate(sizes):
        x = x_of(size)
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#8c959f"/>' % (x, top + height, x, top + height + 4))
        if k % step == 0:
            svg.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#57606a">%s</text>'
                       % (x, top + height + 17, size_label(size)))
    svg.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">message size, bytes (log2 scale)</text>'
               % (left + width // 2, top + height + 38))
    for node in sorted(lines, key=lambda n: (n in slow, natural_key(n))):
        is_slow = node in slow
        svg.append('<polyline class="curve%s" data-node="%s" points="%s" fill="none" stroke="%s" stroke-width="%s" '
                   'stroke-opacity="%s"><title>%s: %s GB/s at the largest size</title></polyline>'
                   % (" slow" if is_slow else "", esc(node), " ".join("%.1f,%.1f" % (x_of(s), y_of(v)) for s, v in lines[node]),
                      SLOW_LINE if is_slow else HEALTHY_LINE, "3" if is_slow else "1.3", "1" if is_slow else "0.55",
                      esc(node), num(lines[node][-1][1])))
    if view["median"]:
        svg.append('<polyline class="median" points="%s" fill="none" stroke="#1f2328" stroke-width="1.5" '
                   'stroke-dasharray="6 4"/>' % " ".join("%.1f,%.1f" % (x_of(s), y_of(v)) for s, v in view["median"]))
    legend_y = top + 8
    last = legend_y + 44
    for y, node in sorted((y_of(lines[n][-1][1]), n) for n in slow)[:12]:  # labels spread so they never overlap
        y = max(y, last + 13)
        last = y
        svg.append('<text class="curve-label" x="%d" y="%.1f" font-size="12" font-weight="700" fill="%s" '
                   'dominant-baseline="middle">%s</text>' % (left + width + 8, y, SLOW_LINE, esc(node)))
    for k, (text, colour, stroke, dash) in enumerate((
            ("passed (%d)" % (len(lines) - len(slow)), HEALTHY_LINE, "1.5", ""),
            ("median", "#1f2328", "1.5", ' stroke-dasharray="6 4"'), ("stage failed (%d)" % len(slow), SLOW_LINE, "3", ""))):
        y = legend_y + 18 * k
        svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>'
                   '<text x="%d" y="%d" font-size="11">%s</text>'
                   % (left + width + 8, y, left + width + 30, y, colour, stroke, dash, left + width + 34, y + 4, esc(text)))
    svg.append("</svg>")
    return "".join(svg)


# ------------------------------------------------------------------------------------ step times

def _step_panel(svg, rows, phase, left, top, width, height):
    present = [r for r in rows if (phase, "50") in r["values"]]
    drawn = set(id(r) for r in present)  # (a list lookup per row is quadratic at thousands of ranks)
    values = [v for r in present for (p, _q), v in r["values"].items() if p == phase]
    axis = nice_max(max(values) * 1.05 if values else 1.0)
    top_value = axis[0]
    _axis_y(svg, left, top, width, height, axis, "%s, ms" % phase)
    count = len(rows)
    slot = width / float(max(count, 1))

    def y_of(value):
        return top + height - max(0.0, min(value, top_value)) / top_value * height

    for index, row in enumerate(rows):
        if id(row) not in drawn:
            continue
        x = left + (index + 0.5) * slot
        vals = row["values"]
        p50 = vals[(phase, "50")]
        quantiles = sorted((float(q), q) for (p, q) in vals if p == phase)
        p_top = vals[(phase, quantiles[-1][1])]
        above = [q for f, q in quantiles if f > 50]
        box_top = vals[(phase, above[0])] if above else p50
        colour = SLOW_LINE if row["flagged"] else HEALTHY_LINE
        title = "rank %s (%s GPU %s) %s: %s ms" % (row["rank"], row["node"], "?" if row["gpu"] is None else row["gpu"],
                                                   phase, ", ".join("p%s %.2f" % (q, vals[(phase, q)]) for _f, q in quantiles))
        box_w = max(1.0, min(8.0, slot * 0.6))
        svg.append('<g class="rank%s" data-rank="%s" data-node="%s" data-phase="%s"><title>%s</title>'
                   '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>'
                   '<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.35" stroke="%s" '
                   'stroke-width="0.6"/><circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/></g>'
                   % (" flagged" if row["flagged"] else "", row["rank"], esc(row["node"]), esc(phase), esc(title),
                      x, y_of(p50), x, y_of(p_top), colour, x - box_w / 2, y_of(box_top), box_w,
                      max(0.5, y_of(p50) - y_of(box_top)), colour, colour, x, y_of(p50), max(1.2, min(3.0, slot / 2.5)), colour))
    mid = median(r["values"][(phase, "50")] for r in present)
    if mid is not None:
        y = y_of(mid)
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#1f2328" stroke-dasharray="6 4"/>'
                   '<text x="%d" y="%.1f" font-size="11" dominant-baseline="middle">median p50 %.1f</text>'
                   % (left, y, left + width, y, left + width + 6, y, mid))
    start = 0
    for i in range(1, count + 1):  # node boundaries and labels
        if i == count or rows[i]["node"] != rows[start]["node"]:
            if i < count:
                x = left + i * slot
                svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d0d7de"/>' % (x, top, x, top + height))
            flagged = any(r["flagged"] for r in rows[start:i])
            if (i - start) * slot >= 34 or flagged:
                svg.append('<text class="node-label%s" transform="translate(%.1f,%d) rotate(-40)" font-size="10" '
                           'text-anchor="end" fill="%s" font-weight="%s">%s</text>'
                           % (" flagged" if flagged else "", left + (start + i) / 2.0 * slot, top + height + 12,
                              SLOW_LINE if flagged else "#57606a", "700" if flagged else "400", esc(rows[start]["node"])))
            start = i


def step_times(view):
    """<svg id="step-times">: one panel per phase, one mark per rank (dot p50, box to p95, whisker to the top)."""
    rows, phases = view["rows"], view["phases"]
    left, width, height, gap = 70, 940, 190, 80
    total_w, total_h = left + width + 140, 20 + len(phases) * (height + gap)
    svg = ['<svg id="step-times" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="step times per rank">'
           % (total_w, total_h, total_w, total_h)]
    for k, phase in enumerate(phases):
        _step_panel(svg, rows, phase, left, 20 + k * (height + gap), width, height)
    svg.append("</svg>")
    return "".join(svg)


# ------------------------------------------------------------------------------------ rounds

_BAD_FIRST = {"low": 0, "timeout": 0, "unstable": 1, "error": 1, "marginal": 2, "not_replayable": 3, "pass": 4}


def rounds(view):
    """<svg id="rounds-chart">: a row per round, a box per group (its nodes, busbw and status)."""
    box_w, box_h, gap, per_line, left = 176, 40, 6, 6, 78
    lines = []  # (round number, [group or ("summary", count)], first line of the round)
    for entry in view["rounds"]:
        groups = sorted(entry["groups"], key=lambda g: (_BAD_FIRST.get(g["status"], 5), natural_key(" ".join(g["nodes"]))))
        items = list(groups)
        if len(groups) > MAX_GROUPS_DRAWN:
            shown = [g for g in groups if g["status"] != "pass"][:MAX_GROUPS_DRAWN]
            items = shown + [{"summary": len(groups) - len(shown)}]
        for start in range(0, max(len(items), 1), per_line):
            lines.append((entry["round"], items[start:start + per_line], start == 0))
    width = left + per_line * (box_w + gap)
    height = 10 + len(lines) * (box_h + gap) + 10
    svg = ['<svg id="rounds-chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
           'aria-label="localisation rounds and their groups">' % (width, height, width, height)]
    for k, (number, items, first) in enumerate(lines):
        y = 10 + k * (box_h + gap)
        if first:
            svg.append('<text class="round-label" x="4" y="%d" font-size="12" font-weight="600">round %d</text>'
                       % (y + box_h // 2 + 4, number))
        for j, group in enumerate(items):
            x = left + j * (box_w + gap)
            if "summary" in group:
                svg.append('<g class="group-summary" data-round="%d" data-count="%d"><rect x="%d" y="%d" width="%d" '
                           'height="%d" rx="4" fill="%s" stroke="#8c959f"/><text x="%d" y="%d" font-size="11" fill="%s">'
                           '+ %d more group(s), all passed</text></g>'
                           % (number, group["summary"], x, y, box_w, box_h, GROUP_COLOURS["pass"][0], x + 6, y + 24,
                              GROUP_COLOURS["pass"][1], group["summary"]))
                continue
            fill, ink = GROUP_COLOURS.get(group["status"], ("#f6f8fa", "#57606a"))
            names = group["nodes"]
            label = " + ".join(short(n, 14) for n in names) if len(names) <= 2 else "%s + %d more" % (short(names[0], 14), len(names) - 1)
            value = ("%s GB/s" % num(group["busbw"])) if is_number(group["busbw"]) else "no busbw"
            title = "round %d: %s: %s, %s%s" % (number, ", ".join(names), value, group["status"].replace("_", " "),
                                                ("; " + group["note"]) if group["note"] else "")
            stroke = ' stroke="%s" stroke-width="2"' % ink if group["status"] != "pass" else ' stroke="#8c959f"'
            svg.append('<g class="group %s" data-round="%d" data-status="%s" data-nodes="%s"><title>%s</title>'
                       '<rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s"%s/>'
                       '<text x="%d" y="%d" font-size="11" fill="#1f2328">%s</text>'
                       '<text x="%d" y="%d" font-size="11" font-weight="600" fill="%s">%s \u00b7 %s</text></g>'
                       % (esc(group["status"]), number, esc(group["status"]), esc(" ".join(names)), esc(title),
                          x, y, box_w, box_h, fill, stroke, x + 6, y + 16, esc(label), x + 6, y + 32, ink, esc(value),
                          esc(group["status"].replace("_", " "))))
    svg.append("</svg>")
    return "".join(svg)
