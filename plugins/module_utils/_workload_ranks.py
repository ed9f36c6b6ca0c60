# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ranks of a workload run judged against each other: stragglers, their GPUs, the spread.

Private to _workload: judge_workload calls _rank_checks for the ranks with enough steps and
builds every result with _result; percentile is public through _workload. Standard library
only; Python 2.7/3.8 compatible.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import bisect

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import percentile
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    FAIL, PASS, SKIP, check_result, fmt_num, is_number, mad, median, robust_z, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload_log import _label


_PERCENTILES = (50, 95, 99)


def _stats(values, prefix):
    if not values:
        return {}
    out = dict(("%s_p%d_ms" % (prefix, p), round(percentile(values, p), 3)) for p in _PERCENTILES)
    out["%s_mean_ms" % prefix] = round(sum(values) / len(values), 3)
    return out


def _result(check, status, message, metrics=None, rank=None, node=None, gpu=None, warning=False):
    component = _label(rank, node, gpu) if rank is not None else "cluster"
    if warning:
        out = warning_result(check, message, metrics, component)
    else:
        out = check_result(check, status, message, metrics, component)
    out["node"] = node if node not in ("",) else None
    return out


def _gpu_medians(samples):
    """{(node, gpu): {sm_mhz, sm_max_mhz, temp_c, power_w}} medians over the run."""
    grouped = {}
    for sample in samples or []:
        if not isinstance(sample, dict):
            continue
        key = (str(sample.get("node")), str(sample.get("gpu")))
        entry = grouped.setdefault(key, {})
        for field in ("sm_mhz", "sm_max_mhz", "temp_c", "power_w"):
            if is_number(sample.get(field)):
                entry.setdefault(field, []).append(sample[field])
    return dict((key, dict((f, median(v)) for f, v in fields.items())) for key, fields in grouped.items())


class _GpuPeers(object):
    """The other GPUs' median SM clock and temperature, for each GPU, computed once for all.

    The GPUs compared are those that ran ranks (all sampled GPUs when none of those was sampled).
    """

    def __init__(self, gpus, used=None):
        chosen = dict((k, v) for k, v in gpus.items() if not used or k in used) or dict(gpus)
        if len(chosen) < 2 and len(gpus) > len(chosen):
            chosen = dict(gpus)
        self.chosen = chosen
        self.sm = _Peers(dict((k, v["sm_mhz"]) for k, v in chosen.items() if "sm_mhz" in v))
        self.temp = _Peers(dict((k, v["temp_c"]) for k, v in chosen.items() if "temp_c" in v))

    @staticmethod
    def _without(peers, key):
        if key in peers.values:
            return peers.of(key)[0] if len(peers.values) > 1 else None
        return median(peers.ordered) if peers.ordered else None

    def sm_of_others(self, key):
        return self._without(self.sm, key)

    def temp_of_others(self, key):
        return self._without(self.temp, key)


def _gpu_note(record, gpus, opts, peers, flagged=False):
    """(sentence about this rank's GPU, metrics, is_bad) or (None, {}, False) without samples.

    The GPU is compared with the other GPUs (peers: _GpuPeers); a flagged rank's GPU is also
    compared with its own maximum SM clock.
    """
    key = (str(record.get("node")), str(record.get("gpu")))
    own = gpus.get(key)
    if not own:
        return None, {}, False
    metrics = dict(("gpu_%s" % k, v) for k, v in own.items())
    drop = float(opts["sm_clock_drop"])
    notes, bad = [], False
    other_sm = peers.sm_of_others(key)
    if "sm_mhz" in own and other_sm and other_sm > 0 and own["sm_mhz"] <= other_sm * (1 - drop):
        notes.append("its GPU's SM clock was %s MHz against %s MHz on the other GPUs (throttled?)"
                     % (fmt_num(own["sm_mhz"]), fmt_num(other_sm)))
        bad = True
    elif flagged and "sm_mhz" in own and own.get("sm_max_mhz") and own["sm_mhz"] <= own["sm_max_mhz"] * (1 - drop):
        notes.append("its GPU's SM clock was %s MHz of %s MHz max (throttled?)"
                     % (fmt_num(own["sm_mhz"]), fmt_num(own["sm_max_mhz"])))
        bad = True
    if "temp_c" in own and own["temp_c"] >= float(opts["temp_c_high"]):
        other_t = peers.temp_of_others(key)
        notes.append("it ran at %s C%s" % (fmt_num(own["temp_c"]), " (the others %s C)" % fmt_num(other_t)
                                           if other_t is not None else ""))
        bad = True
    if notes:
        return "; ".join(notes), metrics, bad
    return ("its GPU looks normal (SM %s MHz, %s C): look at the host (CPU, memory, PCIe, data loading)"
            % (fmt_num(own.get("sm_mhz", "?")), fmt_num(own.get("temp_c", "?"))), metrics, False)


