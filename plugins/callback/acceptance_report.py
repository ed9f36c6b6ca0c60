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
    C(GPUCLUSTER_RUN_DIR), and the artifacts directory, however it was set, as C(GPUCLUSTER_ARTIFACTS_DIR)
    (the Xid window's last-pass record and C(baseline.yml) read it).
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

import os

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._check_plan import (
    CheckPlan)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._play_stages import (
    COLLECT_ACTIONS, FREE_STRATEGIES, _is_stage_result, _play_stages, _stage_of)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._progress import PIPELINE_LABEL, Heartbeat, node_line
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._run_dir import (
    LAST_PASS, _now, default_run_id, mark_complete, new_run_dir, reopen_run_dir, update_last_pass, write_raw, write_reports,
    write_results)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._resume import Unlockable, hold_lock

VERDICT_TASK_PREFIX = "Verdict:"
RUN_DIR_ENV = "GPUCLUSTER_RUN_DIR"
ARTIFACTS_ENV = "GPUCLUSTER_ARTIFACTS_DIR"
CHECK_PLAN_ENV = "GPUCLUSTER_CHECK_PLAN"  # check mode: the callback is on, recording the plan


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
        self._lock = None  # the run directory's lock file, open for the whole run
        self._run = {}
        self._warned = set()
        self._written = (0, None)  # (checks, stage) at the last results.json written mid-run
        self._check_mode = bool((context.CLIARGS or {}).get("check"))
        self._check_run_id = None
        self._heartbeat = None
        self._plan = CheckPlan()  # check mode: what each stage would run, and how long
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
        self._plan.flush(self._display.display)

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
        if self._check_mode and isinstance(result._result.get("would_run"), list):
            self._plan.skipped(result._result, result._host.get_name(), _stage_of(result._task))

    # -- run directory --------------------------------------------------------------------
    def _ensure_run_dir(self, run_id=None, resume=None):
        if self._run_dir:
            return self._run_dir
        if resume:  # -e acceptance_resume: the interrupted run's own directory (start_run checked it)
            # The lock first (held for the whole run; the kernel lets go when the process dies):
            # a run that started writing it since the check gets it, and this one a directory of its own.
            self._lock = hold_lock(resume)
            if self._lock is not None:
                self._run_dir = reopen_run_dir(resume, self._run)
            else:
                self._warn_once("%s is being written by another run since this one checked it: this run writes "
                                "a directory of its own" % resume)
        if not self._run_dir:
            root = self.get_option("artifacts_dir")
            run_id = self.get_option("run_id") or run_id or default_run_id()
            self._run_dir = new_run_dir(root, run_id, self._run)
            self._lock = hold_lock(self._run_dir)
        if isinstance(self._lock, Unlockable):
            self._warn_once("%s cannot be locked (%s): a resume tells a live writer by its pid on this host only"
                            % (self._run_dir, self._lock.reason))
        # Tasks forked after this point (the verdict, the fabric and workload stages) find the
        # directory here: they stream raw outputs into it and read results.json from it.
        os.environ[RUN_DIR_ENV] = self._run_dir
        return self._run_dir

    def _write_raw(self, owner, tools):
        write_raw(self._ensure_run_dir(), owner, tools, self._raw.setdefault(owner, {}))

    # -- events ---------------------------------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        self._run["playbook"] = os.path.basename(playbook._file_name)
        self._run["started"] = _now()
        # One artifacts directory for the whole run, however it was set (environment, [gpucluster]
        # artifacts_dir in ansible.cfg, the default): the tasks that read it (the Xid window's
        # last-pass record, baseline.yml) see this one (ansible's config lookup cannot read a
        # collection callback's options).
        try:
            os.environ[ARTIFACTS_ENV] = os.path.abspath(self.get_option("artifacts_dir") or "artifacts")
        except KeyError:
            pass

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

    def _add_stage_result(self, host, stage_result, outputs=None):
        """outputs: {tool: text} returned beside a node's fact (_run_state.without_outputs)."""
        outputs = outputs if isinstance(outputs, dict) else {}
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
            if isinstance(item.get("raw"), dict) and item["raw"]:
                self._write_raw(owner, dict((tool, dict(record, output=outputs[tool]) if tool in outputs and isinstance(
                    record, dict) else record) for tool, record in item["raw"].items()))
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
        if self._check_mode:
            # A launcher run once for the play (the workload) runs on all of its nodes.
            self._plan.ok(result._result, host, _stage_of(result._task),
                          self._targets if result._task.run_once and self._targets else [host])
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
                self._ensure_run_dir(str(facts["acceptance_run_id"]), facts.get("acceptance_resume_dir") or None)
        for name, value in sorted(facts.items()):
            if name == "collect_node_state":
                if isinstance(value, dict) and value.get("last"):
                    if self._check_mode and not self._run_dir:  # measured in check mode after all
                        self._ensure_run_dir(self._check_run_id)
                    self._add_stage_result(host, value["last"], result._result.get("raw_outputs"))  # a per-node stage
                    if isinstance(value["last"], dict):
                        self._display.display(node_line(value["last"].get("node") or host, value["last"]))
            elif name == "collect_node_states" and isinstance(value, dict):
                # A stage run once for the play (srun transport): every node's state at once, of
                # which the nodes it judged are news (the others were left out of this stage).
                judged, outputs = result._result.get("judged"), result._result.get("raw_outputs")
                for node in sorted(value):
                    if isinstance(judged, list) and node not in judged:
                        continue
                    state = value[node]
                    if isinstance(state, dict) and isinstance(state.get("last"), dict):
                        if self._check_mode and not self._run_dir:
                            self._ensure_run_dir(self._check_run_id)
                        self._add_stage_result(node, state["last"], (outputs or {}).get(node) if isinstance(outputs, dict) else None)
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
        if set(("__inventory_check_nodes", "__start_run_no_record")) & set(result._task.get_vars()):
            return  # the checks before a run starts (inventory, resume): their message says it all
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
        return document if write_results(self._run_dir, document, self._warn_once) else None

    def _check_mode_summary(self):
        for line in self._plan.summary():
            self._display.display(line)

    def v2_playbook_on_stats(self, stats):
        self._flush_plan()
        if self._heartbeat:
            self._heartbeat.stop()
        if self._check_mode and (self._plan.entries or not self._run_dir):
            if self._plan.entries or self._targets or self._check_run_id:
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
        write_reports(run_dir, document, self._warn_once)
        try:
            update_last_pass(self.get_option("artifacts_dir"), document)
        except (IOError, OSError) as exc:
            self._warn_once("could not update %s: %s" % (LAST_PASS, exc))
        mark_complete(run_dir, document)
        for line in _report.summary_lines(document, run_dir):
            self._display.display(line)
