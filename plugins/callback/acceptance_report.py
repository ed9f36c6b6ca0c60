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
    arrive (C(raw/<node>/<tool>.txt)); C(results.json) is written at each play's start and before the
    verdict while the run goes on (C(run.state=running)), and at its end (C(run.state=complete)),
    when C(COMPLETE) replaces the C(INCOMPLETE) mark. A killed run stays visibly incomplete with
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
author: gpucluster.acceptance maintainers (@gpucluster)
"""

import datetime
import json
import os
import re
import socket
import uuid

from ansible.plugins.callback import CallbackBase

from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
VERDICT_TASK_PREFIX = "Verdict:"
RUN_DIR_ENV = "GPUCLUSTER_RUN_DIR"
INCOMPLETE = "INCOMPLETE"
COMPLETE = "COMPLETE"
LAST_PASS = "last-pass.json"


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
        _results.write_atomic(os.path.join(self._run_dir, INCOMPLETE), json.dumps(mark, indent=2) + "\n")
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
                _results.write_atomic(path, record.get("output") or "")
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
        if self._run_dir:  # a play boundary: what the run has so far, for a run killed later
            self._write_results(state="running")

    def v2_playbook_on_task_start(self, task, is_conditional):
        if not self._run_dir:
            return
        # The verdict task reads results.json: it must hold everything the stages reported.
        if str(task.name or "").startswith(VERDICT_TASK_PREFIX):
            self._write_results(state="running")
            return
        # A new stage starting: the stages before it are done; keep what they found on disk, so a
        # run killed later still has its results so far (once per stage, not once per task).
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
        host = result._host.get_name()
        facts = result._result.get("ansible_facts") or {}
        if isinstance(facts.get("acceptance_targets"), list):
            self._targets = [str(n) for n in facts["acceptance_targets"]]
            profile = facts.get("acceptance_profile_data")
            if isinstance(profile, dict) and profile.get("name"):
                self._run["profile"] = str(profile["name"])
            if facts.get("acceptance_replay_of"):
                self._run["replay_of"] = str(facts["acceptance_replay_of"])
        if facts.get("acceptance_run_id") and not self._run_dir:
            self._ensure_run_dir(str(facts["acceptance_run_id"]))
        for name, value in sorted(facts.items()):
            if name == "collect_node_state":
                if isinstance(value, dict) and value.get("last"):
                    self._add_stage_result(host, value["last"])  # a per-node stage
            elif _is_stage_result(value):
                self._add_stage_result(host, value)  # fabric, workload, cluster-wide checks

    def _error(self, host, task, message, component=None):
        self._note_node(host)
        self._checks.append({"stage": _stage_of(task), "node": host, "check": "run", "status": "error",
                             "message": message, "metrics": {}, "component": component})

    def v2_runner_on_unreachable(self, result):
        lines = str(result._result.get("msg") or "no answer").strip().splitlines() or ["no answer"]
        self._error(result._host.get_name(), result._task,
                    "%s is unreachable: %s" % (result._host.get_name(), lines[-1]), component="transport")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        # A task named "Verdict: ..." fails on purpose to set the exit code: not a new problem.
        if ignore_errors or str(result._task.name or "").startswith(VERDICT_TASK_PREFIX):
            return
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
            _results.write_atomic(os.path.join(self._run_dir, "results.invalid.json"),
                                  json.dumps(document, indent=1, sort_keys=True, default=str))
            self._warn_once("results.json would not be valid, kept as results.invalid.json: %s"
                            % "; ".join(problems[:5]))
            return None
        _results.write_atomic(os.path.join(self._run_dir, "results.json"), _results.dumps(document))
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
        _results.write_atomic(path, json.dumps(known, indent=1, sort_keys=True) + "\n")

    def v2_playbook_on_stats(self, stats):
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
            _results.write_atomic(os.path.join(run_dir, name), text)
        try:
            self._update_last_pass(document)
        except (IOError, OSError) as exc:
            self._warn_once("could not update %s: %s" % (LAST_PASS, exc))
        _results.write_atomic(os.path.join(run_dir, COMPLETE), json.dumps(
            {"run_id": document["run"]["id"], "finished": document["run"].get("finished"),
             "verdict": document["verdict"]["status"]}, indent=2) + "\n")
        try:
            os.unlink(os.path.join(run_dir, INCOMPLETE))
        except OSError:
            pass
        for line in _report.summary_lines(document, run_dir):
            self._display.display(line)
