# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric stage: nccl-tests across the whole allocation, then rounds of disjoint groups.

Runs on the controller (the login node): each group is one ``srun`` (or ``mpirun``) of an
nccl-tests binary, groups of a round run concurrently (bounded), each under a timeout after
which its whole process group is killed. Judging is on bus bandwidth at large messages, #wrong,
the out-of-bounds check, and ranks reported == ranks launched (a build without MPI=1 reports
several independent one-node tables). The localisation planner (_localize) turns group results
into per-node verdicts with evidence.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import signal
import subprocess
import threading
import time

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize

STAGE = "fabric"


def launched_ranks(group, opts):
    return len(group) * int(opts["tasks_per_node"]) * int(opts["gpus_per_process"])


def group_command(group, opts):
    """argv launching the nccl-tests binary over the group's nodes (no shell involved)."""
    binary = [opts["binary"]] + [str(a) for a in opts["args"]] + ["-g", str(opts["gpus_per_process"])]
    tasks = int(opts["tasks_per_node"])
    if opts["launcher"] == "mpirun":
        hosts = ",".join("%s:%d" % (node, tasks) for node in group)
        return [opts.get("mpirun", "mpirun"), "-np", str(len(group) * tasks), "--host", hosts] \
            + [str(a) for a in opts.get("launcher_args") or []] + binary
    argv = [opts.get("srun", "srun"), "--nodelist=%s" % ",".join(group), "-N%d" % len(group),
            "--ntasks-per-node=%d" % tasks, "--kill-on-bad-exit=1"]
    if opts.get("gpus_per_node_flag"):
        argv.append("--gpus-per-node=%d" % int(opts["gpus_per_node"]))
    if opts.get("mpi"):
        argv.append("--mpi=%s" % opts["mpi"])
    return argv + [str(a) for a in opts.get("launcher_args") or []] + binary


def run_one(argv, timeout, env=None):
    """Run argv in its own process group; kill the group at the timeout. Returns a record."""
    start = time.time()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    except OSError as exc:
        return {"output": "", "rc": 127, "seconds": 0.0, "timed_out": False,
                "error": "%s: cannot start: %s" % (argv[0], exc)}
    try:
        out, _err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except OSError:
                pass
            try:
                out, _err = proc.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                out = b""
    text = (out or b"").decode("utf-8", "replace")
    return {"output": text, "rc": proc.returncode, "seconds": round(time.time() - start, 3),
            "timed_out": timed_out, "error": None}


