# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm node drain/resume: read ``scontrol show node`` and decide what to do per node.

Private to the collection; the ``slurm_node`` module runs the commands (_slurm_node_scontrol) and
carries out the plans (_slurm_node_apply), everything here is pure.

Reading. ``parse_scontrol_show_node(text)`` reads ``scontrol [--future] show node [-o]`` output,
one-line (``-o``) or multi-line. Per node it keeps ``State=`` (split into the base state and its
``+FLAG`` list, as ``node_state_string_complete`` prints it: ``IDLE+DRAIN``,
``ALLOCATED+DRAIN``, ``UNKNOWN+DRAIN+NOT_RESPONDING``, ``IDLE+DRAIN+MAINTENANCE+RESERVED``,
``FUTURE``) and ``Reason=``. Older or compact spellings (``DRAINED``, ``DRAINING``, ``IDLE*``,
``MAINT``, ``DOWN$``) are mapped onto the same base/flags. ``Reason=`` holds free text with
spaces; it runs to the end of the record or to the optional fields Slurm prints after it
(``Comment=``, ``Extra=``, ``InstanceId=``, ``InstanceType=``, ``ReservationName=``), and Slurm
appends `` [user@time]`` to its first line, which is split off into ``reason_user`` /
``reason_time``.

Deciding. ``decide(node, want, reason, tag)`` gives one of ``drained``, ``resumed``,
``unchanged``, ``skipped`` with the scontrol state to set and a sentence. The rules:

* Our drains are recognised by their reason starting with ``tag`` (``gpucluster:``). A node
  drained (or set DOWN) with another reason belongs to someone else: never resumed, never
  re-drained over; reported ``skipped`` with the reason.
* ``drained``: a node already drained with exactly our reason is ``unchanged``; drained with our
  tag but another text gets the new reason. Any node not drained is drained, whatever its state:
  IDLE becomes IDLE+DRAIN, ALLOCATED/MIXED becomes ...+DRAIN (DRAINING: jobs run to the end,
  never DOWN), DOWN/UNKNOWN/not responding nodes get the DRAIN flag so they cannot come back by
  ReturnToService, MAINT/RESERVED nodes are drained and the reservation is reported. A reason
  Slurm or someone put on a DOWN node that is not drained ("Not responding") is replaced; the
  old one is in ``before`` and the message.
* FUTURE nodes are not drained (``skipped``): Slurm runs nothing on them, and the usual way to
  bring one into service (State=RESUME) clears a drain anyway, so the drain would protect
  nothing. One we drained earlier is resumed with State=UNDRAIN, which keeps it FUTURE (RESUME
  would put it into service).
* ``resumed``: a node drained or DOWN with our tag gets State=RESUME. On an UNKNOWN node scontrol
  answers rc=1 "Invalid node state specified" yet clears the drain: ``outcome`` re-reads the
  node and judges by its state, not by scontrol's exit code.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import lines_of, new_result

DEFAULT_TAG = "gpucluster:"

BASE_STATES = ("IDLE", "ALLOCATED", "MIXED", "DOWN", "UNKNOWN", "FUTURE", "ERROR", "INVAL",
               "END")
KNOWN_FLAGS = ("CLOUD", "COMPLETING", "DRAIN", "DYNAMIC_FUTURE", "DYNAMIC_NORM", "INVALID_REG",
               "FAIL", "MAINTENANCE", "POWER_DOWN", "POWER_UP", "PERFCTRS", "POWERED_DOWN",
               "REBOOT_REQUESTED", "REBOOT_ISSUED", "RESERVED", "RESUME", "NOT_RESPONDING",
               "PLANNED", "POWERING_UP", "POWERING_DOWN")
