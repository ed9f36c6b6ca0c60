# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm accounting as failure history: sacct job records, sacctmgr node events, drain history.

Read (the commands playbooks/checkpoint_plan.yml runs; docs/checkpoint-plan.md):

    sacct -a -P -X -D --format=JobID,JobName,Partition,State,ExitCode,Submit,Start,End,ElapsedRaw,NNodes,NodeList
          -S <start> -E <end>
    sacctmgr -P -n list event start=<start> end=<end> format=NodeName,Start,End,State,Reason,User
    the node_health role's history log (JSON lines: time, node, action drain|resume|refused, reason)

sacct's first line names the fields, so the parser follows the header, not a fixed order. -D
keeps every run of a requeued job: a NODE_FAIL or REQUEUED record followed by a later run of the
same job is a restart, and its start minus the failure's end is the restart time R.

Job-killing failures, by kind:
- node_fail   the job ended NODE_FAIL (Slurm lost a node under it): always counted;
- requeue     a REQUEUED record whose end is within EVENT_SLACK_S of a node DOWN/FAIL event on one
              of its nodes (Slurm requeued it because a node died): counted;
- signal      FAILED/CANCELLED with a signal in ExitCode (e.g. 0:9, an NCCL watchdog abort);
- timeout     TIMEOUT (a hang that ran out its time limit);
- drain       the collection's own drains (node faults found between jobs).
signal, timeout and drain may be software or hardware: counted only when asked.

Parsers salvage: an unreadable line is an error beside the records, never instead of them.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

SACCT_FIELDS = ("JobID", "JobName", "Partition", "State", "ExitCode", "Submit", "Start", "End", "ElapsedRaw",
                "NNodes", "NodeList")
EVENT_FIELDS = ("NodeName", "Start", "End", "State", "Reason", "User")
KINDS = ("node_fail", "requeue", "signal", "timeout", "drain")
DEFAULT_COUNTED = ("node_fail", "requeue")
# A node event this close to a requeued record's end explains it (slurmctld logs both in the same second).
EVENT_SLACK_S = 120
# Words sacct and sacctmgr print when accounting is not there (rc != 0, or this on stderr/stdout).
NOT_CONFIGURED = ("accounting storage is disabled", "slurm accounting storage is disabled",
                  "not running a supported accounting_storage plugin", "unable to connect to slurmdbd",
                  "connection refused", "slurmdbd", "no such file or directory")

_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%SZ")


def parse_time(text):
    """A sacct/sacctmgr timestamp (local time, no zone) as a naive datetime; None for Unknown/None."""
    text = (text or "").strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    if is_digits(text):  # SLURM_TIME_FORMAT=%s in the caller's environment: epoch seconds
        return datetime.datetime.fromtimestamp(int(text))
    for fmt in _TIME_FORMATS:
        try:
            return datetime.datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def _exit_code(text):
    """'a:b' -> (exit status a, signal b); (None, None) when unreadable."""
    parts = (text or "").strip().split(":")
    if len(parts) == 2 and is_digits(parts[0]) and is_digits(parts[1]):
        return int(parts[0]), int(parts[1])
    return None, None


def _base_job_id(job_id):
    """The job a record belongs to: '123' for 123, 123.batch; arrays and het jobs keep their suffix."""
    return job_id.split(".", 1)[0]


