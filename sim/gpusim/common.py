# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a fake tool run produces (stdout, stderr, exit status, which tool_times key to wait), and
the one atomic write of the fake tools' files."""
from __future__ import annotations

import os


def write_atomic(path, text, encoding="utf-8"):
    """Write ``text`` to ``path`` through a temporary file of this process and a rename: tools
    reading it concurrently see the old content or the new, never half of it."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w", encoding=encoding) as handle:
        handle.write(text)
    os.replace(tmp, path)


class Result:
    """Output of one fake tool run; ``time_key`` names the spec's tool_times entry to sleep first."""

    def __init__(self, out="", err="", code=0, time_key=None):
        self.out = out
        self.err = err
        self.code = code
        self.time_key = time_key
        self.extra_delay = 0.0  # this node's slow_tool seconds for time_key
        self.release_file = None  # ... or until this file exists
        self.live = None  # a tool that prints as it goes (perftest): run it instead of printing out

    def __repr__(self):
        return "Result(code=%r, out=%r..., err=%r)" % (self.code, self.out[:60], self.err[:60])
