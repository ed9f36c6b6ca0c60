# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one atomic write, and whether a folder can hold a run's files. Standard library only."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import tempfile


def directory_problem(path):
    """None when ``path`` is (or can be made) a directory this process writes in; else why not."""
    try:
        os.makedirs(path, exist_ok=True)
    except (IOError, OSError) as exc:
        return "%s cannot be a directory for the run's files: %s" % (path, exc.strerror or exc)
    if not os.access(path, os.W_OK | os.X_OK):
        return "%s is not writable" % path
    return None


def write_atomic(path, text, mode=0o644):
    """Write text (or bytes) to path through a temporary file in the same folder, fsync, rename,
    and fsync the folder: a reader sees the old file or the new one, and a crash leaves one of
    them. The folder is made when missing. The temporary name is unique per call (threads of one
    process may write the same path)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    handle, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8") if not isinstance(text, bytes) else text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself survives a crash once the folder is synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def stage_captured(run_dir, stage):
    """True when a run directory holds outputs of a controller-side stage (raw/_<stage>/, or
    raw._<stage> in its results.json): what a replay can read back."""
    folder = os.path.join(run_dir, "raw", "_" + stage)
    if os.path.isdir(folder) and os.listdir(folder):
        return True
    try:
        with open(os.path.join(run_dir, "results.json")) as handle:
            return bool((json.load(handle).get("raw") or {}).get("_" + stage))
    except (IOError, OSError, ValueError, AttributeError):
        return False