@capped(16)
def parse_sacct(text):
    """sacct -P output (header first) -> {'records': [...], 'errors': [...], 'fields': [...]}.

    A record: {job, job_id, name, partition, state, state_detail, exit_status, signal, submit,
    start, end, elapsed_s, nodes, nodelist, node_names, line}. Step records (123.batch) are
    dropped: the allocation's record says how the job ended.
    """
    out = {"records": [], "errors": [], "fields": []}
    lines = [line for line in (text or "").splitlines() if line.strip()]
    header = None
    for number, line in enumerate(lines, 1):
        cells = line.split("|")
        if header is None:
            if "JobID" in cells and "State" in cells:
                header = cells
                out["fields"] = cells
                missing = [f for f in ("Start", "End", "NodeList") if f not in cells]
                if missing:
                    out["errors"].append("sacct header lacks %s: restarts and exposure cannot be read" % ", ".join(missing))
                continue
            out["errors"].append("line %d: before sacct's header: %s" % (number, line.strip()[:120]))
            continue
        if len(cells) != len(header):
            out["errors"].append("line %d: %d fields, the header has %d: %s" % (number, len(cells), len(header),
                                                                                line.strip()[:120]))
            continue
        row = dict(zip(header, cells))
        job_id = row.get("JobID", "").strip()
        if not job_id or "." in job_id:
            continue
        state_text = row.get("State", "").strip()
        state = state_text.split(" ", 1)[0].rstrip("+")
        exit_status, signal = _exit_code(row.get("ExitCode"))
        elapsed = row.get("ElapsedRaw", "").strip()
        nodes = row.get("NNodes", "").strip()
        nodelist = row.get("NodeList", "").strip()
        try:
            names = expand_hostlist(nodelist) if nodelist and nodelist not in ("None assigned", "(null)") else []
        except ValueError as exc:
            out["errors"].append("line %d: node list %r: %s" % (number, nodelist[:60], exc))
            names = []
        record = {"job": _base_job_id(job_id), "job_id": job_id, "name": row.get("JobName", ""),
                  "partition": row.get("Partition", "").strip(), "state": state, "state_detail": state_text,
                  "exit_status": exit_status, "signal": signal, "submit": parse_time(row.get("Submit")),
                  "start": parse_time(row.get("Start")), "end": parse_time(row.get("End")),
                  "elapsed_s": int(elapsed) if is_digits(elapsed) else None,
                  "nodes": int(nodes) if is_digits(nodes) else len(names), "nodelist": nodelist, "node_names": names,
                  "line": line.strip()}
        if record["elapsed_s"] is None and record["start"] and record["end"]:
            record["elapsed_s"] = max(0, int((record["end"] - record["start"]).total_seconds()))
        if state and not state.isupper():
            out["errors"].append("line %d: state %r is not a Slurm job state" % (number, state_text[:40]))
            continue
        out["records"].append(record)
    if header is None and lines:
        out["errors"].append("no sacct header (JobID|...|State|...) in %d line(s)" % len(lines))
    return out


@capped(16)
def parse_events(text):
    """sacctmgr -P -n list event (format NodeName,Start,End,State,Reason,User) -> {'events', 'errors'}.

    Cluster events (no node name) are left out. An event still open has end None.
    """
    out = {"events": [], "errors": []}
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        cells = line.split("|")
        if cells[:len(EVENT_FIELDS)] == list(EVENT_FIELDS):
            continue  # a header, when -n was not given
        if len(cells) < 4:
            out["errors"].append("event line %d: %d fields, want %d: %s" % (
                number, len(cells), len(EVENT_FIELDS), line.strip()[:120]))
            continue
        node, start, end, state = cells[0].strip(), parse_time(cells[1]), parse_time(cells[2]), cells[3].strip()
        if not node:
            continue
        if start is None:
            out["errors"].append("event line %d: no start time: %s" % (number, line.strip()[:120]))
            continue
        out["events"].append({"node": node, "start": start, "end": end, "state": state.upper(),
                              "reason": cells[4].strip() if len(cells) > 4 else "",
                              "user": cells[5].strip() if len(cells) > 5 else "", "line": line.strip()})
    return out


def parse_drain_history(text):
    """The node_health history log (JSON lines) -> {'entries': [{time, node, action, reason}], 'errors'}."""
    out = {"entries": [], "errors": []}
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            out["errors"].append("history line %d: not JSON: %s" % (number, line.strip()[:120]))
            continue
        when = parse_time(str(entry.get("time", ""))) if isinstance(entry, dict) else None
        if when is None or not entry.get("node") or entry.get("action") not in ("drain", "resume", "refused"):
            out["errors"].append("history line %d: needs time, node and action drain|resume|refused" % number)
            continue
        out["entries"].append({"time": when, "node": str(entry["node"]), "action": entry["action"],
                               "reason": str(entry.get("reason", ""))[:200]})
    return out


