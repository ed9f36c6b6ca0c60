# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lexical layer of Slurm's topology.conf: comments, escapes, continuation lines, Key=Value pairs.

Private to the collection. This follows Slurm's config parser (parse_config.c), which reads every
Slurm configuration file the same way before any key means anything:

* ``#`` starts a comment (``\\#`` is a literal ``#``); a line ending in an odd number of
  backslashes continues on the next line (joined with no space in between); a backslash escapes
  the next character.
* Each line is ``Key=Value`` pairs, values unquoted without whitespace or ``"quoted"``.

It is apart from _slurm_topology (which gives the keys their meaning: switches, blocks, rings)
because it knows nothing of topology: it turns text into numbered logical lines and pairs.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import lines_of

_PAIR = re.compile(r'\s*([A-Za-z0-9_.]+)\s*([-*+/]?)=\s*(?:"([^"]*)"|(\S+))(?=\s|$)')


def _strip_comment(line):
    """Cut at the first '#' not escaped by an odd run of backslashes."""
    backslashes = 0
    for index, char in enumerate(line):
        if char == "#" and backslashes % 2 == 0:
            return line[:index]
        backslashes = backslashes + 1 if char == "\\" else 0
    return line


def _unescape(line):
    out = []
    index = 0
    while index < len(line):
        if line[index] == "\\":
            index += 1
            if index >= len(line):
                break
        out.append(line[index])
        index += 1
    return "".join(out)


def _logical_lines(text, warnings):
    """[(first physical line number, text)] with comments cut and continuations joined."""
    logical = []
    pending = None
    start = None
    for number, raw in enumerate(lines_of(text), 1):
        line = _strip_comment(raw)
        trimmed = line.rstrip()
        backslashes = len(trimmed) - len(trimmed.rstrip("\\"))
        if start is None:
            start = number
            pending = ""
        if backslashes % 2 == 1:
            pending += trimmed[:-1]
            continue
        logical.append((start, _unescape(pending + line)))
        start = None
    if start is not None:
        warnings.append("line %d: the file ends in a continuation backslash" % start)
        logical.append((start, _unescape(pending)))
    return logical


def _pairs(line):
    """Key=Value pairs from the start of line, and whatever text follows them."""
    pairs = []
    pos = 0
    while True:
        match = _PAIR.match(line, pos)
        if not match:
            break
        value = match.group(3) if match.group(3) is not None else match.group(4)
        pairs.append((match.group(1), match.group(2), value))
        pos = match.end()
    return pairs, line[pos:].strip()
