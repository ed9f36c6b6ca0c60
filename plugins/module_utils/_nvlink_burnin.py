# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Multi-node NVLink across each NVLink domain's trays (rack-scale profiles): the nvlink_domain
stage's measured part, run from the controller like the fabric stage.

Per domain (the trays that passed every per-node stage and registered in one
``<ClusterUUID>.<CliqueId>``, from their own outputs):

* the domain's trays at once with multi-node NVLink on (``NCCL_MNNVL_ENABLE=1``), judged against
  the profile's NVLink floor (``nvlink.mnnvl_busbw_min``), then pairs and groups of its trays by the
  fabric stage's planner, all inside the domain (one "leaf" per domain, so no group ever spans two),
  until a slow tray is pinned inside its rack;
* the same trays once over InfiniBand only (``NCCL_MNNVL_ENABLE=0``), reported apart
  (``nvlink_domain.infiniband``, against ``nccl.multi_node_pair_busbw_min``): the NVLink run must
  beat it by ``fallback_ratio``, so a run NCCL quietly took over InfiniBand can never pass as NVLink.

When no tray of a domain is cleared and its trays together are below the floor, the domain is one
rack-level fault (``nvlink_domain.rack``: an NVLink switch tray, the rack's NVLink cabling), not one
fault per tray. Replay judges a run directory's ``raw/_nvlink_domain`` outputs; a directory made
before this stage existed replays it as skipped (not captured). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import worst
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, join_names)
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric

STAGE = "nvlink_domain"
IB_PREFIX = "ib-"
# fabric stage check -> this stage's check
RENAMED = {"full_allocation": STAGE + ".mnnvl", "pair_bandwidth": STAGE + ".tray", "launcher": STAGE + ".launcher",
           "fabric.run": STAGE + ".run", "leaf_uplink": STAGE + ".rack"}
MNNVL_ENV = {"NCCL_MNNVL_ENABLE": "1"}
IB_ENV = {"NCCL_MNNVL_ENABLE": "0"}


def labels(domains):
    """{domain: 'nvl01', ...}: a short name per domain, in the domains' sorted order (a replay
    finds the same domains, so the same names and raw keys)."""
    return dict((domain, "nvl%02d" % (i + 1)) for i, domain in enumerate(sorted(domains)))


def _relabel(checks, label, domain, prefix, raw):
    for check in checks:
        check["check"] = RENAMED.get(check["check"], check["check"])
        check["stage"] = STAGE
        check.setdefault("metrics", {})["domain"] = domain
        check["raw"] = [k if k in raw else prefix + k for k in check.get("raw") or []]
        if check["node"] is None and not check.get("component", "").startswith("domain"):
            check["component"] = "domain %s (%s)" % (label, check.get("component") or "")
        elif check["node"] is not None and check.get("component") == check["node"]:
            check["component"] = "%s in domain %s" % (check["node"], label)  # JUnit and the report group by domain
    return checks


def _infiniband(trays, label, domain, opts, env):
    """The domain's trays once over InfiniBand only: (check, busbw or None, raw)."""
    fabric = _fabric._Fabric(trays, {}, dict(opts, key_prefix=label + "-" + IB_PREFIX), dict(env, **IB_ENV))
    floor = opts.get("ib_floor")
    check, judged, _view = _fabric._full_allocation(fabric, trays, floor)
    busbw = judged["busbw"] if judged["outcome"] == "ok" else None
    check["message"] = "NVLink domain %s: the same %d trays over InfiniBand only (NCCL_MNNVL_ENABLE=0): %s" % (
        label, len(trays), check["message"])
    check["check"] = STAGE + ".infiniband"
    _relabel([check], label, domain, label + "-" + IB_PREFIX, fabric.runner.raw)
    return check, busbw, fabric.runner.raw


