# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results.json, the one results contract: build it, validate it, write it.

The results callback assembles a run's checks, raw-output index and stage documents into one
document (build_document), validates it against schemas/results.schema.json (JSON Schema draft
2020-12) and writes it atomically. Every other artifact — junit.xml, report.html, metrics.prom,
the console summary, the playbook's final message — is rendered from that validated document and
nothing else, so they cannot disagree.

Numbers: JSON has no NaN or Infinity. A non-finite number that reaches the builder (a judge bug)
is written as null and named in run.warnings; the writer refuses any that remain.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import STATUSES
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._schema_compiled import UnsupportedSchema, compile_schema

SCHEMA_ID = "gpucluster.acceptance/results/2"
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                           "schemas", "results.schema.json")
_MAX_REPORTED = 20

try:
    import jsonschema
    HAS_JSONSCHEMA = True
except ImportError:  # the callback says so once; it never writes an unvalidated document
    jsonschema = None
    HAS_JSONSCHEMA = False

_VALIDATOR = []
_COMPILED = []


def _validator():
    if not _VALIDATOR:
        with open(SCHEMA_PATH) as handle:
            schema = json.load(handle)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATOR.append(cls(schema))
    return _VALIDATOR[0]


def _compiled():
    """The schema as plain predicates (_schema_compiled), or None where it cannot be compiled."""
    if not _COMPILED:
        with open(SCHEMA_PATH) as handle:
            schema = json.load(handle)
        try:
            _COMPILED.append(compile_schema(schema))
        except UnsupportedSchema:
            _COMPILED.append(None)  # jsonschema alone, as before
    return _COMPILED[0]


def _finite_problems(value, path, found):
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        found.append(path or "/")
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite_problems(item, "%s/%s" % (path, key), found)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _finite_problems(item, "%s/%d" % (path, i), found)
    return found


def validate(document):
    """[] when the document is a valid results.json, else sentences naming each problem."""
    if not HAS_JSONSCHEMA:
        return ["the jsonschema library is not installed: results.json cannot be validated"]
    problems = ["%s: not a finite number (NaN or Infinity)" % p for p in _finite_problems(document, "", [])]
    fast = _compiled()
    if not problems and fast is not None and fast(document):
        return []  # valid; jsonschema names the problems of a document that is not
    for error in sorted(_validator().iter_errors(document), key=lambda e: list(e.absolute_path))[:_MAX_REPORTED]:
        where = "/".join(str(p) for p in error.absolute_path) or "(document)"
        problems.append("%s: %s" % (where, error.message[:300]))
    return problems[:_MAX_REPORTED]


def finite(value, path="", replaced=None):
    """A copy of value with every NaN/Infinity replaced by None (their paths appended to replaced)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        if replaced is not None:
            replaced.append(path or "/")
        return None
    if isinstance(value, dict):
        return dict((str(k), finite(v, "%s/%s" % (path, k), replaced)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [finite(v, "%s/%d" % (path, i), replaced) for i, v in enumerate(value)]
    return value


_CHECK_KEYS = ("stage", "node", "check", "status", "message", "component", "evidence", "metrics",
               "seconds", "raw", "tool", "detail")
# A pass keeps the lines that prove it, not the whole table it read: results.json must stay linear
# and small at thousands of nodes (the raw outputs are referenced, never copied); a failure keeps
# all its evidence lines (_judge_common.EVIDENCE_LINES).
PASS_EVIDENCE_LINES = 1
PASS_EVIDENCE_WIDTH = 60
# Significant digits kept of a metric (a MAD of 1.947499999999991 is 1.9475).
DIGITS = 6


def _check_record(check):
    """A check as results.json keeps it: the contract's keys only, empty optional ones left out."""
    record = {}
    for key in _CHECK_KEYS:
        value = check.get(key)
        if key in ("stage", "node", "check", "status", "message"):
            record[key] = value if key == "node" or value is not None else ""
        elif key == "component":
            if value is not None:   # absent: the check is about the node (or cluster) as a whole
                record[key] = str(value)
        elif value not in (None, [], {}, ""):
            record[key] = value
    if record["status"] not in STATUSES:
        record["message"] = "%s (a judge returned the unknown status %r)" % (record["message"], record["status"])
        record["status"] = "error"
    record["message"] = str(record["message"])
    if record.get("tool") and record.get("raw") == [record["tool"]]:
        del record["tool"]   # said by raw already
    if record["status"] in ("pass", "skip"):
        if record.get("evidence"):
            record["evidence"] = [_cut(line, PASS_EVIDENCE_WIDTH) for line in record["evidence"][:PASS_EVIDENCE_LINES]
                                  if str(line).strip() not in record["message"]]   # not what the message quotes
            if not record["evidence"]:
                del record["evidence"]
        record.pop("detail", None)  # a pass's longer account repeats its message and evidence
    if record.get("metrics"):
        # None, [] and {} say nothing a reader needs; at 200,000 checks they are megabytes.
        record["metrics"] = dict((k, _rounded(v)) for k, v in record["metrics"].items() if v not in (None, [], {}))
        if not record["metrics"]:
            del record["metrics"]
    return record


