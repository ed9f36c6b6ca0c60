# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: acceptance_report
type: aggregate
short_description: Write results.json (validated), JUnit XML, the report and raw tool outputs for each run
version_added: 0.1.0
description:
  - Collects the check results the acceptance stages publish (each node's C(collect_node_state),
    the C(gpucluster_stage_result) and C(check_fabric_result) facts), unreachable nodes and failed
    stage tasks, and writes them into a directory of its own per run, C(<artifacts_dir>/<run_id>/),
    never reusing an existing one.
  - The directory is marked C(INCOMPLETE) when the run starts; raw tool outputs are written as they
    arrive (C(raw/<node>/<tool>.txt)); C(results.json) is written at each play's start while the
    run goes on (C(run.state=running); its verdict is never C(pass), the run has none yet), and
    before the verdict task and at its end (C(run.state=complete)), when C(COMPLETE) replaces the
    C(INCOMPLETE) mark. A killed run stays visibly incomplete with
    everything collected so far.
  - C(results.json) is validated against the collection's C(schemas/results.schema.json) before it
    is written; C(junit.xml), C(report.html), C(metrics.prom), the console summary and the
    C(gpucluster.acceptance.run_verdict) task's message are all rendered from it. Every file is
    written to a temporary file and renamed.
  - The run directory is exported to the playbook's later tasks as the environment variable
    C(GPUCLUSTER_RUN_DIR).
  - At the end of a run that was not a replay, C(<artifacts_dir>/last-pass.json) records for each
    node the time of its last passed run of each stage (the gpu_health Xid window starts there).
requirements:
  - junit-xml (python library)
  - jsonschema (python library)
options:
  artifacts_dir:
    description: Directory under which each run gets its own folder.
    default: ./artifacts
    type: path
    env:
      - name: GPUCLUSTER_ARTIFACTS_DIR
    ini:
      - section: gpucluster
        key: artifacts_dir
  run_id:
    description: Name of this run's folder; by default the playbook's C(acceptance_run_id).
    type: str
    env:
      - name: GPUCLUSTER_RUN_ID
  heartbeat_s:
    description:
      - >-
        While a per-node stage runs longer than this many seconds, print a line every this many
        seconds with the elapsed time and the nodes done (C(dcgm: 2m00s, 12/16 nodes done)).
      - C(0) turns the heartbeat off.
    default: 60
    type: int
    env:
      - name: GPUCLUSTER_HEARTBEAT_S
    ini:
      - section: gpucluster
        key: heartbeat_s
notes:
  - >-
    As each node finishes a per-node stage the callback prints one line for it
    (C(gpu003 topology FAIL: GPU2<->GPU5 is SYS), C(gpu001 topology pass)).
  - >-
    In check mode (C(--check)) no tool runs: each stage prints what it would run on which nodes,
    the run ends with a check-mode summary and no verdict, and no run directory is written.
