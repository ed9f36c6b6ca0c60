# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ranks of a workload run checked for the same numbers: parameters and loss.

Private to _workload: judge_workload calls _integrity_checks with every rank the log shows.

* workload.param_consistency: after the gradient all-reduce every rank of a data-parallel run
  must hold bitwise identical parameters. The reference workload logs each rank's checksum of its
  parameters every --param-check-every steps (GPUCLUSTER_PARAMS); per check step the checksum a
  majority of the ranks holds is the expected one, and a rank holding another fails, named with
  its node, GPU and the first step it diverged at.
* workload.loss: a NaN or infinite loss fails on the rank (node, GPU) where it appeared first; a
  loss far above its own recent median is a warning (a spike).

Standard library only; Python 2.7/3.8 compatible.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, fmt_num, is_number, join_names, median)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload_log import _label
from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload_ranks import _result


_SPIKE_MIN_HISTORY = 3   # finite losses a rank needs before a spike can be told from the start


def _steps_text(steps, limit=8):
    steps = sorted(steps)
    shown = ", ".join(str(s) for s in steps[:limit])
    return shown + (" and %d more" % (len(steps) - limit) if len(steps) > limit else "")


def _where(rank, record, entry=None):
    """'rank 2 (gpu003 GPU0, local rank 0, device cuda:0)': the rank's label with its local rank and device."""
    label = _label(rank, record.get("node"), record.get("gpu"))
    extra = []
    if record.get("local_rank") is not None:
        extra.append("local rank %s" % record["local_rank"])
    if entry and entry.get("device"):
        extra.append("device %s" % entry["device"])
    if not extra:
        return label
    return label[:-1] + ", " + ", ".join(extra) + ")" if label.endswith(")") else "%s (%s)" % (label, ", ".join(extra))


def _integrity_checks(ranks, parsed, opts):
    """workload.param_consistency and workload.loss results for {rank: record}."""
    return _param_consistency(ranks, parsed, opts) + _loss_checks(ranks, opts)


# ---------------------------------------------------------------------------------------------
# Parameters identical on every rank
# ---------------------------------------------------------------------------------------------
def _checks_by_step(ranks):
    by_step = {}
    for rank, record in ranks.items():
        for entry in record.get("param_checks") or []:
            if isinstance(entry, dict) and isinstance(entry.get("step"), int) and entry.get("checksum"):
                by_step.setdefault(entry["step"], {})[rank] = entry
    return by_step


def _no_checks(ranks, parsed, every):
    logged = parsed.get("param_check_every")
    trained = [r for r in ranks if ranks[r].get("steps")]
    if not every and not logged:
        return [_result("workload.param_consistency", SKIP, "parameters were not compared across ranks: the "
                        "workload ran without parameter checks (no GPUCLUSTER_PARAMS lines, param_check_every 0)")]
    if not trained:
        return [_result("workload.param_consistency", SKIP, "parameters were not compared across ranks: no rank "
                        "trained (see the other errors)")]
    if logged == 0:
        message = ("parameter checks every %d steps were asked for, but the workload's GPUCLUSTER_WORKLOAD lines "
                   "say param_check_every=0: it ran with them off, so whether the ranks held identical parameters "
                   "cannot be told" % every)
    else:
        message = ("parameter checks every %d steps were asked for, but the log shows no GPUCLUSTER_PARAMS line: "
                   "whether the ranks held identical parameters cannot be told (a workload without "
                   "--param-check-every, or its lines were lost)" % (every or logged))
    metrics = {"param_check_every": every or logged, "ranks": len(trained)}
    return [_result("workload.param_consistency", ERROR, message, metrics)]


