# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge the checkpoint probe (roles/check_checkpoint/files/gpucluster_checkpoint_probe.py).

Stages checkpoint_alone (each node on its own) and checkpoint (all nodes at once). Checks:
- checkpoint.parse   output missing or unreadable lines (an error beside the findings), a probe that
                     stopped (timeout, SIGTERM, an unforeseen error) or did not finish
- checkpoint.setup   a path that does not exist, is not writable or lacks the space; too little
                     memory for the shard; PyTorch missing; a simulation hook that could not be read
- checkpoint.write   per path (local NVMe, shared file system): torch.save + fsync of the shard and
                     torch.load back, seconds and MB/s; fail below the floor (stage option
                     min_<path>_write_mb_s, else the profile's checkpoint.min_<path>_write_mb_s)
- checkpoint.async   the asynchronous pattern: training loop released after the local save,
                     durable once the background copy to the shared path is fsync'ed; carries the
                     stage's metrics (skip when a path is not measured)
- checkpoint.verify  every file read back has the sha256 of what was serialised and equal sample
                     tensors; a mismatch fails
- checkpoint.fio     per path: fio sequential write and read (1 MiB, O_DIRECT, libaio); fio's own
                     error or a missing fio is an error; fail when its write is below the floor
The stage's metrics (the checkpoint plan reads them): shard_bytes, local_write_s, local_read_s,
shared_write_s, shared_read_s, release_s, durable_s, blocking_s, local_write_mb_s,
shared_write_mb_s, local_read_mb_s, shared_read_mb_s, fio {local, shared: write_mb_s,
read_mb_s, write_p99_ms, read_p99_ms}, verified, simulated, writers; a path not measured is None.
Slow nodes against their peers and the all-at-once / alone ratio are cluster checks (_cluster).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_probe import (
    PATH_KINDS, parse_checkpoint_probe)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fio import side_of
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import no_header_message
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, profile_get, warning_result)

TOOL = "checkpoint-probe"
# The collected output of each stage: its own name, so that the raw outputs of the two stages
# (raw/<node>/<tool>.txt) and their replays stay apart.
STAGE_TOOLS = {"checkpoint": TOOL, "checkpoint_alone": TOOL + "-alone"}
LABELS = {"local": "local NVMe", "shared": "shared file system"}
# The probe's error phase -> the check it belongs to.
PHASE_CHECKS = {"setup": "checkpoint.setup", "cleanup": "checkpoint.setup", "write": "checkpoint.write",
                "read": "checkpoint.write", "async": "checkpoint.async", "fio": "checkpoint.fio"}


def seconds(value):
    """0.00400 -> '0.004 s', 12.345 -> '12.3 s'."""
    return "%s s" % ("%.3g" % value if value < 100 else "%d" % round(value))


def megabytes(nbytes):
    return fmt_num(nbytes / 1e6)


def component(kind, path):
    return "%s %s" % (LABELS.get(kind, kind), path) if path else LABELS.get(kind, kind)


def write_floor(kind, profile, options):
    """(MB/s, where it comes from) of the path's write floor, or (None, None) without one."""
    given = options.get("min_%s_write_mb_s" % kind)
    if is_number(given) and given > 0:
        return float(given), "check_checkpoint_min_%s_write_mb_s" % kind
    value = profile_get(profile, "checkpoint.min_%s_write_mb_s" % kind)
    if is_number(value) and value > 0:
        return float(value), "profile checkpoint.min_%s_write_mb_s" % kind
    return None, None


def _where(header, options):
    node = (header or {}).get("node") or "the node"
    stage = options.get("stage")
    return "%s on %s%s" % (TOOL, node, " (stage %s)" % stage if stage else "")


def _probe_errors(parsed, header, options):
    checks = []
    where = _where(header, options)
    for error in parsed["probe_errors"]:
        check = PHASE_CHECKS.get(error.get("phase"), "checkpoint.parse")
        kind = error.get("path_kind")
        inner = error.get("tool") or TOOL
        if kind in PATH_KINDS:
            text = "%s: %s path %s: %s" % (where, LABELS[kind], error.get("path"), error["message"])
        else:
            text = "%s: %s" % (where, error["message"])
        if inner != TOOL and inner not in text:
            text += " (%s)" % inner
        checks.append(check_result(check, ERROR, text, {"tool": inner, "phase": error.get("phase")},
                                   component(kind, error.get("path")) if kind in PATH_KINDS else "probe"))
    return checks


