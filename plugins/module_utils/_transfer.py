# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data_transfer stage's verdicts: verification shards merged, transfer progress judged.

transfer_verification(results, shards) merges what each node's data_manifest verify returned (one
shard each) into a stage result {stage, checks, document}: one check per file that is missing,
of the wrong size, of the wrong checksum, extra or still being written (JUnit cases, named by
path), a pass per shard saying how many files and bytes it verified, and an error for a shard
that did not report (its files were not verified: never a pass). transfer_progress(report) turns
data_manifest progress into a check and the results.json ``transfer.progress`` block.
Checks about files are cluster checks (node null): a file is no node's hardware.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import read_number
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, warning_result)

STAGE = "data_transfer"
MAX_CHECKS_PER_KIND = 200
KINDS = (
    ("missing", "transfer.missing"),
    ("size_mismatch", "transfer.size"),
    ("checksum_mismatch", "transfer.checksum"),
    ("partial", "transfer.in_progress"),
    ("extra", "transfer.extra"),
)


# The most verification shards a transfer is split into (one per node of a large cluster).
MAX_SHARDS = 100000


def human_bytes(value):
    value = float(value or 0)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1000 or unit == "PB":
            return ("%d %s" % (value, unit)) if unit == "B" else ("%.1f %s" % (value, unit))
        value /= 1000.0
    return "%.1f PB" % value


