# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoint cadence, goodput and the effective cost of a useful GPU-hour (pure functions).

C: seconds to write a checkpoint (the training loop is stalled for C); M: mean time between
job-killing failures for the job (seconds); R: seconds from a failure until the job runs again
(detection, requeue, start-up, checkpoint load); T: compute time between checkpoints.

- Young (1974): T = sqrt(2 C M), the first-order optimum.
- Daly (2006): T = sqrt(2 C M) * (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C for C < 2M, else M; the
  higher-order optimum, a little shorter than Young's when C is not small against M.
- Goodput, first order (the seed article's model): 1 - C/T - (T/2 + R)/M, at least 0: the share
  of wall time spent on useful steps, losing C/T to writing and, per failure, half an interval
  of recomputed work plus the restart.
- Goodput, exponential model (Daly): useful time T over the expected wall time to complete it,
  M e^(R/M) (e^((T + C)/M) - 1). Agrees with the first order when C, R, T << M and stays
  meaningful when they are not.
- Effective cost of a useful GPU-hour: list price / (goodput x availability).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

MODELS = ("first_order", "exponential")


def _positive(name, value, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
        raise ValueError("%s must be a finite number, got %r" % (name, value))
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError("%s must be %s, got %r" % (name, ">= 0" if allow_zero else "> 0", value))
    return float(value)


def young_interval(write_s, mtbf_s):
    """Young's interval sqrt(2 C M) in seconds."""
    return math.sqrt(2.0 * _positive("write_s", write_s) * _positive("mtbf_s", mtbf_s))


def daly_interval(write_s, mtbf_s):
    """Daly's higher-order interval in seconds (M when C >= 2M: checkpointing barely pays)."""
    c, m = _positive("write_s", write_s), _positive("mtbf_s", mtbf_s)
    if c >= 2.0 * m:
        return m
    ratio = c / (2.0 * m)
    return math.sqrt(2.0 * c * m) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - c


def goodput(interval_s, write_s, mtbf_s, restart_s, model="first_order"):
    """The useful share of wall time (0..1) for checkpoints every ``interval_s`` of compute."""
    t = _positive("interval_s", interval_s)
    c = _positive("write_s", write_s, allow_zero=True)
    m = _positive("mtbf_s", mtbf_s)
    r = _positive("restart_s", restart_s, allow_zero=True)
    if model == "first_order":
        return max(0.0, 1.0 - c / t - (t / 2.0 + r) / m)
    if model == "exponential":
        exponent = (t + c) / m
        if exponent > 700 or r / m > 700:
            return 0.0
        return t / (m * math.exp(r / m) * math.expm1(exponent))
    raise ValueError("model must be one of %s, got %r" % (", ".join(MODELS), model))


def effective_gpu_hour_cost(price_per_gpu_hour, goodput_fraction, availability=1.0):
    """What a useful GPU-hour costs: price / (goodput x availability); None when nothing is useful."""
    price = _positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    share = _positive("goodput", goodput_fraction, allow_zero=True)
    useful = share * _positive("availability", availability, allow_zero=True)
    if useful > 1.0 + 1e-9:
        raise ValueError("goodput x availability must be <= 1, got %r" % useful)
    return None if useful <= 0 else price / useful


INTERVALS = {"young": young_interval, "daly": daly_interval}


def duration(seconds):
    """1859 -> '31 min', 28800 -> '8.0 h', 42 -> '42 s', 0.67 -> '0.67 s'; 'n/a' for nothing."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return "n/a"
    if seconds < 120:
        return "%.3g s" % seconds if seconds < 10 else "%d s" % round(seconds)
    if seconds < 7200:
        return "%d min" % round(seconds / 60.0)
    return "%.1f h" % (seconds / 3600.0)


def cadence(write_s, mtbf_s, restart_s, method="young", model="first_order"):
    """{interval_s, goodput, lost: {write, rework, restart}} for one C, M, R."""
    if method not in INTERVALS:
        raise ValueError("method must be one of %s, got %r" % (", ".join(sorted(INTERVALS)), method))
    if write_s <= 0:  # nothing to write: checkpoint as often as you like; only restarts cost
        interval = None
        share = max(0.0, 1.0 - restart_s / mtbf_s)
        return {"interval_s": None, "goodput": share, "lost": {"write": 0.0, "rework": 0.0, "restart": 1.0 - share}}
    interval = INTERVALS[method](write_s, mtbf_s)
    share = goodput(interval, write_s, mtbf_s, restart_s, model)
    return {"interval_s": interval, "goodput": share,
            "lost": {"write": write_s / interval, "rework": interval / 2.0 / mtbf_s, "restart": restart_s / mtbf_s}}


def sensitivity(write_s, mtbf_s, restart_s, method="young", model="first_order", async_write_s=None):
    """What each lever buys: rows for C/2, M/2, R/2 (and asynchronous saves) against the base.

    Each row: {lever, label, write_s, mtbf_s, restart_s, interval_s, goodput, goodput_points}
    with goodput_points the change in percentage points against the base.
    """
    base = cadence(write_s, mtbf_s, restart_s, method, model)
    rows = [("base", "as measured", write_s, mtbf_s, restart_s),
            ("write_half", "C halved", write_s / 2.0, mtbf_s, restart_s),
            ("mtbf_half", "M halved", write_s, mtbf_s / 2.0, restart_s),
            ("restart_half", "R halved", write_s, mtbf_s, restart_s / 2.0)]
    if async_write_s is not None and 0 < async_write_s < write_s:
        rows.append(("async", "asynchronous saves to local NVMe", async_write_s, mtbf_s, restart_s))
    out = []
    for lever, label, c, m, r in rows:
        found = base if lever == "base" else cadence(c, m, r, method, model)
        out.append({"lever": lever, "label": label, "write_s": c, "mtbf_s": m, "restart_s": r,
                    "interval_s": found["interval_s"], "goodput": found["goodput"],
                    "goodput_points": (found["goodput"] - base["goodput"]) * 100.0})
    return out


def availability(down_node_s, nodes, window_s):
    """The share of node time in service: 1 - down node-seconds / (nodes x window)."""
    total = _positive("nodes", nodes) * _positive("window_s", window_s)
    return max(0.0, min(1.0, 1.0 - _positive("down_node_s", down_node_s, allow_zero=True) / total))


def availability_from_replacement(mtbf_node_s, replacement_s):
    """Steady-state availability of a node that fails every M_node and is back after the replacement."""
    m = _positive("mtbf_node_s", mtbf_node_s)
    return m / (m + _positive("replacement_s", replacement_s, allow_zero=True))
