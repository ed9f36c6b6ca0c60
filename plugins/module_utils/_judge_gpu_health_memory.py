# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_health memory checks: ECC errors, retired pages and remapped rows, per GPU view.

Private to _judge_gpu_health (judge_gpu_health calls them). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, join_names, profile_get, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_views import _ev, _pass_evidence, untrusted


def _judge_ecc(views, profile):
    vol_max = profile_get(profile, "ecc.volatile_uncorrectable_max", 0)
    agg_max = profile_get(profile, "ecc.aggregate_uncorrectable_max", 0)
    corr_warn = profile_get(profile, "ecc.volatile_correctable_warn")
    results = []
    unknown = []
    judged = []
    for view in views:
        label, name = view["label"], view["name"]
        vol, agg, corr = view.get("ecc_vol_unc"), view.get("ecc_agg_unc"), view.get("ecc_vol_corr")
        error = untrusted(view, "gpu.ecc", "ECC counts", ("ecc", "ecc_uncorrectable", "ecc_correctable"),
                          "ecc_uncorrectable")
        if error:
            results.append(error)
            continue
        if view.get("ecc_repair"):
            # Blackwell-era drivers: a memory repair waiting for a reset, or memory it cannot repair.
            flags = view["ecc_repair"]
            advice = "replace the GPU" if any(f.startswith("Unrepairable") for f in flags) else "reset it before use"
            results.append(check_result("gpu.ecc", FAIL, "%s reports %s: Yes (%s)" % (name, " and ".join(flags), advice),
                                        {"flags": flags}, label, evidence=_ev(view, "ecc_uncorrectable"),
                                        tool=view["tool"]))
            continue
        if vol is None and agg is None:
            unknown.append(view)
            continue
        judged.append(view)
        metrics = {"volatile_uncorrectable": vol, "aggregate_uncorrectable": agg,
                   "volatile_correctable": corr}
        if vol is not None and vol > vol_max:
            results.append(check_result(
                "gpu.ecc", FAIL, "%s has %d volatile uncorrectable ECC errors (limit %d)"
                % (name, vol, vol_max), metrics, label, evidence=_ev(view, "ecc_uncorrectable"),
                tool=view["tool"]))
        elif agg is not None and agg > agg_max:
            results.append(check_result(
                "gpu.ecc", FAIL, "%s has %d aggregate (lifetime) uncorrectable ECC errors "
                "(limit %d)" % (name, agg, agg_max), metrics, label, evidence=_ev(view, "ecc_uncorrectable"),
                tool=view["tool"]))
        if corr is not None and corr_warn is not None and corr > corr_warn:
            results.append(warning_result(
                "gpu.ecc", "%s has %d volatile correctable ECC errors (warning above %d)"
                % (name, corr, corr_warn), metrics, label, evidence=_ev(view, "ecc_correctable"),
                tool=view["tool"]))
    if unknown and not judged and not results:
        results.append(check_result("gpu.ecc", SKIP, "no GPU reports ECC error counts "
                                    "(ECC disabled or not queried)", {}))
    elif unknown:
        results.append(check_result("gpu.ecc", ERROR, "%s report no ECC error counts while other "
                                    "GPUs do" % join_names([v["name"] for v in unknown]),
                                    {"gpus": [v["label"] for v in unknown]},
                                    evidence=[line for v in unknown for line in _ev(v, "ecc_uncorrectable")]))
    if judged and not any(r["status"] in (FAIL, ERROR) for r in results):
        results.append(check_result("gpu.ecc", PASS, "no uncorrectable ECC errors on %d GPUs"
                                    % len(judged), {}, evidence=_pass_evidence(judged, "ecc_uncorrectable"),
                                    tool=judged[0]["tool"]))
    return results