def _rounded(value):
    if isinstance(value, float):
        return float("%.*g" % (DIGITS, value))
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return dict((k, _rounded(v)) for k, v in value.items())
    return value


def _cut(line, width):
    line = str(line)
    return line if len(line) <= width else line[:width - 3] + "..."


def _rank_rows(checks):
    """workload.ranks: one row per rank, from the workload judge's per-node summaries (their
    step-time rows) and its per-rank results (a flagged or warned rank, with its status)."""
    rows, status = {}, {}
    for check in checks:
        if check.get("stage") != "workload":
            continue
        metrics = check.get("metrics") or {}
        if check.get("check") == "workload.node":
            for row in metrics.get("ranks") or []:
                rank = row.get("rank") if isinstance(row, dict) else None
                if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 and rank not in rows:
                    rows[rank] = dict((k, v) for k, v in row.items() if v is not None)
                    rows[rank]["node"] = row.get("node") or check.get("node")
        elif check.get("check") == "workload.rank" and isinstance(metrics.get("rank"), int):
            status[metrics["rank"]] = (check.get("status"), bool(metrics.get("warning")))
    for rank, row in rows.items():
        found, warned = status.get(rank, ("pass", False))
        flagged = found in _run_state.BAD or warned or bool(row.get("flagged"))
        row.pop("flagged", None)
        if found != "pass":  # a pass, not flagged, is the default a reader assumes
            row["status"] = found
        if flagged:
            row["flagged"] = True
        for key, value in list(row.items()):
            if isinstance(value, float):
                row[key] = float("%.4g" % value)
    return [rows[r] for r in sorted(rows)]


def _curves(checks):
    """nccl.curves: the single-node busbw curve each node's judge kept ([[bytes, GB/s], ...])."""
    curves = {}
    for check in checks:
        if check.get("stage") == "nccl_single_node" and check.get("check") == "nccl.busbw" and check.get("node"):
            curve = (check.get("metrics") or {}).get("curve")
            if isinstance(curve, list) and curve:
                curves[check["node"]] = curve
    return curves


def raw_owner(document, check):
    """Whose raw outputs a check's raw keys name: the stage's controller folder, else its node."""
    owner = "_" + str(check.get("stage"))
    return owner if owner in (document.get("raw") or {}) else check.get("node")


def check_seconds(document, check):
    """The time the tool(s) behind a check took: its own seconds, else its raw outputs' (summed)."""
    if isinstance(check.get("seconds"), (int, float)):
        return check["seconds"]
    entries = (document.get("raw") or {}).get(raw_owner(document, check)) or {}
    found = [(entries.get(k) or {}).get("seconds") for k in check.get("raw") or []]
    found = [v for v in found if isinstance(v, (int, float))]
    return round(sum(found), 3) if found else None


def raw_path(owner, key, entry=None):
    """Where a raw output is, under the run directory: its entry's path, else raw/<owner>/<key>.txt."""
    path = (entry or {}).get("path")
    return path if path else "raw/%s/%s.txt" % (owner, key)


def _raw_index(raw):
    """The raw-output index without its defaults (exit status 0, complete, the usual path)."""
    index = {}
    for owner, tools in raw.items():
        entries = index[owner] = {}
        for tool, entry in (tools or {}).items():
            entry = dict(entry)
            if entry.get("path") == "raw/%s/%s.txt" % (owner, tool):
                del entry["path"]
            if entry.get("rc") == 0:
                del entry["rc"]
            if entry.get("complete") is True:
                del entry["complete"]
            if entry.get("seconds") is None:
                entry.pop("seconds", None)
            entries[tool] = entry
    return index


# Stage documents a results document carries: stage name -> key.
DOCUMENT_KEYS = {"fabric": "fabric", "rdma": "rdma", "workload": "workload", "baseline": "baseline", "data_transfer": "transfer",
                 "checkpoint_plan": "checkpoint_plan", "nvlink_domain": "nvlink_domains"}