def run_groups(groups, opts, env=None):
    """Run every group concurrently (at most opts['concurrency'] at once); records in group order."""
    records = [None] * len(groups)
    slots = threading.Semaphore(max(1, int(opts.get("concurrency") or 1)))

    def worker(i, group):
        with slots:
            argv = group_command(group, opts)
            record = run_one(argv, float(opts["timeout"]), env)
            record["command"] = argv
            record["nodes"] = list(group)
            records[i] = record

    threads = [threading.Thread(target=worker, args=(i, g)) for i, g in enumerate(groups)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return records


def judge_run(record, opts, floor):
    """Judge one group's run: (status ok|timeout|error, busbw or None, sentence, parsed)."""
    group = record["nodes"]
    what = "%d-node %s" % (len(group), os.path.basename(opts["binary"]))
    if record.get("error"):
        return ERROR, None, record["error"], None
    if record["timed_out"]:
        return "timeout", None, "%s over %s hung: killed after %ss" % (what, ",".join(group), opts["timeout"]), None
    parsed = parse_nccl_tests(record["output"])
    expected = launched_ranks(group, opts)
    runs = parsed.get("independent_runs") or 1
    if runs > 1 or (parsed.get("nranks") and parsed["nranks"] < expected and parsed.get("headers", 0) > 1):
        per = parsed.get("nranks") or 0
        return ERROR, None, ("%d ranks launched, nccl-tests reported %d independent runs of %d: built without MPI=1?"
                             % (expected, runs, per)), parsed
    if parsed.get("errors") and not parsed.get("rows"):
        return ERROR, None, "%s: output unreadable (rc %s): %s" % (what, record["rc"], "; ".join(parsed["errors"][:3])), parsed
    if parsed.get("nranks") != expected:
        return ERROR, None, "%d ranks launched, nccl-tests reported %s" % (expected, parsed.get("nranks")), parsed
    wrong = [e for e in parsed.get("errors") or [] if "wrong" in e or "Out of bounds" in e or "failure" in e.lower()]
    if wrong:
        return ERROR, None, "%s returned wrong results: %s" % (what, "; ".join(wrong[:2])), parsed
    if parsed.get("errors"):
        return ERROR, None, "%s: %s" % (what, "; ".join(parsed["errors"][:3])), parsed
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    return "ok", busbw, "%s busbw %.1f GB/s at large messages" % (what, busbw or 0), parsed


def _full_allocation(nodes, opts, floor, env):
    (record,) = run_groups([nodes], opts, env)
    status, busbw, sentence, _parsed = judge_run(record, opts, floor)
    if status == "ok" and floor is not None and busbw < floor:
        result = check_result("full_allocation", FAIL, "%s, below the %s GB/s floor" % (sentence, floor),
                              {"busbw": busbw, "floor": floor, "nodes": len(nodes)})
    elif status == "ok":
        result = check_result("full_allocation", PASS, sentence, {"busbw": busbw, "floor": floor, "nodes": len(nodes)})
    else:
        result = check_result("full_allocation", ERROR if status != "ok" else FAIL, sentence,
                              {"nodes": len(nodes), "status": status})
    result["node"] = None
    result["component"] = "all %d nodes" % len(nodes)
    return result, record


def fabric_stage(nodes, topology, opts, env=None):
    """Run the fabric stage; return {stage, checks, raw, document, failed_nodes}."""
    floor = opts.get("floor")
    raw, checks = {}, []
    nodes = sorted(nodes)
    if len(nodes) < 2:
        return {"stage": STAGE, "checks": [check_result("full_allocation", PASS if nodes else ERROR,
                                                        "fewer than 2 nodes passed the per-node stages: "
                                                        "no multi-node test to run", {"nodes": len(nodes)})],
                "raw": {}, "document": {}, "failed_nodes": []}
    if opts.get("full_allocation", True):
        full, record = _full_allocation(nodes, opts, floor, env)
        checks.append(full)
        raw["full-allocation"] = record
    mode = opts.get("mode") or "adaptive"
    config = dict(opts.get("localize") or {})
    config.setdefault("floor", floor)
    counter = {"round": 0}

    def run_round(groups):
        counter["round"] += 1
        records = run_groups(groups, opts, env)
        results = []
        for i, record in enumerate(records):
            status, busbw, sentence, _parsed = judge_run(record, opts, floor)
            raw["round%d-%s" % (counter["round"], "-".join(record["nodes"]))] = record
            results.append({"group": record["nodes"], "busbw": busbw,
                            "status": status if status in ("ok", "timeout") else "error", "note": sentence})
        return results

    state = _localize.localize(nodes, topology, run_round, mode=mode, seed=int(opts.get("seed") or 0),
                               max_rounds=opts.get("max_rounds"), config=config)
    document = _localize.public_state(state)
    failed = []
    for node in nodes:
        info = state["nodes"][node]
        verdict = info["verdict"]
        evidence = info.get("evidence") or []
        metrics = {"verdict": verdict, "leaf": info.get("leaf")}
        if verdict == _localize.PINNED:
            status = FAIL
        elif verdict == _localize.SUSPECT:
            status = FAIL
        elif verdict == _localize.UNTESTED:
            status = ERROR
        else:
            status = PASS
        message = evidence[0] if evidence else "%s: %s" % (node, verdict)
        result = check_result("pair_bandwidth", status, message, metrics, component=node)
        result["node"] = node
        result["detail"] = "\n".join(evidence)
        checks.append(result)
        if status in (FAIL, ERROR):
            failed.append(node)
    for leaf, info in sorted((state.get("uplinks") or {}).items()):
        if info["verdict"] in (_localize.PINNED, _localize.SUSPECT):
            evidence = info.get("evidence") or []
            result = check_result("leaf_uplink", FAIL, evidence[0] if evidence else "%s uplink degraded" % leaf,
                                  {"verdict": info["verdict"]}, component="%s uplink" % leaf)
            result["node"] = None
            result["detail"] = "\n".join(evidence)
            checks.append(result)
    return {"stage": STAGE, "checks": checks, "raw": dict((k, _raw_record(v)) for k, v in raw.items()),
            "document": document, "failed_nodes": sorted(failed)}


def _raw_record(record):
    return {"output": "$ %s\n%s" % (" ".join(record.get("command") or []), record.get("output") or ""),
            "rc": record.get("rc"), "seconds": record.get("seconds"), "complete": not record.get("timed_out")}
