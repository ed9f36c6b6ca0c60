# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mutable per-node state of a simulated cluster run (counters that rise between calls).

Kept in ``$GPUCLUSTER_SIM_RUN/gpusim/<node>.json``; every update holds an exclusive flock on
``<node>.lock`` and replaces the JSON file atomically (write to a temporary file, then rename), so
concurrent tool calls on one node never lose an increment or read a half-written file. Without a
run directory the state lives only for the one call (counters read as their first value).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile


class RunState:
    """Counters and remembered values of one node."""

    def __init__(self, run_dir, node):
        self.node = node
        self.dir = os.path.join(run_dir, "gpusim") if run_dir else None
        self._memory = {}

    @contextlib.contextmanager
    def _locked(self):
        if self.dir is None:
            yield self._memory
            return
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, "%s.json" % self.node)
        with open(os.path.join(self.dir, "%s.lock" % self.node), "a+", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    with open(path, encoding="utf-8") as handle:
                        data = json.load(handle)
                except (OSError, ValueError):
                    data = {}
                before = json.dumps(data, sort_keys=True)
                yield data
                if json.dumps(data, sort_keys=True) != before:
                    fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".%s." % self.node, suffix=".tmp")
                    try:
                        with os.fdopen(fd, "w", encoding="utf-8") as handle:
                            json.dump(data, handle, sort_keys=True)
                        os.replace(tmp, path)
                    except BaseException:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
                        raise
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def bump(self, key, by=1):
        """Add ``by`` to counter ``key``; return the new value (1 on the first call with by=1)."""
        with self._locked() as data:
            data[key] = int(data.get(key, 0)) + by
            return data[key]

    def remember(self, key, value):
        """Store ``value`` under ``key`` unless something is stored there already; return what is stored."""
        with self._locked() as data:
            if key not in data:
                data[key] = value
            return data[key]
