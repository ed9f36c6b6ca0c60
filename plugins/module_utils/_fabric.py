# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric stage: nccl-tests across the whole allocation, then rounds of disjoint groups.

Runs on the controller (the login node): each group is one ``srun`` (or ``mpirun``) of an
nccl-tests binary, groups of a round run concurrently (bounded), each under a timeout after
which its whole process group is killed. The localisation planner (_localize) turns group
results into per-node verdicts with evidence.

What a group's run proves (ok, timeout, build, wrong: measurements for the planner; infra,
invalid, missing: none) is decided by _fabric_judge.judge_run; a round whose every group the
infrastructure broke ends the stage as that error, and no node or uplink is blamed.

Before any of it the launcher preflight (_fabric_preflight: ``srun --mpi=list`` and a 2-rank launch)
proves the launcher; when it shows the launcher broken the stage ends as that error at once.

Replay (opts['replay_dir']): the same planner runs on the captured outputs of a past run
(``raw/_fabric/<key>.txt`` and the exit codes in its results.json), never launching anything.

The stage (its runs, rounds and the order of its parts) is here; its parts, each a module of its own:

* _fabric_runs: running the groups (and reading them back when replaying);
* _fabric_judge: what one group's run proves, and what of it reaches the planner;
* _fabric_preflight: the launcher preflight;
* _fabric_counters: the IB port counters before and after the stage's traffic;
* _fabric_verdicts: the per-node and per-uplink checks from the planner's verdicts;
* _fabric_document: the fabric block of results.json.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import worst
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import ERROR, FAIL, PASS, SKIP
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_preflight import run_preflight, short_timeout
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_document import _document
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_judge import _planner_result, judge_run
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import Runner, raw_key, raw_key_retry
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_verdicts import (
    _check, _node_checks, _uplink_checks)

STAGE = "fabric"
FULL_KEY = "full-allocation"


class FabricRuns(object):
    """One fabric stage: the runs, their judgements, the planner state, the infrastructure trail."""

    def __init__(self, nodes, topology, opts, env):
        self.nodes = nodes
        self.opts = opts
        self.runner = Runner(opts, env)
        self.judged = {}        # raw key -> judge_run result (the last attempt)
        self.infra_nodes = {}   # node -> judged infra/invalid result that left it unmeasured
        self.infra_stop = None  # the judged result that stopped the stage
        self.round_no = 0
        self.rounds = []        # report view: [{round, groups: [...]}]
        self.topology = topology

    def attempt(self, items):
        """Run [(key, group)], retrying once every run the infrastructure broke."""
        records = self.runner.run(items)
        results = []
        retry = []   # positions; (the runner may prefix the keys it keeps: the items' own keys are reused)
        for i, record in enumerate(records):
            judged = judge_run(record, self.opts)
            results.append((record, judged))
            if judged["outcome"] == "infra":
                retry.append(i)
        if retry:
            # Live: run once more. Replaying: the retries the live run made are in the capture too.
            again = self.runner.run([(raw_key_retry(items[i][0]), records[i]["nodes"]) for i in retry])
            for i, record in zip(retry, again):
                if not (self.opts.get("replay_dir") and record.get("missing")):
                    results[i] = (record, judge_run(record, self.opts))
        return results

    def run_round(self, groups):
        self.round_no += 1
        items = [(raw_key(self.round_no, g), list(g)) for g in groups]
        outcomes = self.attempt(items)
        view, results = [], []
        broken = 0
        for (key, group), (record, judged) in zip(items, outcomes):
            self.judged[key] = judged
            planner = _planner_result(judged)
            if planner is None:
                if judged["outcome"] in ("infra", "invalid"):
                    broken += 1
                    for node in group:
                        self.infra_nodes[node] = judged
            else:
                planner["group"] = group
                results.append(planner)
                for node in group:
                    self.infra_nodes.pop(node, None)
            view.append({"nodes": list(group), "busbw": judged["busbw"], "key": record.get("key", key),
                         "outcome": judged["outcome"], "note": judged["sentence"]})
        self.rounds.append({"round": self.round_no, "groups": view})
        if broken and broken == len(items) and any(j["outcome"] == "infra" for _r, j in outcomes):
            self.infra_stop = next(j for _r, j in outcomes if j["outcome"] == "infra")
        return results


def _error_stage(fabric, judged, checks, full=None):
    """The stage ended on a broken launcher/scheduler/transport: one cluster error, nobody blamed."""
    message = "the fabric stage could not run: %s" % judged["sentence"]
    checks.append(_check("fabric.run", ERROR, message, {"outcome": judged["outcome"]}, component=judged["component"],
                         evidence=judged["evidence"], raw=sorted(fabric.runner.raw)))
    return {"component": judged["component"] or "launcher", "message": message,
            "cause": judged["sentence"]}


def launcher_preflight(fabric, nodes, checks):
    """The launcher preflight's check (a cluster check: component launcher or what broke)."""
    found = run_preflight(fabric.runner, nodes, fabric.opts, judge_run)
    checks.append(_check("launcher", found["status"], found["message"],
                         {"requested_mpi": found["requested"], "steps": [s["step"] for s in found["steps"]]},
                         component=found["component"] or "launcher", evidence=found["evidence"], raw=found["raw"]))
    return dict((k, found[k]) for k in ("status", "component", "cause", "message", "requested", "steps", "singletons"))


