# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The console's progress while a run goes on: one line per node as it finishes a stage
(node_line) and, while a stage runs long, a heartbeat line every interval (Heartbeat).

Apart from the results callback (plugins/callback/acceptance_report.py), which only calls them from
its events: what a line says, and the heartbeat's thread and clock, are tested without a playbook
(test_progress.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import threading
import time

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD, ERROR, worst

# The heartbeat of a play under the free strategy (acceptance.yml's pipelined per-node stages).
PIPELINE_LABEL = "per-node stages, each node at its own pace"
LINE_MAX = 160


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
