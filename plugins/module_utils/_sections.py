# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Split the output of roles/collect/files/gpucluster-collect.sh into one record per tool."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

_BEGIN = re.compile(r"^==> gpucluster-begin (?P<name>\S+) <==$")
# Bounded numbers: an end marker with an odd rc or time (seconds=1.2.3, thousands of digits) is no
# end marker, so the tool reads as cut off (an error naming it), never a traceback of the task.
_END = re.compile(r"^==> gpucluster-end (?P<name>\S+) rc=(?P<rc>-?\d{1,6}) seconds=(?P<seconds>\d{1,12}(?:\.\d{1,9})?) <==$")

TIMEOUT_RCS = (124, 137)
NOT_FOUND_RC = 127


def _close(section, end_match):
    text = "\n".join(section["lines"])
    # The collector prints one newline before the end marker so it always starts a line.
    if text.endswith("\n"):
        text = text[:-1]
    return {
        "output": text,
        "rc": int(end_match.group("rc")) if end_match else None,
        "seconds": float(end_match.group("seconds")) if end_match else None,
        "complete": end_match is not None,
    }


@capped(64)
def parse_sections(text):
    """Return {'tools': {name: {output, rc, seconds, complete}}, 'errors': [...]}.

    A tool whose end marker is missing was cut off (the whole task hit its timeout, or the node
    went away): it is kept with complete=False and rc=None so the judge can say so.
    """
    tools, errors = {}, []
    current = None
    for line in text.splitlines():
        line = line.rstrip("\r")  # ssh with a tty turns newlines into CRLF
        begin = _BEGIN.match(line)
        end = _END.match(line)
        if begin:
            if current:
                tools[current["name"]] = _close(current, None)
            current = {"name": begin.group("name"), "lines": []}
        elif end and current and end.group("name") == current["name"]:
            tools[current["name"]] = _close(current, end)
            current = None
        elif current is not None:
            current["lines"].append(line)
    if current:
        tools[current["name"]] = _close(current, None)
    if not tools:
        errors.append("no tool output markers found: the collector did not run")
    return {"tools": tools, "errors": errors}


def describe_failure(name, record):
    """A sentence for a tool that did not produce usable output, or None when it ran normally."""
    if record is None:
        return "%s: no output collected" % name
    if not record.get("complete", True):
        return "%s: output cut off (the collection task timed out or the node went away)" % name
    rc = record.get("rc")
    if rc in TIMEOUT_RCS:
        return "%s: timed out after %.0f s and was killed" % (name, record.get("seconds") or 0)
    if rc == NOT_FOUND_RC:
        return "%s: not installed on the node (command not found)" % name
    return None
