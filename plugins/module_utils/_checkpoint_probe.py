# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the checkpoint probe's JSON lines (roles/check_checkpoint/files/gpucluster_checkpoint_probe.py).

parse_checkpoint_probe(text) -> {
    "header":   the header record or None,
    "state":    the state-dict record (tensor and file bytes, expected sha256) or None,
    "saves":    {"local"|"shared": save record (write_s, read_s, MB/s, sha256_ok, ...)},
    "async":    the async record (release_s, copy_s, durable_s, sha256_ok) or None,
    "fio":      {"local"|"shared": fio record with "parsed" (module_utils._fio.parse_fio)},
    "done":     the done record or None (None: the probe did not finish),
    "probe_errors": the probe's own error records (phase, tool, path_kind, path, message),
    "errors":   unreadable lines, "other": lines that are no record (a library's warning)}
One bad line never costs the rest (module_utils._records.probe_records).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import probe_records
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fio import parse_fio
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import is_number
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

PATH_KINDS = ("local", "shared")
SAVE_KEYS = ("write_s", "read_s", "file_bytes")


def _save(rec, number, out):
    if rec.get("path_kind") not in PATH_KINDS:
        out["errors"].append("line %d: save record without a path kind (local or shared)" % number)
    elif not all(is_number(rec.get(k)) and rec[k] >= 0 for k in SAVE_KEYS):
        out["errors"].append("line %d: %s save record without %s" % (number, rec["path_kind"], ", ".join(SAVE_KEYS)))
    else:
        out["saves"][rec["path_kind"]] = rec


def _async(rec, number, out):
    if all(is_number(rec.get(k)) and rec[k] >= 0 for k in ("release_s", "durable_s", "file_bytes")):
        out["async"] = rec
    else:
        out["errors"].append("line %d: async record without release_s, durable_s, file_bytes" % number)


def _fio(rec, number, out):
    if rec.get("path_kind") not in PATH_KINDS:
        out["errors"].append("line %d: fio record without a path kind (local or shared)" % number)
        return
    rec = dict(rec)
    rec["parsed"] = parse_fio(rec.get("fio"))
    rec.pop("fio", None)  # the parsed jobs are what the judge reads; the raw output keeps the document
    out["fio"][rec["path_kind"]] = rec


@capped(32)
def parse_checkpoint_probe(text):
    out = {"header": None, "state": None, "saves": {}, "async": None, "fio": {}, "done": None,
           "probe_errors": [], "errors": [], "other": []}
    for number, rec in probe_records(text, out):
        kind = rec["record"]
        if kind == "header":
            out["header"] = rec
        elif kind == "measurement":
            what = rec.get("kind")
            if what == "state":
                out["state"] = rec
            elif what == "save":
                _save(rec, number, out)
            elif what == "async":
                _async(rec, number, out)
            elif what == "fio":
                _fio(rec, number, out)
            else:
                out["errors"].append("line %d: unknown measurement %s" % (number, str(what)[:40]))
        elif kind == "error":
            found = dict((k, rec.get(k)) for k in ("phase", "tool", "path_kind", "path"))
            found["message"] = str(rec.get("message"))[:400]
            out["probe_errors"].append(found)
        elif kind == "done":
            out["done"] = rec
        else:
            out["errors"].append("line %d: not a probe record (%s)" % (number, str(kind)[:40]))
    return out