author: gpucluster.acceptance maintainers (@gpucluster)
"""

import datetime
import json
import os
import re
import socket
import threading
import time
import uuid

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import hostlist_text
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD, ERROR, worst
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
VERDICT_TASK_PREFIX = "Verdict:"
RUN_DIR_ENV = "GPUCLUSTER_RUN_DIR"
CHECK_PLAN_ENV = "GPUCLUSTER_CHECK_PLAN"  # check mode: the callback is on, recording the plan
INCOMPLETE = "INCOMPLETE"
COMPLETE = "COMPLETE"
LAST_PASS = "last-pass.json"
COLLECT_ACTIONS = ("gpucluster.acceptance.collect_stage", "collect_stage")
# The heartbeat of a play under the free strategy (acceptance.yml's pipelined per-node stages).
PIPELINE_LABEL = "per-node stages, each node at its own pace"
FREE_STRATEGIES = ("free", "ansible.builtin.free")
CHECK_MODE_PREFIX = "check mode: would run "
LINE_MAX = 160


def _safe(name):
    """A file-system-safe version of a node or tool name."""
    return _SAFE.sub("_", str(name)) or "_"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _stage_of(task):
    """The acceptance stage a task belongs to: the collect role's stage, else its role's name."""
    stage = task.get_vars().get("collect_stage")
    if isinstance(stage, str) and stage and "{" not in stage:
        return stage
    role = getattr(task, "_role", None)
    if role is not None:
        return role.get_name().split(".")[-1]
    return task.get_name()


def _play_stages(play):
    """The per-node stages a play collects (its collect_stage tasks), in order."""
    stages = []
    blocks = list(getattr(play, "pre_tasks", None) or []) + list(getattr(play, "tasks", None) or [])
    args = context.CLIARGS or {}
    only, skip = list(args.get("tags") or ["all"]), list(args.get("skip_tags") or [])

    def selected(task):  # --tags / --skip-tags leave some stages out
        # Progress only: a task whose tags cannot be evaluated here is counted.
        evaluate = getattr(task, "evaluate_tags", None)
        try:
            return evaluate is None or evaluate(only, skip, all_vars={})
        except Exception:  # pylint: disable=broad-except
            return True

    def walk(items):
        for item in items:
            if hasattr(item, "block"):
                walk(item.block or [])
                walk(item.rescue or [])
                walk(item.always or [])
            elif getattr(item, "action", None) in COLLECT_ACTIONS and selected(item):
                stage = _stage_of(item)
                if stage not in stages:
                    stages.append(stage)

    walk(blocks)
    return stages


def _hosts(names):
    return hostlist_text(names)


def _short(text, keep=100):
    """A command line for the console: whitespace folded, cut to `keep` characters."""
    text = " ".join(text.split())
    return text if len(text) <= keep else text[:keep - 3] + "..."


def _duration(seconds):
    seconds = int(seconds)
    if seconds >= 3600:
        return "%dh%02dm%02ds" % (seconds // 3600, seconds % 3600 // 60, seconds % 60)
    return "%dm%02ds" % (seconds // 60, seconds % 60)


def node_line(node, stage_result):
    """One line for a node that finished a stage: status, and the first bad check's message."""
    checks = [c for c in (stage_result.get("checks") or []) if isinstance(c, dict)]
    status = worst((c.get("status") for c in checks), empty=ERROR)
    line = "%s %s %s" % (node, stage_result.get("stage", "?"), status if status not in BAD else status.upper())
    # A status outside the vocabulary counts as an error (_status), and is shown as one.
    bad = [c for c in checks if worst([c.get("status")]) == status and status in BAD]
    if bad:
        message = " ".join(str(bad[0].get("message") or bad[0].get("check") or "").split())
        if len(checks) > 1 and len(bad) > 1:
            message += " (+%d more)" % (len(bad) - 1)
        line += ": " + message
    return line if len(line) <= LINE_MAX else line[:LINE_MAX - 3] + "..."