def _param_consistency(ranks, parsed, opts):
    every = int(opts.get("param_check_every") or 0)
    by_step = _checks_by_step(ranks)
    if not by_step:
        return _no_checks(ranks, parsed, every)
    checked = sorted(set(r for entries in by_step.values() for r in entries))
    if len(checked) < 2:
        return [_result("workload.param_consistency", SKIP, "fewer than 2 ranks logged parameter checksums (%d): "
                        "nothing to compare" % len(checked), {"ranks": len(checked)})]
    diverged, matched, undecided, majority_of = {}, {}, [], {}
    for step in sorted(by_step):
        entries = by_step[step]
        groups = {}
        for rank in sorted(entries):
            groups.setdefault(entries[rank]["checksum"], []).append(rank)
        top = max(groups.values(), key=len)
        if len(top) * 2 <= len(entries):
            undecided.append((step, groups))
            continue
        majority_of[step] = (entries[top[0]]["checksum"], top)
        for rank in entries:
            (matched if rank in top else diverged).setdefault(rank, []).append(step)
    results = []
    for rank in sorted(diverged):
        results.append(_diverged_result(rank, ranks[rank], diverged[rank], matched.get(rank, []), by_step,
                                        majority_of))
    if undecided:
        results.append(_undecided_result(undecided, ranks, by_step))
    missing = _missing_checks(ranks, by_step)
    results.extend(missing)
    if not undecided:
        bad = set(diverged) | set(r["metrics"]["rank"] for r in missing)
        results.extend(_node_passes(ranks, by_step, matched, bad, all_agree=not diverged))
    return results


def _diverged_result(rank, record, steps, matched, by_step, majority_of):
    first = steps[0]
    entry = by_step[first][rank]
    expected, holders = majority_of[first]
    before = [s for s in matched if s < first]
    total = len(steps) + len(matched)
    where = _where(rank, record, entry)
    message = ("%s holds parameters different from the other ranks' from step %d on: checksum %s, %d of %d ranks "
               "hold %s; it diverged in %d of its %d checks (step%s %s)%s. After the gradient all-reduce every "
               "rank must hold bitwise identical parameters: silent data corruption on this GPU (or its host) "
               "changed them" % (
                   where, first, entry["checksum"], len(holders), len(by_step[first]), expected, len(steps), total,
                   "s" if len(steps) > 1 else "", _steps_text(steps),
                   "; it matched at step %d, so it diverged between steps %d and %d" % (before[-1], before[-1], first)
                   if before else ""))
    example = by_step[first][holders[0]]
    metrics = {"rank": rank, "local_rank": record.get("local_rank"), "device": entry.get("device"),
               "first_step": first, "steps": steps, "checks": total, "checksum": entry["checksum"],
               "majority_checksum": expected, "majority_ranks": len(holders), "ranks": len(by_step[first]),
               "last_matched_step": before[-1] if before else None}
    result = _result("workload.param_consistency", FAIL, message, metrics, rank, record.get("node"),
                     record.get("gpu"))
    result["evidence"] = [entry.get("line") or "", example.get("line") or ""]
    result["evidence"] = [line for line in result["evidence"] if line]
    return result


