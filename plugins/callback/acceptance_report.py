# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: acceptance_report
type: aggregate
short_description: Write JUnit XML, results.json and raw tool outputs for each acceptance run
version_added: 0.1.0
description:
  - Collects the check results the acceptance stages publish (the C(gpucluster_stage_result) fact),
    unreachable nodes and failed stage tasks, and writes them into a directory of its own per run,
    C(<artifacts_dir>/<run_id>/), never reusing an existing one.
  - C(junit.xml) has one testcase per stage, check and node, classname = stage, the judge's sentence
    as the failure message. C(results.json) has every check, per-node verdicts and the path of each
    raw tool output, which is kept under C(raw/<node>/<tool>.txt).
  - Prints a summary at the end of the run, the verdict and every bad node with stage and reason.
requirements:
  - junit-xml (python library)
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
    description: Name of this run's folder; by default a UTC timestamp and a random suffix.
    type: str
    env:
      - name: GPUCLUSTER_RUN_ID
author: gpucluster.acceptance maintainers (@gpucluster)
"""

import datetime
import json
import os
import re
import uuid

from ansible.plugins.callback import CallbackBase

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
VERDICT_TASK_PREFIX = "Verdict:"


def _safe(name):
    """A file-system-safe version of a node or tool name."""
    return _SAFE.sub("_", str(name)) or "_"


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
        self._nodes = []
        self._stage_order = []
        self._documents = {}
        self._run_dir = None
        self._run = {}

    # -- run directory --------------------------------------------------------------------
    def _ensure_run_dir(self):
        if self._run_dir:
            return self._run_dir
        root = self.get_option("artifacts_dir")
        run_id = self.get_option("run_id") or "%s-%s" % (
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
        return self._run_dir

    def _write_raw(self, node, tools):
        folder = os.path.join(self._ensure_run_dir(), "raw", _safe(node))
        os.makedirs(folder, exist_ok=True)
        index = self._raw.setdefault(node, {})
        for tool, record in sorted((tools or {}).items()):
            path = os.path.join(folder, _safe(tool) + ".txt")
            with open(path, "w") as handle:
                handle.write(record.get("output") or "")
            entry = {"path": os.path.relpath(path, self._run_dir)}
            entry.update((k, record.get(k)) for k in ("rc", "seconds", "complete"))
            index[tool] = entry

    # -- events ---------------------------------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        self._run["playbook"] = os.path.basename(playbook._file_name)
        self._run["started"] = datetime.datetime.now(datetime.timezone.utc).isoformat()

    def _note_node(self, node):
        if node and node not in self._nodes and node != "localhost":
            self._nodes.append(node)

    def _add_stage_result(self, host, stage_result):
        results = stage_result if isinstance(stage_result, list) else [stage_result]
        for item in results:
            if not isinstance(item, dict):
                continue
            stage = item.get("stage", "unknown")
            if stage not in self._stage_order:
                self._stage_order.append(stage)
            if item.get("document"):
                self._documents[stage] = item["document"]  # e.g. the fabric's matrix and rounds
            node = item.get("node")
            if node is None and "checks" in item and "node" not in item and host == "localhost":
                raw_owner = "_" + stage  # a cluster-wide stage: its raw outputs in raw/_<stage>/
            else:
                node = node or host
                raw_owner = node
                self._note_node(node)
            if item.get("raw"):
                self._write_raw(raw_owner, item["raw"])
            for check in item.get("checks") or []:
                record = dict(check)
                record.setdefault("stage", stage)
                record.setdefault("node", node)
                self._note_node(record["node"])
                raw_paths = [e["path"] for t, e in sorted(self._raw.get(raw_owner, {}).items())
                             if t in (item.get("raw") or {})]
                if raw_paths:
                    record.setdefault("raw", raw_paths)
                self._checks.append(record)

    def v2_runner_on_ok(self, result):
        host = result._host.get_name()
        facts = result._result.get("ansible_facts") or {}
        for name, value in sorted(facts.items()):
            if name == "collect_node_state":
                if isinstance(value, dict) and value.get("last"):
                    self._add_stage_result(host, value["last"])  # a per-node stage
            elif _is_stage_result(value):
                self._add_stage_result(host, value)  # fabric, workload, cluster-wide checks

    def _error(self, host, task, message):
        stage = _stage_of(task)
        if stage not in self._stage_order:
            self._stage_order.append(stage)
        self._note_node(host)
        self._checks.append({"stage": stage, "node": host, "check": "run", "status": "error",
                             "message": message, "metrics": {}, "component": None})

    def v2_runner_on_unreachable(self, result):
        lines = str(result._result.get("msg") or "no answer").strip().splitlines() or ["no answer"]
        self._error(result._host.get_name(), result._task,
                    "%s is unreachable: %s" % (result._host.get_name(), lines[-1]))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        # A task named "Verdict: ..." fails on purpose to set the exit code: not a new problem.
        if ignore_errors or str(result._task.name or "").startswith(VERDICT_TASK_PREFIX):
            return
        msg = str(result._result.get("msg") or result._result.get("stderr") or "failed").strip()
        self._error(result._host.get_name(), result._task,
                    "task '%s' failed: %s" % (result._task.get_name(), msg[:500]))

    def v2_playbook_on_stats(self, stats):
        if not self._checks and not self._nodes:
            return  # not an acceptance run: nothing to report
        if not _report.HAS_JUNIT_XML:
            self._display.warning("gpucluster.acceptance.acceptance_report needs the junit-xml library")
            return
        run_dir = self._ensure_run_dir()
        self._run["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
        document = _report.results_document(self._run, self._checks, self._nodes, self._raw)
        document.update(self._documents)
        with open(os.path.join(run_dir, "results.json"), "w") as handle:
            json.dump(document, handle, indent=2, sort_keys=True, default=str)
        with open(os.path.join(run_dir, "junit.xml"), "w", encoding="utf-8") as handle:
            handle.write(_report.junit_xml(self._checks, self._run["id"], self._stage_order))
        # The page and the metrics are drawn from results.json as written (tools/render-report redraws
        # them from it later); a drawing problem is a warning, never a lost run.
        from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import (  # pylint: disable=import-outside-toplevel
            _html_report, _prometheus)
        written = json.loads(json.dumps(document, default=str))
        for name, render, args in (("report.html", _html_report.render_html, (written, run_dir)),
                                   ("metrics.prom", _prometheus.render_textfile, (written,))):
            try:
                text = render(*args)
            except Exception as exc:  # pylint: disable=broad-except
                self._display.warning("gpucluster.acceptance.acceptance_report could not write %s: %s" % (name, exc))
                continue
            with open(os.path.join(run_dir, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        for line in _report.summary_lines(self._checks, self._nodes, run_dir):
            self._display.display(line)
