# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio's JSON output (``--output-format=json``, fio 3.x): per job its error and what it moved.

parse_fio(document) takes the decoded document (a dict) or fio's stdout as text: fio prints
messages such as "fio: ENOSPC on laying out file, stopping" before the JSON on stdout, so the
text is decoded from its first line that starts with "{". It returns

    {"version": "fio-3.33", "jobs": [job, ...], "errors": [what could not be read]}

where each job is {"name", "error" (fio's errno, 0 = none), "runtime_s" (job_runtime),
"read": side, "write": side} and each side that moved data is {"bytes" (io_bytes),
"bw_bytes" (bytes/s), "mb_s" (10^6 bytes/s), "iops", "runtime_s", "clat_p99_ms",
"clat_mean_ms"}; a side with no bytes is None. Keys fio did not print are None, never invented.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import is_number

P99 = "99.000000"


def _decode(text):
    """(document, error) from fio's stdout: the JSON starts at the first line beginning with '{'."""
    text = str(text or "")
    start = 0 if text.lstrip().startswith("{") else text.find("\n{")
    if start < 0:
        return None, "no JSON document in fio's output (%s)" % (text.strip().splitlines() or ["empty"])[0][:160]
    try:
        document, _end = json.JSONDecoder().raw_decode(text[start:].lstrip())
    except ValueError as exc:
        return None, "fio's JSON cannot be read: %s" % exc
    return document, None


def _number(value):
    return value if is_number(value) else None


def _side(data):
    if not isinstance(data, dict):
        return None
    moved = _number(data.get("io_bytes"))
    if not moved:
        return None
    bw_bytes = _number(data.get("bw_bytes"))
    runtime_ms = _number(data.get("runtime"))
    clat = data.get("clat_ns") if isinstance(data.get("clat_ns"), dict) else {}
    percentiles = clat.get("percentile") if isinstance(clat.get("percentile"), dict) else {}
    p99 = _number(percentiles.get(P99))
    mean = _number(clat.get("mean"))
    return {"bytes": moved, "bw_bytes": bw_bytes, "mb_s": bw_bytes / 1e6 if bw_bytes is not None else None,
            "iops": _number(data.get("iops")), "runtime_s": runtime_ms / 1000.0 if runtime_ms is not None else None,
            "clat_p99_ms": p99 / 1e6 if p99 is not None else None,
            "clat_mean_ms": mean / 1e6 if mean is not None else None}


def parse_fio(document):
    """The jobs of one fio run (see the module docstring); never raises on bad input."""
    out = {"version": None, "jobs": [], "errors": []}
    if not isinstance(document, dict):
        document, error = _decode(document)
        if error:
            out["errors"].append(error)
            return out
        if not isinstance(document, dict):
            out["errors"].append("fio's JSON is not an object")
            return out
    out["version"] = document.get("fio version")
    jobs = document.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        out["errors"].append("fio's JSON has no jobs")
        return out
    for index, job in enumerate(jobs):
        if not isinstance(job, dict):
            out["errors"].append("jobs[%d] is not an object" % index)
            continue
        runtime = _number(job.get("job_runtime"))
        error = job.get("error")
        if not is_number(error):
            out["errors"].append("jobs[%d] has no error field" % index)
        out["jobs"].append({"name": str(job.get("jobname", "job%d" % index)),
                            "error": int(error) if is_number(error) else None,
                            "runtime_s": runtime / 1000.0 if runtime is not None else None,
                            "read": _side(job.get("read")), "write": _side(job.get("write"))})
    return out


def side_of(parsed, rw):
    """The first job's 'read' or 'write' side that moved data, with its job (None, None if none)."""
    for job in parsed.get("jobs") or []:
        side = job.get(rw)
        if side:
            return side, job
    return None, None