# Compact / legacy state words (sinfo -l, old scontrol) -> (base, flags).
_LEGACY = {
    "DRAINED": ("IDLE", ["DRAIN"]),
    "DRAINING": ("ALLOCATED", ["DRAIN"]),
    "DRAIN": ("IDLE", ["DRAIN"]),
    "MAINT": ("IDLE", ["MAINTENANCE"]),
    "RESERVED": ("IDLE", ["RESERVED"]),
    "COMPLETING": ("IDLE", ["COMPLETING"]),
    "FAILING": ("ALLOCATED", ["FAIL"]),
    "FAIL": ("IDLE", ["FAIL"]),
    "POWERED_DOWN": ("IDLE", ["POWERED_DOWN"]),
    "ALLOC": ("ALLOCATED", []),
    "MIX": ("MIXED", []),
    "UNK": ("UNKNOWN", []),
}
# State suffixes of node_state_string(): * not responding, $ maintenance, ~ powered down, ...
_SUFFIX_FLAGS = {"*": "NOT_RESPONDING", "$": "MAINTENANCE", "~": "POWERED_DOWN",
                 "#": "POWERING_UP", "%": "POWERING_DOWN", "!": "POWER_DOWN",
                 "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "-": "PLANNED",
                 "+": "COMPLETING"}
BUSY_STATES = ("ALLOCATED", "MIXED")
# Fields scontrol prints after Reason= (node_info.c): they end the reason text.
_AFTER_REASON = ("Comment", "Extra", "InstanceId", "InstanceType", "ReservationName")
_REASON_TAIL = re.compile(r"\s+(?:%s)=" % "|".join(_AFTER_REASON))
_REASON_STAMP = re.compile(r"\s\[(?P<user>[^\s\[\]@]+)@(?P<time>[^\[\]]+?)\]")
_FIELD = re.compile(r"(?:^|\s)%s=(\S*)")
_NODE_NAME = re.compile(r"^NodeName=(\S+)")


def parse_node_state(raw):
    """'IDLE+DRAIN+NOT_RESPONDING' / 'DRAINED*' -> {state, base, flags, drained, not_responding,
    busy, future, down, maintenance, reserved}. Unknown words are kept as flags."""
    text = (raw or "").strip().upper()
    parts = [part for part in text.split("+") if part] if text else []
    base, flags = "UNKNOWN", []
    if parts:
        head = parts[0]
        suffixes = []
        while head and head[-1] in _SUFFIX_FLAGS:
            suffixes.append(_SUFFIX_FLAGS[head[-1]])
            head = head[:-1]
        if text.endswith("+") and len(parts) == 1:
            suffixes.append("COMPLETING")
        if head in BASE_STATES:
            base = head
        elif head in _LEGACY:
            base, extra = _LEGACY[head]
            flags.extend(extra)
        else:
            base = head or "UNKNOWN"
        flags.extend(suffixes)
        for part in parts[1:]:
            while part and part[-1] in _SUFFIX_FLAGS and part not in KNOWN_FLAGS:
                flags.append(_SUFFIX_FLAGS[part[-1]])
                part = part[:-1]
            if part:
                flags.append(part)
    seen = []
    for flag in flags:
        if flag not in seen:
            seen.append(flag)
    flags = seen
    return {
        "state": raw.strip() if raw else "",
        "base": base,
        "flags": flags,
        "drained": "DRAIN" in flags,
        "not_responding": "NOT_RESPONDING" in flags,
        "busy": base in BUSY_STATES or "COMPLETING" in flags,
        "future": base == "FUTURE",
        "down": base == "DOWN" or "FAIL" in flags,
        "maintenance": "MAINTENANCE" in flags,
        "reserved": "RESERVED" in flags,
    }