class Heartbeat(object):
    """One daemon thread: while a task runs longer than `interval` s, a line every `interval` s.

    begin() and end() are called from the callback (the main thread); the thread only reads the
    current task under the lock and prints through `emit`; stop() ends it for good (never prints
    after), and being a daemon it never holds up the exit.
    """

    def __init__(self, interval, emit, clock=time.monotonic):
        self.interval = interval
        self._emit = emit
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._current = None  # [label, started, next_due, done set, total]
        self._thread = None

    def begin(self, label, total):
        with self._lock:
            now = self._clock()
            self._current = [label, now, now + self.interval, set(), total]
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._loop, name="gpucluster-heartbeat")
                self._thread.daemon = True
                self._thread.start()

    def done(self, node):
        with self._lock:
            if self._current is not None:
                self._current[3].add(node)

    def running(self, label):
        with self._lock:
            return self._current is not None and self._current[0] == label

    def end(self):
        with self._lock:
            self._current = None

    def stop(self):
        with self._lock:
            self._current = None
            self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def line(self):
        """The heartbeat line when one is due now, else None (advances the next due time)."""
        with self._lock:
            if self._current is None or self._stop.is_set():
                return None
            label, started, due, done, total = self._current
            now = self._clock()
            if now < due:
                return None
            self._current[2] = due + self.interval * max(1, int((now - due) // self.interval) + 1)
            text = "%s: %s" % (label, _duration(now - started))
            if total and label == PIPELINE_LABEL:
                text += ", %d/%d node stages done" % (len(done), total)
            elif total:
                text += ", %d/%d nodes done" % (len(done), total)
            return text

    def _loop(self):
        tick = max(0.05, min(1.0, self.interval / 4.0))
        while not self._stop.wait(tick):
            text = self.line()
            if text is not None:
                with self._lock:
                    if self._stop.is_set():
                        return
                self._emit(text)


def _is_stage_result(value):
    """A stage's published result: {stage, checks, ...} or a list of them."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(i, dict) and "stage" in i and "checks" in i for i in items)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpucluster.acceptance.acceptance_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._checks = []
        self._raw = {}
        self._targets = []
        self._seen = []
        self._documents = {}
        self._run_dir = None
        self._run = {}
        self._warned = set()
        self._written = (0, None)  # (checks, stage) at the last results.json written mid-run
        self._check_mode = bool((context.CLIARGS or {}).get("check"))
        self._check_run_id = None
        self._heartbeat = None
        self._plan = []  # check mode: [(stage, what, [nodes])] in the order the stages came
        self._pending_plan = {}  # check mode, the current task: {(stage, what): [nodes]}
        # Under the free strategy: the play's number of per-node stages (0: a play in step), and
        # per stage the nodes that reported it (results.json is written as each stage completes).
        self._pipelined = 0
        self._stage_nodes = {}
        self._complete = set()

    # -- progress -------------------------------------------------------------------------
    def _beat(self):
        if self._heartbeat is None:
            try:
                interval = int(self.get_option("heartbeat_s") or 0)
            except (KeyError, TypeError, ValueError):
                interval = 60
            self._heartbeat = Heartbeat(interval, self._display.display) if interval > 0 else False
        return self._heartbeat or None

    def _flush_plan(self):
        for (stage, what), nodes in self._pending_plan.items():
            self._plan.append((stage, what, nodes))
            self._display.display("check mode: %s would run %s on %s" % (stage, what, _hosts(nodes)))
        self._pending_plan = {}

    def _task_started(self, task):
        if not self._pipelined:  # a pipelined play's stages interleave: its plan is told at its end
            self._flush_plan()
        beat = self._beat()
        if beat is None:
            return
        if task.action in COLLECT_ACTIONS and not self._check_mode:
            if self._pipelined:
                # Nodes at their own pace: the tasks of different stages start in turn, so one
                # line for the play (its stage results so far), not one restarted per task.
                if not beat.running(PIPELINE_LABEL):
                    beat.begin(PIPELINE_LABEL, len(self._targets or self._seen) * self._pipelined)
            else:
                beat.begin(_stage_of(task), len(self._targets or self._seen))
        elif not self._pipelined:
            beat.end()

    def _finished(self, result):
        beat = self._heartbeat
        if beat:
            host = result._host.get_name()
            # pipelined: (node, stage) pairs against nodes x stages; else the task's nodes
            beat.done((host, _stage_of(result._task)) if self._pipelined else host)

    def v2_runner_on_skipped(self, result):
        self._finished(result)
        plan = result._result.get("would_run")
        if self._check_mode and isinstance(plan, list):
            host = result._host.get_name()
            # One line for the nodes that run the same commands: the node's own name as {node}.
            what = "; ".join(_short(str(p).replace(host, "{node}")) for p in plan) or "nothing"
            key = (str(result._result.get("stage") or _stage_of(result._task)), what)
            nodes = result._result.get("nodes")  # a stage run once for the play (srun): all its nodes
            self._pending_plan.setdefault(key, []).extend(nodes if isinstance(nodes, list) else [host])

    # -- run directory --------------------------------------------------------------------
    def _ensure_run_dir(self, run_id=None):
        if self._run_dir:
            return self._run_dir
        root = self.get_option("artifacts_dir")
        run_id = self.get_option("run_id") or run_id or "%s-%s" % (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"), uuid.uuid4().hex[:6])
        os.makedirs(root, exist_ok=True)
        candidate, n = os.path.join(root, _safe(run_id)), 1
        while True:  # never write into an earlier run's directory
            try:
                os.mkdir(candidate)
                break
            except FileExistsError:
                n += 1
                candidate = os.path.join(root, "%s.%d" % (_safe(run_id), n))
        self._run_dir = os.path.abspath(candidate)
        self._run["id"] = os.path.basename(candidate)
        self._run.setdefault("started", _now())
        mark = {"run_id": self._run["id"], "started": self._run["started"], "pid": os.getpid(),
                "host": socket.gethostname(), "playbook": self._run.get("playbook")}
        write_atomic(os.path.join(self._run_dir, INCOMPLETE), json.dumps(mark, indent=2) + "\n")
        # Tasks forked after this point (the verdict, the fabric and workload stages) find the
        # directory here: they stream raw outputs into it and read results.json from it.
        os.environ[RUN_DIR_ENV] = self._run_dir
        return self._run_dir

    def _write_raw(self, owner, tools):
        folder = os.path.join(self._ensure_run_dir(), "raw", _safe(owner))
        os.makedirs(folder, exist_ok=True)
        index = self._raw.setdefault(owner, {})
        for tool, record in sorted((tools or {}).items()):
            if not isinstance(record, dict):
                continue
            path = os.path.join(folder, _safe(tool) + ".txt")
            if record.get("output") is not None or not os.path.exists(path):
                write_atomic(path, record.get("output") or "")
            entry = {"path": os.path.relpath(path, self._run_dir)}
            for key in ("rc", "seconds", "complete", "command"):
                if record.get(key) is not None:
                    entry[key] = record[key]
            index[tool] = entry

    # -- events ---------------------------------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        self._run["playbook"] = os.path.basename(playbook._file_name)
        self._run["started"] = _now()

    def v2_playbook_on_play_start(self, play):
        self._flush_plan()
        if self._heartbeat:
            self._heartbeat.end()
        self._pipelined = 0
        if str(getattr(play, "strategy", "") or "") in FREE_STRATEGIES:
            self._pipelined = len(_play_stages(play))
        if self._run_dir:  # a play boundary: what the run has so far, for a run killed later
            self._write_results(state="running")

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_started(task)
        if not self._run_dir:
            return
        # The verdict task reads results.json: it must hold everything the stages reported, and the
        # verdict is the run's (a document written while the run goes on never says pass).
        if str(task.name or "").startswith(VERDICT_TASK_PREFIX):
            self._write_results(state="complete")
            return
        # A new stage starting: the stages before it are done; keep what they found on disk, so a
        # run killed later still has its results so far (once per stage, not once per task).
        if self._pipelined:
            # The nodes' stages interleave: write when another stage has every node's results.
            targets = len(self._targets or self._seen)
            complete = set(st for st, nodes in self._stage_nodes.items() if targets and len(nodes) >= targets)
            if complete - self._complete:
                self._complete |= complete
                self._write_results(state="running")
            return
        stage = _stage_of(task)
        if len(self._checks) != self._written[0] and stage != self._written[1]:
            self._write_results(state="running")
            self._written = (len(self._checks), stage)

    def _note_node(self, node):
        if node and node not in self._seen and node != "localhost":
            self._seen.append(node)

    def _add_stage_result(self, host, stage_result):
        results = stage_result if isinstance(stage_result, list) else [stage_result]
        for item in results:
            if not isinstance(item, dict):
                continue
            stage = item.get("stage", "unknown")
            if isinstance(item.get("document"), dict) and item["document"]:
                # e.g. the fabric's matrix and rounds; a stage publishing in parts (the data
                # transfer's verification, then its progress) adds to its document.
                self._documents[stage] = dict(self._documents.get(stage) or {}, **item["document"])
            node = item.get("node")
            if node is None and host == "localhost":
                owner = "_" + stage  # a controller-side stage: its raw outputs in raw/_<stage>/
            else:
                node = node or host
                owner = node
                self._note_node(node)
                self._stage_nodes.setdefault(stage, set()).add(node)
            if item.get("raw"):
                self._write_raw(owner, item["raw"])
            for check in item.get("checks") or []:
                if not isinstance(check, dict):
                    continue
                record = dict(check)
                record.setdefault("stage", stage)
                if "node" not in record:
                    record["node"] = node
                self._note_node(record["node"])
                if "raw" not in record and item.get("raw") and record["node"] == node:
                    record["raw"] = sorted(item["raw"])
                self._checks.append(record)

    def v2_runner_on_ok(self, result):
        self._finished(result)
        host = result._host.get_name()
        facts = result._result.get("ansible_facts") or {}
        message = result._result.get("msg")
        plan = result._result.get("plan")
        if self._check_mode and isinstance(plan, list) and isinstance(result._result.get("stage_result"), dict):
            # The fabric burn-in's first round, planned from the controller (check mode runs none).
            groups = [g for g in plan if isinstance(g, (list, tuple))]
            nodes = sorted(set(str(n) for g in groups for n in g))
            key = (str(result._result["stage_result"].get("stage") or "fabric"),
                   "nccl-tests from the controller, first round: %d job(s) of %s node(s)"
                   % (len(groups), "/".join(sorted(set(str(len(g)) for g in groups))) or "0"))
            tests = [t for t in plan if isinstance(t, dict) and "server" in t and "client" in t]
            if tests:  # the RDMA pair stage's first round: perftest pairs on every rail
                nodes = sorted(set(str(t[r]) for t in tests for r in ("server", "client")))
                key = (str(result._result["stage_result"].get("stage") or "rdma"),
                       "perftest pairs from the controller, first round: %d test(s) on %d rail(s) in one Slurm step"
                       % (len(tests), len(set(t.get("rail") for t in tests))))
            self._pending_plan.setdefault(key, []).extend(nodes or [host])
        if self._check_mode and isinstance(message, str) and message.startswith(CHECK_MODE_PREFIX):
            stage = _stage_of(result._task)
            key = (stage[len("check_"):] if stage.startswith("check_") else stage,
                   _short(message[len(CHECK_MODE_PREFIX):], keep=300))
            # A launcher run once for the play (the workload) runs on all of its nodes.
            nodes = self._targets if result._task.run_once and self._targets else [host]
            self._pending_plan.setdefault(key, []).extend(nodes)
        if isinstance(facts.get("acceptance_targets"), list):
            self._targets = [str(n) for n in facts["acceptance_targets"]]
            profile = facts.get("acceptance_profile_data")
            if isinstance(profile, dict) and profile.get("name"):
                self._run["profile"] = str(profile["name"])
            if facts.get("acceptance_replay_of"):
                self._run["replay_of"] = str(facts["acceptance_replay_of"])
        if facts.get("acceptance_run_id") and not self._run_dir:
            if self._check_mode:  # no run directory until something is measured (run_in_check_mode)
                os.environ[CHECK_PLAN_ENV] = "1"
                self._check_run_id = str(facts["acceptance_run_id"])
            else:
                self._ensure_run_dir(str(facts["acceptance_run_id"]))
        for name, value in sorted(facts.items()):
            if name == "collect_node_state":
                if isinstance(value, dict) and value.get("last"):
                    if self._check_mode and not self._run_dir:  # measured in check mode after all
                        self._ensure_run_dir(self._check_run_id)
                    self._add_stage_result(host, value["last"])  # a per-node stage
                    if isinstance(value["last"], dict):
                        self._display.display(node_line(value["last"].get("node") or host, value["last"]))
            elif name == "collect_node_states" and isinstance(value, dict):
                # A stage run once for the play (srun transport): every node's state at once, of
                # which the nodes it judged are news (the others were left out of this stage).
                judged = result._result.get("judged")
                for node in sorted(value):
                    if isinstance(judged, list) and node not in judged:
                        continue
                    state = value[node]
                    if isinstance(state, dict) and isinstance(state.get("last"), dict):
                        if self._check_mode and not self._run_dir:
                            self._ensure_run_dir(self._check_run_id)
                        self._add_stage_result(node, state["last"])
                        self._display.display(node_line(state["last"].get("node") or node, state["last"]))
            elif _is_stage_result(value) and not (self._check_mode and not self._run_dir):
                self._add_stage_result(host, value)  # fabric, workload, cluster-wide checks

    def _error(self, host, task, message, component=None):
        self._note_node(host)
        self._checks.append({"stage": _stage_of(task), "node": host, "check": "run", "status": "error",
                             "message": message, "metrics": {}, "component": component})

    def v2_runner_on_unreachable(self, result):
        self._finished(result)
        lines = str(result._result.get("msg") or "no answer").strip().splitlines() or ["no answer"]
        self._error(result._host.get_name(), result._task,
                    "%s is unreachable: %s" % (result._host.get_name(), lines[-1]), component="transport")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._finished(result)
        # A task named "Verdict: ..." fails on purpose to set the exit code: not a new problem.
        if ignore_errors or str(result._task.name or "").startswith(VERDICT_TASK_PREFIX):
            return
        if "__inventory_check_nodes" in result._task.get_vars():
            return  # the inventory checks before a run starts: their message says it all
        msg = str(result._result.get("msg") or result._result.get("stderr") or "failed").strip()
        found = classify_failure(msg)
        self._error(result._host.get_name(), result._task, "task '%s' failed: %s" % (result._task.get_name(), msg[:500]),
                    component=found["component"] if found else None)

    # -- writing ----------------------------------------------------------------------------
    def _warn_once(self, text):
        if text not in self._warned:
            self._warned.add(text)
            self._display.warning("gpucluster.acceptance.acceptance_report: %s" % text)

    def _document(self, state):
        run = dict(self._run)
        if state == "complete":
            run["finished"] = _now()
        targets = self._targets or self._seen
        return _results.build_document(run, self._checks, targets, self._raw, self._documents, state=state)

    def _write_results(self, state):
        """Validate and write results.json; returns the document, or None when it is not valid."""
        if not _results.HAS_JSONSCHEMA:
            self._warn_once("needs the jsonschema library: results.json was not written")
            return None
        document = self._document(state)
        problems = _results.validate(document)
        if problems:
            # A document that breaks the contract is kept for the bug report, never as results.json.
            write_atomic(os.path.join(self._run_dir, "results.invalid.json"),
                         json.dumps(document, indent=1, sort_keys=True, default=str))
            self._warn_once("results.json would not be valid, kept as results.invalid.json: %s"
                            % "; ".join(problems[:5]))
            return None
        write_atomic(os.path.join(self._run_dir, "results.json"), _results.dumps(document))
        return document

    def _update_last_pass(self, document):
        """<artifacts_dir>/last-pass.json: per node and stage, when it last passed (not for replays)."""
        if document["run"].get("replay_of"):
            return
        path = os.path.join(self.get_option("artifacts_dir"), LAST_PASS)
        try:
            with open(path) as handle:
                known = json.load(handle)
            if not isinstance(known, dict):
                known = {}
        except (IOError, OSError, ValueError):
            known = {}
        # The run's start: an Xid logged while a passing run went on must count next time.
        when = document["run"].get("started") or _now()
        for node, entry in sorted((document.get("nodes") or {}).items()):
            for stage, status in sorted((entry.get("stages") or {}).items()):
                if status == "pass":
                    known.setdefault(node, {})[stage] = {"time": when, "run_id": document["run"]["id"]}
        write_atomic(path, json.dumps(known, indent=1, sort_keys=True) + "\n")

    def _check_mode_summary(self):
        self._display.display("gpucluster.acceptance check mode: nothing was run or measured, no verdict"
                              " and no artifacts; %d stage(s) would run:" % len(self._plan))
        for stage, what, nodes in self._plan:
            self._display.display("  %s on %s (%d node(s)): %s" % (stage, _hosts(nodes), len(set(nodes)), what))

    def v2_playbook_on_stats(self, stats):
        self._flush_plan()
        if self._heartbeat:
            self._heartbeat.stop()
        if self._check_mode and (self._plan or not self._run_dir):
            if self._plan or self._targets or self._check_run_id:
                self._check_mode_summary()
            if not self._run_dir:
                return
        if not self._checks and not self._run_dir:
            return  # not an acceptance run: nothing to report
        if not _report.HAS_JUNIT_XML:
            self._warn_once("needs the junit-xml library: no artifacts were written")
            return
        run_dir = self._ensure_run_dir()
        document = self._write_results(state="complete")
        if document is None:
            return
        # The page and the metrics are drawn from results.json as written (tools/render-report
        # redraws them from it later); a drawing problem is a warning, never a lost run.
        from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import (  # pylint: disable=import-outside-toplevel
            _html_report, _prometheus)
        for name, render, args in (("junit.xml", _report.junit_xml, (document,)),
                                   ("report.html", _html_report.render_html, (document, run_dir)),
                                   ("metrics.prom", _prometheus.render_textfile, (document,))):
            try:
                text = render(*args)
            except Exception as exc:  # pylint: disable=broad-except
                self._warn_once("could not write %s: %s: %s" % (name, type(exc).__name__, exc))
                continue
            write_atomic(os.path.join(run_dir, name), text)
        try:
            self._update_last_pass(document)
        except (IOError, OSError) as exc:
            self._warn_once("could not update %s: %s" % (LAST_PASS, exc))
        write_atomic(os.path.join(run_dir, COMPLETE), json.dumps(
            {"run_id": document["run"]["id"], "finished": document["run"].get("finished"),
             "verdict": document["verdict"]["status"]}, indent=2) + "\n")
        try:
            os.unlink(os.path.join(run_dir, INCOMPLETE))
        except OSError:
            pass
        for line in _report.summary_lines(document, run_dir):
            self._display.display(line)
