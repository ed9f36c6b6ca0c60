# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the SDC probe's output (roles/check_sdc/files/gpucluster_sdc_probe.py, JSON lines).

parse_sdc_probe(text) -> {header, results, samples, probe_errors, done, errors}:
- header        the probe's header record (versions, device, deterministic settings, GPUs), or None
- results       one per GPU and workload: gpu, bus_id, workload, iterations, checksums
                {hex: [count, first iteration, last iteration]}, other (results beyond the distinct
                checksums kept), reference {max_rel_err, k, sampled}, device_seconds, tflops
- samples       {gpu index: nvidia-smi summary during the run}
- probe_errors  what the probe itself reported (out of memory, a CUDA error, a failed sample)
- done          the last record, or None when the probe did not finish
- errors        record lines that could not be read (a cut line, a record missing its fields):
                reported beside the records read from the rest, never instead of them
- other         lines that are no record at all (a library's warning on stderr, a shell prompt):
                kept for the judge to show, not taken for results
Pure function: no I/O.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import probe_records
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

_HEX = re.compile(r"^[0-9a-f]{32}$")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _result_problem(rec):
    """Why a result record cannot be used (None when it can)."""
    if not _count(rec.get("gpu")):
        return "result without a GPU index"
    if not isinstance(rec.get("workload"), str) or not rec["workload"]:
        return "result without a workload name"
    if not _count(rec.get("iterations")):
        return "result without an iteration count"
    checksums = rec.get("checksums")
    if not isinstance(checksums, dict):
        return "result without checksums"
    total = 0
    for key, value in checksums.items():
        if not _HEX.match(str(key)) or not isinstance(value, list) or len(value) != 3 \
                or not all(_count(v) for v in value):
            return "checksum entry %r is not [count, first, last]" % (key,)
        total += value[0]
    other = rec.get("other", 0)
    if not _count(other):
        return "'other' is not a count"
    if total + other != rec["iterations"]:
        return "checksum counts (%d) do not add up to the %d iterations" % (total + other, rec["iterations"])
    if "tflops" in rec and not (_number(rec["tflops"]) and rec["tflops"] >= 0):
        return "tflops %r is not a number >= 0" % (rec["tflops"],)
    reference = rec.get("reference")
    if reference is not None and not isinstance(reference, dict):
        return "reference is not an object"
    return None


@capped(32)
def parse_sdc_probe(text):
    out = {"header": None, "results": [], "samples": {}, "probe_errors": [], "done": None, "errors": [],
           "other": []}
    if text is None:
        return out
    seen = set()
    for number, rec in probe_records(text, out):
        kind = rec["record"]
        if kind == "header":
            if out["header"] is not None:
                out["errors"].append("line %d: a second header (two probe runs in one output)" % number)
                continue
            out["header"] = rec
        elif kind == "result":
            problem = _result_problem(rec)
            key = (rec.get("gpu"), rec.get("workload"))
            if problem is None and key in seen:
                problem = "GPU %s %s reported twice" % key
            if problem:
                out["errors"].append("line %d: %s" % (number, problem))
                continue
            seen.add(key)
            out["results"].append(rec)
        elif kind == "samples":
            if _count(rec.get("gpu")):
                out["samples"][rec["gpu"]] = rec
            else:
                out["errors"].append("line %d: samples without a GPU index" % number)
        elif kind == "error":
            out["probe_errors"].append(str(rec.get("message") or "(no message)")[:400])
        elif kind == "done":
            out["done"] = rec
        else:
            out["errors"].append("line %d: unknown record %r" % (number, kind[:40]))
    if out["done"] is not None and out["header"] is None:
        out["errors"].append("the output has no header record (versions, device, GPUs)")
    return out


def dominant(checksums):
    """The checksum most of a GPU's iterations gave (ties: the earliest seen), and its count."""
    best = None
    for key, (count, first, _last) in sorted(checksums.items()):
        if best is None or count > best[1] or (count == best[1] and first < best[2]):
            best = (key, count, first)
    return (best[0], best[1]) if best else (None, 0)