def _records(text):
    """Group lines into one text per node (multi-line output joined with spaces)."""
    records = []
    current = None
    for number, line in enumerate(lines_of(text), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("NodeName="):
            current = [number, [stripped]]
            records.append(current)
        elif current is not None and line[:1].isspace():
            current[1].append(stripped)  # multi-line output: fields go on indented lines
        else:
            current = None
            records.append([number, None, stripped])
    return records


def _split_reason(record):
    """(text before Reason=, reason text or None)."""
    at = record.find(" Reason=")
    if at < 0:
        return record, None
    value = record[at + len(" Reason="):]
    tail = _REASON_TAIL.search(value)
    rest = ""
    if tail:
        rest = value[tail.start():]
        value = value[:tail.start()]
    return record[:at] + rest, value.strip()


def parse_scontrol_show_node(text):
    """Parse ``scontrol [--future] show node [-o] [NODES]`` output.

    Returns {nodes: {name: {name, state, base, flags, drained, not_responding, busy, future,
    down, maintenance, reserved, reason, reason_user, reason_time, reservation}}, order: [names],
    not_found: [names from "Node X not found"], errors, warnings}.
    """
    result = new_result(nodes={}, order=[], not_found=[])
    if text is None:
        text = ""
    for record in _records(text):
        if record[1] is None:
            line = record[2]
            missing = re.match(r"^Node (\S+) not found$", line)
            if missing:
                result["not_found"].append(missing.group(1))
            elif line.startswith(("slurm_load_node", "slurm_load_partitions", "Unable to contact")) or \
                    "error" in line.lower():
                result["errors"].append("line %d: %s" % (record[0], line))
            else:
                result["warnings"].append("line %d: not part of a node record: %r" % (record[0], line[:120]))
            continue
        number, parts = record
        joined = " ".join(parts)
        name = _NODE_NAME.match(joined).group(1)
        head, reason = _split_reason(joined)
        state = re.search(_FIELD.pattern % "State", head)
        if not state:
            result["errors"].append("line %d: node %s has no State= (output truncated?)" % (number, name))
            continue
        node = parse_node_state(state.group(1))
        node["name"] = name
        node["reason"] = None
        node["reason_user"] = None
        node["reason_time"] = None
        if reason:
            stamp = _REASON_STAMP.search(reason)
            if stamp:
                node["reason_user"] = stamp.group("user")
                node["reason_time"] = stamp.group("time")
                reason = (reason[:stamp.start()] + reason[stamp.end():]).strip()
            node["reason"] = reason or None
        reservation = re.search(_FIELD.pattern % "ReservationName", head)
        node["reservation"] = reservation.group(1) if reservation else None
        if name in result["nodes"]:
            result["warnings"].append("line %d: node %s listed twice; the last record is kept" % (number, name))
        else:
            result["order"].append(name)
        result["nodes"][name] = node
    if not result["nodes"] and not result["not_found"] and not result["errors"]:
        result["errors"].append("no NodeName= record in %d line(s) of output" % len(lines_of(text)))
    return result


# ------------------------------------------------------------------------------------- deciding

def full_reason(reason, tag=DEFAULT_TAG):
    """The reason written to Slurm: 'gpucluster: xid 79 on GPU3' (the tag is added once)."""
    reason = " ".join((reason or "").split())
    if not tag:
        return reason
    if reason.startswith(tag):
        return reason
    return ("%s %s" % (tag, reason)).strip()


def is_ours(reason, tag=DEFAULT_TAG):
    """True when a node's reason was written by us (starts with the tag)."""
    return bool(reason) and bool(tag) and reason.strip().startswith(tag)


def summary(node):
    """{state, reason} of a node for before/after and diffs (None when the node is unknown)."""
    if node is None:
        return None
    return {"state": node.get("state"), "reason": node.get("reason")}


def _describe(node):
    bits = [node["state"] or node["base"]]
    if node.get("reason"):
        bits.append("reason %r" % node["reason"])
    return ", ".join(bits)


def _after(node, state_words, reason):
    base = node["base"]
    flags = [flag for flag in node["flags"] if flag != "DRAIN"]
    if state_words == "DRAIN":
        flags.insert(0, "DRAIN")
    elif state_words == "RESUME" and base == "DOWN":
        base = "IDLE"
    return {"state": "+".join([base] + flags), "reason": reason}


def decide(node, want, reason=None, tag=DEFAULT_TAG):
    """What to do with one node. ``node`` is a parse_scontrol_show_node entry (None: not found).

    Returns {action: drained|resumed|unchanged|skipped|missing, command: 'DRAIN'|'RESUME'|
    'UNDRAIN'|None, reason: text to set or None, message, after: predicted {state, reason}}.
    """
    if want not in ("drained", "resumed"):
        raise ValueError("want must be 'drained' or 'resumed', got %r" % (want,))
    if node is None:
        return {"action": "missing", "command": None, "reason": None, "after": None,
                "message": "Slurm does not know this node (not in scontrol --future show node)"}
    current = node.get("reason")
    ours = is_ours(current, tag)

    def result(action, message, command=None, new_reason=None):
        if command:
            after = _after(node, command, new_reason if command == "DRAIN" else None)
        else:
            after = summary(node)
        return {"action": action, "command": command, "reason": new_reason, "message": message,
                "after": after}

    if want == "drained":
        wanted = full_reason(reason, tag)
        if node["drained"] and current == wanted:
            return result("unchanged", "already drained with this reason (%s)" % node["state"])
        if node["drained"] and not ours:
            return result("skipped", "drained by someone else (reason %r): left alone" % (current or ""))
        if node["future"]:
            return result("skipped", "FUTURE node (defined for later use, not in service): not drained; "
                                     "Slurm runs nothing on it and State=RESUME, which brings it into "
                                     "service, would clear a drain anyway")
        if node["drained"]:
            return result("drained", "reason updated from %r" % current, "DRAIN", wanted)
        notes = []
        if node["busy"]:
            notes.append("running jobs finish first (%s -> DRAINING), no new jobs start" % node["base"])
        if node["base"] == "DOWN":
            notes.append("node is DOWN: the drain keeps it out when it comes back")
        elif node["base"] == "UNKNOWN" or node["not_responding"]:
            notes.append("node is not responding (%s): the drain keeps it out when slurmd registers"
                         % node["state"])
        if "FAIL" in node["flags"]:
            notes.append("node is marked FAIL")
        if node["maintenance"] or node["reserved"]:
            notes.append("node is in a %s reservation%s" % (
                "maintenance" if node["maintenance"] else "",
                " (%s)" % node["reservation"] if node.get("reservation") else ""))
        if current and not ours:
            notes.append("replaces reason %r" % current)
        message = "drained" + (": " + "; ".join(notes) if notes else "")
        return result("drained", message, "DRAIN", wanted)

    # want == resumed
    if ours and (node["drained"] or node["down"]):
        if node["future"]:
            return result("resumed", "FUTURE node drained by us: State=UNDRAIN (stays FUTURE)", "UNDRAIN")
        note = ""
        if node["base"] == "UNKNOWN":
            note = " (UNKNOWN node: scontrol may answer 'Invalid node state specified'; judged by re-reading)"
        elif node["busy"]:
            note = " (jobs still running: back to %s)" % node["base"]
        return result("resumed", "resumed%s" % note, "RESUME")
    if (node["drained"] or node["down"]) and not ours:
        what = "drained" if node["drained"] else "down"
        return result("skipped", "%s by someone else (reason %r): not resumed" % (what, current or ""))
    return result("unchanged", "not drained (%s)" % _describe(node))


def outcome(node, want, reason_set=None, tag=DEFAULT_TAG):
    """After the change: (ok, message) judged from the node as Slurm shows it now."""
    if node is None:
        return False, "node no longer listed by scontrol"
    if want == "drained":
        if node["drained"] and node.get("reason") == reason_set:
            return True, "%s, reason %r" % (node["state"], node.get("reason"))
        return False, "still %s (reason %r) after the drain" % (node["state"], node.get("reason"))
    if node["drained"] or is_ours(node.get("reason"), tag):
        return False, "still %s (reason %r) after the resume" % (node["state"], node.get("reason"))
    return True, node["state"]


def diff_text(summaries):
    """{node: {state, reason}|None} -> stable text, one line per node, for Ansible's diff."""
    lines = []
    for name in summaries:
        item = summaries[name]
        if item is None:
            lines.append("%s: (unknown to Slurm)" % name)
        else:
            lines.append("%s: state=%s reason=%s" % (name, item.get("state"), item.get("reason") or "-"))
    return "\n".join(lines) + ("\n" if lines else "")
