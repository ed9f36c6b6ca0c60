# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mean time between job-killing failures from counted failures and exposure, with its interval.

Failures are modelled as a Poisson process in node time: k failures observed over an exposure of
T node-seconds estimate the rate k / T per node-second and M_node = T / k. The exact (Garwood)
two-sided interval on the rate is

    [ chi2(alpha/2; 2k) / 2T ,  chi2(1 - alpha/2; 2k + 2) / 2T ]

and M_node's interval is its reciprocal. With k = 0 no M can be stated; what the data do say is
a one-sided lower bound, M_node >= 2T / chi2(1 - alpha; 2) = T / -ln(alpha) ("no failure in
1,200 node-hours: M_node >= 400 h at 95 %"). A job on n nodes sees n times the node rate, so
M_job = M_node / n.

The chi-square quantile is computed here (regularized incomplete gamma, inverted by bisection)
so that the controller needs no SciPy. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

MEASURED = "measured"
NOT_ENOUGH_DATA = "not_enough_data"


def _gamma_p(a, x):
    """The regularized lower incomplete gamma function P(a, x), a > 0, x >= 0."""
    if x <= 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        # Series: P = x^a e^-x / Gamma(a+1) * sum x^n / ((a+1)...(a+n)).
        term = total = 1.0 / a
        denominator = a
        for _step in range(1000):
            denominator += 1.0
            term *= x / denominator
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return min(1.0, total * math.exp(log_front))
    # Continued fraction for Q = 1 - P (modified Lentz).
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for n in range(1, 1000):
        an = -n * (n - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def chi2_quantile(p, dof):
    """The p-quantile of the chi-square distribution with ``dof`` degrees of freedom (dof > 0)."""
    if not 0.0 < p < 1.0:
        raise ValueError("chi2_quantile: p must be in (0, 1), got %r" % (p,))
    if dof <= 0:
        raise ValueError("chi2_quantile: dof must be > 0, got %r" % (dof,))
    a = dof / 2.0
    low, high = 0.0, max(1.0, dof)
    while _gamma_p(a, high / 2.0) < p:
        high *= 2.0
    for _step in range(200):
        mid = (low + high) / 2.0
        if _gamma_p(a, mid / 2.0) < p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


def rate_interval(failures, exposure, confidence=0.95):
    """(low, high) bounds on a Poisson rate per unit of exposure; low is 0 when failures is 0."""
    if exposure <= 0:
        raise ValueError("rate_interval: exposure must be > 0")
    alpha = 1.0 - confidence
    low = chi2_quantile(alpha / 2.0, 2 * failures) / (2.0 * exposure) if failures > 0 else 0.0
    high = chi2_quantile(1.0 - alpha / 2.0, 2 * failures + 2) / (2.0 * exposure)
    return low, high


def _hours(seconds):
    return None if seconds is None else seconds / 3600.0


def mtbf_estimate(failures, exposure_node_s, confidence=0.95, min_node_hours=0.0):
    """M_node from ``failures`` job-killing failures over ``exposure_node_s`` node-seconds.

    Returns {status, failures, exposure_node_hours, confidence, rate_per_node_hour,
    mtbf_node_s, mtbf_node_s_low, mtbf_node_s_high, bound_node_s, reason}. status is
    'measured' (an estimate with its interval) or 'not_enough_data' (no failure, or less
    exposure than min_node_hours): then mtbf_node_s is None and bound_node_s is the lower bound
    the data imply (None without any exposure). Never a made-up M.
    """
    failures = int(failures)
    exposure = float(exposure_node_s or 0.0)
    out = {"status": NOT_ENOUGH_DATA, "failures": failures, "exposure_node_hours": round(exposure / 3600.0, 6),
           "confidence": confidence, "rate_per_node_hour": None, "mtbf_node_s": None,
           "mtbf_node_s_low": None, "mtbf_node_s_high": None, "bound_node_s": None, "reason": None}
    if exposure <= 0:
        out["reason"] = "no node time in the window: nothing ran, or accounting holds no job"
        return out
    alpha = 1.0 - confidence
    # One-sided: with k failures, M_node >= 2T / chi2(1 - alpha; 2k + 2).
    out["bound_node_s"] = 2.0 * exposure / chi2_quantile(1.0 - alpha, 2 * failures + 2)
    if failures == 0:
        out["reason"] = "no job-killing failure in %s node-hours: M_node >= %s h at %d %%" % (
            _fmt(exposure / 3600.0), _fmt(out["bound_node_s"] / 3600.0), round(confidence * 100))
        return out
    if exposure / 3600.0 < min_node_hours:
        out["reason"] = "%d failure(s) in %s node-hours, fewer than the %s node-hours asked for: M_node >= %s h at %d %%" % (
            failures, _fmt(exposure / 3600.0), _fmt(min_node_hours), _fmt(out["bound_node_s"] / 3600.0),
            round(confidence * 100))
        return out
    low, high = rate_interval(failures, exposure, confidence)
    out.update(status=MEASURED, rate_per_node_hour=failures / exposure * 3600.0, mtbf_node_s=exposure / failures,
               mtbf_node_s_low=1.0 / high, mtbf_node_s_high=(1.0 / low) if low > 0 else None)
    return out


def job_mtbf(estimate, nodes):
    """M for a job on ``nodes`` nodes: {mtbf_s, low_s, high_s, bound_s} (M_node / nodes)."""
    nodes = max(1, int(nodes))

    def per_job(value):
        return None if value is None else value / nodes

    return {"mtbf_s": per_job(estimate.get("mtbf_node_s")), "low_s": per_job(estimate.get("mtbf_node_s_low")),
            "high_s": per_job(estimate.get("mtbf_node_s_high")), "bound_s": per_job(estimate.get("bound_node_s"))}


def _fmt(value):
    if value >= 100:
        return "{:,.0f}".format(value)
    if value >= 1:
        return "%.1f" % value
    return "%.3g" % value