def _fio_summary(record):
    """({write_mb_s, read_mb_s, write_p99_ms, read_p99_ms}, [problems]) of one path's fio record."""
    parsed = record["parsed"]
    problems = list(parsed["errors"])
    for job in parsed["jobs"]:
        if job.get("error"):
            try:
                meaning = os.strerror(job["error"])
            except ValueError:
                meaning = "?"
            problems.append("fio job %s failed with error %d (%s)" % (job["name"], job["error"], meaning))
    if is_number(record.get("rc")) and record["rc"] != 0 and not problems:
        problems.append("fio exited with status %d" % record["rc"])
    write, _job = side_of(parsed, "write")
    read, _job = side_of(parsed, "read")
    summary = {"write_mb_s": write and write["mb_s"], "read_mb_s": read and read["mb_s"],
               "write_p99_ms": write and write["clat_p99_ms"], "read_p99_ms": read and read["clat_p99_ms"]}
    if not problems and (write is None or read is None):
        problems.append("fio moved no data (%s)" % ("no write" if write is None else "no read"))
    return summary, problems


def _judge_saves(parsed, profile, options, clock):
    checks = []
    for kind in PATH_KINDS:
        rec = parsed["saves"].get(kind)
        if rec is None:
            continue
        path = os.path.dirname(str(rec.get("path") or "")) or None
        floor, source = write_floor(kind, profile, options)
        rate = rec.get("write_mb_s")
        text = "torch.save of %s MB + fsync to %s: %s, %s MB/s; torch.load back %s, %s MB/s%s" % (
            megabytes(rec["file_bytes"]), component(kind, path), seconds(rec["write_s"]), fmt_num(rate),
            seconds(rec["read_s"]), fmt_num(rec.get("read_mb_s")), clock)
        if kind == "shared" and is_number(rec.get("writers")):
            text += ", %d node%s writing at once" % (rec["writers"], "" if rec["writers"] == 1 else "s")
        metrics = {"path": path, "write_s": rec["write_s"], "read_s": rec["read_s"], "write_mb_s": rate,
                   "read_mb_s": rec.get("read_mb_s"), "file_bytes": rec["file_bytes"], "floor_mb_s": floor}
        longest = float(profile_get(profile, "plausibility.seconds_max", 604800))
        odd = [name for name in ("write_s", "read_s") if is_number(rec.get(name)) and not 0 <= rec[name] <= longest]
        if odd or (is_number(rate) and rate < 0):
            checks.append(check_result("checkpoint.write", ERROR, "%s: not a plausible reading (%s; times from 0 to %s s, "
                                       "plausibility.seconds_max): %s" % (component(kind, path), ", ".join(
                                           "%s %s" % (n, rec[n]) for n in odd) or "rate %s MB/s" % rate,
                                           fmt_num(longest), text), metrics, component(kind, path)))
            continue
        if floor is not None and is_number(rate) and rate < floor:
            checks.append(check_result("checkpoint.write", FAIL, "%s writes the checkpoint at %s MB/s, below the "
                                       "floor %s MB/s (%s): %s" % (component(kind, path), fmt_num(rate), fmt_num(floor),
                                                                   source, text), metrics, component(kind, path)))
        elif not is_number(rate):
            checks.append(check_result("checkpoint.write", ERROR, "%s: no write rate (%s)" % (component(kind, path),
                                                                                              text), metrics,
                                       component(kind, path)))
        else:
            text += ("; floor %s MB/s (%s)" % (fmt_num(floor), source)) if floor is not None else \
                "; no floor set (checkpoint.min_%s_write_mb_s)" % kind
            checks.append(check_result("checkpoint.write", PASS, text, metrics, component(kind, path)))
    return checks


