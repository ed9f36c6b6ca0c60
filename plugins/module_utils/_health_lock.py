# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health check's cluster-wide lock and its append-only history, standard library only.

``exclusive_lock(path, timeout)`` takes an exclusive ``flock`` on a lock file (created if
missing), waiting at most ``timeout`` seconds; it raises ``LockTimeout`` naming the file and, when
it wrote one, the holder's pid. Every health-check run's "read our drains -> cap -> drain" step
runs under it, so concurrent runs see each other's drains and never exceed the cap in total.

``append_lines(path, lines)`` appends JSON lines to a history file: opened with ``O_APPEND``,
one ``write`` per line (so lines of concurrent writers never interleave or overwrite each other),
``fsync`` at the end, under an exclusive ``flock`` on the file itself. The file is never read,
rewritten or deduplicated: two identical entries are two lines.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import errno
import fcntl
import json
import os
import time
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits


class LockTimeout(Exception):
    """The lock was not free within the timeout."""


def _holder(path):
    try:
        with open(path) as handle:
            text = handle.read(64).strip()
    except (IOError, OSError):
        return ""
    return text if is_digits(text) else ""


@contextlib.contextmanager
def exclusive_lock(path, timeout, poll=0.05):
    """Hold an exclusive flock on ``path`` for the block; LockTimeout after ``timeout`` seconds."""
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(0.0, float(timeout))
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except (IOError, OSError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
            if time.monotonic() >= deadline:
                holder = _holder(path)
                raise LockTimeout(
                    "could not take the health-check drain lock %s within %s s: another health-check "
                    "run%s holds it (raise node_health_lock_timeout, or look for a hung run)"
                    % (path, timeout, " (pid %s)" % holder if holder else ""))
            time.sleep(poll)
        os.ftruncate(fd, 0)
        os.write(fd, ("%d\n" % os.getpid()).encode())
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def history_line(entry):
    """One JSON line (no newline inside: json.dumps escapes them) ending in a newline."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n"


def append_lines(path, entries, mode=0o644):
    """Append each entry as one JSON line with O_APPEND, one write each, then fsync; returns the count."""
    if not entries:
        return 0
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for entry in entries:
            data = history_line(entry).encode("utf-8")
            written = os.write(fd, data)
            if written != len(data):
                raise IOError("short write to %s (%d of %d bytes)" % (path, written, len(data)))
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(entries)
