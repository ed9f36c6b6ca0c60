# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's view of its nodes, read for the ``gpucluster.acceptance.slurm`` inventory plugin.

Controller side only; pure functions (the plugin runs the commands). Three forms, newest first,
as each Slurm version has them:

* ``scontrol --json show nodes`` (23.02+, data_parser v0.0.39+): ``state``, ``features``,
  ``partitions`` are lists.
* ``sinfo --json`` (21.08 and 22.05, openapi v0.0.37/38): a ``nodes`` list with ``state`` a word
  and ``state_flags`` beside it, ``features`` a comma list (23.02+ prints a ``sinfo`` list instead,
  which is never read: scontrol has JSON there).
* ``scontrol -o show nodes`` (every version): one ``Key=value`` line per node.

Each gives ``[node]`` with the same keys (``NODE_KEYS``) and a list of problems; a parse never
raises. ``leaves_and_blocks`` reads ``scontrol show topology``, ``reservation_nodes`` ``scontrol -o
show reservation``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    parse_scontrol_show_topology, shown_blocks)

NODE_KEYS = ("name", "address", "hostname", "state", "state_flags", "partitions", "features",
             "active_features", "gres", "gres_gpus", "reason")
# Slurm's base node states (slurm.h node_states); the rest of a state word is flags (DRAIN, ...).
BASE_STATES = ("unknown", "down", "idle", "allocated", "error", "mixed", "future")
_STATE_SHORT = {"alloc": "allocated", "mix": "mixed"}
# Key=value of a one-line record; a value runs to the next " Key=" (OS= holds spaces).
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:]*)=")
_GRES_GPU = re.compile(r"^gpu(?::[^:(]+)?:(\d+)")
_NULLS = ("", "(null)", "N/A", "none")


def _words(value, separator=","):
    """A list from Slurm's list forms: a JSON list, or a comma-separated string ('(null)': none)."""
    if value is None or isinstance(value, (dict, bool)):
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v) not in _NULLS]
    return [word for word in str(value).split(separator) if word and word not in _NULLS]


def gres_gpus(gres):
    """GPUs a node's GRES declares (``gpu:8``, ``gpu:h100:8(S:0-1)``, several entries summed);
    None when it declares no GPU GRES."""
    total, seen = 0, False
    for entry in _words(gres):
        match = _GRES_GPU.match(entry.strip())
        if match:
            total, seen = total + int(match.group(1)), True
    return total if seen else None


def split_state(state, flags=()):
    """(base state, [flags]) in lower case from 'IDLE+DRAIN', 'idle' + ['DRAIN'], or ['IDLE', 'DRAIN'].

    The base is the first word that is one of Slurm's base states; a trailing '*' (not responding)
    and '~' (powered down) become the flags 'not_responding' / 'powered_down'."""
    words = []
    for part in _words(state, "+") if not isinstance(state, list) else state:
        part = str(part).strip()
        for mark, flag in (("*", "not_responding"), ("~", "powered_down"), ("#", "powering_up"),
                           ("%", "powering_down"), ("$", "maint"), ("@", "reboot_requested")):
            if part.endswith(mark):
                part = part[:-1]
                words.append(flag)
        words.extend(w for w in part.lower().split("+") if w)
    words = [_STATE_SHORT.get(w, w) for w in words] + [f.lower() for f in _words(flags)]
    base = next((w for w in words if w in BASE_STATES), "unknown")
    rest = []
    for word in words:
        if word != base and word not in rest:
            rest.append(word)
    return base, rest


def _node(name, address, hostname, state, flags, partitions, features, active, gres, reason):
    base, state_flags = split_state(state, flags)
    return {"name": name, "address": address or name, "hostname": hostname or name, "state": base,
            "state_flags": state_flags, "partitions": _words(partitions), "features": _words(features),
            "active_features": _words(active), "gres": ",".join(_words(gres)), "gres_gpus": gres_gpus(gres),
            "reason": "" if reason in _NULLS or reason is None else str(reason)}


def _json_document(text, what):
    try:
        document = json.loads(text)
    except ValueError as exc:
        return None, ["%s did not print JSON: %s" % (what, exc)]
    if not isinstance(document, dict):
        return None, ["%s printed JSON that is not an object" % what]
    problems = ["%s reported: %s" % (what, _error_text(e)) for e in document.get("errors") or []]
    return document, problems