def _judge_verify(parsed):
    files, bad = 0, []
    for kind in PATH_KINDS:
        rec = parsed["saves"].get(kind)
        if rec is None:
            continue
        files += 1
        where = component(kind, os.path.dirname(str(rec.get("path") or "")))
        if rec.get("sha256_ok") is not True:
            bad.append("%s: %s read back with sha256 %s, written %s" % (
                where, os.path.basename(str(rec.get("path"))), str(rec.get("sha256"))[:16],
                str(rec.get("expected_sha256"))[:16]))
        if rec.get("samples_mismatched"):
            bad.append("%s: torch.load gives other values for %s" % (where, ", ".join(rec["samples_mismatched"][:4])))
    if parsed["async"] is not None:
        files += 1
        if parsed["async"].get("sha256_ok") is not True:
            bad.append("the asynchronous copy on the %s has another sha256 than what was written" % LABELS["shared"])
    if not files:
        return [], False
    if bad:
        return [check_result("checkpoint.verify", FAIL, "checkpoint read back does not match what was written: %s"
                             % "; ".join(bad), {"files": files, "mismatched": len(bad)}, "storage",
                             evidence=bad)], False
    samples = max([r.get("samples_checked") or 0 for r in parsed["saves"].values()] or [0])
    return [check_result("checkpoint.verify", PASS, "read back and verified %d checkpoint file%s: the sha256 of the "
                         "bytes and torch.load of %d sample tensors" % (files, "" if files == 1 else "s", samples),
                         {"files": files})], True


def _judge_fio(parsed, header, profile, options):
    checks, fio = [], {}
    settings = (header or {}).get("fio") or {}
    how = "1 MiB blocks, O_DIRECT, %s, iodepth %s, %s MB" % (
        settings.get("ioengine", "libaio"), settings.get("iodepth"), settings.get("size_mb"))
    for kind in PATH_KINDS:
        rec = parsed["fio"].get(kind)
        if rec is None:
            continue
        path = os.path.dirname(str(rec.get("path") or "")) or None
        summary, problems = _fio_summary(rec)
        fio[kind] = summary
        if rec.get("settings", {}).get("rate_bytes_per_s"):
            how_here = how + ", --rate of the simulated storage"
        else:
            how_here = how
        if problems:
            checks.append(check_result("checkpoint.fio", ERROR, "%s: fio on %s: %s" % (
                _where(header, options), component(kind, path), "; ".join(problems + (rec.get("messages") or [])[:3])),
                dict(summary, rc=rec.get("rc")), component(kind, path), evidence=rec.get("messages")))
            continue
        text = "fio on %s: sequential write %s MB/s (p99 completion latency %s ms), read %s MB/s (p99 %s ms) (%s)" % (
            component(kind, path), fmt_num(summary["write_mb_s"]), fmt_num(summary["write_p99_ms"]),
            fmt_num(summary["read_mb_s"]), fmt_num(summary["read_p99_ms"]), how_here)
        save = parsed["saves"].get(kind)
        if save and save.get("clock") != "simulated" and is_number(save.get("write_mb_s")) and summary["write_mb_s"]:
            text += "; torch.save reached %d %% of it" % int(round(100.0 * save["write_mb_s"] / summary["write_mb_s"]))
        floor, source = write_floor(kind, profile, options)
        if floor is not None and summary["write_mb_s"] < floor:
            checks.append(check_result("checkpoint.fio", FAIL, "%s below the floor %s MB/s (%s)" % (
                text, fmt_num(floor), source), dict(summary, floor_mb_s=floor), component(kind, path)))
        else:
            checks.append(check_result("checkpoint.fio", PASS, text, summary, component(kind, path)))
    return checks, fio


def stage_metrics(parsed, verified, fio):
    """The metrics contract of the checkpoint stages (module docstring)."""
    header, saves, pattern = parsed["header"] or {}, parsed["saves"], parsed["async"]
    size = None
    for rec in list(saves.values()) + [pattern, parsed["state"]]:
        if rec and is_number(rec.get("file_bytes")):
            size = int(rec["file_bytes"])
            break
    metrics = {"shard_bytes": size if size is not None else header.get("shard_bytes"),
               "simulated": bool(header.get("simulated")), "verified": bool(verified), "fio": fio,
               "release_s": pattern and pattern["release_s"], "durable_s": pattern and pattern["durable_s"],
               "writers": (saves.get("shared") or {}).get("writers")}
    for kind in PATH_KINDS:
        rec = saves.get(kind) or {}
        for key in ("write_s", "read_s", "write_mb_s", "read_mb_s"):
            metrics["%s_%s" % (kind, key)] = rec.get(key)
    # What one checkpoint blocks the training loop: the asynchronous release where measured, else
    # a synchronous save (to the local NVMe when it is the only path).
    metrics["blocking_s"] = next((v for v in (metrics["release_s"], metrics["shared_write_s"],
                                              metrics["local_write_s"]) if is_number(v)), None)
    return metrics


