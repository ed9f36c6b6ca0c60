# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA pair stage: perftest between nodes, NIC k to NIC k on every rail, judged per NIC.

Each rail is localised on its own by the same planner as the fabric stage (_localize), fed with
perftest's average bandwidth in Gb/s: a round pairs every node on every rail at once; a NIC whose
pairs are low while each partner passed twice with other nodes is pinned, its partner cleared. The
floor is the profile's ``rdma.min_fraction`` of the ports' rate (ibstat, from the infiniband
stage; else the profile's ``infiniband.port_rate``), and the planner's peer reference per rail
catches a NIC well below the others of its rail.

Runs (and, replaying, reads back) one Slurm step per round (_rdma_plan.DRIVER on every node of
the round). What is not about the hardware never blames it: a step or task that failed, a client
that never reached its server over TCP, unreadable output are ``error`` with that component; a
round where nothing could be measured ends the stage as an error that names nobody.

Counters under load: with ``counters_root`` set, each node's task reads its IB port counters
(sysfs) before and after its perftest runs; a link that went down, recovered or counted errors
under this traffic fails that port (``ib.counters`` in this stage, the profile's
``infiniband.counter_limits``), where the infiniband stage's idle window would never see it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard, _localize, _srun
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import run_one
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import judge_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import worst
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import stage_captured, write_atomic
from ansible_collections.gpucluster.acceptance.plugins.module_utils._rdma_plan import (
    DRIVER, STAGE, driver_args, judge_test, plan_tests, split_sections)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key

CHECK = "rdma.nic_bandwidth"
COUNTERS_TOOL = "IB port counters"
_MEASURED = ("ok", "timeout", "nic")
_EVIDENCE = 8


class _Runs(object):
    """One round's Slurm step, or its outputs read back from a past run's capture."""

    def __init__(self, opts, env):
        self.opts, self.env = opts, env
        self.raw = {}
        self.replay_dir = opts.get("replay_dir") or ""
        self.raw_dir = opts.get("raw_dir") or ""
        self.guard = None if self.replay_dir else _guard.Guard().start()
        self._index = None

    def _keep(self, key, text, rc=None, seconds=None, complete=True):
        kept = {"output": text, "rc": rc, "seconds": seconds, "complete": complete}
        if self.raw_dir:
            write_atomic(os.path.join(self.raw_dir, key + ".txt"), text)
            kept["output"] = None  # the callback indexes the file
        self.raw[key] = kept

    def _replayed(self, key):
        if self._index is None:
            try:
                with open(os.path.join(self.replay_dir, "results.json")) as handle:
                    self._index = (json.load(handle).get("raw") or {}).get("_" + STAGE) or {}
            except (IOError, OSError, ValueError, AttributeError):
                self._index = {}
        path = os.path.join(self.replay_dir, "raw", "_" + STAGE, key + ".txt")
        if not os.path.isfile(path):
            return None
        with open(path, errors="replace") as handle:
            text = handle.read()
        if text.startswith("$ "):
            text = text.partition("\n")[2]
        meta = self._index.get(key) or {}
        # The raw index leaves out what is usual: exit status 0, a run that completed.
        rc = meta.get("rc", 0 if meta.get("complete", True) is not False else 124)
        return {"output": text, "rc": rc}

    def round(self, round_no, tests, step=0):
        """{(key, role): {output, rc}} and the step's own failure (None when it ran); step: the
        round's n-th Slurm step (a group of three needs two, see plan_tests)."""
        sections = {}
        label = step_label(round_no, step)
        nodes = sorted(set(t[r] for t in tests for r in ("server", "client")), key=natural_key)
        if self.replay_dir:
            for test in tests:
                for role in ("server", "client"):
                    record = self._replayed("%s.%s" % (test["key"], role))
                    if record is not None:
                        sections[(test["key"], role)] = record
            for node in nodes:
                for when in ("before", "after"):
                    record = self._replayed("%s.counters-%s.%s" % (label, node, when))
                    if record is not None:
                        sections[("counters-" + node, when)] = record
            return sections, None, True
        argv = _srun.srun_argv(nodes, ["bash", "-c", DRIVER, "gpucluster-perftest"] + driver_args(tests, self.opts),
                               "gpucluster-rdma", extra_args=self.opts.get("launcher_args") or (),
                               srun=self.opts.get("srun") or "srun")
        limit = int(self.opts.get("timeout") or 120) + 2 * int(self.opts.get("startup") or 30) + 30
        record = run_one(argv, limit, self.env, self.guard)
        by_node, _headless, own = _srun.node_outputs(record.get("output") or "")
        for node, text in by_node.items():
            found, _outside = split_sections(text)
            sections.update(found)
        self._keep(label + ".srun", "$ srun ... (%d nodes, %d tests)\n%s" % (len(nodes), len(tests), "\n".join(own) + "\n"),
                   record.get("rc"), record.get("seconds"), not record.get("timed_out"))
        for test in tests:
            for role in ("server", "client"):
                got = sections.get((test["key"], role))
                if got is not None:
                    self._keep("%s.%s" % (test["key"], role), "$ %s\n%s" % (" ".join(test["argv"][role]), got["output"]),
                               got["rc"], None, got["rc"] not in (124, 137))
        for node in nodes:
            for when in ("before", "after"):
                got = sections.get(("counters-" + node, when))
                if got is not None:
                    self._keep("%s.counters-%s.%s" % (label, node, when), "$ grep -H . <sysfs>/*/ports/*/counters/*\n%s"
                               % got["output"], got["rc"], None, got["rc"] not in (124, 137))
        failure = None
        if record.get("error") or (not sections and record.get("rc") not in (0, None)):
            failure = record.get("error") or _srun.srun_failure_summary(own) or "srun exited %s" % record.get("rc")
        return sections, failure, bool(sections)


def step_label(round_no, step):
    """round1, or round1-step2 for a round's second Slurm step (the raw outputs' prefix)."""
    return "round%d" % round_no if not step else "round%d-step%d" % (round_no, step + 1)


def _counter_checks(snapshots, info, opts):
    """ib.counters per node from the port counters its task read before and after its perftest runs:
    a link that went down or an error counter that rose under this traffic fails that port, here,
    in the stage whose traffic it was. snapshots: {(label, node): {"before": rec, "after": rec}}."""
    profile = {"infiniband": {"counter_limits": opts.get("counter_limits") or {}}}
    by_node = {}
    for (label, node), pair in sorted(snapshots.items(), key=lambda item: (natural_key(item[0][1]), item[0][0])):
        keys = ["%s.counters-%s.%s" % (label, node, w) for w in ("before", "after") if w in pair]
        during = "perftest %s" % label.replace("round", "round ").replace("-step", ", step ")
        if "before" not in pair or "after" not in pair:
            results = [check_result("ib.counters", ERROR, "the %s counter snapshot of %s is missing" % (
                "after" if "before" in pair else "before", during), {}, tool=COUNTERS_TOOL)]
        else:
            before, after = (parse_ib_counters(pair[w]["output"]) for w in ("before", "after"))
            found = (after.get("counters") or {})
            ports = [(nic, {"port": number}) for nic in info[node]["nics"]
                     for number in (sorted(found.get(nic) or {}) or ["1"])]
            results = judge_counters(ports, before, after, profile, during=during)
        for result in results:
            result["raw"] = keys
        by_node.setdefault(node, []).extend(results)
    checks, failed = [], set()
    for node, results in by_node.items():
        bad = [r for r in results if r["status"] in (FAIL, ERROR)]
        passed = [r for r in results if r["status"] == PASS]
        if bad:
            failed.add(node)
            kept = bad
        elif passed:
            kept = [check_result("ib.counters", PASS, "no error counter rose above its limit on %d ports during "
                                 "the RDMA pair tests (%d pair(s) of snapshots)"
                                 % (len(info[node]["nics"]), len(passed)), {"snapshots": len(passed)},
                                 evidence=passed[-1].get("evidence"), tool=COUNTERS_TOOL)]
            kept[0]["raw"] = sorted(set(k for r in passed for k in r.get("raw") or []))
        else:
            kept = results[:1]
        for check in kept:
            check.update(node=node, stage=STAGE)
            check["tool"] = check.get("tool") or COUNTERS_TOOL
        checks.extend(kept)
    return checks, failed


def _config(opts, floor):
    config = dict(opts.get("localize") or {})
    config.setdefault("floor", floor)
    config["unit"] = "Gb/s"
    return config


def _floor(info, nodes, rail, opts):
    rates = sorted(float(((info[n]["ports"].get(info[n]["nics"][rail]) or {}).get("rate")) or 0)
                   for n in nodes if rail < len(info[n]["nics"]))
    rates = [r for r in rates if r > 0]
    rate = rates[len(rates) // 2] if rates else float(opts.get("port_rate") or 0)
    return rate, (rate * float(opts.get("min_fraction") or 0)) or None


def rdma_stage(nodes, info, topology, opts, env=None):  # noqa: C901  (one pass over the rounds)
    """Run the stage; {stage, checks, raw, document, failed_nodes}."""
    nodes = sorted(nodes, key=natural_key)
    # A run made before the stage existed (or with --skip-tags rdma) replays as "not captured",
    # never as a launcher that failed on every node.
    uncaptured = bool(opts.get("replay_dir")) and not stage_captured(opts["replay_dir"], STAGE)
    if uncaptured or len(nodes) < 2:
        check = check_result("rdma.run", SKIP if nodes or uncaptured else ERROR, (
            "not captured: the replayed run (%s) holds no RDMA output, the stage was not judged" % opts["replay_dir"]
            if uncaptured else "fewer than 2 nodes passed the per-node stages: no RDMA pair to test"),
            {"nodes": len(nodes)})
        check.update(node=None, stage=STAGE)
        error = None if nodes or uncaptured else {"component": "nodes", "message": check["message"],
                                                  "cause": check["message"]}
        return {"stage": STAGE, "checks": [check], "raw": {}, "failed_nodes": [],
                "document": _document({}, {}, [], check["status"], error, opts, {})}
    rails = max(len(info[n]["nics"]) for n in nodes)
    states, rates = {}, {}
    for rail in range(rails):
        members = [n for n in nodes if rail < len(info[n]["nics"])]
        rates[rail], floor = _floor(info, members, rail, opts)
        states[rail] = _localize.new_state(members, topology, mode=opts.get("mode") or "adaptive",
                                           seed=int(opts.get("seed") or 0) + rail, max_rounds=opts.get("max_rounds"),
                                           config=_config(opts, floor))
    runs = _Runs(opts, env)
    rounds, causes, unmeasured, error = [], {}, {}, None
    keys = {}  # (rail, node) -> the raw keys of its tests (each check lists them)
    snapshots = {}  # (step label, node) -> its port counters before and after
    round_no = 0
    while any(not s["done"] for s in states.values()):
        round_no += 1
        pairs = dict((rail, _localize.plan_round(s)) for rail, s in states.items() if not s["done"])
        tests = plan_tests(round_no, dict((r, p) for r, p in pairs.items() if p), info, opts)
        if not tests:
            break
        sections, failures = {}, []
        for step in sorted(set(t["step"] for t in tests)):
            got, failure, _any = runs.round(round_no, [t for t in tests if t["step"] == step], step)
            for (key, role), record in got.items():
                if key.startswith("counters-"):
                    snapshots.setdefault((step_label(round_no, step), key[len("counters-"):]), {})[role] = record
            sections.update(got)
            failures += [failure] if failure else []
        failure = "; ".join(failures) or None
        view, grouped, measured = [], {}, 0
        for test in tests:
            judged = judge_test(test, sections.get((test["key"], "server")), sections.get((test["key"], "client")), opts)
            if failure and judged["outcome"] == "infra":
                judged["sentence"] = "%s (%s)" % (judged["sentence"], failure)
            pair = [test["server"], test["client"]]
            for node in pair:
                keys.setdefault((test["rail"], node), []).append(test["key"] + ".client")
            grouped.setdefault((test["rail"], test["step"]), []).append((pair, judged))
            if judged["outcome"] in _MEASURED:
                measured += 1
                if judged["outcome"] == "nic":
                    causes[(judged["side"], test["rail"])] = judged
                for node in pair:
                    unmeasured.pop((node, test["rail"]), None)
            else:
                for node in pair:
                    unmeasured[(node, test["rail"])] = judged
            view.append({"key": test["key"], "rail": test["rail"], "server": test["server"], "client": test["client"],
                         "nics": test["nic"], "gpus": test["gpu"], "port": test["port"], "gbits": judged["gbits"],
                         "outcome": judged["outcome"], "note": judged["sentence"], "group": test["group"],
                         "step": test["step"] + 1})
        rounds.append({"round": round_no, "tests": view})
        by_rail = _pair_results(grouped)
        if not measured:
            first = next(v for v in view)
            component = next((judge_test(t, sections.get((t["key"], "server")), sections.get((t["key"], "client")),
                                         opts)["component"] for t in tests), None) or "launcher"
            error = {"component": component, "message": "the RDMA pair stage could not run: %s" % first["note"],
                     "cause": failure or first["note"]}
            break
        for rail in pairs:
            # one analysis per Slurm step: a node of a group of three meets its two partners one
            # after the other, and each pair is evidence of its own
            for results in (by_rail.get(rail) or [[]]) if pairs[rail] else ():
                _localize.analyse_round(states[rail], results)
    for state in states.values():
        state["done"] = True
        _localize.refresh_evidence(state)
    checks, failed = _checks(nodes, info, states, rates, causes, unmeasured, error, opts, keys)
    if snapshots and not error:
        counter_checks, counter_failed = _counter_checks(snapshots, info, opts)
        checks += counter_checks
        failed |= counter_failed
    status = worst(c["status"] for c in checks)
    document = _document(states, rates, rounds, status, error, opts, info)
    return {"stage": STAGE, "checks": checks, "raw": runs.raw, "document": document, "failed_nodes": sorted(failed)}


def _pair_results(grouped):
    """{rail: [[localiser result] per step]}: each measured pair test as a result of its own (a NIC
    that refused, or a timeout, is a low one); a test not measured is left out."""
    by_rail = {}
    for (rail, step), tests in sorted(grouped.items()):
        results = []
        for pair, judged in tests:
            if judged["outcome"] not in _MEASURED:
                continue
            status = {"ok": "ok", "timeout": "timeout"}.get(judged["outcome"], "error")
            results.append({"group": list(pair), "busbw": judged["gbits"] if status == "ok" else None,
                            "status": status})
        by_rail.setdefault(rail, []).append(results)
    return by_rail


def _label(info, node, rail):
    nic = info[node]["nics"][rail]
    gpu = info[node]["gpus"].get(nic)
    return "%s (rail %d%s)" % (nic, rail, ", GPU%s" % gpu if gpu is not None else "")


def _checks(nodes, info, states, rates, causes, unmeasured, error, opts, keys):  # pylint: disable=too-many-arguments
    checks, failed = [], set()
    for node in nodes:
        for rail in range(len(info[node]["nics"])):
            state = states[rail]
            entry = state["nodes"].get(node) or {}
            verdict = entry.get("verdict", _localize.UNTESTED)
            evidence = list(entry.get("evidence") or [])
            label = _label(info, node, rail)
            gbits = sorted(v for v in (state["matrix"].get(node) or {}).values() if v is not None)
            metrics = {"verdict": verdict, "rail": rail, "nic": info[node]["nics"][rail], "rate": rates[rail],
                       "floor": state["config"]["floor"], "gbits": gbits,
                       "gpu": info[node]["gpus"].get(info[node]["nics"][rail]) if opts.get("use_cuda") else None}
            detail = evidence[0].split(": ", 1)[-1] if evidence else verdict
            cause, broken = causes.get((node, rail)), unmeasured.get((node, rail))
            if error:
                status, component = ERROR, error["component"]
                message = "%s %s: not measured: %s" % (node, label, error["message"])
            elif cause is None and broken is None and _localize.marginal_only(state, node):
                # slower than the rail's peers by less than the margin, above the floor: accepted
                status, component = PASS, "%s %s" % (node, info[node]["nics"][rail])
                message = "%s %s: %s" % (node, label, detail)
            elif verdict in _localize.FAULTS:
                status, component = FAIL, "%s %s" % (node, info[node]["nics"][rail])
                if cause is not None:
                    message = "%s %s: the NIC refused the test: %s" % (node, label, cause["evidence"][0])
                    evidence = cause["evidence"] + evidence
                else:
                    message = "%s %s: %s%s" % (node, label, detail, _floor_text(state, rates[rail], opts))
            elif broken is not None and verdict != _localize.CLEARED:
                status, component = ERROR, broken["component"] or "launcher"
                message = "%s %s: not measured: %s" % (node, label, broken["sentence"])
                evidence = list(broken["evidence"]) + evidence
            elif verdict == _localize.UNTESTED:
                replay = bool(opts.get("replay_dir"))
                status, component = (SKIP if replay else ERROR), "%s %s" % (node, info[node]["nics"][rail])
                message = "%s %s: %s" % (node, label, "not replayable: the capture holds no test of it" if replay
                                         else "not tested (no partner on this rail)")
            else:
                status, component = PASS, "%s %s" % (node, info[node]["nics"][rail])
                message = "%s %s: %s" % (node, label, detail)
            check = check_result(CHECK, status, message, metrics, component=component,
                                 evidence=evidence[1:_EVIDENCE + 1] or evidence[:1], tool=opts.get("tool"))
            check.update(node=node, stage=STAGE, detail="\n".join(evidence))
            check["raw"] = sorted(set(keys.get((rail, node)) or ()))
            checks.append(check)
            if status in (FAIL, ERROR):
                failed.add(node)
    return checks, failed


def _floor_text(state, rate, opts):
    floor = state["config"]["floor"]
    if not floor or not rate:
        return ""
    return " (floor %.0f Gb/s: %g %% of the ports' %g Gb/s)" % (floor, round(float(opts.get("min_fraction")) * 100, 1), rate)


def _document(states, rates, rounds, status, error, opts, info):  # pylint: disable=too-many-arguments
    """The rdma block of results.json: per rail its pair matrix and verdicts, per node its NICs."""
    rails = {}
    for rail, state in sorted(states.items()):
        public = _localize.public_state(state)
        rails[str(rail)] = {"rate": rates[rail], "floor": state["config"]["floor"],
                            "reference": ((public.get("references") or {}).get("intra") or {}).get("median"),
                            "matrix": public.get("matrix") or {},
                            "pinned": [] if error else list((public.get("pinned") or {}).get("nodes") or []),
                            "suspects": [] if error else list((public.get("suspects") or {}).get("nodes") or []),
                            "intermittent": [] if error else list((public.get("intermittent") or {}).get("nodes") or []),
                            "leaf_faults": [] if error else list(public.get("leaf_faults") or [])}
    nics = {}
    for node, entry in sorted(info.items()):
        nics[node] = dict((nic, {"rail": rail, "gpu": entry["gpus"].get(nic),
                                 "verdict": (states[rail]["nodes"].get(node) or {}).get("verdict")})
                          for rail, nic in enumerate(entry["nics"]) if rail in states)
    return {"status": status, "error": error, "tool": opts.get("tool") or "ib_write_bw",
            "gpudirect": bool(opts.get("use_cuda")), "min_fraction": opts.get("min_fraction"),
            "rails": rails, "nics": nics, "rounds": rounds, "replayed": bool(opts.get("replay_dir"))}