def _mnnvl_verdict(check, label, trays, busbw, ib_busbw, opts, slow=()):
    """The domain's all-trays NVLink check, judged against the floor and its InfiniBand-only run."""
    floor = opts.get("floor")
    ratio = float(opts.get("fallback_ratio") or 1.5)
    metrics = check["metrics"]
    metrics.update(busbw=busbw, ib_busbw=ib_busbw, floor=floor, fallback_ratio=ratio, trays=len(trays))
    if busbw is None:
        check["message"] = "NVLink domain %s: %d trays over multi-node NVLink: %s" % (label, len(trays), check["message"])
        return check
    head = "NVLink domain %s: %d trays over multi-node NVLink (NCCL_MNNVL_ENABLE=1): %s GB/s bus bandwidth" % (
        label, len(trays), fmt_num(busbw))
    if ib_busbw is not None and busbw < ratio * ib_busbw:
        check.update(status=FAIL, component="domain %s multi-node NVLink" % label)
        check["message"] = "%s, no faster than the same trays over InfiniBand only (%s GB/s; NVLink must be at " \
            "least %sx it): NCCL fell back to InfiniBand (IMEX channels, the trays' NVLink registration)" % (
                head, fmt_num(ib_busbw), fmt_num(ratio))
        metrics["fell_back"] = True
    elif floor and busbw < floor:
        check.update(status=FAIL, component="domain %s multi-node NVLink" % label)
        check["message"] = "%s, below the NVLink floor %s GB/s" % (head, fmt_num(floor))
        if slow:
            check["message"] += ": the slow tray(s) pinned inside the domain, %s (nvlink_domain.tray)" % join_names(slow)
    else:
        check["status"] = PASS
        check["message"] = "%s%s%s" % (head, ", floor %s GB/s" % fmt_num(floor) if floor else "",
                                       "; %.1fx the same trays over InfiniBand only (%s GB/s)" % (
                                           busbw / ib_busbw, fmt_num(ib_busbw)) if ib_busbw else "")
    return check


def _rack_fault(checks, label, domain, trays):
    """No tray of the domain cleared and the trays together below the floor: one rack-level fault
    in place of a finding per tray. Returns the checks (trays' fails folded) and whether it folded."""
    mnnvl = [c for c in checks if c["check"] == STAGE + ".mnnvl"]
    tray_checks = [c for c in checks if c["check"] == STAGE + ".tray"]
    if not mnnvl or mnnvl[0]["status"] != FAIL or mnnvl[0]["metrics"].get("fell_back") or len(trays) < 2 \
            or any(c["status"] == PASS for c in tray_checks) \
            or not all(c["status"] == FAIL for c in tray_checks):
        return checks, False
    kept = [c for c in checks if c["check"] != STAGE + ".tray"]
    kept.append(check_result(
        STAGE + ".rack", FAIL, "all %d trays of NVLink domain %s (%s) are slow over multi-node NVLink together and in "
        "every group inside the domain, none cleared: a rack-level fault (an NVLink switch tray, the rack's NVLink "
        "cabling), not %d tray faults" % (len(trays), label, domain, len(trays)),
        {"nodes": list(trays), "domain": domain, "checks": [STAGE + ".mnnvl"]}, "domain %s" % label,
        evidence=[mnnvl[0]["message"]] + [c["message"] for c in tray_checks][:6]))
    kept[-1].update(stage=STAGE, node=None, raw=sorted(set(k for c in tray_checks for k in c.get("raw") or [])))
    return kept, True


def _skipped(label, domain, trays, why):
    check = check_result(STAGE + ".mnnvl", SKIP, "NVLink domain %s: %s" % (label, why),
                         {"domain": domain, "trays": len(trays)}, "domain %s" % label)
    check.update(stage=STAGE, node=None, raw=[])
    return check


def _row(label, domain, trays, checks, rounds, folded):
    mnnvl = next((c for c in checks if c["check"] == STAGE + ".mnnvl"), None) or {}
    metrics = mnnvl.get("metrics") or {}
    slow = sorted(c["node"] for c in checks if c["check"] == STAGE + ".tray" and c["status"] in (FAIL, ERROR))
    return {"domain": domain, "label": label, "trays": list(trays), "status": worst(c["status"] for c in checks),
            "busbw": metrics.get("busbw"), "ib_busbw": metrics.get("ib_busbw"), "floor": metrics.get("floor"),
            "fell_back": bool(metrics.get("fell_back")), "rack_fault": folded, "slow_trays": slow, "rounds": rounds}


