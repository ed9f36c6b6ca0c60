# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one NVLink domain's runs mean (_nvlink_burnin runs them): its all-trays NVLink run against
the floor and the same trays over InfiniBand only, its trays' pairs, one rack-level fault instead of
a finding per tray, the document row and the trays it leaves out of the usable capacity.

Domain-level findings blame no tray: multi-node NVLink unavailable (the NVLink run failed or hung
while the InfiniBand-only run worked: NCCL refuses NCCL_MNNVL_ENABLE=1 where MNNVL cannot work,
IMEX channels or the registration), fell back (no faster than InfiniBand), and a domain slow as a
whole (no tray cleared). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import worst
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, join_names)
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize

STAGE = "nvlink_domain"
DEFAULT_RATIO = 1.5
# the planner's verdicts of a tray that is slow (not a build or data fault): what a rack folds
_SLOW_VERDICTS = (_localize.PINNED, _localize.SUSPECT, _localize.INTERMITTENT, _localize.LEAF)


def check_localize_settings(trays, opts):
    """Planner settings the planner refuses, found before anything runs (ValueError)."""
    config = dict(opts.get("localize") or {})
    config.setdefault("floor", opts.get("floor"))
    _localize.new_state(list(trays), dict((t, {"leaf": "x"}) for t in trays), mode=opts.get("mode") or "adaptive",
                        seed=int(opts.get("seed") or 0), max_rounds=opts.get("max_rounds"), config=config)


def _ratio(opts):
    return float(opts.get("fallback_ratio") or DEFAULT_RATIO)


def _ib_busbw(one):
    return one.ib_judged["busbw"] if one.ib_judged and one.ib_judged["outcome"] == "ok" else None


def worth_localising(one):
    """The NVLink run worked and beat InfiniBand: its trays' pairs can pin a slow one."""
    if not one.judged or one.judged["outcome"] != "ok":
        return False
    ib = _ib_busbw(one)
    return ib is None or one.judged["busbw"] >= _ratio(one.opts) * ib


def _unavailable(check, one, ib, value):
    """The NVLink run failed or hung where the InfiniBand-only run worked: MNNVL is not usable."""
    check.update(status=FAIL, component="domain %s multi-node NVLink" % one.label)
    check["metrics"]["unavailable"] = True
    check["message"] = "NVLink domain %s: multi-node NVLink unavailable: the all-reduce across its %d trays with " \
        "NCCL_MNNVL_ENABLE=%s %s (%s) while the same trays over InfiniBand only ran at %s GB/s: NCCL cannot use the " \
        "rack's NVLink (IMEX channels and daemons, the trays' NVLink registration, the fabric)" % (
            one.label, len(one.trays), value, "hung" if one.judged["outcome"] == "timeout" else "failed",
            one.judged["sentence"], fmt_num(ib))
    return check


def mnnvl_check(one, slow=()):
    """The domain's all-trays NVLink check, judged against the floor and its InfiniBand-only run."""
    check, opts, judged = one.full, one.opts, one.judged
    floor, ratio, ib, value = opts.get("floor"), _ratio(opts), _ib_busbw(one), one.env.get("NCCL_MNNVL_ENABLE", "1")
    busbw = judged["busbw"] if judged["outcome"] == "ok" else None
    check["metrics"].update(busbw=busbw, ib_busbw=ib, floor=floor, fallback_ratio=ratio, trays=len(one.trays),
                            mnnvl_enable=value)
    if busbw is None:
        if ib is not None and judged["outcome"] in ("invalid", "timeout"):
            return _unavailable(check, one, ib, value)
        check["message"] = "NVLink domain %s: %d trays over multi-node NVLink: %s" % (
            one.label, len(one.trays), check["message"])
        return check
    head = "NVLink domain %s: %d trays over multi-node NVLink (NCCL_MNNVL_ENABLE=%s): %s GB/s bus bandwidth" % (
        one.label, len(one.trays), value, fmt_num(busbw))
    component = "domain %s multi-node NVLink" % one.label
    if ib is not None and busbw < ratio * ib:
        check.update(status=FAIL, component=component)
        check["metrics"]["fell_back"] = True
        check["message"] = "%s, no faster than the same trays over InfiniBand only (%s GB/s; NVLink must be at " \
            "least %sx it): NCCL fell back to InfiniBand" % (head, fmt_num(ib), fmt_num(ratio))
    elif floor and busbw < floor:
        check.update(status=FAIL, component=component)
        check["message"] = "%s, below the NVLink floor %s GB/s%s" % (head, fmt_num(floor), (
            ": the slow tray(s) pinned inside the domain, %s (nvlink_domain.tray)" % join_names(slow)) if slow else "")
    elif ib is None and not floor:
        check.update(status=ERROR, component=component)
        check["message"] = "%s, but the InfiniBand-only run measured nothing (%s) and the profile sets no " \
            "nvlink.mnnvl_busbw_min: NVLink cannot be told from InfiniBand" % (head, one.ib_judged["sentence"])
    else:
        check["status"] = PASS
        check["message"] = "%s%s; %s" % (head, ", floor %s GB/s" % fmt_num(floor) if floor else "", (
            "%.1fx the same trays over InfiniBand only (%s GB/s)" % (busbw / ib, fmt_num(ib))) if ib else
            "the InfiniBand-only run measured nothing (%s): judged on the floor alone" % one.ib_judged["sentence"])
    return check