def _near_node_event(record, events):
    """The node DOWN/FAIL event on one of the record's nodes closest to its end (within the slack), or None."""
    if record["end"] is None:
        return None
    best, gap = None, None
    for event in events:
        if event["node"] in record["node_names"] and ("DOWN" in event["state"] or "FAIL" in event["state"]):
            distance = abs((event["start"] - record["end"]).total_seconds())
            if distance <= EVENT_SLACK_S and (gap is None or distance < gap):
                best, gap = event, distance  # the closest in time: a node may go down more than once
    return best


def classify(records, events=()):
    """Each record's failure kind (or None): the list of {kind, job, job_id, end, node, record}."""
    found = []
    for record in records:
        kind, node = None, None
        event = _near_node_event(record, events)
        if record["state"] == "NODE_FAIL":
            kind = "node_fail"
        elif record["state"] == "REQUEUED" and event is not None:
            kind = "requeue"
        elif record["state"] == "TIMEOUT":
            kind = "timeout"
        elif record["state"] in ("FAILED", "CANCELLED") and record["signal"]:
            kind = "signal"
        if kind is None:
            continue
        if event is not None:
            node = event["node"]
        found.append({"kind": kind, "job": record["job"], "job_id": record["job_id"], "end": record["end"],
                      "node": node, "nodes": record["nodes"], "state": record["state_detail"], "line": record["line"]})
    return found


def restarts(records):
    """Failure-to-restart times from requeue chains: [{job, failed_state, failed_end, restart_start, seconds}]."""
    chains = {}
    for record in records:
        chains.setdefault(record["job"], []).append(record)
    found = []
    for job, chain in sorted(chains.items()):
        chain = sorted(chain, key=lambda r: (r["start"] or r["submit"] or datetime.datetime.max))
        for before, after in zip(chain, chain[1:]):
            if before["state"] in ("NODE_FAIL", "REQUEUED") and before["end"] and after["start"]:
                seconds = (after["start"] - before["end"]).total_seconds()
                if seconds >= 0:
                    found.append({"job": job, "failed_state": before["state"], "failed_end": before["end"],
                                  "restart_start": after["start"], "seconds": seconds})
    return found


def exposure_node_s(records, partitions=()):
    """Node-seconds of job time (elapsed x nodes) over records that ran, in the given partitions (all: ())."""
    total = 0
    for record in records:
        if partitions and record["partition"] not in partitions:
            continue
        if record["elapsed_s"] and record["start"] is not None:
            total += record["elapsed_s"] * max(1, record["nodes"])
    return total


def down_intervals(events, history_entries, window_start, window_end):
    """Per node, the time it was out of service in the window: DOWN/DRAIN/FAIL events and drain..resume.

    Returns {node: [(start, end)]} with overlapping intervals merged; an open one ends at window_end.
    """
    spans = {}
    for event in events:
        if any(word in event["state"] for word in ("DOWN", "DRAIN", "FAIL")):
            spans.setdefault(event["node"], []).append((event["start"], event["end"] or window_end))
    open_drains = {}
    for entry in sorted(history_entries, key=lambda e: e["time"]):
        if entry["action"] == "drain":
            open_drains.setdefault(entry["node"], entry["time"])
        elif entry["action"] == "resume" and entry["node"] in open_drains:
            spans.setdefault(entry["node"], []).append((open_drains.pop(entry["node"]), entry["time"]))
    for node, since in open_drains.items():
        spans.setdefault(node, []).append((since, window_end))
    merged = {}
    for node, items in spans.items():
        clipped = sorted((max(s, window_start), min(e, window_end)) for s, e in items)
        clipped = [(s, e) for s, e in clipped if e > s]
        out = []
        for start, end in clipped:
            if out and start <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        if out:
            merged[node] = out
    return merged


def looks_unconfigured(rc, text):
    """True when sacct's rc/output say accounting is not there (rather than an empty history)."""
    lowered = (text or "").lower()
    return rc not in (0, None) or any(words in lowered for words in NOT_CONFIGURED[:4])
