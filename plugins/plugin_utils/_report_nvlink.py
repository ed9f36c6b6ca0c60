# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink domains in the report and the metrics: drawn from results.json's ``nvlink_domains`` block
and the nvlink_domain stage's checks (one truth: the document the callback validated)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_svg import esc

STAGE = "nvlink_domain"


def nvlink_view(document):
    """None when the run judged no NVLink domains (not a rack profile); else {block, problems}."""
    block = document.get("nvlink_domains")
    if not isinstance(block, dict) or not isinstance(block.get("domains"), list):
        return None
    problems = [c for c in document.get("checks") or [] if c.get("stage") == STAGE and c.get("status") in BAD]
    return {"block": block, "problems": problems}


def render_nvlink(view):
    block = view["block"]
    parts = ["<p>%s</p>" % esc(block.get("statement") or "")]
    size = block.get("domain_trays")
    rows = []
    for row in block["domains"]:
        rows.append("<tr><td><code>%s</code></td><td>%s%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(row.get("domain")), esc(str(row.get("trays_passed"))), esc(" of %s" % row.get("trays")),
            esc(str(row.get("gpus_passed"))), "full" if row.get("full") else "partial",
            esc(", ".join(row.get("failed") or []) or "-")))
    if rows:
        parts.append("<table><tr><th>NVLink domain (ClusterUUID.CliqueId)</th><th>trays passed (of the domain's)</th>"
                     "<th>GPUs passed</th><th>%s</th><th>trays failed</th></tr>%s</table>"
                     % (esc("full (%s trays, all passing)" % size if size else ""), "".join(rows)))
    groups = block.get("tp_groups") or {}
    if groups:
        parts.append("<p>Tensor-parallel groups that fit inside a domain: %s</p>" % esc(", ".join(
            "TP%s: %s" % (size_, n) for size_, n in sorted(groups.items(), key=lambda kv: int(kv[0])))))
    if block.get("outside"):
        parts.append("<p>Trays registered in no NVLink domain: %s</p>" % esc(", ".join(block["outside"])))
    parts.extend(_mnnvl_table(block.get("mnnvl") or []))
    for lost in block.get("lost_racks") or []:
        parts.append("<p>Rack %s lost at once (every tray unreachable): %s</p>" % (
            esc(lost.get("rack")), esc(", ".join(lost.get("trays") or []))))
    if view["problems"]:
        parts.append("<ul>%s</ul>" % "".join("<li><code>%s</code> %s</li>" % (esc(c.get("check")), esc(c.get("message")))
                                             for c in view["problems"]))
    return "\n".join(parts)


def _gbs(value):
    return "-" if value is None else "%.0f GB/s" % value


def _mnnvl_table(rows):
    """Multi-node NVLink per domain beside the same trays over InfiniBand only (two columns, never one)."""
    if not rows:
        return []
    body = []
    for row in rows:
        verdict = "multi-node NVLink unavailable" if row.get("unavailable") else "fell back to InfiniBand" \
            if row.get("fell_back") else "rack-level fault" if row.get("rack_fault") \
            else ("slow: " + ", ".join(row.get("slow_trays"))) if row.get("slow_trays") else row.get("status")
        body.append("<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(row.get("label")), esc(row.get("domain")), esc(_gbs(row.get("busbw"))), esc(_gbs(row.get("floor"))),
            esc(_gbs(row.get("ib_busbw"))), esc(str(row.get("rounds"))), esc(verdict)))
    return ["<h3>Multi-node NVLink across each domain's trays</h3>",
            "<table><tr><th>domain</th><th>ClusterUUID.CliqueId</th><th>busbw over NVLink (NCCL_MNNVL_ENABLE=1)</th>"
            "<th>NVLink floor</th><th>busbw over InfiniBand only</th><th>rounds</th><th>verdict</th></tr>%s</table>"
            % "".join(body)]


def _mnnvl_families(block, family):
    busbw = family("nvlink_domain_busbw_gb_s", "gauge", "all_reduce_perf bus bandwidth of an NVLink domain's trays "
                                                        "together, over multi-node NVLink (path nvlink) and over "
                                                        "InfiniBand only (path infiniband).")
    slow = family("nvlink_domain_slow_trays", "gauge", "Trays pinned slow over multi-node NVLink inside their domain.")
    for row in block.get("mnnvl") or []:
        for path, key in (("nvlink", "busbw"), ("infiniband", "ib_busbw")):
            if row.get(key) is not None:
                busbw.add(row[key], domain=row.get("domain"), path=path)
        slow.add(len(row.get("slow_trays") or []), domain=row.get("domain"))
    return [busbw, slow] if block.get("mnnvl") else []


def nvlink_families(document, family):
    """Metric families of the NVLink domains (``family`` is _prometheus.Family)."""
    view = nvlink_view(document)
    if not view:
        return []
    block = view["block"]
    trays = family("nvlink_domain_trays", "gauge", "Trays of an NVLink domain (nvlink_domains.domains) by state: "
                                                   "passed (every stage) or failed.")
    gpus = family("nvlink_domain_gpus_passed", "gauge", "GPUs of an NVLink domain on trays that passed every stage.")
    groups = family("nvlink_domain_tp_groups", "gauge", "Tensor-parallel groups of this size that fit inside the "
                                                        "NVLink domains' passing GPUs (a group never spans two).")
    full = family("nvlink_domains_full", "gauge", "NVLink domains whose every tray passed.")
    for row in block["domains"]:
        trays.add(row.get("trays_passed") or 0, domain=row.get("domain"), state="passed")
        trays.add(len(row.get("failed") or []), domain=row.get("domain"), state="failed")
        gpus.add(row.get("gpus_passed") or 0, domain=row.get("domain"))
    for size, count in sorted((block.get("tp_groups") or {}).items(), key=lambda kv: int(kv[0])):
        groups.add(count, tp=size)
    full.add(block.get("full_domains") or 0)
    return [trays, gpus, groups, full] + _mnnvl_families(block, family)