def judge_checkpoint(parsed, profile=None, options=None):
    profile, options = profile or {}, options or {}
    checks = []
    if parsed["errors"]:
        checks.append(check_result("checkpoint.parse", ERROR, "%s output: %d unreadable line(s): %s"
                                   % (TOOL, len(parsed["errors"]), "; ".join(parsed["errors"][:3])), None, "probe"))
    if parsed["other"]:
        checks.append(warning_result("checkpoint.parse", "%s output has %d line(s) that are no probe record: %s"
                                     % (TOOL, len(parsed["other"]), "; ".join(parsed["other"][:2]))))
    header = parsed["header"]
    if header is None:
        checks.append(check_result("checkpoint.parse", ERROR, no_header_message(TOOL, parsed), None, "probe"))
        return checks, {}
    for warning in header.get("warnings") or []:
        checks.append(check_result("checkpoint.setup", ERROR, "%s: %s" % (TOOL, warning), None, "probe")
                      if "hook" in warning else warning_result("checkpoint.setup", "%s: %s" % (TOOL, warning)))
    if "capped" in str(header.get("shard_source") or ""):
        capped = "the shard is capped (%s): the times are for %s MB, the MB/s hold for the real shard" % (
            header["shard_source"], megabytes(header.get("shard_bytes") or 0))
        checks.append(warning_result("checkpoint.setup", capped))
    checks.extend(_probe_errors(parsed, header, options))
    if parsed["done"] is None:
        checks.append(check_result("checkpoint.parse", ERROR, "%s: did not finish (no 'done' record)%s" % (
            _where(header, options), "" if parsed["probe_errors"] else ": killed, or its output was cut"),
            None, "probe"))
    clock = " (simulated storage clock)" if header.get("simulated") else ""
    checks.extend(_judge_saves(parsed, profile, options, clock))
    verify, verified = _judge_verify(parsed)
    fio_checks, fio = _judge_fio(parsed, header, profile, options)
    metrics = stage_metrics(parsed, verified, fio)
    pattern = parsed["async"]
    paths = header.get("paths") or {}
    if pattern is not None:
        checks.append(check_result(
            "checkpoint.async", PASS, "asynchronous checkpoint of %s MB: the training loop is released after %s "
            "(local save + fsync), the copy on the %s is durable after %s%s" % (
                megabytes(pattern["file_bytes"]), seconds(pattern["release_s"]), LABELS["shared"],
                seconds(pattern["durable_s"]), clock), metrics))
    elif not any(c["check"] == "checkpoint.async" for c in checks):
        missing = [LABELS[k] for k in PATH_KINDS if not paths.get(k)]
        checks.append(check_result("checkpoint.async", SKIP, "asynchronous pattern not measured: %s" % (
            "no %s path set" % " and no ".join(missing) if missing else "a path could not be measured"),
            metrics))
    checks.extend(verify)
    checks.extend(fio_checks)
    if not checks:
        checks.append(check_result("checkpoint.write", ERROR, "%s measured nothing (no path set?)"
                                   % _where(header, options), None, "probe"))
    return checks, metrics


def judge_checkpoint_stage(outputs, profile, options):
    """The checkpoint(_alone) stages' judge (see _stages.STAGES): one output, the probe's."""
    tool = next((t for t in STAGE_TOOLS.values() if t in outputs), TOOL)
    text = outputs.get(tool)
    if text is None:
        return [check_result("checkpoint.parse", SKIP, "%s: not in the replayed set" % tool, None)], {}
    if not str(text).strip():
        return [check_result("checkpoint.parse", ERROR, "%s printed nothing" % tool, None, "probe")], {}
    return judge_checkpoint(parse_checkpoint_probe(text), profile, options)
