# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data transfer in the report and the metrics: drawn from results.json's ``transfer`` block
and the data_transfer stage's checks (one truth: the document the callback validated)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.module_utils._transfer import human_bytes, human_seconds
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_svg import esc

PROBLEM_KINDS = ("missing", "size_mismatch", "checksum_mismatch", "partial", "extra")
SHOWN = 50


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def transfer_view(document):
    """None when the run had no data transfer; else {verification, progress, problems}."""
    block = document.get("transfer")
    if not isinstance(block, dict):
        return None
    problems = [c for c in document.get("checks") or []
                if c.get("stage") == "data_transfer" and c.get("status") in BAD
                and c.get("check") not in ("transfer.verified", "transfer.progress")]
    return {"verification": block.get("verification") if isinstance(block.get("verification"), dict) else None,
            "progress": block.get("progress") if isinstance(block.get("progress"), dict) else None,
            "problems": problems}


def render_transfer(view):
    parts = []
    progress = view.get("progress")
    if progress:
        fraction = progress.get("fraction") if _number(progress.get("fraction")) else 0.0
        facts = ["%s of %s files complete" % (progress.get("files_complete"), progress.get("files_total")),
                 "%s of %s arrived" % (human_bytes(progress.get("bytes_arrived")), human_bytes(progress.get("bytes_total")))]
        if _number(progress.get("rate_bytes_per_s")):
            facts.append("%s/s over the last %s" % (
                human_bytes(progress["rate_bytes_per_s"]), human_seconds(progress.get("window_s") or 0)))
        if _number(progress.get("eta_s")) and progress.get("bytes_remaining"):
            facts.append("ETA %s" % human_seconds(progress["eta_s"]))
        if _number(progress.get("remaining_cost")):
            facts.append("remaining egress %.2f" % progress["remaining_cost"])
        parts.append('<div class="bar" title="%.1f %%"><div style="width:%.1f%%;background:#2f7d32;height:14px"></div></div>'
                     % (fraction * 100, max(0.0, min(fraction, 1.0)) * 100))
        parts.append("<p>%s (%.1f %%)</p>" % (esc("; ".join(facts)), fraction * 100))
    verification = view.get("verification")
    if verification:
        cells = "".join("<td>%s</td>" % esc(str(verification.get(k, 0))) for k in ("files", "ok") + PROBLEM_KINDS)
        parts.append("<table><tr><th>files verified</th><th>match</th><th>missing</th><th>size differs</th>"
                     "<th>checksum differs</th><th>still being written</th><th>extra</th></tr><tr>%s</tr></table>"
                     % cells)
        parts.append("<p>%s shard(s), %s.</p>" % (esc(str(verification.get("shards"))),
                                                  esc(human_bytes(verification.get("bytes")))))
    if view["problems"]:
        rows = "".join("<li><code>%s</code> %s</li>" % (esc(c.get("check")), esc(c.get("message")))
                       for c in view["problems"][:SHOWN])
        more = len(view["problems"]) - SHOWN
        parts.append("<ul>%s</ul>%s" % (rows, "<p>and %d more in results.json</p>" % more if more > 0 else ""))
    return "\n".join(parts) or '<p class="notrun">Data transfer: nothing recorded.</p>'


def transfer_families(document, family):
    """Metric families of the transfer (``family`` is _prometheus.Family)."""
    view = transfer_view(document)
    if not view:
        return []
    size = family("transfer_bytes", "gauge", "Bytes of the transfer's manifest: kind total, arrived (by size) or remaining.")
    files = family("transfer_files", "gauge", "Files of the transfer's manifest: kind total or complete (by size).")
    rate = family("transfer_rate_bytes_per_second", "gauge", "Arrival rate over the progress window.")
    eta = family("transfer_eta_seconds", "gauge", "Seconds until the rest arrives at the measured rate.")
    cost = family("transfer_remaining_cost", "gauge", "Egress cost of what remains to move, at the configured price per GB.")
    verified = family("transfer_verification_files", "gauge", "Files of the last verification by result.")
    progress = view.get("progress") or {}
    for kind in ("total", "arrived", "remaining"):
        size.add(progress.get("bytes_" + kind), kind=kind)
    for kind in ("total", "complete"):
        files.add(progress.get("files_" + kind), kind=kind)
    rate.add(progress.get("rate_bytes_per_s"))
    eta.add(progress.get("eta_s"))
    cost.add(progress.get("remaining_cost"))
    for key in ("ok",) + PROBLEM_KINDS:
        verified.add((view.get("verification") or {}).get(key), result=key)
    return [size, files, rate, eta, cost, verified]
