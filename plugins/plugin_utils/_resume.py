# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resuming an interrupted run in its own directory (``-e acceptance_resume=artifacts/<run-id>``).

Controller side only. A run directory is written by one ansible-playbook at a time: the results
callback holds an exclusive ``flock`` on ``<run>/.lock`` for the whole run (the kernel lets go when
the process and the workers it forked are gone, SIGKILL included), so a directory some live run
writes is refused, never shared; where the file system cannot lock, the INCOMPLETE mark's pid on
this host stands in (``Unlockable``).

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
import hashlib
import json
import os
import socket

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None

LOCK = ".lock"
RESUME = "resume.json"
COMPLETE = "COMPLETE"
INCOMPLETE = "INCOMPLETE"


class Unlockable(object):
    """What hold_lock gives where the file system has no flock (ENOLCK, ENOSYS: NFS without lockd,
    Lustre without -o flock) or the lock file cannot be made: no lock; is_locked falls back to the
    INCOMPLETE mark's pid on this host."""

    def __init__(self, reason):
        self.reason = reason

    def close(self):
        """Nothing to let go."""


def hold_lock(run_dir):
    """An open file holding the run directory's exclusive lock; None when another process holds it;
    an Unlockable where this file system cannot lock."""
    try:
        handle = open(os.path.join(run_dir, LOCK), "a")
    except (IOError, OSError) as exc:
        return Unlockable("%s: %s" % (LOCK, exc.strerror or exc))
    if fcntl is None:
        return Unlockable("no fcntl on this platform")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (IOError, OSError) as exc:
        handle.close()
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return None
        return Unlockable("flock: %s" % (exc.strerror or exc))
    return handle


def _writer_alive(run_dir):
    """Without locks: whether the INCOMPLETE mark names a live process of this host."""
    mark = _mark(run_dir, INCOMPLETE) or {}
    pid = mark.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or mark.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return pid != os.getpid()


def is_locked(run_dir):
    """Whether a live process writes the run directory: it holds the lock (tried without waiting,
    then let go), or, where locks do not work, the INCOMPLETE mark names a live process here."""
    if not os.path.exists(os.path.join(run_dir, LOCK)):
        return _writer_alive(run_dir)
    handle = hold_lock(run_dir)
    if handle is None:
        return True
    handle.close()
    return isinstance(handle, Unlockable) and _writer_alive(run_dir)


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


def check(directory, playbook=None, profile=None, targets=None, replay=None):
    """({run_id, complete, verdict, started}, [problem]) for resuming ``directory``."""
    directory = os.path.abspath(directory or "")
    if replay:
        return {}, ["a replay (acceptance_replay_dir) cannot resume a run: re-judge %s with acceptance_replay_dir "
                    "alone, or resume it without one" % directory]
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


def argv_digest(tool):
    """A collect tool's command line and timeout as a short digest (recorded in the raw index)."""
    text = json.dumps([[str(a) for a in tool.get("argv") or []], str(tool.get("timeout")), str(tool.get("pause_before"))])
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def _judged_in(document):
    """{node: {stage: [tools]}} of a results.json: each per-node stage whose checks hold no error
    (an error, of a tool, the transport or Slurm, is run again: the operator may have fixed it),
    with every tool output of the node recorded complete."""
    raw = document.get("raw") or {}
    out, errored = {}, set()
    for record in document.get("checks") or []:
        if not isinstance(record, dict):
            continue
        node, stage = record.get("node"), record.get("stage")
        if not node or not stage or str(node).startswith("_") or not isinstance(raw.get(node), dict):
            continue
        if record.get("status") == "error":
            errored.add((node, stage))
            continue
        # (an empty list still says "judged, nothing complete": it replaces an earlier snapshot's)
        out.setdefault(node, {})[stage] = sorted(t for t, entry in raw[node].items() if isinstance(entry, dict)
                                                 and entry.get("complete", True) is not False)
    for node, stage in errored:
        (out.get(node) or {}).pop(stage, None)
    return out


def _merged(base, found):
    """The earlier snapshot's stages, each replaced by what the newer results say of it."""
    out = dict((node, dict(stages)) for node, stages in (base or {}).items() if isinstance(stages, dict))
    for node, stages in found.items():
        for stage, tools in stages.items():
            out.setdefault(node, {})[stage] = sorted(tools)
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


def resumable(resume_state, directory, node, stage, tools):
    """Whether ``stage`` of ``node`` is judged again from the interrupted run's outputs: it judged
    it without error, every tool this stage runs now has its output file there, and each ran with
    the same command line and timeout (a level-1 DCGM diag never counts for level 3)."""
    judged_stages, raw = resume_state
    have = set((judged_stages.get(node) or {}).get(stage) or ())
    names = [str(t.get("name")) for t in tools if isinstance(t, dict)]
    if not have or not set(names) <= have:
        return False
    index = raw.get(node) or {}
    for tool in tools:
        entry = index.get(str(tool.get("name"))) or {}
        if entry.get("argv_digest") is not None and entry["argv_digest"] != argv_digest(tool):
            return False
        path = os.path.join(directory, entry.get("path") or os.path.join("raw", node, "%s.txt" % tool.get("name")))
        if not os.path.isfile(path):
            return False
    return True
