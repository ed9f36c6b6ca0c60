# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_health clocks and temperature checks: active clock event reasons, GPU temperatures.

Private to _judge_gpu_health (judge_gpu_health calls them). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, join_names, profile_get, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_views import (
    _ev, _invalid, _norm, _pass_evidence, untrusted)


def _judge_throttle(views, profile):
    fail_names = profile_get(profile, "throttle.fail", [])
    warn_names = profile_get(profile, "throttle.warn", [])
    display = {}
    for name in list(fail_names) + list(warn_names):
        display[_norm(name)] = name
    fail_set = set(_norm(n) for n in fail_names)
    warn_set = set(_norm(n) for n in warn_names)
    results = []
    known = []
    for view in views:
        if _invalid(view, "throttle"):
            results.append(check_result("gpu.throttle", ERROR, "%s clock event reasons cannot be read: %s"
                                        % (view["name"], "; ".join(_invalid(view, "throttle"))), {},
                                        view["label"], evidence=_ev(view, "throttle"), tool=view["tool"]))
            continue
        if not view.get("throttle_known"):
            continue
        known.append(view)
        active = [_norm(r) for r in view.get("throttle") or []]
        failing = [display.get(r, r) for r in active if r in fail_set]
        warning = [display.get(r, r) for r in active if r in warn_set]
        metrics = {"active": active}
        if failing:
            results.append(check_result("gpu.throttle", FAIL, "%s is throttled: %s"
                                        % (view["name"], ", ".join(failing)), metrics,
                                        view["label"], evidence=_ev(view, "throttle"), tool=view["tool"]))
        elif warning:
            results.append(warning_result("gpu.throttle", "%s clocks are limited by %s"
                                          % (view["name"], ", ".join(warning)), metrics,
                                          view["label"], evidence=_ev(view, "throttle"), tool=view["tool"]))
    if not known and not results:
        return [check_result("gpu.throttle", SKIP, "no GPU reports clock event reasons", {})]
    if known and not any(r["status"] in (FAIL, ERROR) for r in results):
        results.append(check_result("gpu.throttle", PASS, "none of %d GPUs is throttled by %s"
                                    % (len(known), join_names(list(fail_names))), {},
                                    evidence=[line for v in known for line in _ev(v, "throttle")[:2]],
                                    tool=known[0]["tool"]))
    return results


def _judge_temperature(views, profile):
    gpu_cap = profile_get(profile, "temperature.gpu_max_c")
    mem_cap = profile_get(profile, "temperature.memory_max_c")
    margin = profile_get(profile, "temperature.margin_c", 0) or 0
    results = []
    judged = []
    for view in views:
        label, name = view["label"], view["name"]
        error = untrusted(view, "gpu.temperature", "temperatures", ("temperature",))
        if error:
            results.append(error)
            continue
        for what, value, cap, own in (("GPU", view.get("temp_gpu"), gpu_cap, view.get("limit_gpu")),
                                      ("memory", view.get("temp_mem"), mem_cap,
                                       view.get("limit_mem"))):
            if value is None:
                continue
            limit = cap if cap is not None else (own - margin if own is not None else None)
            if limit is None:
                continue
            judged.append(view)
            if value > limit:
                source = "profile limit" if cap is not None else "the GPU's own limit"
                results.append(check_result(
                    "gpu.temperature", FAIL, "%s %s temperature is %s C, above %s C (%s)"
                    % (name, what, fmt_num(value), fmt_num(limit), source),
                    {"what": what, "value": value, "limit": limit}, label,
                    evidence=_ev(view, "temperature"), tool=view["tool"]))
    if not judged and not results:
        return [check_result("gpu.temperature", SKIP, "no GPU temperature with a known limit "
                             "(set temperature.gpu_max_c, or collect nvidia-smi -q)", {})]
    if judged and not results:
        seen = []
        for view in judged:
            if view not in seen:
                seen.append(view)
        results.append(check_result("gpu.temperature", PASS, "all %d GPUs are within their temperature "
                                    "limits" % len(seen), {}, evidence=_pass_evidence(seen, "temperature"),
                                    tool=seen[0]["tool"]))
    return results
