# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kill what a module launched when the playbook that asked for it is gone.

A module that starts long-running process groups (the fabric stage's srun/mpirun runs) outlives
a killed ansible-playbook: its worker and the module keep waiting for timeouts of many minutes.
Guard watches the module's ancestors up to ansible-playbook (the Ansible worker, ansible-playbook;
not what started it, which may end while the playbook goes on) and, when any of them is gone or a
zombie, kills every process group registered with it and
exits, so that no launcher is left running after a killed run. Linux /proc; elsewhere it
watches nothing. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import signal
import threading
import time

_LIMIT = 8


def _stat(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    # "pid (comm) state ppid ...": the command name may hold spaces and parentheses.
    fields = text.rsplit(")", 1)[-1].split()
    return fields if len(fields) >= 2 else None


def alive(pid):
    """True while pid exists and is not a zombie (an unreaped process still answers kill -0)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def ancestors(pid=None, limit=_LIMIT):
    """The pids above pid (default: this process), nearest first, up to but not including pid 1."""
    found = []
    pid = os.getpid() if pid is None else pid
    while len(found) < limit:
        fields = _stat(pid)
        if not fields:
            break
        try:
            pid = int(fields[1])
        except ValueError:
            break
        if pid <= 1:
            break
        found.append(pid)
    return found


def children(pid=None):
    """The pids whose parent is pid (default: this process)."""
    pid = os.getpid() if pid is None else pid
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields and fields[1] == str(pid) and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def kill_children(grace=2.0):
    """SIGTERM, then SIGKILL, this process's children (an ssh client, a local shell).

    Ending the ssh client ends the node's session: the collector there is hung up on and kills its
    tool's process group (and its watchdog does when the session's processes are gone).
    """
    terminate(children(), grace, os.kill)


def terminate(pids, grace, send):
    """send(pid, SIGTERM) to each, wait up to grace seconds for them to go, then SIGKILL the rest.

    send is os.kill for processes, os.killpg for process groups (a group's id is its leader's).
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                send(pid, sig)
            except OSError:
                pass
        deadline = time.time() + grace
        while sig == signal.SIGTERM and time.time() < deadline and any(alive(p) for p in pids):
            time.sleep(0.05)
        if send is os.kill:  # (a group can outlive its leader: groups get the SIGKILL regardless)
            pids = [p for p in pids if alive(p)]
            if not pids:
                break


# The Ansible programs whose end means nobody reads a worker's or module's result.
ANSIBLE_PROGRAMS = ("ansible-playbook", "ansible", "ansible-console", "ansible-pull")


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except (IOError, OSError):
        return []


def is_ansible_program(pid):
    """True when pid runs an Ansible command-line program (directly or through its interpreter)."""
    return any(os.path.basename(arg) in ANSIBLE_PROGRAMS for arg in _cmdline(pid)[:2])


def watched_ancestors(pid=None, limit=_LIMIT):
    """The ancestors whose end leaves nobody to read this process's result: up to and including the
    nearest Ansible program (the worker's ansible-playbook), or the parent alone when none is above.

    Not further: what started ansible-playbook (a login shell that ran it in the background, cron,
    a CI job's wrapper) may end while the playbook runs on; a worker that exited then would leave
    the playbook waiting for its result for ever.
    """
    found = ancestors(pid, limit)
    for index, ancestor in enumerate(found):
        if is_ansible_program(ancestor):
            return found[:index + 1]
    return found[:1]


class Guard(object):
    """A daemon thread that kills the registered process groups once an ancestor is gone."""

    def __init__(self, interval=1.0, grace=5.0, on_gone=None):
        self.watched = watched_ancestors()
        self.groups = set()
        self.interval = interval
        self.grace = grace
        self.on_gone = on_gone
        self._lock = threading.Lock()
        self._thread = None

    def add(self, pgid):
        with self._lock:
            self.groups.add(pgid)

    def discard(self, pgid):
        with self._lock:
            self.groups.discard(pgid)

    def start(self):
        if os.getppid() == 1 and os.getpid() != 1:
            # Already orphaned: whoever started this is gone and will read nothing.
            self.kill_all()
            os._exit(143)
        if self.watched and self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="gpucluster-guard")
            self._thread.daemon = True
            self._thread.start()
        return self

    def kill_all(self):
        with self._lock:
            groups = sorted(self.groups)
        terminate(groups, self.grace, os.killpg)

    def _watch(self):
        while True:
            if not all(alive(pid) for pid in self.watched):
                self.kill_all()
                if self.on_gone is not None:
                    self.on_gone()
                os._exit(143)  # nobody is left to read this module's result
            time.sleep(self.interval)