def _rack_fault(one, mnnvl, tray_checks):
    """No tray of the domain cleared (every one slow in every group) and the trays together below
    the floor: one rack-level fault in place of a finding per tray; None otherwise."""
    if mnnvl["status"] != FAIL or one.judged["outcome"] != "ok" or mnnvl["metrics"].get("fell_back") \
            or len(tray_checks) != len(one.trays) or len(one.trays) < 2 \
            or not all(c["status"] == FAIL and c["metrics"].get("verdict") in _SLOW_VERDICTS for c in tray_checks):
        return None
    check = check_result(
        STAGE + ".rack", FAIL, "all %d trays of NVLink domain %s (%s) are slow over multi-node NVLink together and in "
        "every group inside the domain, none cleared: a rack-level fault (an NVLink switch tray, the rack's NVLink "
        "cabling), not %d tray faults" % (len(one.trays), one.label, one.domain, len(one.trays)),
        {"nodes": list(one.trays), "domain": one.domain, "checks": [STAGE + ".mnnvl"]}, "domain %s" % one.label,
        evidence=[mnnvl["message"]] + [c["message"] for c in tray_checks][:6])
    check.update(stage=STAGE, node=None, raw=sorted(set(k for c in tray_checks for k in c.get("raw") or [])))
    return check


def judge_domain(one, stop, first_label):
    """(checks, document row) of one domain."""
    checks = list(one.checks)  # the launcher preflight, on the first domain
    if stop is not None:
        if not checks:
            check = check_result(STAGE + ".mnnvl", SKIP, "NVLink domain %s: not run: the launcher failed on domain %s "
                                 "(%s)" % (one.label, first_label, stop), {"domain": one.domain}, "domain %s" % one.label)
            check.update(stage=STAGE, node=None, raw=[])
            checks = [check]
        return checks, row(one.label, one.domain, one.trays, checks, 0, False)
    trays = one.tray_checks or []
    slow = sorted(c["node"] for c in trays if c["status"] == FAIL)
    mnnvl = mnnvl_check(one, slow if len(slow) < len(one.trays) else ())
    rack = _rack_fault(one, mnnvl, trays)
    checks.append(mnnvl)
    checks.extend([rack] if rack else trays)
    checks.append(one.ib_check)
    return checks, row(one.label, one.domain, one.trays, checks, one.rounds, bool(rack))


def row(label, domain, trays, checks, rounds, folded):
    """The domain's row of results.json nvlink_domains.mnnvl (trays kept for the capacity only)."""
    mnnvl = next((c for c in checks if c["check"] == STAGE + ".mnnvl"), None) or {}
    metrics = mnnvl.get("metrics") or {}
    slow = sorted(c["node"] for c in checks if c["check"] == STAGE + ".tray" and c["status"] == FAIL)
    return {"domain": domain, "label": label, "trays": list(trays), "status": worst(c["status"] for c in checks),
            "busbw": metrics.get("busbw"), "ib_busbw": metrics.get("ib_busbw"), "floor": metrics.get("floor"),
            "fell_back": bool(metrics.get("fell_back")), "unavailable": bool(metrics.get("unavailable")),
            "rack_fault": folded, "slow_trays": slow, "rounds": rounds}


def unusable(domain_row):
    """Trays of a domain that cannot hold a multi-tray NVLink job: every tray when the domain itself
    failed (unavailable, fell back, a rack-level fault, below the floor with no tray to blame), else
    its pinned slow trays. A domain not measured (an error) blames none."""
    r = domain_row
    below = bool(r["floor"] and r["busbw"] is not None and r["busbw"] < r["floor"])
    if r["unavailable"] or r["fell_back"] or r["rack_fault"] or (below and not r["slow_trays"]):
        return list(r["trays"])
    return list(r["slow_trays"])


def result(checks, raw, rows):
    failed = sorted(set(c["node"] for c in checks if c.get("node") and c["status"] in (FAIL, ERROR)))
    return {"stage": STAGE, "checks": checks, "raw": raw, "failed_nodes": failed, "domains": rows,
            "unusable": sorted(set(failed) | set(t for r in rows for t in unusable(r))), "document": {}}