def _judge_retired(views, profile):
    total_max = profile_get(profile, "retired_pages.total_max")
    pending_fails = profile_get(profile, "retired_pages.pending_fails", True)
    results = []
    reported = []
    for view in views:
        label, name = view["label"], view["name"]
        error = untrusted(view, "gpu.retired_pages", "retired pages", ("retired_pages",))
        if error:
            results.append(error)
            continue
        sbe, dbe, pending = view.get("retired_sbe"), view.get("retired_dbe"), \
            view.get("retired_pending")
        if sbe is None and dbe is None and pending is None:
            continue
        reported.append(view)
        total = (sbe or 0) + (dbe or 0)
        metrics = {"single_bit": sbe, "double_bit": dbe, "pending": pending, "total": total}
        if total_max is not None and total >= total_max:
            results.append(check_result(
                "gpu.retired_pages", FAIL, "%s has %d retired pages (%s single-bit, %s double-bit);"
                " replace at %d" % (name, total, sbe, dbe, total_max), metrics, label,
                evidence=_ev(view, "retired_pages"), tool=view["tool"]))
        if pending and pending_fails:
            results.append(check_result(
                "gpu.retired_pages", FAIL, "%s has pages pending retirement; reset the GPU to "
                "retire them" % name, metrics, label, evidence=_ev(view, "retired_pages"), tool=view["tool"]))
    if not reported and not results:
        return [check_result("gpu.retired_pages", SKIP, "no GPU reports retired pages "
                             "(GPUs with row remapping report remapped rows instead)", {})]
    if reported and not results:
        results.append(check_result("gpu.retired_pages", PASS, "retired pages within limits on "
                                    "%d GPUs" % len(reported), {"limit": total_max},
                                    evidence=_pass_evidence(reported, "retired_pages", 3), tool=reported[0]["tool"]))
    return results


def _judge_remap(views, profile):
    pending_fails = profile_get(profile, "remapped_rows.pending_fails", True)
    failure_fails = profile_get(profile, "remapped_rows.failure_fails", True)
    unc_max = profile_get(profile, "remapped_rows.uncorrectable_max")
    results = []
    reported = []
    for view in views:
        label, name = view["label"], view["name"]
        error = untrusted(view, "gpu.remapped_rows", "remapped rows", ("remapped_rows",))
        if error:
            results.append(error)
            continue
        corr, unc = view.get("remap_corr"), view.get("remap_unc")
        pending, failure = view.get("remap_pending"), view.get("remap_failure")
        if corr is None and unc is None and pending is None and failure is None:
            continue
        reported.append(view)
        metrics = {"correctable": corr, "uncorrectable": unc, "pending": pending,
                   "failure": failure}
        counts = "%s uncorrectable, %s correctable remapped rows" % (
            fmt_num(unc) if unc is not None else "?", fmt_num(corr) if corr is not None else "?")
        evidence = _ev(view, "remapped_rows")
        if failure and failure_fails:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s row remapping failed (%s); the GPU meets NVIDIA's "
                "RMA criterion" % (name, counts), metrics, label, evidence=evidence, tool=view["tool"]))
        if pending and pending_fails:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s has pending row remaps (%s); reset the GPU to apply "
                "them" % (name, counts), metrics, label, evidence=evidence, tool=view["tool"]))
        if unc_max is not None and unc is not None and unc > unc_max:
            results.append(check_result(
                "gpu.remapped_rows", FAIL, "%s has %d rows remapped for uncorrectable errors "
                "(limit %d)" % (name, unc, unc_max), metrics, label, evidence=evidence, tool=view["tool"]))
    if not reported and not results:
        return [check_result("gpu.remapped_rows", SKIP, "no GPU reports remapped rows "
                             "(not supported or not queried)", {})]
    if reported and not results:
        results.append(check_result("gpu.remapped_rows", PASS, "no pending or failed row remaps "
                                    "on %d GPUs" % len(reported), {"limit": unc_max},
                                    evidence=_pass_evidence(reported, "remapped_rows", 4)[:12],
                                    tool=reported[0]["tool"]))
    return results