def build_document(run, checks, targets=(), raw=None, documents=None, state="complete"):
    """The results.json document of a run.

    run: {id, playbook, started, finished, replay_of, profile}; checks: every check of the run
    (per-node ones annotated with stage and node, cluster-wide ones with node None); targets:
    every node the run targeted; raw: the raw-output index; documents: stage documents by name
    (fabric, workload, baseline); state: 'running' while the run goes on, 'complete' at its end.
    """
    replaced = []
    raw = _raw_index(finite(raw or {}, "/raw", replaced))
    records = [_check_record(c) for c in finite(list(checks), "/checks", replaced)]
    for record in records:
        # The tool's time lives once, in the raw index; a check says it only when it differs.
        if "seconds" in record and record.get("raw"):
            entries = raw.get("_" + record["stage"]) or raw.get(record["node"]) or {}
            known = [entries.get(k, {}).get("seconds") for k in record["raw"]]
            if known and all(isinstance(v, (int, float)) for v in known) and \
                    abs(sum(known) - record["seconds"]) < 0.0015:
                del record["seconds"]
    stages = []
    for record in records:
        if record["stage"] not in stages:
            stages.append(record["stage"])
    nodes = list(targets or ())
    verdict = _run_state.run_verdict(records, nodes)
    per_node, cluster = verdict.pop("nodes"), verdict.pop("cluster")
    if state != "complete" and verdict["status"] == "pass":
        # A run still going (or killed) has no verdict yet: what it found so far is no pass.
        verdict.update(status="fail", message="the run has not finished (state %s): no verdict yet; so far %s"
                       % (state, verdict["message"]))
    run_record = dict((k, v) for k, v in (run or {}).items()
                      if k in ("id", "playbook", "started", "finished", "replay_of", "resumed", "profile", "warnings"))
    run_record["state"] = state
    run_record["targets"] = sorted(set(str(n) for n in nodes))
    run_record.setdefault("started", "")
    run_record.setdefault("id", "run")
    document = {
        "schema": SCHEMA_ID,
        "run": run_record,
        "verdict": verdict,
        "nodes": per_node,
        "cluster": cluster,
        "stages": stages,
        "checks": records,
        "raw": raw,
    }
    for name, value in sorted((documents or {}).items()):
        key = DOCUMENT_KEYS.get(name)
        if key and isinstance(value, dict):
            document[key] = finite(value, "/" + key, replaced)
    ranks = _rank_rows(records)
    for record in records:  # the rows live once, in workload.ranks
        if record["check"] == "workload.node" and record["stage"] == "workload" and record.get("metrics"):
            record["metrics"].pop("ranks", None)
    if ranks:
        workload = dict(document.get("workload") or {})
        workload["ranks"] = ranks
        workload.setdefault("unit", "ms")
        document["workload"] = workload
    curves = _curves(records)
    for record in records:  # the curve lives once, in nccl.curves
        if record["check"] == "nccl.busbw" and record["stage"] == "nccl_single_node" and record.get("metrics"):
            record["metrics"].pop("curve", None)
    if curves:
        document["nccl"] = {"curves": curves}
    if replaced:
        warnings = list(run_record.get("warnings") or [])
        warnings.append("not finite numbers written as null: %s%s" % (
            ", ".join(replaced[:10]), " and %d more" % (len(replaced) - 10) if len(replaced) > 10 else ""))
        run_record["warnings"] = warnings
    return document


def dumps(document):
    """The document as compact JSON text (a line per check keeps it greppable and small)."""
    head = dict((k, v) for k, v in document.items() if k != "checks")
    text = json.dumps(head, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    checks = ",\n".join(json.dumps(c, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
                        for c in document.get("checks") or [])
    # "checks" is spliced in as the last key, one check per line.
    return "%s,\"checks\":[\n%s\n]}\n" % (text[:-1], checks) if head else "{\"checks\":[\n%s\n]}\n" % checks


def load(path):
    """(document, problems): a results.json read back and validated."""
    try:
        with open(path) as handle:
            document = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        return None, ["%s: cannot be read: %s" % (path, exc)]
    if not isinstance(document, dict) or document.get("schema") != SCHEMA_ID:
        return document, ["%s: not a %s document (schema %r)" % (
            path, SCHEMA_ID, document.get("schema") if isinstance(document, dict) else None)]
    return document, validate(document)
