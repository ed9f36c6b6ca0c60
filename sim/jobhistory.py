# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real Slurm job history with injected node failures, for a simulated cluster with accounting.

``plan(...)`` (pure, seeded) decides the jobs and their failures; ``run(cluster, plan, ...)``
submits them with sbatch to the running cluster, injects the failures and returns the truth (what
was done, to compare with what ``sacct`` and ``sacctmgr list event`` record):

- N jobs of ``sleep S`` on K nodes (``--exclusive``: a node runs one job at a time, so a node
  failure kills exactly one job); a fraction F of them with ``--requeue``, the rest ``--no-requeue``.
- ``exit_failures`` of the N end with a non-zero exit after S/2 s (state FAILED, not hardware);
  ``timeouts`` extra jobs (``-t 1``, ``sleep 600``) end TIMEOUT ~73 s after their start (opt-in).
- Node failures are a Poisson process of rate R per node-second of job exposure: each run of a
  job on K nodes fails after an Exp(K * R) time if that comes before its end, on one of its nodes
  (uniform). The run's failure is clamped into [min(0.3, L/3), L - 0.7] of its length L, so that
  the node goes DOWN while the job surely runs. At that time the node is set DOWN with
  ``scontrol update nodename=X state=down reason="sim node failure"`` (sacct: NODE_FAIL) and
  resumed as soon as the job has left it (``state=resume``). Timeout jobs get no failures.
- A requeued job (Slurm requeues ``--requeue`` jobs on NODE_FAIL) waits on BeginTime (~120 s);
  it is released ``restart_delay`` s after its node went DOWN (``scontrol update jobid=N
  StartTime=now``), so the restart time sacct shows is that delay plus scheduling. Its new run is
  exposed again; a job's last planned run (``MAX_RUNS``) gets no failure, so every requeued job
  ends.

