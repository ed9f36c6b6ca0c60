# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resuming an interrupted run in its own directory (``-e acceptance_resume=artifacts/<run-id>``).

Controller side only. A run directory is written by one ansible-playbook at a time: the results
callback holds an exclusive ``flock`` on ``<run>/.lock`` for the whole run (the kernel lets go when
the process dies, SIGKILL included), so a directory some live run writes is refused, never shared.

* ``check(directory, playbook, profile, targets)``: (info, problems) - whether the directory can be
  resumed by this playbook with this profile and these nodes, each difference named.
* ``judged(directory)``: {node: {stage: [tools]}} - the per-node stages the interrupted run judged
  (their checks are in its results.json, or in resume.json, kept by ``snapshot`` when a resume
  starts) and the node's complete tool outputs: a stage whose every tool is there is judged again
  from those outputs, the rest run.
* ``hold_lock(run_dir)`` / ``is_locked(run_dir)``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json
import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None

LOCK = ".lock"
RESUME = "resume.json"
COMPLETE = "COMPLETE"
INCOMPLETE = "INCOMPLETE"


def hold_lock(run_dir):
    """An open file holding the run directory's exclusive lock; None when another process holds it."""
    handle = open(os.path.join(run_dir, LOCK), "a")
    if fcntl is None:
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (IOError, OSError) as exc:
        handle.close()
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return None
        raise
    return handle


def is_locked(run_dir):
    """Whether a live process holds the run directory's lock (tried without waiting, then let go)."""
    if not os.path.exists(os.path.join(run_dir, LOCK)):
        return False
    handle = hold_lock(run_dir)
    if handle is None:
        return True
    handle.close()
    return False


def _mark(run_dir, name):
    try:
        with open(os.path.join(run_dir, name)) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def _document(directory):
    try:
        with open(os.path.join(directory, "results.json")) as handle:
            document = json.load(handle)
    except (IOError, OSError) as exc:
        return None, "%s has no results.json to resume from (%s): not a run directory, or killed before its " \
            "first stage ended" % (directory, exc.strerror or exc)
    except ValueError as exc:
        return None, "%s/results.json is not JSON (%s)" % (directory, exc)
    if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
        return None, "%s/results.json holds no run record" % directory
    return document, None


def _differences(run, playbook, profile, targets):
    problems = []
    if run.get("replay_of"):
        problems.append("it is a replay of %s, not a run of the nodes" % run["replay_of"])
    if playbook and run.get("playbook") and run["playbook"] != playbook:
        problems.append("it was made by %s, not %s" % (run["playbook"], playbook))
    if profile and run.get("profile") and run["profile"] != profile:
        problems.append("its profile is %s, not %s" % (run["profile"], profile))
    before, now = set(run.get("targets") or []), set(targets or [])
    if targets is not None and before != now:
        gone, new = sorted(before - now), sorted(now - before)
        problems.append("its nodes differ: %s" % "; ".join(
            part for part in (("not in this inventory: %s" % ", ".join(gone[:10])) if gone else "",
                              ("not in the run: %s" % ", ".join(new[:10])) if new else "") if part))
    return problems


def check(directory, playbook=None, profile=None, targets=None):
    """({run_id, complete, verdict, started}, [problem]) for resuming ``directory``."""
    directory = os.path.abspath(directory or "")
    if not os.path.isdir(directory):
        return {}, ["%s is not a directory" % directory]
    if is_locked(directory):
        mark = _mark(directory, INCOMPLETE) or {}
        return {}, ["%s is being written by a live run (pid %s on %s): wait for it or stop it" % (
            directory, mark.get("pid", "?"), mark.get("host", "?"))]
    document, problem = _document(directory)
    if problem:
        return {}, [problem]
    run = document["run"]
    info = {"run_id": os.path.basename(directory), "started": run.get("started"), "directory": directory,
            "complete": os.path.exists(os.path.join(directory, COMPLETE)) or run.get("state") == "complete",
            "verdict": (document.get("verdict") or {}).get("status")}
    problems = ["%s cannot be resumed here: %s" % (directory, p) for p in _differences(run, playbook, profile, targets)]
    return info, problems


def _judged_in(document):
    """{node: {stage: [tools]}} of a results.json: each per-node stage with checks (a transport or
    scheduler error is no judgement), with every tool output of the node recorded complete."""
    raw = document.get("raw") or {}
    out = {}
    for record in document.get("checks") or []:
        if not isinstance(record, dict) or record.get("status") == "error" and record.get("component") in (
                "transport", "scheduler"):
            continue
        node, stage = record.get("node"), record.get("stage")
        if not node or not stage or str(node).startswith("_") or not isinstance(raw.get(node), dict):
            continue
        tools = sorted(t for t, entry in raw[node].items() if isinstance(entry, dict) and entry.get("complete", True)
                       is not False)
        if tools:
            out.setdefault(node, {})[stage] = tools
    return out


def _merged(base, found):
    out = dict((node, dict(stages)) for node, stages in (base or {}).items() if isinstance(stages, dict))
    for node, stages in found.items():
        for stage, tools in stages.items():
            out.setdefault(node, {})[stage] = sorted(set(out.get(node, {}).get(stage) or []) | set(tools))
    return out


def _base(directory):
    try:
        with open(os.path.join(directory, RESUME)) as handle:
            base = json.load(handle) or {}
        return base.get("judged") or {}, base.get("raw") or {}
    except (IOError, OSError, ValueError, AttributeError):
        return {}, {}


def judged(directory):
    """{node: {stage: [tools]}}: the per-node stages this run judged so far (in results.json, and in
    the snapshot of every earlier resume), each with the node's complete tool outputs on disk."""
    return state(directory)[0]


def state(directory):
    """(judged, raw index): judged() and each node's tool records (rc, seconds, complete), so a stage
    judged again reads the exit codes and times the interrupted run recorded."""
    document, problem = _document(directory)
    base_judged, base_raw = _base(directory)
    raw = dict((node, dict(tools)) for node, tools in base_raw.items() if isinstance(tools, dict))
    for node, tools in ((document or {}).get("raw") or {}).items():
        if isinstance(tools, dict):
            raw.setdefault(node, {}).update(tools)
    return _merged(base_judged, {} if problem else _judged_in(document)), raw


def snapshot(directory):
    """Keep what the run judged so far in <run>/resume.json before a resumed run writes results.json
    (which starts again from what it re-judges): a resume killed early resumes as much as before."""
    found, raw = state(directory)
    write_atomic(os.path.join(directory, RESUME), json.dumps({"judged": found, "raw": raw}, indent=1,
                                                             sort_keys=True) + "\n")


def resumable(judged_stages, node, stage, tools):
    """Whether ``stage`` of ``node`` is judged again from the interrupted run's outputs: it judged
    it, and every tool this stage runs now has its output there."""
    have = set((judged_stages.get(node) or {}).get(stage) or ())
    return bool(have) and set(tools) <= have