def _domain(label, domain, trays, opts, env, preflight):
    """One domain's checks, raw outputs and document row."""
    if len(trays) < 2:
        why = "%s: fewer than 2 of its trays passed the per-node stages: no multi-node NVLink test" % (
            join_names(trays) or "no tray")
        check = _skipped(label, domain, trays, why)
        return [check], {}, _row(label, domain, trays, [check], 0, False)
    prefix = label + "-"
    mn_opts = dict(opts, key_prefix=prefix, counters_root="", preflight=preflight, full_allocation=True,
                   max_busbw=opts.get("max_busbw"))
    found = _fabric.fabric_stage(trays, dict((t, {"leaf": label}) for t in trays), mn_opts, env)
    raw = dict(found["raw"])
    checks = _relabel(found["checks"], label, domain, prefix, raw)
    ib_check, ib_busbw, ib_raw = _infiniband(trays, label, domain, opts, env)
    raw.update(ib_raw)
    slow = sorted(c["node"] for c in checks if c["check"] == STAGE + ".tray" and c["status"] == FAIL)
    for check in checks:
        if check["check"] == STAGE + ".mnnvl":
            _mnnvl_verdict(check, label, trays, check["metrics"].get("busbw"), ib_busbw, opts,
                           slow if len(slow) < len(trays) else ())
    checks, folded = _rack_fault(checks, label, domain, trays)
    checks.append(ib_check)
    return checks, raw, _row(label, domain, trays, checks, len(found["document"].get("rounds") or []), folded)


def not_captured(replay_dir):
    """A replayed run directory made before this stage existed (no raw/_nvlink_domain)."""
    return bool(replay_dir) and not any(os.path.isdir(os.path.join(replay_dir, *p))
                                        for p in (("raw", "_" + STAGE), ("_" + STAGE,)))


def nvlink_stage(domains, opts, env=None):
    """{domain: [trays]} -> {stage, checks, raw, failed_nodes, domains (rows), unusable, document}."""
    # The NVLink runs: NCCL_MNNVL_ENABLE=1, then what the user set; the InfiniBand-only run: 0 whatever was set.
    env = dict(env or os.environ, **MNNVL_ENV)
    env.update(opts.get("environment") or {})
    opts = dict(opts, stage=STAGE)
    names = labels(domains)
    checks, raw, rows = [], {}, []
    uncaptured = not_captured(opts.get("replay_dir"))
    preflight = bool(opts.get("preflight", True))
    for domain in sorted(domains):
        trays = sorted(domains[domain])
        if uncaptured and len(trays) >= 2:
            check = _skipped(names[domain], domain, trays, "not captured: the replayed run directory has no "
                             "raw/_%s (made before this stage existed, or run without it)" % STAGE)
            checks.append(check)
            rows.append(_row(names[domain], domain, trays, [check], 0, False))
            continue
        found, found_raw, row = _domain(names[domain], domain, trays, opts, env, preflight and len(trays) >= 2)
        if len(trays) >= 2:
            preflight = False  # the launcher is proved once, on the first domain that runs
        checks.extend(found)
        raw.update(found_raw)
        rows.append(row)
    return _result(checks, raw, rows)


def _unusable(row):
    """Trays of a domain that cannot hold a multi-tray NVLink job: its pinned slow trays, else, when
    the domain itself failed (fell back, a rack-level fault, below the floor, not measured), all."""
    if row["slow_trays"]:
        return row["slow_trays"]
    domain_failed = row["fell_back"] or row["rack_fault"] or row["busbw"] is None or (
        row["floor"] and row["busbw"] < row["floor"])
    return row["trays"] if row["status"] in (FAIL, ERROR) and domain_failed else []


def _result(checks, raw, rows):
    failed = sorted(set(c["node"] for c in checks if c.get("node") and c["status"] in (FAIL, ERROR)))
    unusable = sorted(set(failed) | set(t for r in rows for t in _unusable(r)))
    return {"stage": STAGE, "checks": checks, "raw": raw, "failed_nodes": failed, "domains": rows,
            "unusable": unusable, "document": {}}