def _snapshot(fabric, nodes, key):
    """Every node's IB port counters in one step (srun launcher and a counters root only), or None."""
    opts = fabric.opts
    if not opts.get("counters_root") or opts.get("launcher", "srun") != "srun":
        return None
    (record,) = fabric.runner.run([(key, nodes, _fabric_counters.snapshot_argv(nodes, opts), short_timeout(opts))])
    return record


def _all_singletons(fabric):
    """Every group of every round ran as independent one-rank runs: no node's build is to blame."""
    outcomes = [group["outcome"] for entry in fabric.rounds for group in entry["groups"]]
    return bool(outcomes) and all(outcome == "build" for outcome in outcomes)


def _singleton_stage(fabric, checks):
    """One cluster error: with every node in one-rank runs the launcher (or one shared build) is the cause."""
    cause = "every run on every node was independent one-rank runs (MPI singletons): the launcher's PMI " \
            "(srun --mpi=%s) does not reach the MPI library, or every node's nccl-tests was built without MPI=1" \
            % (fabric.opts.get("mpi") or "<MpiDefault>")
    message = "the fabric stage could not run: %s" % cause
    checks.append(_check("fabric.run", ERROR, message, {"outcome": "build"}, component="launcher",
                         evidence=["%d group(s) in %d round(s), none with one multi-rank run" % (
                             sum(len(e["groups"]) for e in fabric.rounds), len(fabric.rounds))],
                         raw=sorted(fabric.runner.raw)))
    return {"component": "launcher", "message": message, "cause": cause}


def full_allocation(fabric, nodes, floor):
    (record, judged), = fabric.attempt([(FULL_KEY, nodes)])
    key = record.get("key", FULL_KEY)
    metrics = {"nodes": len(nodes), "outcome": judged["outcome"]}
    view = {"nodes": len(nodes), "busbw": judged["busbw"], "raw": key, "outcome": judged["outcome"]}
    if judged["outcome"] == "ok":
        metrics.update(busbw=judged["busbw"], floor=floor)
        if floor is not None and judged["busbw"] < floor:
            status, sentence = FAIL, "%s, below the %s GB/s floor" % (judged["sentence"], floor)
        else:
            status, sentence = PASS, judged["sentence"]
    elif judged["outcome"] == "missing":
        status, sentence = SKIP, judged["sentence"]
    else:
        status, sentence = ERROR if judged["outcome"] in ("infra", "invalid", "build") else FAIL, judged["sentence"]
    view["status"] = status
    check = _check("full_allocation", status, sentence, metrics, component="all %d nodes" % len(nodes),
                   evidence=judged["evidence"], raw=[key])
    return check, judged, view


def fabric_stage(nodes, topology, opts, env=None):
    """Run the fabric stage; return {stage, checks, raw, document, failed_nodes}."""
    floor = opts.get("floor")
    checks = []
    nodes = sorted(nodes)
    if len(nodes) < 2:
        check = _check("full_allocation", SKIP if nodes else ERROR,
                       "fewer than 2 nodes passed the per-node stages: no multi-node test to run",
                       {"nodes": len(nodes)})
        return {"stage": STAGE, "checks": [check], "raw": {}, "failed_nodes": [],
                "document": {"status": check["status"], "error": None, "nodes": {}, "rounds": [], "matrix": {}}}
    fabric = FabricRuns(nodes, topology, opts, env)
    full_view, error, state, preflight = None, None, None, None
    counters = _snapshot(fabric, nodes, _fabric_counters.BEFORE_KEY)
    if opts.get("preflight", True):
        preflight = launcher_preflight(fabric, nodes, checks)
        if preflight["status"] == ERROR:
            error = {"component": preflight["component"] or "launcher", "cause": preflight["cause"],
                     "message": "the fabric stage could not run: %s" % preflight["cause"]}
    if error is None and opts.get("full_allocation", True):
        full, judged, full_view = full_allocation(fabric, nodes, floor)
        if judged["outcome"] == "infra":
            error = _error_stage(fabric, judged, checks)
        else:
            checks.append(full)
    if error is None:
        config = dict(opts.get("localize") or {})
        config.setdefault("floor", floor)
        state = _localize.new_state(nodes, topology, mode=opts.get("mode") or "adaptive",
                                    seed=int(opts.get("seed") or 0), max_rounds=opts.get("max_rounds"), config=config)
        while not state["done"]:
            groups = _localize.plan_round(state)
            if not groups:
                break
            results = fabric.run_round(groups)
            if fabric.infra_stop is not None:
                error = _error_stage(fabric, fabric.infra_stop, checks)
                break
            _localize.analyse_round(state, results)
        state["done"] = True
        _localize.refresh_evidence(state)
        if error is None and preflight and preflight.get("singletons") and _all_singletons(fabric):
            error = _singleton_stage(fabric, checks)
    status = ERROR if error else PASS
    failed = []
    if error is None:
        failed = _node_checks(fabric, state, nodes, checks)
        _uplink_checks(state, checks)
    if counters is not None and error is None:  # a stage the infrastructure ended says so once
        found, flapped = _fabric_counters.counter_checks(
            nodes, counters, _snapshot(fabric, nodes, _fabric_counters.AFTER_KEY), opts.get("counter_limits"))
        checks.extend(dict(c, stage=STAGE, raw=[_fabric_counters.BEFORE_KEY, _fabric_counters.AFTER_KEY]) for c in found)
        failed = sorted(set(failed) | set(flapped))
    if error is None:
        status = worst(c["status"] for c in checks)
    document = _document(fabric, state, full_view, status, error, floor)
    document["preflight"] = preflight
    return {"stage": STAGE, "checks": checks, "raw": fabric.runner.raw, "document": document,
            "failed_nodes": sorted(failed)}