def human_seconds(value):
    value = int(round(value))
    days, rest = divmod(value, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return "%dd %dh" % (days, hours)
    if hours:
        return "%dh %02dm" % (hours, minutes)
    return "%dm %02ds" % (minutes, seconds) if minutes else "%ds" % seconds


def _file_check(kind, check, item, extra_status):
    if kind == "missing":
        return check_result(check, FAIL, "%s is missing at the destination" % item, {"path": item}, item)
    if kind == "size_mismatch":
        how = "truncated" if item["found"] < item["expected"] else "larger than the source"
        return check_result(check, FAIL, "%s has %d bytes, the manifest %d (%s)"
                            % (item["path"], item["found"], item["expected"], how), dict(item), item["path"])
    if kind == "checksum_mismatch":
        return check_result(check, FAIL, "%s differs from the source: checksum %s, the manifest %s"
                            % (item["path"], item["found"], item["expected"]), dict(item), item["path"])
    if kind == "partial":
        return check_result(check, FAIL, "%s is still being written (%d bytes so far): the copy is not complete"
                            % (item["path"], item["size"]), dict(item), item["path"])
    status = extra_status
    message = "%s is at the destination but not in the manifest" % item
    if status == "warn":
        return warning_result(check, message, {"path": item}, item)
    return check_result(check, FAIL, message, {"path": item}, item)


def transfer_verification(results, shards=None, extra="fail", manifest=None):
    """results: {node: data_manifest verify result, or None / {'failed': True, 'msg': ...}}."""
    checks, totals = [], {"files": 0, "bytes": 0, "ok": 0, "rehashed": 0, "reused": 0}
    counts = dict((kind, 0) for kind, _c in KINDS)
    reported = {}
    for node in sorted(results):
        result = results[node]
        if not isinstance(result, dict) or result.get("failed") or "shard" not in result:
            why = (result or {}).get("msg") if isinstance(result, dict) else None
            checks.append(check_result("transfer.shard", ERROR, "%s did not report its verification shard%s: its files "
                                       "were not verified" % (node, (": " + str(why)[:300]) if why else ""),
                                       None, node))
            continue
        reported[result["shard"]] = node
        shards = shards or result.get("shards")
        for key in totals:
            totals[key] += int(result.get({"files": "checked"}.get(key, key)) or 0)
        problems = 0
        for kind, check in KINDS:
            items = result.get(kind) or []
            counts[kind] += len(items)
            problems += len(items)
            for item in items[:MAX_CHECKS_PER_KIND]:
                record = _file_check(kind, check, item, extra)
                record["metrics"]["verified_by"] = node
                checks.append(record)
            if len(items) > MAX_CHECKS_PER_KIND:
                checks.append(check_result(check, FAIL, "%s: %d more files %s (listed in the shard's result)"
                                           % (node, len(items) - MAX_CHECKS_PER_KIND, kind.replace("_", " ")),
                                           {"count": len(items)}, node))
        checks.append(check_result(
            "transfer.verified", PASS if not problems else FAIL,
            "%s verified %d files (%s) against the manifest (%s): %d match, %d hashed now, %d unchanged since the last "
            "verification%s" % (node, result["checked"], human_bytes(result["bytes"]), result["algorithm"],
                                result["ok"], result["rehashed"], result["reused"],
                                "" if not problems else "; %d problems" % problems),
            {"shard": result["shard"], "files": result["checked"], "bytes": result["bytes"], "ok": result["ok"]},
            node))
    shards, why = read_number(shards or 0, 0, MAX_SHARDS, integer=True)
    if why:  # a garbled count: a loop over 10**12 shards would never end
        checks.append(check_result("transfer.shard", ERROR, "the shard count is no count of shards (%s, at most %d): "
                                   "which shards did not report cannot be told" % (why, MAX_SHARDS), {}, None))
        shards = 0
    for shard in range(shards):
        if shard not in reported and not any(c["check"] == "transfer.shard" for c in checks):
            checks.append(check_result("transfer.shard", ERROR, "shard %d of %d did not report: its files were not "
                                       "verified" % (shard, shards), {"shard": shard}, "shard%d" % shard))
    for check in checks:
        check["node"] = None  # about files, not about a node
    document = {"verification": dict(totals, shards=shards, **counts)}
    if manifest:
        document["verification"].update({"manifest_files": len(manifest.get("entries") or []),
                                         "algorithm": manifest.get("algorithm")})
    return {"stage": STAGE, "checks": checks, "document": document}


def _unreadable(report):
    """Why the report's counts or rate are no reading (NaN, inf, negative, text), or None."""
    for key in ("bytes_total", "bytes_arrived", "files_total", "files_complete", "fraction",
                "rate_bytes_per_s", "eta_s", "window_s", "bytes_remaining"):
        if report.get(key) is not None:
            # A rate may be negative (bytes went away: a restarted file) and is judged as a stall.
            dummy, why = read_number(report[key], low=None if key == "rate_bytes_per_s" else 0)
            if why:
                return "%s: %s" % (key, why)
    return None


def transfer_progress(report, stall_after_s=None):
    """A data_manifest progress report -> stage result with the check and the progress block."""
    why = _unreadable(report)
    if why:  # a NaN rate compares as neither stalled nor moving: it would have passed
        check = check_result("transfer.progress", ERROR, "the progress report is no reading (%s): nothing "
                             "is known about the transfer; check the progress state file" % why, dict(report))
        check["node"] = None
        return {"stage": STAGE, "checks": [check], "document": {"progress": dict(report)}}
    total, arrived = report.get("bytes_total") or 0, report.get("bytes_arrived") or 0
    parts = ["%d of %d files complete, %s of %s arrived (%.1f %%)"
             % (report.get("files_complete", 0), report.get("files_total", 0), human_bytes(arrived),
                human_bytes(total), 100.0 * (report.get("fraction") or 0))]
    rate, eta = report.get("rate_bytes_per_s"), report.get("eta_s")
    if rate is not None:
        parts.append("%s/s over the last %s" % (human_bytes(rate), human_seconds(report.get("window_s") or 0)))
    if eta is not None and report.get("bytes_remaining"):
        parts.append("ETA %s" % human_seconds(eta))
    if report.get("remaining_cost") is not None:
        parts.append("the remaining %s cost %.2f at %.4f per GB" % (
            human_bytes(report.get("bytes_remaining")), report["remaining_cost"], report["price_per_gb"]))
    message = "; ".join(parts)
    if not report.get("bytes_remaining"):
        check = check_result("transfer.progress", PASS, "transfer complete by size: " + message, dict(report))
    elif rate is None:
        check = warning_result("transfer.progress", message + "; rate and ETA from the next observation on", dict(report))
    elif rate <= 0:
        check = check_result("transfer.progress", FAIL, "transfer stalled: " + message, dict(report))
    else:
        check = check_result("transfer.progress", PASS, message, dict(report))
    check["node"] = None
    return {"stage": STAGE, "checks": [check], "document": {"progress": dict(report)}}
