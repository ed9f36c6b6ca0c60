# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric stage: nccl-tests across the whole allocation, then rounds of disjoint groups.

Runs on the controller (the login node): each group is one ``srun`` (or ``mpirun``) of an
nccl-tests binary, groups of a round run concurrently (bounded), each under a timeout after
which its whole process group is killed. The localisation planner (_localize) turns group
results into per-node verdicts with evidence.

What a group's run proves is decided here (judge_run), and only measurements reach the planner:

* ``ok``: a readable table with the launched number of ranks and plausible values: its busbw;
* ``timeout``: the run hung (an NCCL hang on a bad link is a finding): low;
* ``build``: nccl-tests built without MPI=1 (several independent one-process tables): the group is
  low for the planner, and the node it pins is named with that cause, never as slow;
* ``wrong``: #wrong or out-of-bounds values: low, the node pinned for data corruption;
* ``infra``: the launcher, the scheduler or the transport failed (_infra): no measurement. The
  group is run once more; a round whose every group still fails ends the stage as ``error``
  naming the component, and no node or uplink is blamed; a group that fails alone leaves its
  nodes ``error`` with that component;
* ``invalid``: unreadable output, a rank count that is not the launched one, implausible values:
  no measurement either (an error for the nodes, never slow);
* ``missing``: replaying captured outputs, a group the capture does not hold: not replayable.

Before any of it the launcher preflight (_fabric_preflight: ``srun --mpi=list`` and a 2-rank launch)
proves the launcher; when it shows the launcher broken the stage ends as that error at once.

Replay (opts['replay_dir']): the same planner runs on the captured outputs of a past run
(``raw/_fabric/<key>.txt`` and the exit codes in its results.json), never launching anything.
Running (and reading back) the groups is _fabric_runs; judging them and the stage is here.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import worst
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _hostlist, _judge_nccl, _localize
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_preflight import run_preflight, short_timeout
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import (
    Runner, launched_ranks, raw_key, raw_key_retry)

STAGE = "fabric"
FULL_KEY = "full-allocation"
# Outcomes that are measurements the planner may judge (the others are not about the hardware).
_MEASURED = ("ok", "timeout", "build", "wrong")
_EVIDENCE_LINES = 6


def _tail(text, count=3):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-count:]