def _error_text(error):
    if isinstance(error, dict):
        return str(error.get("description") or error.get("error") or error)
    return str(error)


def parse_nodes_json(text, what="scontrol --json show nodes"):
    """([node], problems) from ``scontrol --json show nodes`` (23.02+) or ``sinfo --json`` (21.08/22.05)."""
    document, problems = _json_document(text, what)
    if document is None:
        return [], problems
    records = document.get("nodes")
    if not isinstance(records, list):
        return [], problems + ["%s printed no 'nodes' list (keys: %s)" % (what, ", ".join(sorted(document)) or "none")]
    nodes = []
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not record.get("name"):
            problems.append("%s: node record %d has no name" % (what, index))
            continue
        nodes.append(_node(str(record["name"]), record.get("address"), record.get("hostname"),
                           record.get("state"), record.get("state_flags"), record.get("partitions"),
                           record.get("features"), record.get("active_features"), record.get("gres"),
                           record.get("reason")))
    return nodes, problems


def oneline_fields(line):
    """{Key: value} of one ``scontrol -o show ...`` record; Reason= takes the rest of the line."""
    fields, marks = {}, list(_KEY.finditer(line))
    for index, mark in enumerate(marks):
        key = mark.group(1)
        if key in fields:  # a '=' inside a value (e.g. an OS string): keep the first
            continue
        end = len(line) if key == "Reason" or index + 1 == len(marks) else marks[index + 1].start()
        fields[key] = line[mark.end():end].strip()
        if key == "Reason":
            break
    return fields


def parse_nodes_oneline(text):
    """([node], problems) from ``scontrol -o show nodes`` (one NodeName= line per node)."""
    nodes, problems = [], []
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        fields = oneline_fields(line.strip())
        if not fields.get("NodeName"):
            problems.append("scontrol -o show nodes line %d is not a NodeName= record: %r" % (number, line[:120]))
            continue
        reason = re.sub(r"\s*\[[^\]]*@[^\]]*\]\s*$", "", fields.get("Reason", ""))  # [user@time]
        nodes.append(_node(fields["NodeName"], fields.get("NodeAddr"), fields.get("NodeHostName"),
                           fields.get("State", ""), None, fields.get("Partitions"), fields.get("AvailableFeatures"),
                           fields.get("ActiveFeatures"), fields.get("Gres"), reason))
    if not nodes and not problems:
        problems.append("scontrol -o show nodes printed no node")
    return nodes, problems


def leaves_and_blocks(text):
    """({node: leaf switch}, {node: block}, problems) from ``scontrol show topology``.

    topology/tree gives leaves, topology/block blocks; no topology plugin gives neither and no
    problem (Slurm prints nothing or that it has no topology)."""
    if not (text or "").strip() or "no topology" in text.lower():
        return {}, {}, []
    shown = parse_scontrol_show_topology(text)
    problems = ["scontrol show topology: %s" % e for e in shown["errors"]]
    leaves = {}
    for switch in shown["switches"]:
        if switch["leaf"]:
            for node in switch["nodes"]:
                leaves.setdefault(node, switch["name"])
    blocks = {}
    for block, members in shown_blocks(shown).items():
        for node in members:
            blocks.setdefault(node, block)
    return leaves, blocks, problems


def reservation_nodes(text, name):
    """(set of nodes, problem or None) of reservation ``name`` from ``scontrol -o show reservation NAME``."""
    for line in (text or "").splitlines():
        fields = oneline_fields(line.strip())
        if fields.get("ReservationName") != name:
            continue
        try:
            return set(expand_hostlist(fields.get("Nodes", ""))), None
        except ValueError as exc:
            return set(), "reservation %s: Nodes=%s: %s" % (name, fields.get("Nodes"), exc)
    return set(), "scontrol shows no reservation named %s" % name


def keep(node, partitions=(), states=(), features=(), reservation=None):
    """Whether a node passes the filters: in one of ``partitions``, its base state or a flag in
    ``states``, every one of ``features`` available, in ``reservation`` (a set) when given."""
    if partitions and not set(partitions) & set(node["partitions"]):
        return False
    if states and not set(s.lower() for s in states) & set([node["state"]] + node["state_flags"]):
        return False
    if features and not set(features) <= set(node["features"]):
        return False
    return reservation is None or node["name"] in reservation
