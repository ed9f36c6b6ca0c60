# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA pair stage in the report and the metrics: drawn from results.json's ``rdma`` block
(plugins/module_utils/_rdma.py _document, schema $defs/rdma) and the rdma stage's checks; one
truth, the document the callback validated."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_svg import esc

STAGE = "rdma"
SHOWN = 64


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value):
    return "%.0f" % value if _number(value) else "-"


def rdma_view(document):
    """None when the stage did not run; else {state, ...}: "not_kept" (it ran, no block), "ok"."""
    block = document.get("rdma")
    stages = document.get("stages") if isinstance(document.get("stages"), list) else []
    checks = [c for c in document.get("checks") or [] if isinstance(c, dict) and c.get("stage") == STAGE]
    if not isinstance(block, dict):
        if STAGE in stages:
            return {"state": "not_kept", "text": "the rdma stage ran (%d check(s)) but this results.json has no "
                                                 "rdma block" % len(checks)}
        return None
    rails = []
    for key, rail in sorted((block.get("rails") or {}).items(), key=lambda item: natural_key(item[0])):
        if not isinstance(rail, dict):
            continue
        values = sorted(v for row in (rail.get("matrix") or {}).values() if isinstance(row, dict)
                        for v in row.values() if _number(v))
        rails.append({"rail": key, "rate": rail.get("rate"), "floor": rail.get("floor"),
                      "tests": len(values) // 2, "lowest": values[0] if values else None,
                      "highest": values[-1] if values else None,
                      "pinned": list(rail.get("pinned") or []), "suspects": list(rail.get("suspects") or []),
                      "intermittent": list(rail.get("intermittent") or []),
                      "leaf_faults": list(rail.get("leaf_faults") or [])})
    problems = sorted((c for c in checks if c.get("status") in BAD),
                      key=lambda c: (natural_key(str(c.get("node"))), (c.get("metrics") or {}).get("rail") or 0))
    return {"state": "ok", "status": block.get("status"), "tool": block.get("tool"),
            "gpudirect": bool(block.get("gpudirect")), "replayed": bool(block.get("replayed")),
            "min_fraction": block.get("min_fraction"), "error": block.get("error") if isinstance(block.get("error"), dict) else None,
            "rounds": len(block.get("rounds") or []), "rails": rails, "problems": problems,
            "nics": sum(len(v) for v in (block.get("nics") or {}).values() if isinstance(v, dict)),
            "passed": sum(1 for c in checks if c.get("status") == "pass")}


def render_rdma(view):
    if view["state"] != "ok":
        return '<p class="notkept">%s.</p>' % esc(view["text"][:1].upper() + view["text"][1:])
    facts = "%s between node pairs, NIC k to NIC k on each rail%s: %d NIC(s) judged, %d passed, %d round(s)%s." % (
        view["tool"] or "perftest", ", buffers on the GPU nearest each NIC (GPUDirect)" if view["gpudirect"] else "",
        view["nics"], view["passed"], view["rounds"], "; replayed from captured outputs" if view["replayed"] else "")
    parts = ["<p>%s</p>" % esc(facts)]
    if view["error"]:
        parts.append('<p class="bad">The stage could not run (%s): %s</p>' % (
            esc(view["error"].get("component")), esc(view["error"].get("message"))))
    if view["rails"]:
        rows = []
        for rail in view["rails"]:
            bad = rail["pinned"] or rail["suspects"] or rail["intermittent"] or rail["leaf_faults"]
            rows.append('<tr%s><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>' % (
                ' class="bad"' if bad else "", esc(rail["rail"]), _fmt(rail["rate"]), _fmt(rail["floor"]), rail["tests"],
                _fmt(rail["lowest"]), _fmt(rail["highest"]),
                esc(", ".join(["%s (pinned)" % n for n in rail["pinned"]] + ["%s (intermittent)" % n for n in rail["intermittent"]]
                              + ["leaf %s (leaf fault)" % n for n in rail["leaf_faults"]]
                              + ["%s (suspect)" % n for n in rail["suspects"]]) or "none")))
        parts.append('<table class="rdma-rails"><tr><th>rail</th><th>port rate Gb/s</th><th>floor Gb/s</th>'
                     '<th>pair tests</th><th>lowest Gb/s</th><th>highest Gb/s</th><th>slow NICs</th></tr>%s</table>'
                     % "".join(rows))
    if view["problems"]:
        items = "".join('<li><b>%s</b> %s</li>' % (esc(c.get("status")), esc(c.get("message")))
                        for c in view["problems"][:SHOWN])
        more = len(view["problems"]) - SHOWN
        tail = "<p>and %d more in results.json</p>" % more if more > 0 else ""
        parts.append('<ul class="rdma-problems">%s</ul>%s' % (items, tail))
    return "\n".join(parts)


def rdma_families(document, family):
    """Metric families of the RDMA pair stage (``family`` is _prometheus.Family): per NIC its
    lowest measured Gb/s and whether it was pinned, per rail the floor."""
    block = document.get("rdma")
    if not isinstance(block, dict):
        return []
    lowest = family("rdma_nic_lowest_gbits", "gauge", "Lowest perftest bandwidth (Gb/s) measured on the NIC in any pair.")
    slow = family("rdma_nic_slow", "gauge", "1 when the RDMA pair stage pinned the NIC (or left it a suspect), else 0.")
    floor = family("rdma_rail_floor_gbits", "gauge", "The rail's floor: the profile's share of the ports' rate, Gb/s.")
    for rail, entry in sorted((block.get("rails") or {}).items(), key=lambda item: natural_key(item[0])):
        if not isinstance(entry, dict):
            continue
        floor.add(entry.get("floor"), rail=rail)
        bad = set(entry.get("pinned") or []) | set(entry.get("suspects") or []) | set(entry.get("intermittent") or [])
        for node, row in sorted((entry.get("matrix") or {}).items(), key=lambda item: natural_key(item[0])):
            nic = next((name for name, value in ((block.get("nics") or {}).get(node) or {}).items()
                        if isinstance(value, dict) and str(value.get("rail")) == str(rail)), None)
            values = [v for v in (row or {}).values() if _number(v)]
            if nic is None or not values:
                continue
            lowest.add(min(values), node=node, nic=nic, rail=rail)
            slow.add(1 if node in bad else 0, node=node, nic=nic, rail=rail)
    return [lowest, slow, floor]