def judge_run(record, opts):
    """What one group's run proves: {outcome, busbw, sentence, component, evidence, parsed}.

    outcome is one of ok, timeout, build, wrong (measurements), infra, invalid (no measurement)
    or missing (not in a replayed capture).
    """
    group = record["nodes"]
    what = "%d-node %s" % (len(group), os.path.basename(opts["binary"]))
    where = "%s over %s" % (what, _hostlist.compress_hostlist(group) if len(group) > 2 else ",".join(group))
    out = {"busbw": None, "component": None, "evidence": [], "parsed": None}
    if record.get("missing"):
        out.update(outcome="missing", sentence="%s: not in the captured outputs (not replayable)" % where)
        return out
    if record.get("error"):
        out.update(outcome="infra", component="launcher", sentence="%s could not start: %s" % (where, record["error"]),
                   evidence=[record["error"]])
        return out
    text = record.get("output") or ""
    parsed = parse_nccl_tests(text)
    out["parsed"] = parsed
    found = classify_failure(text, record.get("rc"))
    usable_rows = bool(parsed.get("rows"))
    if found and (record.get("rc") not in (0, None) or record.get("timed_out") or not usable_rows):
        out.update(outcome="infra", component=found["component"], evidence=[found["message"]],
                   sentence="%s could not run: %s (%s): %s" % (
                       where, found["cause"], found["component"], found["message"]))
        return out
    if record.get("timed_out"):
        out.update(outcome="timeout", evidence=_tail(text),
                   sentence="%s hung: killed after %ss" % (where, opts["timeout"]))
        return out
    expected = launched_ranks(group, opts)
    runs = parsed.get("independent_runs") or 1
    if runs > 1 or (parsed.get("nranks") and parsed["nranks"] < expected and parsed.get("headers", 0) > 1):
        per = parsed.get("nranks") or 1
        out.update(outcome="build", component="nccl-tests build",
                   evidence=["%d ranks launched; the output holds %d independent %d-rank runs" % (expected, runs, per)],
                   sentence="%s: nccl-tests built without MPI=1: %d one-rank runs instead of one %d-rank run"
                   % (where, runs, expected) if per == 1 else
                   "%s: nccl-tests built without MPI=1: %d independent %d-rank runs instead of one %d-rank run"
                   % (where, runs, per, expected))
        return out
    if parsed.get("errors") and not usable_rows:
        out.update(outcome="invalid", evidence=_tail(text),
                   sentence="%s: output unreadable (rc %s): %s" % (where, record.get("rc"), "; ".join(parsed["errors"][:3])))
        return out
    wrong = [e for e in parsed.get("errors") or [] if "wrong" in e or "Out of bounds" in e or "failure" in e.lower()]
    if wrong:
        out.update(outcome="wrong", component="data", evidence=wrong[:_EVIDENCE_LINES],
                   sentence="%s returned wrong results: %s" % (where, "; ".join(wrong[:2])))
        return out
    if parsed.get("nranks") != expected:
        out.update(outcome="invalid", component="launcher", evidence=_tail(text),
                   sentence="%s: %d ranks launched, nccl-tests reported %s" % (where, expected, parsed.get("nranks")))
        return out
    implausible = []
    check = getattr(_judge_nccl, "plausibility_errors", None)
    if check is not None:
        implausible = check(parsed, opts.get("max_busbw"))
    if implausible:
        out.update(outcome="invalid", evidence=implausible[:_EVIDENCE_LINES],
                   sentence="%s: implausible value: %s" % (where, "; ".join(implausible[:2])))
        return out
    if parsed.get("errors"):
        out.update(outcome="invalid", evidence=parsed["errors"][:_EVIDENCE_LINES],
                   sentence="%s: %s" % (where, "; ".join(parsed["errors"][:3])))
        return out
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    if busbw is None:
        out.update(outcome="invalid", sentence="%s: no bus bandwidth in the output" % where)
        return out
    out.update(outcome="ok", busbw=busbw, sentence="%s busbw %.1f GB/s at large messages" % (what, busbw),
               evidence=_large_rows(text, parsed), samples=_large_samples(parsed))
    return out


def _large_samples(parsed):
    """The busbw of the rows within 4x of the largest message (2, 4 and 8 GiB of -e 8G),
    out-of-place and in-place: each is timed on its own, so a link that retrains during the
    sweep shows as low rows among passing ones (the planner's 'unstable' result). Smaller rows
    are left out: they may still be ramping up."""
    sizes = [row["size"] for row in parsed.get("rows") or [] if isinstance(row, dict) and isinstance(row.get("size"), int)]
    if not sizes:
        return None
    floor = max(sizes) / 4.0
    values = []
    for row in parsed.get("rows") or []:
        if not isinstance(row, dict) or not isinstance(row.get("size"), int) or row["size"] < floor:
            continue
        for side in (row.get("oop"), row.get("ip")):
            if isinstance(side, dict) and isinstance(side.get("busbw"), (int, float)):
                values.append(float(side["busbw"]))
    return values if len(values) > 1 else None


def _large_rows(text, parsed, count=3):
    """The table rows of the largest messages, as printed (the parser keeps their line numbers)."""
    lines = text.splitlines()
    numbers = [r.get("line") for r in parsed.get("rows") or [] if isinstance(r.get("line"), int)]
    return [lines[n - 1].strip() for n in numbers[-count:] if 0 < n <= len(lines)]


def _planner_result(judged):
    """The planner's view of a judged run, or None when the run measured nothing."""
    outcome = judged["outcome"]
    if outcome == "ok":
        out = {"status": "ok", "busbw": judged["busbw"], "note": judged["sentence"]}
        if judged.get("samples"):
            out["samples"] = judged["samples"]
        return out
    if outcome == "timeout":
        return {"status": "timeout", "busbw": None, "note": judged["sentence"]}
    if outcome in ("build", "wrong"):
        return {"status": "error", "busbw": None, "note": judged["sentence"]}
    return None


