# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a node's captured tool outputs (a past run's artifact directory, or a folder per node).

Shared by the replay lookup and the collect_stage action, so a replayed stage reads exactly
what a live one would have collected.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os


def _raw_root(directory):
    raw = os.path.join(directory, "raw")
    return raw if os.path.isdir(raw) else directory


def _index(directory):
    """Exit codes and durations recorded by an earlier run, when this is an artifact directory."""
    path = os.path.join(directory, "results.json")
    try:
        with open(path) as handle:
            return json.load(handle).get("raw") or {}
    except (IOError, OSError, ValueError, AttributeError):
        return {}


def read_node(directory, node, tools, index=None):
    """{tools: {name: {output, rc, seconds, complete}}, errors: [...], replay: True} for one node.

    A tool without a file is left out: the stage judges what was captured and says what it could
    not judge (a provider's logs rarely hold every tool). index: the raw index to read exit codes and
    times from ({node: {tool: entry}}; default the directory's results.json).
    """
    folder = os.path.join(_raw_root(directory), node)
    if not os.path.isdir(folder):
        return {"tools": {}, "replay": True, "errors": ["replay: no folder for %s under %s" % (node, directory)]}
    recorded = (_index(directory) if index is None else index).get(node) or {}
    found = {}
    for tool in tools:
        path = os.path.join(folder, tool + ".txt")
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as handle:
            output = handle.read()
        meta = recorded.get(tool) or {}
        found[tool] = {"output": output, "rc": meta.get("rc", 0), "seconds": meta.get("seconds"),
                       "complete": meta.get("complete", True)}
    return {"tools": found, "replay": True,
            "errors": [] if found else ["replay: none of %s under %s" % (", ".join(tools), folder)]}
