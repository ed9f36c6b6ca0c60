# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON-lines outputs of this collection's own probes, and atomic text writes.

probe_records(text, out) walks a probe's output (one JSON object with a "record" kind per line)
the way every probe parser must: blank lines skipped; a line that is no JSON object at all (a
library's warning on stderr, a shell prompt) goes to out["other"]; a line that starts like a
record but does not parse (cut by a kill) goes to out["errors"]; each record is yielded with its
line number, so the caller judges the rest — one bad line never costs the findings.
out["last_other"] keeps the last such line however many there were: a probe that died prints its
reason last (a traceback's exception line, the shell's "Segmentation fault").
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import directory_problem
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import names_problem
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import options_problem

MAX_LISTED = 20


def probe_records(text, out):
    """Yield (line number, record dict); fills out['other'] and out['errors'] (at most MAX_LISTED each)."""
    for number, line in enumerate(str(text or "").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if not line.startswith("{"):
            if len(out["other"]) < MAX_LISTED:
                out["other"].append("line %d: %s" % (number, line[:160]))
            out["last_other"] = "line %d: %s" % (number, line[:240])
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or not isinstance(rec.get("record"), str):
            if len(out["errors"]) < MAX_LISTED:
                out["errors"].append("line %d: not a probe record: %s" % (number, line[:120]))
            continue
        yield number, rec


def no_header_message(tool, parsed):
    """Why a probe printed no header record, in its own last words when it left any."""
    last = parsed.get("last_other")
    if last:
        return "%s printed no header record (it died before it started testing); its last output: %s" % (tool, last)
    return "%s printed no header record: nothing was tested" % tool


def door_problem(params, bounds, check_mode):
    """The first reason a module's node list, seconds and counts (``bounds``) or raw_dir cannot be
    used, named by option; None when all can. One check at the door for the modules that run a
    stage over nodes."""
    why = names_problem(params["nodes"])
    if why:
        return "nodes: %s" % why
    why = options_problem(params, bounds)
    if why:
        return why
    if params.get("raw_dir") and not check_mode:
        why = directory_problem(params["raw_dir"])
        if why:
            return "raw_dir: %s" % why
    return None