class _Fabric(object):
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
        results = {}
        retry = []
        for record in records:
            judged = judge_run(record, self.opts)
            results[record["key"]] = (record, judged)
            if judged["outcome"] == "infra":
                retry.append(record)
        if retry and not self.opts.get("replay_dir"):
            again = self.runner.run([(raw_key_retry(r["key"]), r["nodes"]) for r in retry])
            for first, record in zip(retry, again):
                results[first["key"]] = (record, judge_run(record, self.opts))
        elif retry:  # replaying: the retries the live run made are in the capture too
            keys = [(raw_key_retry(r["key"]), r["nodes"]) for r in retry]
            again = self.runner.run(keys)
            for first, record in zip(retry, again):
                if not record.get("missing"):
                    results[first["key"]] = (record, judge_run(record, self.opts))
        return [results[key] for key, _group in items]

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


def _check(check, status, message, metrics=None, component=None, node=None, evidence=None, raw=None, detail=None):
    result = check_result(check, status, message, metrics, component=component, evidence=evidence)
    result["node"] = node
    result["stage"] = STAGE
    result["raw"] = list(raw or [])
    if detail:
        result["detail"] = detail
    return result


def _error_stage(fabric, judged, checks, full=None):
    """The stage ended on a broken launcher/scheduler/transport: one cluster error, nobody blamed."""
    message = "the fabric stage could not run: %s" % judged["sentence"]
    checks.append(_check("fabric.run", ERROR, message, {"outcome": judged["outcome"]}, component=judged["component"],
                         evidence=judged["evidence"], raw=sorted(fabric.runner.raw)))
    return {"component": judged["component"] or "launcher", "message": message,
            "cause": judged["sentence"]}


def _preflight(fabric, nodes, checks):
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


def _full_allocation(fabric, nodes, floor):
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


def _group_status(test_result, outcome):
    if outcome == "missing":
        return "not_replayable"
    if outcome in ("infra", "invalid"):
        return "error"
    if outcome == "timeout":
        return "timeout"
    return test_result or ("low" if outcome in ("build", "wrong") else "error")


def _document(fabric, state, full_view, status, error, floor):
    """The fabric block of results.json: what the report draws and the baseline compares."""
    public = _localize.public_state(state) if state else {}
    results = {}
    for test in public.get("tests") or []:
        results[(test["round"], tuple(test["group"]))] = test.get("result")
    rounds = []
    for entry in fabric.rounds:
        groups = []
        for group in entry["groups"]:
            result = results.get((entry["round"], tuple(sorted(group["nodes"]))))
            groups.append({"nodes": group["nodes"], "busbw": group["busbw"], "raw": group["key"],
                           "status": _group_status(result, group["outcome"]), "note": group["note"]})
        rounds.append({"round": entry["round"], "groups": groups})
    nodes = {}
    for node, info in sorted((public.get("nodes") or {}).items()):
        verdict = info.get("verdict")
        if node in fabric.infra_nodes and verdict in (_localize.UNTESTED, _localize.SUSPECT):
            verdict = "error"
        if error:
            verdict = _localize.UNTESTED if verdict in _localize.FAULTS else verdict
        nodes[node] = {"verdict": verdict, "leaf": info.get("leaf"), "evidence": list(info.get("evidence") or [])}
    uplinks = dict((leaf, {"verdict": info.get("verdict"), "evidence": list(info.get("evidence") or [])})
                   for leaf, info in sorted((public.get("uplinks") or {}).items()))
    references = public.get("references") or {}
    intra = references.get("intra") or {}
    none = {"nodes": [], "uplinks": []}
    return {"status": status, "error": error, "mode": public.get("mode"), "floor": floor,
            "reference": intra.get("median"), "reference_basis": intra.get("basis"), "nodes": nodes, "uplinks": uplinks,
            "leaves": public.get("leaves") or {}, "full_allocation": full_view,
            "matrix": public.get("matrix") or {}, "rounds": rounds,
            "summary": public.get("summary") or {}, "warnings": list(public.get("warnings") or []),
            # A stage that ended on the infrastructure blames nobody, whatever it saw before.
            "pinned": none if error else public.get("pinned") or none,
            "suspects": none if error else public.get("suspects") or none,
            "intermittent": none if error else public.get("intermittent") or none,
            "leaf_faults": [] if error else list(public.get("leaf_faults") or []),
            "replayed": bool(fabric.opts.get("replay_dir"))}