Everything waits on conditions (squeue, sacct states) with deadlines, never on fixed sleeps.
Standard library only.
"""
from __future__ import annotations

import contextlib
import json
import math
import random
import time
from pathlib import Path

REASON = "sim node failure"
MAX_RUNS = 4            # runs per requeued job; the last one is never failed
EXIT_CODES = (1, 2, 3)  # exit_failures cycle through these
TIMEOUT_LIMIT_MIN = 1   # -t 1: Slurm ends the job ~73 s after its start (limit + KillWait + its timer)
SACCT_WAIT_S = 30.0     # for sacct to show what squeue saw
GUARD_S = 0.7           # a failure comes at least this long before the run's planned end
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"  # sacct's (local time)
MISSED = ("COMPLETED", "FAILED", "TIMEOUT")  # a job's own ends: a node failure after them missed it
FINAL = ("COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
         "PREEMPTED")
SACCT_FIELDS = ("JobID,JobIDRaw,JobName,Partition,State,ExitCode,DerivedExitCode,Submit,Eligible,Start,End,"
                "Elapsed,ElapsedRaw,NNodes,NodeList,Reason,Timelimit,Flags,SubmitLine")
EVENT_FIELDS = "NodeName,Start,End,State,Reason,User"
DEFAULTS = {"jobs": 40, "nodes_per_job": 2, "seconds": 3.0, "node_fail_rate": 0.04, "requeue_fraction": 0.5,
            "restart_delay": 2.0, "exit_failures": 3, "timeouts": 0, "seed": 0}


class HistoryError(RuntimeError):
    """The history could not be made (bad parameters, a cluster without accounting, a deadline)."""


def _iso(epoch):
    return time.strftime(TIME_FORMAT, time.localtime(epoch))


# ---------------------------------------------------------------------------------------------
# The plan (pure)
# ---------------------------------------------------------------------------------------------
def check_parameters(jobs, nodes_per_job, seconds, node_fail_rate, requeue_fraction, restart_delay,
                     exit_failures, timeouts, nodes=None):
    """Raise HistoryError (one line naming the option) for unusable parameters."""
    def bad(name, why):
        raise HistoryError("--%s: %s" % (name.replace("_", "-"), why))
    for name, value, low in (("jobs", jobs, 1), ("nodes_per_job", nodes_per_job, 1),
                             ("exit_failures", exit_failures, 0), ("timeouts", timeouts, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            bad(name, "must be an integer >= %d, got %r" % (low, value))
    for name, value, low in (("seconds", seconds, 2.0), ("node_fail_rate", node_fail_rate, 0.0),
                             ("restart_delay", restart_delay, 0.0)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < low:
            bad(name, "must be a number >= %g, got %r" % (low, value))
    if not isinstance(requeue_fraction, (int, float)) or not 0.0 <= requeue_fraction <= 1.0:
        bad("requeue_fraction", "must be a number from 0 to 1, got %r" % (requeue_fraction,))
    if exit_failures > jobs:
        bad("exit_failures", "%d of %d jobs: at most --jobs" % (exit_failures, jobs))
    if nodes is not None and nodes_per_job > nodes:
        bad("nodes_per_job", "%d nodes per job on a cluster of %d reachable nodes" % (nodes_per_job, nodes))


def plan(jobs=DEFAULTS["jobs"], nodes_per_job=DEFAULTS["nodes_per_job"], seconds=DEFAULTS["seconds"],
         node_fail_rate=DEFAULTS["node_fail_rate"], requeue_fraction=DEFAULTS["requeue_fraction"],
         exit_failures=None, timeouts=DEFAULTS["timeouts"], seed=DEFAULTS["seed"]):
    """The seeded plan: jobs, which ones requeue or exit non-zero, and each run's failure.

    ``exit_failures`` None: DEFAULTS' (3), at most ``jobs``.

    Returns {parameters..., 'jobs': [{index, name, kind ('sleep'|'exit'|'timeout'), seconds,
    exit_code, requeue, runs: [{run, fail_at (s after the run's start) or None, node_index}]}],
    'node_failures': planned count, 'exposure_node_s_planned'} where the exposure is K times the
    planned length of every run (up to its failure), timeout jobs excluded.
    """
    if exit_failures is None and isinstance(jobs, int):
        exit_failures = min(DEFAULTS["exit_failures"], jobs)
    check_parameters(jobs, nodes_per_job, seconds, node_fail_rate, requeue_fraction, 0.0, exit_failures, timeouts)
    rng = random.Random(seed)
    order = list(range(jobs))
    rng.shuffle(order)
    exits = set(order[:exit_failures])
    rng.shuffle(order)
    requeues = set(order[:int(round(requeue_fraction * jobs))])
    out_jobs, failures, exposure = [], 0, 0.0
    for index in range(jobs + timeouts):
        if index >= jobs:
            kind, length, code, requeue = "timeout", None, 0, False
        elif index in exits:
            kind, length, requeue = "exit", max(1.0, seconds / 2.0), index in requeues
            code = EXIT_CODES[sorted(exits).index(index) % len(EXIT_CODES)]
        else:
            kind, length, code, requeue = "sleep", float(seconds), 0, index in requeues
        runs = []
        while True:
            number = len(runs)
            fail_at, node_index = None, None
            if kind != "timeout" and node_fail_rate > 0:
                draw = rng.expovariate(node_fail_rate * nodes_per_job)
                pick = rng.randrange(nodes_per_job)
                last = requeue and number == MAX_RUNS - 1
                if draw < length and not last:
                    low = min(0.3, length / 3.0)
                    fail_at, node_index = round(min(max(draw, low), max(low, length - GUARD_S)), 3), pick
            runs.append({"run": number, "fail_at": fail_at, "node_index": node_index})
            if fail_at is not None:
                failures += 1
            if length is not None:
                exposure += nodes_per_job * (fail_at if fail_at is not None else length)
            if fail_at is None or not requeue:
                break
        out_jobs.append({"index": index, "name": "hist-%03d" % index, "kind": kind, "seconds": length,
                         "exit_code": code, "requeue": requeue, "runs": runs})
    return {"seed": seed, "job_count": jobs + timeouts, "nodes_per_job": nodes_per_job, "seconds": float(seconds),
            "rate_per_node_s": float(node_fail_rate), "requeue_fraction": float(requeue_fraction),
            "exit_failures": exit_failures, "timeouts": timeouts, "jobs": out_jobs, "node_failures": failures,
            "exposure_node_s_planned": round(exposure, 3)}


def expected_states(job):
    """The sacct -X -D states a planned job leaves, oldest record first."""
    final = {"sleep": "COMPLETED", "exit": "FAILED", "timeout": "TIMEOUT"}[job["kind"]]
    states = []
    for run in job["runs"]:
        if run["fail_at"] is not None:
            states.append("NODE_FAIL")
        else:
            states.append(final)
    return states


# ---------------------------------------------------------------------------------------------
# Running it
# ---------------------------------------------------------------------------------------------
def _wrap(job):
    if job["kind"] == "timeout":
        return "sleep 600"
    if job["kind"] == "exit":
        return "sleep %g; exit %d" % (job["seconds"], job["exit_code"])
    return "sleep %g" % job["seconds"]


class _Runner:
    """One history run against a SimCluster (its ``run`` sets SLURM_CONF)."""

    def __init__(self, cluster, the_plan, restart_delay, poll):
        self.cluster = cluster
        self.plan = the_plan
        self.restart_delay = float(restart_delay)
        self.poll = poll
        self.work = Path(cluster.run_dir) / "history"
        self.failures, self.requeued = [], []
        self.clock = time.monotonic  # the unit tests drive it

    def _cmd(self, argv, timeout=30, check=True):
        proc = self.cluster.run(argv, timeout=timeout)
        if check and proc.returncode != 0:
            raise HistoryError("%s: rc=%d: %s" % (" ".join(argv[:3]), proc.returncode,
                                                  (proc.stderr or proc.stdout).strip()[:300]))
        return proc

    def submit(self):
        self.work.mkdir(parents=True, exist_ok=True)
        live = {}
        for job in self.plan["jobs"]:
            argv = ["sbatch", "--parsable", "-N", str(self.plan["nodes_per_job"]), "--exclusive",
                    "-J", job["name"], "-D", str(self.work), "-o", "/dev/null",
                    "--requeue" if job["requeue"] else "--no-requeue"]
            if job["kind"] == "timeout":
                argv += ["-t", str(TIMEOUT_LIMIT_MIN)]
            argv += ["--wrap", _wrap(job)]
            jobid = self._cmd(argv).stdout.strip().split(";")[0]
            live[jobid] = {"job": job, "phase": "pending", "t0": None, "node": None, "runs": []}
            job["jobid"] = jobid
        return live

    def squeue(self, ids):
        proc = self._cmd(["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i|%T|%N|%r"], check=False)
        seen = {}
        for line in proc.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 4:
                seen[parts[0]] = {"state": parts[1], "nodes": parts[2], "reason": parts[3]}
        return seen

    def hostnames(self, hostlist):
        return self._cmd(["scontrol", "show", "hostnames", hostlist]).stdout.split()

    def drive(self, live, deadline):
        """Poll squeue; inject, resume and release on time; return when every job has ended."""
        while True:
            seen = self.squeue(list(live))
            for jobid, info in live.items():
                row = seen.get(jobid)
                self._step(jobid, info, row["state"] if row else None, row)
            if all(info["phase"] == "done" for info in live.values()):
                return
            if time.monotonic() > deadline:
                waiting = ["%s (%s, %s)" % (j, i["phase"], (seen.get(j) or {}).get("state")) for j, i in live.items()
                           if i["phase"] != "done"]
                raise HistoryError("deadline passed with %d job(s) not done: %s"
                                   % (len(waiting), ", ".join(waiting[:6])))
            time.sleep(self.poll)

    def _step(self, jobid, info, state, row):
        """Advance one job: pending -> running [-> injected -> requeued -> released -> running ...] -> done
        (a job without --requeue: injected -> ending -> done)."""
        job = info["job"]
        if info["phase"] == "injected" and state not in ("RUNNING", None):
            # The job has left the node (NODE_FAIL, or requeued; maybe still COMPLETING): the node comes back.
            self._cmd(["scontrol", "update", "nodename=%s" % info["node"], "state=resume"], check=False)
            info["failure"]["resumed"] = round(time.time(), 3)
            info["failure"]["job_state_after"] = state
            info["phase"] = "requeued" if job["requeue"] else "ending"
        if info["phase"] in ("requeued", "ending") and state in MISSED:
            # It had ended (its own way) before the node went down: no NODE_FAIL.
            info.update(phase="done")
            info["failure"]["hit"] = False
            info["runs"][-1]["state"] = state
        elif info["phase"] == "ending" and state in FINAL:
            info.update(phase="done")
            info["failure"]["hit"] = True
            info["runs"][-1]["state"] = state
        if info["phase"] == "requeued" and state in ("PENDING", "RUNNING"):
            info["failure"]["hit"] = True
            info["runs"][-1]["state"] = "NODE_FAIL"
            if state == "RUNNING":  # Slurm started it on its own
                info["phase"] = "released"
            elif self.clock() >= info["down_mono"] + self.restart_delay:
                self._cmd(["scontrol", "update", "jobid=%s" % jobid, "StartTime=now"])
                released = time.time()
                self.requeued.append({"job": jobid, "name": job["name"], "run": len(info["runs"]),
                                      "failed": info["failure"]["down"], "failed_time": info["failure"]["down_time"],
                                      "released": round(released, 3), "released_time": _iso(released),
                                      "restart_delay_s": self.restart_delay})
                info["phase"] = "released"
        if info["phase"] in ("pending", "released") and state == "RUNNING":
            if info["phase"] == "released":
                for item in self.requeued:
                    if item["job"] == jobid and item["run"] == len(info["runs"]):
                        item["restarted"] = round(time.time(), 3)
                        item["restart_s_observed"] = round(item["restarted"] - item["failed"], 3)
            info.update(phase="running", t0=self.clock())
            info["runs"].append({"run": len(info["runs"]), "started": round(time.time(), 3), "nodes": row["nodes"],
                                 "node_failure": None, "state": None})
        if info["phase"] == "running":
            planned = job["runs"][min(len(info["runs"]) - 1, len(job["runs"]) - 1)]
            if state == "RUNNING" and planned["fail_at"] is not None and len(info["runs"]) <= len(job["runs"]) \
                    and self.clock() >= info["t0"] + planned["fail_at"]:
                self._inject(jobid, info, planned)
            elif state in FINAL:
                info["phase"] = "done"
                info["runs"][-1]["state"] = state
        elif info["phase"] in ("pending", "released") and state in FINAL:
            info["phase"] = "done"  # ended before it was seen running (a very short run)
            info["runs"].append({"run": len(info["runs"]), "started": None, "nodes": None, "node_failure": None,
                                 "state": state})

    def _inject(self, jobid, info, planned):
        run = info["runs"][-1]
        node = self.hostnames(run["nodes"])[planned["node_index"]]
        at = round(self.clock() - info["t0"], 3)
        self._cmd(["scontrol", "update", "nodename=%s" % node, "state=down", "reason=%s" % REASON])
        down = time.time()
        info.update(phase="injected", node=node, down_mono=self.clock())
        info["failure"] = {"job": jobid, "name": info["job"]["name"], "run": run["run"], "node": node,
                           "nodes": run["nodes"], "at": at, "planned_at": planned["fail_at"],
                           "started": run["started"], "down": round(down, 3), "down_time": _iso(down),
                           "requeue": info["job"]["requeue"], "resumed": None, "hit": None}
        run["node_failure"] = info["failure"]
        self.failures.append(info["failure"])

    def sacct_records(self, ids, start):
        proc = self._cmd(["sacct", "-a", "-n", "-P", "-X", "-D", "-S", _iso(start - 1), "-j", ",".join(ids),
                          "--format=JobID,State,ElapsedRaw,NNodes,Start,End,JobName"], check=False)
        if proc.returncode != 0:
            raise HistoryError("sacct: rc=%d: %s" % (proc.returncode, proc.stderr.strip()[:300]))
        records = {}
        for line in proc.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 7:
                records.setdefault(parts[0], []).append({"state": parts[1].split()[0], "elapsed": int(parts[2] or 0),
                                                         "nnodes": int(parts[3] or 0), "start": parts[4],
                                                         "end": parts[5], "name": parts[6]})
        return records

    def wait_sacct(self, want, names, start, deadline):
        """Poll sacct until every job's records (oldest first) have the states squeue saw ({jobid: [states]}).

        And the job's name: a job's end can reach the database before its start, and until then
        its record says JobName "allocation".
        """
        records = {}
        while True:
            records = self.sacct_records(list(want), start)
            got = {j: [r["state"] for r in records.get(j, [])] for j in want}
            named = all(r["name"] == names[j] for j in want for r in records.get(j, []))
            if got == want and named:
                return records, []
            if time.monotonic() > deadline:
                wrong = ["job %s: sacct %s, squeue saw %s" % (j, got[j], want[j]) for j in want if got[j] != want[j]]
                wrong += ["job %s: sacct JobName %s, submitted as %s" % (j, r["name"], names[j])
                          for j in want for r in records.get(j, []) if r["name"] != names[j]]
                return records, wrong
            time.sleep(0.25)


def run(cluster, the_plan, restart_delay=DEFAULTS["restart_delay"], timeout=600.0, poll=0.1):
    """Submit the plan's jobs to the running ``cluster`` (a SimCluster with accounting) and inject.

    Returns the truth dict (what ``clusterctl history`` writes to truth.json): what was done, run
    by run, and ``mismatches``, the jobs whose sacct records differ from it (empty when all match).
    """
    state = cluster.state()
    if not (state.get("spec") or {}).get("accounting") or not state.get("accounting"):
        raise HistoryError("cluster in %s has no accounting: start it from a spec with `accounting: true`"
                           % cluster.run_dir)
    status = cluster.status()
    if not status.get("running"):
        raise HistoryError("cluster in %s is not running: `clusterctl start SPEC` first" % cluster.run_dir)
    up = [n for n, s in (status.get("nodes") or {}).items() if s == "idle"]
    check_parameters(len(the_plan["jobs"]) - the_plan["timeouts"], the_plan["nodes_per_job"], the_plan["seconds"],
                     the_plan["rate_per_node_s"], the_plan["requeue_fraction"], restart_delay,
                     the_plan["exit_failures"], the_plan["timeouts"], nodes=len(up))
    t_start = time.time()
    deadline = time.monotonic() + timeout
    runner = _Runner(cluster, json.loads(json.dumps(the_plan)), restart_delay, poll)
    live = {}
    try:
        live = runner.submit()
        runner.drive(live, deadline)
    except BaseException:
        # Leave no job of ours and no node DOWN behind.
        if live:
            cluster.run(["scancel", *live], timeout=30)
        for failure in runner.failures:
            cluster.run(["scontrol", "update", "nodename=%s" % failure["node"], "state=resume"], timeout=30)
        raise
    t_jobs = time.time()
    want = {jobid: [r["state"] for r in info["runs"]] for jobid, info in live.items()}
    names = {jobid: info["job"]["name"] for jobid, info in live.items()}
    # sacct has a record 0.3 s after the event here; 30 s is ample (and a mismatch waits no longer).
    records, mismatches = runner.wait_sacct(want, names, t_start, min(deadline, time.monotonic() + SACCT_WAIT_S))
    t_end = time.time()
    jobs_out, exposure, exposure_injectable, counts = [], 0, 0, {}
    for jobid, info in live.items():
        job, recs = info["job"], records.get(jobid, [])
        node_s = sum(r["elapsed"] * r["nnodes"] for r in recs)
        exposure += node_s
        exposure_injectable += node_s if job["kind"] != "timeout" else 0
        for run_info, rec in zip(info["runs"], recs):
            run_info.update(sacct_start=rec["start"], sacct_end=rec["end"], elapsed_s=rec["elapsed"])
            if run_info["node_failure"] is not None:
                with contextlib.suppress(ValueError):
                    run_info["node_failure"]["at_sacct"] = round(run_info["node_failure"]["down"] -
                                                                 _epoch(rec["start"]), 3)
        jobs_out.append({"job": jobid, "name": job["name"], "kind": job["kind"], "requeue": job["requeue"],
                         "seconds": job["seconds"], "exit_code": job["exit_code"], "planned_runs": job["runs"],
                         "runs": [{k: v for k, v in r.items() if k != "node_failure"} for r in info["runs"]],
                         "states": want[jobid], "sacct_states": [r["state"] for r in recs]})
        for st in want[jobid]:
            counts[st] = counts.get(st, 0) + 1
    restarts = []
    for item in runner.requeued:
        recs = records.get(item["job"], [])
        if len(recs) > item["run"]:
            item["failed_end"], item["restarted_start"] = recs[item["run"] - 1]["end"], recs[item["run"]]["start"]
            with contextlib.suppress(ValueError):
                item["restart_s"] = _epoch(item["restarted_start"]) - _epoch(item["failed_end"])
                restarts.append(item["restart_s"])
    hits = [f for f in runner.failures if f["hit"]]
    k = len(hits)
    planned = the_plan["exposure_node_s_planned"]
    window = (_iso(t_start - 1), _iso(t_end + 1))
    return {
        "version": 1,
        "cluster": state.get("name"),
        "run_dir": str(cluster.run_dir),
        "seed": the_plan["seed"],
        "job_count": len(jobs_out),
        "nodes_per_job": the_plan["nodes_per_job"],
        "seconds": the_plan["seconds"],
        "rate_per_node_s": the_plan["rate_per_node_s"],
        "requeue_fraction": the_plan["requeue_fraction"],
        "restart_delay_s": float(restart_delay),
        "exit_failures": the_plan["exit_failures"],
        "timeouts": the_plan["timeouts"],
        "reason": REASON,
        "window": {"start": window[0], "end": window[1], "start_epoch": round(t_start, 3),
                   "end_epoch": round(t_end, 3)},
        "wall_s": round(t_end - t_start, 2),
        "jobs_wall_s": round(t_jobs - t_start, 2),
        "node_failures": hits,
        "missed_failures": [f for f in runner.failures if not f["hit"]],
        "planned_node_failures": the_plan["node_failures"],
        "requeued": runner.requeued,
        "jobs": jobs_out,
        "states": dict(sorted(counts.items())),
        "exposure_node_s_planned": planned,
        "exposure_node_s_sacct": exposure,
        "exposure_node_s_sacct_injectable": exposure_injectable,
        "mtbf_node_s_planned": round(planned / k, 3) if k else None,
        "mtbf_node_s_sacct": round(exposure_injectable / k, 3) if k else None,
        "restart_s_sacct": restarts,
        "mismatches": mismatches,
        "commands": {
            "sacct": "sacct -a -P -X -D -S %s -E %s --format=%s" % (window[0], window[1], SACCT_FIELDS),
            "events": "sacctmgr -P -n list event event=node start=%s end=%s format=%s"
                      % (window[0], window[1], EVENT_FIELDS),
        },
    }


def _epoch(text):
    return time.mktime(time.strptime(text, TIME_FORMAT))
