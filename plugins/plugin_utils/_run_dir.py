# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's directory on disk: its own folder under the artifacts directory (never an earlier run's),
the INCOMPLETE mark while the run goes on and COMPLETE at its end, the raw tool outputs as they
arrive (raw/<node>/<tool>.txt), results.json once it is valid and the files drawn from it, and the
artifacts directory's last-pass.json.

Apart from the results callback (plugins/callback/acceptance_report.py), which decides when each
is written: here is only what is written where, every file atomically (_files.write_atomic).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os
import re
import socket
import uuid

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results, _resume

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# The marks' names: one definition, _resume's (which reads them to tell a killed run from a live one).
INCOMPLETE, COMPLETE = _resume.INCOMPLETE, _resume.COMPLETE
LAST_PASS = "last-pass.json"


def _safe(name):
    """A file-system-safe version of a node or tool name."""
    return _SAFE.sub("_", str(name)) or "_"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def default_run_id():
    """A run id when neither the option nor the playbook names one: the time and 6 random digits."""
    return "%s-%s" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"), uuid.uuid4().hex[:6])


def new_run_dir(root, run_id, run):
    """Make the run's own folder under root and mark it INCOMPLETE; its absolute path.

    run (the callback's run record) gets the folder's name as its id and, unless it has one, the
    start time; the mark names the process and host that write the run.
    """
    os.makedirs(root, exist_ok=True)
    candidate, n = os.path.join(root, _safe(run_id)), 1
    while True:  # never write into an earlier run's directory
        try:
            os.mkdir(candidate)
            break
        except FileExistsError:
            n += 1
            candidate = os.path.join(root, "%s.%d" % (_safe(run_id), n))
    run_dir = os.path.abspath(candidate)
    run["id"] = os.path.basename(candidate)
    run.setdefault("started", _now())
    _write_mark(run_dir, run)
    return run_dir


def _write_mark(run_dir, run):
    """INCOMPLETE: the run, its start and the process (pid, host) writing it now; a resume's times."""
    mark = {"run_id": run["id"], "started": run["started"], "pid": os.getpid(), "host": socket.gethostname(),
            "playbook": run.get("playbook")}
    if run.get("resumed"):
        mark["resumed"] = run["resumed"]
    write_atomic(os.path.join(run_dir, INCOMPLETE), json.dumps(mark, indent=2) + "\n")


def reopen_run_dir(directory, run):
    """A resumed run's own directory (_resume.check accepted it): run gets its id, first start and
    the resume times; the INCOMPLETE mark names the process that writes it now."""
    run_dir = os.path.abspath(directory)
    _resume.snapshot(run_dir)  # before this run writes results.json anew
    try:
        with open(os.path.join(run_dir, "results.json")) as handle:
            before = json.load(handle).get("run") or {}
    except (IOError, OSError, ValueError, AttributeError):
        before = {}
    run["id"] = os.path.basename(run_dir)
    run["started"] = before.get("started") or run.get("started") or _now()
    run["resumed"] = [str(t) for t in before.get("resumed") or []] + [_now()]
    _write_mark(run_dir, run)
    return run_dir


def write_raw(run_dir, owner, tools, index):
    """Each tool's output as raw/<owner>/<tool>.txt; index ({tool: entry}) gets each file's entry."""
    folder = os.path.join(run_dir, "raw", _safe(owner))
    os.makedirs(folder, exist_ok=True)
    for tool, record in sorted((tools or {}).items()):
        if not isinstance(record, dict):
            continue
        path = os.path.join(folder, _safe(tool) + ".txt")
        if record.get("output") is not None or not os.path.exists(path):
            write_atomic(path, record.get("output") or "")
        entry = {"path": os.path.relpath(path, run_dir)}
        for key in ("rc", "seconds", "complete", "command", "argv_digest"):
            if record.get(key) is not None:
                entry[key] = record[key]
        index[tool] = entry


def write_results(run_dir, document, warn):
    """Validate and write results.json; whether it was written (warn says why it was not)."""
    problems = _results.validate(document)
    if problems:
        # A document that breaks the contract is kept for the bug report, never as results.json.
        write_atomic(os.path.join(run_dir, "results.invalid.json"),
                     json.dumps(document, indent=1, sort_keys=True, default=str))
        warn("results.json would not be valid, kept as results.invalid.json: %s" % "; ".join(problems[:5]))
        return False
    write_atomic(os.path.join(run_dir, "results.json"), _results.dumps(document))
    return True


def write_reports(run_dir, document, warn):
    """junit.xml, report.html and metrics.prom, drawn from results.json as written.

    tools/render-report redraws them from it later: a drawing problem is a warning through warn,
    never a lost run.
    """
    # Imported here, when a run ends: loading the callback does not load the page and metrics renderers.
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import (  # pylint: disable=import-outside-toplevel
        _html_report, _prometheus)
    for name, render, args in (("junit.xml", _report.junit_xml, (document,)),
                               ("report.html", _html_report.render_html, (document, run_dir)),
                               ("metrics.prom", _prometheus.render_textfile, (document,))):
        try:
            text = render(*args)
        except Exception as exc:  # pylint: disable=broad-except
            warn("could not write %s: %s: %s" % (name, type(exc).__name__, exc))
            continue
        write_atomic(os.path.join(run_dir, name), text)


def update_last_pass(artifacts_dir, document):
    """<artifacts_dir>/last-pass.json: per node and stage, when it last passed (not for replays)."""
    if document["run"].get("replay_of"):
        return
    path = os.path.join(artifacts_dir, LAST_PASS)
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


def mark_complete(run_dir, document):
    """COMPLETE (the run's id, end and verdict) replaces the INCOMPLETE mark."""
    write_atomic(os.path.join(run_dir, COMPLETE), json.dumps(
        {"run_id": document["run"]["id"], "finished": document["run"].get("finished"),
         "verdict": document["verdict"]["status"]}, indent=2) + "\n")
    try:
        os.unlink(os.path.join(run_dir, INCOMPLETE))
    except OSError:
        pass
