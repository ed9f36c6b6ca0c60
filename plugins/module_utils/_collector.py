# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the one shell command that runs a stage's tools on a node (see gpucluster-collect.sh).

Every value that came from inventory — tool arguments, environment values — is quoted on its
own with shlex.quote; nothing is pasted into a shell string unquoted.

A tool argument or environment value may name the node it runs on as ``@node@`` (a per-node path,
for example): the same tool line then holds for every node, which the srun transport needs to run
a stage as one step. Over SSH the controller puts the inventory name in (node_token); under srun
the node does, with its Slurm name (the srun prelude in _srun.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import read_number

try:
    from shlex import quote
except ImportError:  # pragma: no cover - Python 2 fallback for very old nodes
    from pipes import quote

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# \Z, not $: "$" also matches before a final newline, which would reach the collector's markers
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]+\Z")
MARKERS = ("@tool", "@sleep")
# A week: no tool of a stage runs longer, and a bound keeps inf and 1e30 off the nodes.
MAX_SECONDS = 7 * 24 * 3600
NODE_TOKEN = "@node@"


def node_token(value, node):
    """value with every @node@ replaced by node (strings only; other values unchanged)."""
    return value.replace(NODE_TOKEN, node) if isinstance(value, str) else value


def _tool_args(tool):
    if not isinstance(tool, dict):
        raise ValueError("each tool must be a dict with name, timeout and argv, got %r" % (tool,))
    name, timeout, argv = tool.get("name"), tool.get("timeout"), tool.get("argv")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise ValueError("tool name %r must be letters, digits, '.', '_' or '-'" % (name,))
    timeout, why = read_number(timeout, 1, MAX_SECONDS, integer=True)
    if why:
        raise ValueError("tool %s: timeout %s: it must be a whole number of seconds from 1 to %d" % (name, why, MAX_SECONDS))
    if not isinstance(argv, (list, tuple)) or not argv:
        raise ValueError("tool %s: argv must be a non-empty list" % name)
    argv = [str(a) for a in argv]
    if any(a in MARKERS for a in argv):
        raise ValueError("tool %s: argv may not contain the collector's markers %s" % (name, MARKERS))
    args = ["@tool", name, str(timeout)] + argv
    if tool.get("pause_before"):
        # "inf" would leave the collector and its sleep on the node after the play ended
        pause, why = read_number(tool["pause_before"], 0, MAX_SECONDS)
        if why:
            raise ValueError("tool %s: pause_before %s: it must be a number of seconds from 0 to %d" % (name, why, MAX_SECONDS))
        args = ["@sleep", str(float(pause))] + args
    return args


def collector_argv(tools, script, environment=None, shell="bash", node=None):
    """The argv: env K=V ... bash -c SCRIPT gpucluster-collect @tool NAME T ARGV... .

    node: put this name in for @node@ (over SSH); None leaves the token for the node (srun).
    """
    env = []
    for key, value in sorted((environment or {}).items()):
        if not _ENV_NAME.match(str(key)):
            raise ValueError("environment variable name %r is not valid" % (key,))
        env.append("%s=%s" % (key, value))
    words = []
    for tool in tools or []:
        words.extend(_tool_args(tool))
    if not words:
        raise ValueError("no tools to run")
    parts = ["env"] + env + [shell, "-c", script, "gpucluster-collect"] + words
    if node is not None:
        parts = [node_token(p, node) for p in parts]
    return parts


def collector_command(tools, script, environment=None, shell="bash", node=None):
    """collector_argv as one command line, every word quoted on its own."""
    return " ".join(quote(p) for p in collector_argv(tools, script, environment, shell, node))
