# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one group's run of the fabric stage proves (judge_run), and what of it reaches the planner.

Only measurements reach the localisation planner (_localize):

* ``ok``: a readable table with the launched number of ranks and plausible values: its busbw;
* ``timeout``: the run hung (an NCCL hang on a bad link is a finding): low;
* ``build``: nccl-tests built without MPI=1 (several independent one-process tables): the group is
  low for the planner, and the node it pins is named with that cause, never as slow;
* ``wrong``: #wrong or out-of-bounds values: low, the node pinned for data corruption;
* ``infra``: the launcher, the scheduler or the transport failed (_infra): no measurement. The
  group is run once more; a round whose every group still fails ends the stage as ``error``
  naming the component, and no node or uplink is blamed; a group that fails alone leaves its
  nodes ``error`` with that component;
* ``invalid``: unreadable output, a rank count that is not the launched one, implausible values:
  no measurement either (an error for the nodes, never slow);
* ``missing``: replaying captured outputs, a group the capture does not hold: not replayable.

Apart from the stage (_fabric), which runs the groups and rounds: a run's output is judged the same
way whoever launched it, the launcher preflight (_fabric_preflight) included. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_plausibility import plausibility_errors
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import launched_ranks

# Outcomes that are measurements the planner may judge (the others are not about the hardware).
_MEASURED = ("ok", "timeout", "build", "wrong")
_EVIDENCE_LINES = 6


def _tail(text, count=3):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-count:]


def judge_run(record, opts):
    """What one group's run proves: {outcome, busbw, sentence, component, evidence, parsed}.

    outcome is one of ok, timeout, build, wrong (measurements), infra, invalid (no measurement)
    or missing (not in a replayed capture).
    """
    group = record["nodes"]
    what = "%d-node %s" % (len(group), os.path.basename(opts["binary"]))
    where = "%s over %s" % (what, _hostlist.compress_hostlist(group) if len(group) > 2 else ",".join(group))
    out = {"busbw": None, "component": None, "evidence": [], "parsed": None}
    if record.get("missing"):
        out.update(outcome="missing", sentence="%s: not in the captured outputs (not replayable)" % where)
        return out
    if record.get("error"):
        out.update(outcome="infra", component="launcher", sentence="%s could not start: %s" % (where, record["error"]),
                   evidence=[record["error"]])
        return out
    text = record.get("output") or ""
    parsed = parse_nccl_tests(text)
    out["parsed"] = parsed
    found = classify_failure(text, record.get("rc"))
    usable_rows = bool(parsed.get("rows"))
    if found and (record.get("rc") not in (0, None) or record.get("timed_out") or not usable_rows):
        out.update(outcome="infra", component=found["component"], evidence=[found["message"]],
                   sentence="%s could not run: %s (%s): %s" % (
                       where, found["cause"], found["component"], found["message"]))
        return out
    if record.get("timed_out"):
        out.update(outcome="timeout", evidence=_tail(text),
                   sentence="%s hung: killed after %ss" % (where, opts["timeout"]))
        return out
    expected = launched_ranks(group, opts)
    runs = parsed.get("independent_runs") or 1
    if runs > 1 or (parsed.get("nranks") and parsed["nranks"] < expected and parsed.get("headers", 0) > 1):
        per = parsed.get("nranks") or 1
        out.update(outcome="build", component="nccl-tests build",
                   evidence=["%d ranks launched; the output holds %d independent %d-rank runs" % (expected, runs, per)],
                   sentence="%s: nccl-tests built without MPI=1: %d one-rank runs instead of one %d-rank run"
                   % (where, runs, expected) if per == 1 else
                   "%s: nccl-tests built without MPI=1: %d independent %d-rank runs instead of one %d-rank run"
                   % (where, runs, per, expected))
        return out
    if parsed.get("errors") and not usable_rows:
        out.update(outcome="invalid", evidence=_tail(text),
                   sentence="%s: output unreadable (rc %s): %s" % (where, record.get("rc"), "; ".join(parsed["errors"][:3])))
        return out
    wrong = [e for e in parsed.get("errors") or [] if "wrong" in e or "Out of bounds" in e or "failure" in e.lower()]
    if wrong:
        out.update(outcome="wrong", component="data", evidence=wrong[:_EVIDENCE_LINES],
                   sentence="%s returned wrong results: %s" % (where, "; ".join(wrong[:2])))
        return out
    if parsed.get("nranks") != expected:
        out.update(outcome="invalid", component="launcher", evidence=_tail(text),
                   sentence="%s: %d ranks launched, nccl-tests reported %s" % (where, expected, parsed.get("nranks")))
        return out
    return _measured(out, text, parsed, opts, what, where)


def _measured(out, text, parsed, opts, what, where):
    """The outcome of a run that finished with the launched ranks and no wrong values: ok with its
    busbw, or invalid when a value is implausible, a part unreadable or no busbw printed."""
    implausible = plausibility_errors(parsed, opts.get("max_busbw"))
    if implausible:
        out.update(outcome="invalid", evidence=implausible[:_EVIDENCE_LINES],
                   sentence="%s: implausible value: %s" % (where, "; ".join(implausible[:2])))
        return out
    if parsed.get("errors"):
        out.update(outcome="invalid", evidence=parsed["errors"][:_EVIDENCE_LINES],
                   sentence="%s: %s" % (where, "; ".join(parsed["errors"][:3])))
        return out
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    if busbw is None:
        out.update(outcome="invalid", sentence="%s: no bus bandwidth in the output" % where)
        return out
    out.update(outcome="ok", busbw=busbw, sentence="%s busbw %.1f GB/s at large messages" % (what, busbw),
               evidence=_large_rows(text, parsed), samples=_large_samples(parsed))
    return out


def _large_samples(parsed):
    """The busbw of the rows within 4x of the largest message (2, 4 and 8 GiB of -e 8G),
    out-of-place and in-place: each is timed on its own, so a link that retrains during the
    sweep shows as low rows among passing ones (the planner's 'unstable' result). Smaller rows
    are left out: they may still be ramping up."""
    sizes = [row["size"] for row in parsed.get("rows") or [] if isinstance(row, dict) and isinstance(row.get("size"), int)]
    if not sizes:
        return None
    floor = max(sizes) / 4.0
    values = []
    for row in parsed.get("rows") or []:
        if not isinstance(row, dict) or not isinstance(row.get("size"), int) or row["size"] < floor:
            continue
        for side in (row.get("oop"), row.get("ip")):
            if isinstance(side, dict) and isinstance(side.get("busbw"), (int, float)):
                values.append(float(side["busbw"]))
    return values if len(values) > 1 else None


def _large_rows(text, parsed, count=3):
    """The table rows of the largest messages, as printed (the parser keeps their line numbers)."""
    lines = text.splitlines()
    numbers = [r.get("line") for r in parsed.get("rows") or [] if isinstance(r.get("line"), int)]
    return [lines[n - 1].strip() for n in numbers[-count:] if 0 < n <= len(lines)]


def _planner_result(judged):
    """The planner's view of a judged run, or None when the run measured nothing."""
    outcome = judged["outcome"]
    if outcome == "ok":
        out = {"status": "ok", "busbw": judged["busbw"], "note": judged["sentence"]}
        if judged.get("samples"):
            out["samples"] = judged["samples"]
        return out
    if outcome == "timeout":
        return {"status": "timeout", "busbw": None, "note": judged["sentence"]}
    if outcome in ("build", "wrong"):
        return {"status": "error", "busbw": None, "note": judged["sentence"]}
    return None