class _Peers(object):
    """Median and MAD of the other ranks' values, for each rank, without an O(n^2) loop.

    Up to EXACT_PEERS ranks each rank's peers are the others exactly (leave one out); above, the
    median leaves the rank out by index arithmetic on one sorted list and the MAD is the whole
    group's (one rank moves the MAD of thousands by nothing measurable).
    """
    EXACT_PEERS = 64

    def __init__(self, values):
        self.values = values
        self.ordered = sorted(values.values())
        self.exact = len(values) <= self.EXACT_PEERS
        if not self.exact:
            self.spread = mad(self.ordered)

    def _median_without(self, value):
        ordered, n = self.ordered, len(self.ordered) - 1
        at = bisect.bisect_left(ordered, value)

        def nth(i):  # the i-th of the list with the element at index `at` removed
            return ordered[i] if i < at else ordered[i + 1]
        return nth(n // 2) if n % 2 else (nth(n // 2 - 1) + nth(n // 2)) / 2.0

    def of(self, rank):
        """(median, MAD) of the values of every rank but this one."""
        if self.exact:
            others = [v for r, v in self.values.items() if r != rank]
            center = median(others)
            return center, mad(others, center)
        return self._median_without(self.values[rank]), self.spread


# What the per-rank step-time chart draws (a rank flagged, or warned, has its own result with all
# of its numbers): at 8 ranks a node these rows are a large part of a big cluster's results.
_ROW_FIELDS = ("steps", "compute_p50_ms", "compute_p95_ms", "compute_p99_ms", "sync_p50_ms", "sync_p95_ms",
               "step_p50_ms")


def _node_summaries(rows, flagged):
    """One workload.node check per node: its ranks' step-time rows (what the report draws) and the
    numbers the cluster-wide comparisons use; a flagged rank also has its own workload.rank check."""
    by_node = {}
    for row in rows:
        by_node.setdefault(row["node"], []).append(row)
    results = []
    for node in sorted(by_node, key=lambda n: (n is None, str(n))):
        ranks = by_node[node]
        compute = [r["compute_p50_ms"] for r in ranks if is_number(r.get("compute_p50_ms"))]
        sync = [r["sync_p50_ms"] for r in ranks if is_number(r.get("sync_p50_ms"))]
        step = [r["step_p50_ms"] for r in ranks if is_number(r.get("step_p50_ms"))]
        metrics = {"rank_count": len(ranks), "ranks": ranks}
        if compute:
            metrics["compute_p50_ms"] = max(compute)   # its slowest rank
        if sync:
            metrics["sync_p50_ms"] = min(sync)         # its least sync wait
        if step:
            metrics["step_p50_ms"] = max(step)
        bad = [r["rank"] for r in ranks if r["rank"] in flagged]
        message = "%s: %d rank(s) over %d steps, compute p50 %s-%s ms, sync p50 %s-%s ms" % (
            node or "unknown node", len(ranks), min(r["steps"] for r in ranks),
            fmt_num(min(compute)) if compute else "?", fmt_num(max(compute)) if compute else "?",
            fmt_num(min(sync)) if sync else "?", fmt_num(max(sync)) if sync else "?")
        if bad:
            message += "; flagged: rank %s (see its own result)" % ", ".join(str(r) for r in bad)
        result = check_result("workload.node", PASS, message, metrics, node or "cluster")
        result["node"] = node
        results.append(result)
    return results


def _rank_checks(usable, samples, opts):
    results = []
    if not usable:
        return results
    gpus = _gpu_medians(samples)
    used = set((str(v[0].get("node")), str(v[0].get("gpu"))) for v in usable.values())
    p50 = dict((r, percentile(v[1], 50)) for r, v in usable.items())
    p95 = dict((r, percentile(v[1], 95)) for r, v in usable.items())
    sync50 = dict((r, percentile(v[2], 50)) for r, v in usable.items())
    peers50, peers95, sync_peers = _Peers(p50), _Peers(p95), _Peers(sync50)
    gpu_peers = _GpuPeers(gpus, used)
    rows = []
    ratio_limit, k = float(opts["straggler_ratio"]), float(opts["straggler_k"])
    min_ms, tail_limit = float(opts["straggler_min_ms"]), float(opts["tail_ratio"])
    tails = min(len(v[1]) for v in usable.values()) >= int(opts["tail_min_steps"] or 0)
    flagged = set()
    for rank in sorted(usable):
        record, compute, sync, step = usable[rank]
        node, gpu = record.get("node"), record.get("gpu")
        label = _label(rank, node, gpu)
        metrics = {"rank": rank, "steps": len(compute)}
        metrics.update(_stats(compute, "compute"))
        metrics.update(_stats(sync, "sync"))
        metrics.update(_stats(step, "step"))
        message = None
        if len(usable) >= 2:
            center, spread = peers50.of(rank)
            tail_center, tail_spread = peers95.of(rank)
            sync_center = sync_peers.of(rank)[0]
            ratio = p50[rank] / center if center > 0 else float("inf")
            z = robust_z(p50[rank], center, spread)
            tail_ratio = p95[rank] / tail_center if tail_center > 0 else float("inf")
            tail_z = robust_z(p95[rank], tail_center, tail_spread)
            metrics.update({"compute_p50_others_ms": round(center, 3), "compute_ratio": round(ratio, 3)
                            if is_number(ratio) else None, "compute_z": round(z, 2) if is_number(z) else None,
                            "sync_p50_others_ms": round(sync_center, 3)})
            if ratio >= ratio_limit and z >= k and p50[rank] - center >= min_ms:
                waits = ("its sync wait %s ms vs %s ms: this rank holds the others back"
                         % (fmt_num(sync50[rank]), fmt_num(sync_center)) if sync50[rank] < sync_center
                         else "its sync wait %s ms (others %s ms)" % (fmt_num(sync50[rank]), fmt_num(sync_center)))
                message = "%s compute p50 %s ms is %sx the median %s ms of the other ranks; %s" % (
                    label, fmt_num(p50[rank]), fmt_num(round(ratio, 1)), fmt_num(center), waits)
            elif tails and tail_ratio >= tail_limit and tail_z >= k and p95[rank] - tail_center >= min_ms:
                message = ("%s compute p95 %s ms is %sx the median p95 %s ms of the other ranks (its p50 %s ms "
                           "is normal): it stalls intermittently and holds the others back in those steps" % (
                               label, fmt_num(p95[rank]), fmt_num(round(tail_ratio, 1)), fmt_num(tail_center),
                               fmt_num(p50[rank])))
        note, gpu_metrics, gpu_bad = _gpu_note(record, gpus, opts, gpu_peers, flagged=bool(message))
        metrics.update(gpu_metrics)
        row = dict((k, metrics[k]) for k in _ROW_FIELDS if k in metrics)
        row.update({"rank": rank, "gpu": gpu, "node": node})
        rows.append(row)
        if message:
            flagged.add(rank)
            row["flagged"] = True
            if note:
                message += "; " + note
            results.append(_result("workload.rank", FAIL, message, metrics, rank, node, gpu))
        elif gpu_bad:
            summary = "%s compute p50 %s ms p99 %s ms, sync p50 %s ms over %d steps" % (
                label, fmt_num(metrics["compute_p50_ms"]), fmt_num(metrics["compute_p99_ms"]),
                fmt_num(metrics["sync_p50_ms"]), len(compute))
            results.append(_result("workload.rank", PASS, "%s; %s" % (summary, note), metrics, rank, node, gpu,
                                   warning=True))
    results.extend(_node_summaries(rows, flagged))
    results.extend(_distribution(usable, p50, sync50, flagged, opts))
    return results


def _distribution(usable, p50, sync50, flagged, opts):
    rest = [r for r in sorted(usable) if r not in flagged]
    if len(rest) < 2:
        return [_result("workload.distribution", SKIP, "fewer than 2 ranks to compare (%d usable, %d flagged)"
                        % (len(usable), len(flagged)))]
    low, high = min(p50[r] for r in rest), max(p50[r] for r in rest)
    spread = high / low if low > 0 else float("inf")
    steps = [percentile(usable[r][3], 50) for r in rest if usable[r][3]]
    metrics = {"ranks": len(rest), "compute_p50_min_ms": round(low, 3), "compute_p50_max_ms": round(high, 3),
               "compute_spread": round(spread, 3) if is_number(spread) else None,
               "sync_p50_median_ms": round(median([sync50[r] for r in rest]), 3)}
    if steps:
        metrics["step_p50_median_ms"] = round(median(steps), 3)
    what = "the other %d ranks" % len(rest) if flagged else "all %d ranks" % len(rest)
    message = "%s compute p50 %s-%s ms (max/min %s), sync p50 median %s ms%s" % (
        what, fmt_num(low), fmt_num(high), fmt_num(round(spread, 2)) if is_number(spread) else "inf",
        fmt_num(metrics["sync_p50_median_ms"]),
        ", step p50 median %s ms" % fmt_num(metrics["step_p50_median_ms"]) if steps else "")
    results = []
    if is_number(spread) and spread <= float(opts["spread_warn"]):
        results.append(_result("workload.distribution", PASS, message + ": a tight distribution", metrics))
    else:
        results.append(_result("workload.distribution", PASS, message + ": wider than %s, though no single rank "
                               "stands out" % fmt_num(float(opts["spread_warn"])), metrics, warning=True))
    limit = float(opts["max_step_ms"] or 0)
    if limit > 0 and steps:
        step_med = median(steps)
        status = FAIL if step_med > limit else PASS
        results.append(_result("workload.step_time", status, "the median step takes %s ms, limit %s ms"
                               % (fmt_num(step_med), fmt_num(limit)), {"step_p50_ms": step_med, "limit_ms": limit}))
    return results
