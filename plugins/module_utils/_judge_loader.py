# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and judge the data loader probe (roles/check_data_loader/files/gpucluster_loader_probe.py).

Stages data_loader_alone (each node on its own) and data_loader (all nodes at once). Checks:
- loader.parse        output missing or unreadable lines (an error beside the findings), the
                      probe's own errors, a run without its "done" record
- loader.setup        a simulation hook that could not be read (error); idle workers (warning)
- loader.throughput   samples/s and MB/s the node's loaders delivered, with how many workers and
                      shards; fail when nothing was read
- loader.utilisation  against the rate the GPUs consume (stage option consume_samples_per_s, or
                      samples_per_step / step_time_s): fail below min_fraction ("delivers 6,100
                      samples/s, the GPUs consume 7,400: the loader caps utilisation at 82 %");
                      skip without a consumption rate
The slowest nodes against their peers and the all-at-once / alone ratio are cluster checks (_cluster).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import no_header_message, probe_records
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

TOOL = "loader-probe"


@capped(32)
def parse_loader_probe(text):
    out = {"header": None, "done": None, "probe_errors": [], "errors": [], "other": []}
    for number, rec in probe_records(text, out):
        kind = rec["record"]
        if kind == "header":
            out["header"] = rec
        elif kind == "done" and is_number(rec.get("samples")) and is_number(rec.get("seconds")):
            out["done"] = rec
        elif kind == "error":
            out["probe_errors"].append(str(rec.get("message"))[:400])
        else:
            out["errors"].append("line %d: not a probe record (%s)" % (number, str(kind)[:40]))
    return out


def consume_rate(options):
    """Samples/s the node's GPUs consume, from the options; None when not given."""
    rate = options.get("consume_samples_per_s")
    if is_number(rate) and rate > 0:
        return float(rate)
    per_step, step = options.get("samples_per_step"), options.get("step_time_s")
    if is_number(per_step) and is_number(step) and per_step > 0 and step > 0:
        return float(per_step) / float(step)
    return None


def judge_loader(parsed, options=None):
    options = options or {}
    checks = []
    if parsed["errors"]:
        checks.append(check_result("loader.parse", ERROR, "%s output: %d unreadable line(s): %s"
                                   % (TOOL, len(parsed["errors"]), "; ".join(parsed["errors"][:3])), None, "probe", tool=TOOL))
    if parsed["other"]:
        checks.append(warning_result("loader.parse", "%s output has %d line(s) that are no probe record: %s"
                                     % (TOOL, len(parsed["other"]), "; ".join(parsed["other"][:2])), tool=TOOL))
    for message in parsed["probe_errors"]:
        checks.append(check_result("loader.parse", ERROR, "%s reported: %s" % (TOOL, message), None, "probe", tool=TOOL))
    header, done = parsed["header"], parsed["done"]
    if header is None or done is None:
        checks.append(check_result("loader.parse", ERROR, no_header_message(TOOL, parsed) if header is None else
                                   "%s did not finish (no 'done' record): nothing measured" % TOOL,
                                   None, "probe", tool=TOOL))
        return checks, {}
    for warning in header.get("warnings") or []:
        checks.append(check_result("loader.setup", ERROR, "%s: %s" % (TOOL, warning), None, "probe", tool=TOOL)
                      if "hook" in warning else warning_result("loader.setup", "%s: %s" % (TOOL, warning), tool=TOOL))
    simulated = bool(header.get("simulated"))
    clock = " (simulated storage clock)" if simulated else ""
    rate = done.get("samples_per_s")
    metrics = {"samples": done["samples"], "bytes": done.get("bytes"), "seconds": done["seconds"],
               "samples_per_s": rate, "mb_per_s": done.get("mb_per_s"), "workers": header.get("workers"),
               "simulated": simulated}
    if (is_number(rate) and rate < 0) or (is_number(done["samples"]) and done["samples"] < 0):
        checks.append(check_result("loader.throughput", ERROR, "%s: not a plausible reading: %s samples at %s samples/s"
                                   % (TOOL, done["samples"], fmt_num(rate)), metrics, "probe", tool=TOOL))
        return checks, metrics
    if not done["samples"] or not is_number(rate):
        checks.append(check_result("loader.throughput", FAIL, "%s read no samples from %s shard(s) (%s)"
                                   % (TOOL, header.get("shards"), header.get("source")), metrics, "storage", tool=TOOL))
        return checks, metrics
    checks.append(check_result(
        "loader.throughput", PASS, "read %d samples (%s MB) from %s shard(s) with %s workers: %s samples/s, %s MB/s%s"
        % (done["samples"], fmt_num((done.get("bytes") or 0) / 1e6), header.get("shards"), header.get("workers"),
           fmt_num(rate), fmt_num(done.get("mb_per_s")), clock), metrics, tool=TOOL))
    want = consume_rate(options)
    if want is None:
        checks.append(check_result("loader.utilisation", SKIP, "no consumption rate of the GPUs to compare with (set "
                                   "check_data_loader_consume_samples_per_s or samples_per_step and step_time_s)",
                                   None, tool=TOOL))
        return checks, metrics
    fraction = float(options.get("min_fraction", 0.95))
    cap = min(1.0, rate / want)
    metrics.update(consume_samples_per_s=want, utilisation_cap=round(cap, 4))
    text = "delivers %s samples/s, the GPUs consume %s: the loader caps utilisation at %d %%%s" % (
        fmt_num(rate), fmt_num(want), int(cap * 100), clock)
    if rate < fraction * want:
        checks.append(check_result("loader.utilisation", FAIL, text + " (needs %d %%)" % int(round(fraction * 100)),
                                   {"samples_per_s": rate, "consume_samples_per_s": want, "cap": cap}, "storage", tool=TOOL))
    else:
        checks.append(check_result("loader.utilisation", PASS, text, {"cap": cap}, tool=TOOL))
    return checks, metrics


def judge_loader_stage(outputs, profile, options):
    """The data_loader(_alone) stages' judge (see _stages.STAGES)."""
    # The alone stage's output is collected as loader-probe-alone: each stage's raw file is its own.
    text = outputs.get(TOOL) if outputs.get(TOOL) is not None else outputs.get(TOOL + "-alone")
    if text is None:
        return [check_result("loader.parse", SKIP, "%s: not in the replayed set" % TOOL, None, tool=TOOL)], {}
    if not str(text).strip():
        return [check_result("loader.parse", ERROR, "%s printed nothing" % TOOL, None, "probe", tool=TOOL)], {}
    return judge_loader(parse_loader_probe(text), options)