def _node_tests(fabric, node):
    """The raw keys of the groups a node took part in, in order."""
    keys = []
    for entry in fabric.rounds:
        for group in entry["groups"]:
            if node in group["nodes"]:
                keys.append(group["key"])
    return keys


def _cause_of(fabric, node):
    """'build' or 'wrong' when every failing run the node took part in failed for that reason."""
    outcomes = set()
    for entry in fabric.rounds:
        for group in entry["groups"]:
            if node in group["nodes"] and group["outcome"] not in ("ok",):
                outcomes.add(group["outcome"])
    if outcomes and outcomes <= {"build"}:
        return "build"
    if outcomes and outcomes <= {"wrong"}:
        return "wrong"
    return None


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
    fabric = _Fabric(nodes, topology, opts, env)
    full_view, error, state, preflight = None, None, None, None
    counters = _snapshot(fabric, nodes, _fabric_counters.BEFORE_KEY)
    if opts.get("preflight", True):
        preflight = _preflight(fabric, nodes, checks)
        if preflight["status"] == ERROR:
            error = {"component": preflight["component"] or "launcher", "cause": preflight["cause"],
                     "message": "the fabric stage could not run: %s" % preflight["cause"]}
    if error is None and opts.get("full_allocation", True):
        full, judged, full_view = _full_allocation(fabric, nodes, floor)
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


def _node_checks(fabric, state, nodes, checks):
    failed = []
    for node in nodes:
        info = state["nodes"][node]
        verdict = info["verdict"]
        evidence = list(info.get("evidence") or [])
        metrics = {"verdict": verdict, "leaf": info.get("leaf")}
        component = node
        cause = _cause_of(fabric, node)
        infra = fabric.infra_nodes.get(node)
        if verdict in _localize.FAULTS and cause == "build":
            status, component = FAIL, "nccl-tests build"
            message = "%s: nccl-tests built without MPI=1 (every run including it was independent one-rank " \
                      "runs%s)" % (node, "; each partner passed twice with other nodes" if verdict == _localize.PINNED else "")
        elif verdict in _localize.FAULTS and cause == "wrong":
            status, component = FAIL, "%s data" % node
            message = "%s: wrong results (#wrong / out of bounds) in every run including it" % node
        elif infra is None and _localize.marginal_only(state, node):
            status = PASS       # slower than its peers by less than the margin: what the threshold accepts
            message = evidence[0]
        elif verdict in _localize.FAULTS:
            status = FAIL
            message = evidence[0] if evidence else "%s: %s" % (node, verdict)
        elif infra is not None and verdict != _localize.CLEARED:
            status, component = ERROR, infra["component"] or "launcher"
            message = "%s: not measured: %s" % (node, infra["sentence"])
            evidence = list(infra["evidence"]) + evidence
        elif verdict == _localize.UNTESTED:
            status = ERROR if not fabric.opts.get("replay_dir") else SKIP
            message = evidence[0] if evidence else "%s: not tested" % node
            if fabric.opts.get("replay_dir"):
                message = "%s: not replayable: the captured outputs hold no test of it" % node
        else:
            status = PASS
            message = evidence[0] if evidence else "%s: %s" % (node, verdict)
        checks.append(_check("pair_bandwidth", status, message, metrics, component=component, node=node,
                             evidence=evidence[1:_EVIDENCE_LINES + 1] or evidence[:1], raw=_node_tests(fabric, node),
                             detail="\n".join(evidence)))
        if status in (FAIL, ERROR):
            failed.append(node)
    return failed


def _uplink_checks(state, checks):
    """One failing check per uplink not cleared; a leaf-level fault names the leaf switch (or all
    its nodes) instead of the uplink."""
    for leaf, info in sorted((state.get("uplinks") or {}).items()):
        if info["verdict"] in _localize.FAULTS and not _localize.marginal_only(state, leaf):
            evidence = info.get("evidence") or []
            whole = info["verdict"] == _localize.LEAF
            checks.append(_check("leaf_uplink", FAIL, evidence[0] if evidence else "%s uplink degraded" % leaf,
                                 {"verdict": info["verdict"]},
                                 component="%s leaf switch or all its nodes" % leaf if whole else "%s uplink" % leaf,
                                 evidence=evidence[1:_EVIDENCE_LINES + 1], detail="\n".join(evidence)))