def _undecided_result(undecided, ranks, by_step):
    step, groups = undecided[0]
    entries = by_step[step]
    if len(entries) == 2:
        (a, b) = sorted(entries)
        message = ("at step %d %s and %s hold different parameters (checksums %s and %s): with two ranks, which "
                   "of them diverged cannot be told" % (
                       step, _where(a, ranks[a], entries[a]), _where(b, ranks[b], entries[b]),
                       entries[a]["checksum"], entries[b]["checksum"]))
    else:
        parts = ["%s on %s" % (checksum, join_names(["rank %d" % r for r in members], limit=4))
                 for checksum, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
        message = ("at step %d no checksum is held by a majority of the %d ranks (%s): which ranks diverged "
                   "cannot be told" % (step, len(entries), "; ".join(parts[:4]) + ("; ..." if len(parts) > 4 else "")))
    if len(undecided) > 1:
        message += " (%d checks without a majority: steps %s)" % (
            len(undecided), _steps_text([u[0] for u in undecided]))
    result = _result("workload.param_consistency", ERROR, message,
                     {"step": step, "ranks": len(entries), "checksums": len(groups),
                      "undecided_steps": [u[0] for u in undecided]})
    result["evidence"] = [entries[r].get("line") for r in sorted(entries)[:8] if entries[r].get("line")]
    return result


def _missing_checks(ranks, by_step):
    """A rank that trained past a check step the others logged, without a checksum of its own there."""
    results = []
    for rank in sorted(ranks):
        record = ranks[rank]
        if record.get("errors") or record.get("param_errors"):
            continue  # reported as a parse error already
        numbers = record.get("step_numbers") or []
        if not numbers:
            continue
        last = max(numbers)
        missing = [s for s in sorted(by_step) if s <= last and rank not in by_step[s]]
        if missing:
            message = ("%s logged no parameter checksum at step%s %s, where the other ranks did: its parameters "
                       "there were not compared (lines lost?)" % (
                           _label(rank, record.get("node"), record.get("gpu")), "s" if len(missing) > 1 else "",
                           _steps_text(missing)))
            results.append(_result("workload.param_consistency", ERROR, message,
                                   {"rank": rank, "missing_steps": missing}, rank, record.get("node"),
                                   record.get("gpu")))
    return results


def _node_passes(ranks, by_step, matched, bad, all_agree):
    """One pass per node whose ranks all held the expected parameters at every check."""
    by_node = {}
    for rank in matched:
        by_node.setdefault(ranks[rank].get("node"), []).append(rank)
    bad_nodes = set(ranks[r].get("node") for r in bad)
    total = len(set(r for entries in by_step.values() for r in entries))
    results = []
    for node in sorted(by_node, key=lambda n: (n is None, str(n))):
        if node in bad_nodes:
            continue
        members = sorted(by_node[node])
        steps = sorted(set(s for r in members for s in matched[r]))
        whom = ("%s" % _label(members[0], node, ranks[members[0]].get("gpu")) if len(members) == 1
                else "%s: its %d ranks" % (node or "unknown node", len(members)))
        peers = "every other rank (%d ranks)" % total if all_agree else "the majority of the %d ranks" % total
        message = "%s held bitwise the same parameters as %s at %s (step%s %s)" % (
            whom, peers, "each of the %d checks" % len(steps) if len(steps) > 1 else "the check",
            "s" if len(steps) > 1 else "", _steps_text(steps))
        last = steps[-1]
        metrics = {"ranks": len(members), "checks": len(steps), "steps": steps, "last_step": last,
                   "checksum": by_step[last][members[0]]["checksum"], "all_ranks_agree": all_agree}
        result = _result("workload.param_consistency", PASS, message, metrics)
        result["component"] = node or "cluster"
        result["node"] = node
        results.append(result)
    return results


# ---------------------------------------------------------------------------------------------
# Loss: non-finite, spikes
# ---------------------------------------------------------------------------------------------
def _losses(record):
    """[(step, loss)] of the finite losses, in step order."""
    numbers = record.get("step_numbers") or []
    values = record.get("loss") or []
    pairs = [(numbers[i], values[i]) for i in range(min(len(numbers), len(values))) if is_number(values[i])]
    return sorted(pairs)


def _nonfinite(record):
    events = [e for e in record.get("nonfinite_loss") or [] if isinstance(e, dict) and isinstance(e.get("step"), int)]
    return sorted(events, key=lambda e: e["step"])


def _loss_checks(ranks, opts):
    finite = dict((r, _losses(ranks[r])) for r in ranks)
    bad = dict((r, _nonfinite(ranks[r])) for r in ranks)
    logged = [r for r in ranks if finite[r] or bad[r]]
    if not logged:
        return [_result("workload.loss", SKIP, "the log shows no per-step loss (loss= in GPUCLUSTER_STEP lines, or "
                        "a loss group in the regex): NaN or infinite losses cannot be looked for")]
    results = _nonfinite_results(ranks, bad, logged)
    results.extend(_spike_results(ranks, finite, opts))
    if not any(bad.values()):
        counts = [len(finite[r]) for r in logged]
        first = [finite[r][0] for r in logged]
        last = [finite[r][-1] for r in logged]
        start_step, end_step = min(pair[0] for pair in first), max(pair[0] for pair in last)
        start = median([value for step, value in first if step == start_step])
        end = median([value for step, value in last if step == end_step])
        message = "all %d ranks logged a finite loss at every step (%s steps each); median loss %s at step %d, %s at " \
                  "step %d" % (len(logged), "%d" % counts[0] if min(counts) == max(counts) else "%d-%d" % (
                      min(counts), max(counts)), fmt_num(round(start, 4)), start_step, fmt_num(round(end, 4)),
                      end_step)
        results.append(_result("workload.loss", PASS, message, {
            "ranks": len(logged), "steps": max(counts), "loss_first": round(start, 6), "loss_last": round(end, 6),
            "first_step": start_step, "last_step": end_step}))
    return results


def _nonfinite_results(ranks, bad, logged):
    started = dict((r, events[0]) for r, events in bad.items() if events)
    if not started:
        return []
    first = min(e["step"] for e in started.values())
    origin = sorted(r for r, e in started.items() if e["step"] == first)
    followers = sorted(r for r in started if r not in origin)
    if len(origin) == len(logged) and len(origin) > 1:
        values = sorted(set(started[r]["loss"] for r in origin))
        result = _result("workload.loss", ERROR, "every rank's loss (%d ranks) became %s at step %d at once: it "
                         "cannot be pinned to one rank (the model diverged, or the gradient all-reduce delivered "
                         "non-finite values to every rank)" % (len(origin), "/".join(values), first),
                         {"step": first, "ranks": len(origin)})
        return [result]
    results = []
    for rank in origin:
        record, event = ranks[rank], started[rank]
        spread = ""
        if followers:
            later = min(started[r]["step"] for r in followers)
            spread = "; %s followed from step %d on (through the gradient all-reduce)" % (
                "every other rank" if len(followers) == len(logged) - len(origin)
                else join_names(["rank %d" % r for r in followers]), later)
        count = len(bad[rank])
        message = ("%s loss was %s at step %d, the first non-finite loss of the run (non-finite in %d of its %d "
                   "steps%s)%s: its GPU (or host) computed a NaN/Inf the other ranks did not" % (
                       _where(rank, record), event["loss"], event["step"], count,
                       len(record.get("step_numbers") or []) or count,
                       ", steps %s" % _steps_text([e["step"] for e in bad[rank]]) if count > 1 else "", spread))
        metrics = {"rank": rank, "local_rank": record.get("local_rank"), "step": event["step"],
                   "loss": event["loss"], "nonfinite_steps": count, "followers": len(followers)}
        result = _result("workload.loss", FAIL, message, metrics, rank, record.get("node"), record.get("gpu"))
        result["evidence"] = [event["line"]] if event.get("line") else []
        results.append(result)
    return results


def _spike_results(ranks, finite, opts):
    ratio_limit = float(opts.get("loss_spike_ratio") or 0)
    window = max(1, int(opts.get("loss_spike_window") or 1))
    if ratio_limit <= 0:
        return []
    results = []
    for rank in sorted(finite):
        series = finite[rank]
        spikes = []
        for index in range(len(series)):
            history = [pair[1] for pair in series[max(0, index - window):index]]
            if len(history) < min(_SPIKE_MIN_HISTORY, window):
                continue
            center = median(history)
            step, value = series[index]
            if center > 0 and value > ratio_limit * center:
                spikes.append((step, value, center, value / center, len(history)))
        if not spikes:
            continue
        step, value, center, ratio, history = max(spikes, key=lambda s: s[3])
        record = ranks[rank]
        message = ("%s loss %s at step %d is %sx the median %s of its previous %d steps (a loss spike; %d step(s) "
                   "above %sx: steps %s)" % (
                       _where(rank, record), fmt_num(round(value, 4)), step, fmt_num(round(ratio, 1)),
                       fmt_num(round(center, 4)), history, len(spikes), fmt_num(ratio_limit),
                       _steps_text([s[0] for s in spikes])))
        metrics = {"rank": rank, "step": step, "loss": round(value, 6), "loss_median_before": round(center, 6),
                   "spike_ratio": round(ratio, 3), "spikes": len(spikes), "window": history}
        results.append(_result("workload.loss", PASS, message, metrics, rank, record.get("node"), record.get("gpu"),
                               warning=True))
    return results
