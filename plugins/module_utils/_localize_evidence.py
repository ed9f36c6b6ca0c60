# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evidence for the localiser's verdicts (_localize): a summary line, then the tests behind it.

Every verdict is written from the tests alone, in the unit the results are in (GB/s for
nccl-tests busbw, Gb/s for perftest): which tests were low, against which reference, and why the
partners are trusted (they passed ``confirm_passes`` times elsewhere).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base


def _result_text(state, test):
    if test["status"] == base.TIMEOUT:
        return "timed out"
    if test["status"] == base.ERROR:
        return "failed (error)"
    ref = state["references"][test["class"]]
    value = test["busbw"]
    if ref["threshold"] is None:
        return "%.1f GB/s (no floor or peers to judge by)" % value
    if test["result"] == base.LOW:
        return "%.1f GB/s < %.1f" % (value, ref["threshold"])
    if test["result"] == base.MARGINAL:
        return "%.1f GB/s in [%.1f, %.1f)" % (value, ref["threshold"], ref["clear"])
    if test["result"] == base.UNSTABLE:
        samples = test.get("samples") or [value]
        return "%d runs %.1f-%.1f GB/s, some < %.1f and some >= %.1f" % (
            len(samples), min(samples), max(samples), ref["threshold"], ref["clear"])
    return "%.1f GB/s >= %.1f" % (value, ref["clear"])


def _others_text(state, tid, element):
    test = state["tests"][tid]
    if len(test["elements"]) > 5:
        uncleared = state["_index"]["uncleared"][tid]
        if state["_index"]["pass_count"].get(element, 0) == 0:
            uncleared -= 1
        return "%d of the other %d nodes and uplinks not cleared" % (uncleared, len(test["elements"]) - 1)
    others = [e for e in test["elements"] if e != element]
    return "others: " + ", ".join("%s %s" % (base.name(o), base.verdict_of(state, o)) for o in others)


def _test_line(state, tid, element):
    test = state["tests"][tid]
    group = test["group"]
    if base.is_uplink(element):
        if len(group) == 2:
            what = "%s (%s) with %s (%s)" % (group[0], state["nodes"][group[0]]["leaf"], group[1],
                                             state["nodes"][group[1]]["leaf"])
        else:
            what = "group of %d nodes over %d leaves" % (len(group), len(test["leaves"]))
    else:
        if len(group) == 2:
            what = "pair with %s" % (group[1] if group[0] == element else group[0])
        else:
            what = "group of %d nodes" % len(group)
        if test["cross"]:
            what += " (cross-leaf %s)" % "/".join(test["leaves"][:4]) + ("/..." if len(test["leaves"]) > 4 else "")
        else:
            what += " (same leaf %s)" % test["leaves"][0]
    line = "round %d: %s: %s -> %s" % (test["round"], what, _result_text(state, test), test["result"])
    if test["result"] != base.PASS:
        line += "; " + _others_text(state, tid, element)
    return line


def _low_summary(state, tids):
    tests = state["tests"]
    values = [tests[t]["busbw"] for t in tids if tests[t]["status"] == base.OK]
    timeouts = sum(1 for t in tids if tests[t]["status"] == base.TIMEOUT)
    errors = sum(1 for t in tids if tests[t]["status"] == base.ERROR)
    parts = []
    if values:
        parts.append("\u2264 %s GB/s" % base.gbs(max(values)))
    if timeouts:
        parts.append("timed out" if timeouts == len(tids) else "%d timed out" % timeouts)
    if errors:
        parts.append("failed" if errors == len(tids) else "%d failed" % errors)
    return ", ".join(parts)


def _reference_text(state, tid, uplink):
    ref = state["references"].get(state["tests"][tid]["class"], {})
    if ref.get("median") is not None:
        return "median of %s %s" % ("cross-leaf peers" if uplink else "others", base.gbs(ref["median"]))
    if ref.get("floor") is not None:
        return "floor %s" % base.gbs(ref["floor"])
    return "no reference"


def _uncleared_others(state, tids, element):
    """Text naming the elements other than element that are not cleared in tests tids."""
    tests = state["tests"]
    index = state["_index"]
    counts = index["pass_count"]
    own = 1 if counts.get(element, 0) == 0 else 0
    names = set()
    big = None
    for tid in tids:
        members = tests[tid]["elements"]
        if len(members) <= 8:
            names.update(e for e in members if e != element and counts.get(e, 0) == 0)
        else:
            others = max(0, index["uncleared"][tid] - own)
            if others and (big is None or others < big[0]):
                big = (others, len(tests[tid]["group"]), tests[tid]["round"])
    names = sorted(names)
    parts = [base.name(n) for n in names[:4]]
    if len(names) > 4:
        parts.append("%d more" % (len(names) - 4))
    if big:
        parts.append("%d other uncleared node(s)/uplink(s) of the %d-node group of round %d" % big)
    return ", ".join(parts)


def _explainers(state, tids, element):
    """Text naming the other elements of tests tids that explain them: never passed, or failing."""
    counts = state["_index"]["pass_count"]
    names = set()
    for tid in tids:
        for other in state["tests"][tid]["elements"]:
            if other != element and (counts.get(other, 0) == 0 or base.verdict_of(state, other) in base.FAULTS):
                names.add(other)
    names = sorted(names)
    parts = ["%s (%s)" % (base.name(n), base.verdict_of(state, n)) for n in names[:4]]
    if len(names) > 4:
        parts.append("%d more" % (len(names) - 4))
    return ", ".join(parts) or _uncleared_others(state, tids, element)


def _rounds(state, tids):
    return ", ".join(str(state["tests"][t]["round"]) for t in tids)


def evidence(state, element, verdict):
    """The element's evidence lines, bandwidths in the unit the results are in."""
    unit = state["config"].get("unit") or "GB/s"
    lines = _evidence_lines(state, element, verdict)
    return lines if unit == "GB/s" else [line.replace("GB/s", unit) for line in lines]


def _pinned(state, element, tids, lows, noun):
    unconfirmed = state["_index"]["unconfirmed"]
    uplink = base.is_uplink(element)
    clean = [t for t in lows if unconfirmed[t] == 1]
    rest = _uncleared_others(state, [t for t in lows if unconfirmed[t] != 1], element)
    confirm = state["config"]["confirm_passes"]
    times = "" if confirm < 2 else " %s" % ("twice" if confirm == 2 else "%d times" % confirm)
    if uplink:
        tail = "its nodes passed other tests and each partner leaf passed cross-leaf%s with another leaf" % times
    else:
        tail = "each partner passed%s with other nodes" % times
    if rest:
        tail = "in %d of them %s (the others also hold %s)" % (
            len(clean), tail.replace("each partner", "every partner").replace("its nodes", "every other node"), rest)
    return "%s: %d of %d %s %s, %s; %s" % (
        base.name(element), len(lows), len(tids), noun, _low_summary(state, lows),
        _reference_text(state, lows[0], uplink), tail)


def _intermittent(state, element, tids, lows, passes, noun):
    tests = state["tests"]
    unstable = [t for t in lows if tests[t]["result"] == base.UNSTABLE]
    parts = []
    if passes:
        parts.append("passed %d of %d %s (round %s)" % (len(passes), len(tids), noun, _rounds(state, passes)))
    solid = [t for t in lows if tests[t]["result"] == base.LOW]
    if solid:
        parts.append("low in round %s (%s)" % (_rounds(state, solid), _low_summary(state, solid)))
    if unstable:
        samples = [v for t in unstable for v in tests[t].get("samples") or ()]
        parts.append("unstable in round %s (runs %s-%s GB/s in one test)" % (
            _rounds(state, unstable), base.gbs(min(samples)), base.gbs(max(samples))))
    return ("%s: intermittent: %s, with partners that passed elsewhere more than once; slow in some runs and "
            "fine in others, so neither cleared nor used as a known-good partner"
            % (base.name(element), "; ".join(parts)))


def _leaf(state, element):
    """Summary of an element of a leaf-level fault: the cross-leaf evidence of the whole leaf."""
    index = state["_index"]
    tests = state["tests"]
    leaf = element[len(base.UPLINK):] if base.is_uplink(element) else state["nodes"][element]["leaf"]
    members = state["leaves"][leaf]
    cross, inside = set(), set()
    for node in members:
        for tid in index["tests_of"].get(node, ()):
            if tests[tid]["low"]:
                (cross if tests[tid]["cross"] else inside).add(tid)
    partners = sorted(set(n for t in cross for n in tests[t]["group"] if state["nodes"][n]["leaf"] != leaf))
    text = ("%s: leaf-level fault of %s (its leaf switch or all its %d nodes): every node of the leaf was low with "
            "partners of other leaves that passed elsewhere (%d cross-leaf tests, %s, %s; partners %s%s)"
            % (base.name(element), leaf, len(members), len(cross), _low_summary(state, sorted(cross)),
               _reference_text(state, sorted(cross)[0], True), ", ".join(partners[:4]),
               " and %d more" % (len(partners) - 4) if len(partners) > 4 else ""))
    if inside:
        text += ", and %d of %d tests inside the leaf were low" % (
            len(inside), len(set(t for n in members for t in index["tests_of"].get(n, ()) if not tests[t]["cross"])))
    return text + "; no node or uplink of the leaf passed any test"


def _suspect(state, element, tids, lows, passes, marginal, noun):
    index = state["_index"]
    tests = state["tests"]
    uplink = base.is_uplink(element)
    name = base.name(element)
    inconsistent = [t for t in lows if index["uncleared"][t] == 0]
    pending = [t for t in lows if index["uncleared"][t] == 1 and index["unconfirmed"][t] > 1]
    if passes and inconsistent:
        return ("%s: passed %d of %d %s, but low in round %d although every node%s in that test passed "
                "elsewhere: one of them is intermittent or marginal, retest"
                % (name, len(passes), len(tids), noun, tests[inconsistent[0]]["round"],
                   " and uplink" if tests[inconsistent[0]]["cross"] else ""))
    if not passes and pending:
        return ("%s: %d of %d %s %s, %s; its partners passed elsewhere, but not yet %d times: a pin needs "
                "a partner that passed more than once (confirmation pending)"
                % (name, len(lows), len(tids), noun, _low_summary(state, lows), _reference_text(state, lows[0], uplink),
                   state["config"]["confirm_passes"]))
    if not lows:
        values = [tests[t]["busbw"] for t in marginal]
        ref = state["references"][tests[marginal[0]]["class"]]
        if ref["median"]:
            where = "%.0f-%.0f %% below the median %s" % (
                100 * (1 - max(values) / ref["median"]), 100 * (1 - min(values) / ref["median"]),
                base.gbs(ref["median"]))
        else:
            where = "just above the floor %s" % base.gbs(ref["floor"])
        summary = ("%s: %d of %d %s marginal (%s-%s GB/s, %s): slower than its peers, but inside "
                   "the margin where noise could be the cause; not blamed"
                   % (name, len(marginal), len(tids), noun, base.gbs(min(values)), base.gbs(max(values)), where))
        if base.settled_marginal(state, element):
            summary += "; each partner passed elsewhere, so the shortfall is its own"
        return summary
    summary = "%s: %d of %d %s %s, %s; not yet separated from %s" % (
        name, len(lows), len(tids), noun, _low_summary(state, lows),
        _reference_text(state, lows[0], uplink), _uncleared_others(state, lows, element) or "?")
    if uplink and len(state["leaves"]) == 2:
        summary += ("; with two leaves every cross-leaf test uses both uplinks, so pair tests "
                    "cannot tell which one is degraded")
    return summary


def _evidence_lines(state, element, verdict):
    tests = state["tests"]
    tids = state["_index"]["tests_of"].get(element, [])
    name = base.name(element)
    uplink = base.is_uplink(element)
    if not tids:
        return ["%s: %s" % (name, "no cross-leaf test yet" if uplink else "not tested yet")]
    lows = [t for t in tids if tests[t]["low"]]
    passes = [t for t in tids if tests[t]["result"] == base.PASS]
    marginal = [t for t in tids if tests[t]["result"] == base.MARGINAL]
    all_pairs = all(len(tests[t]["group"]) == 2 for t in tids)
    noun = ("cross-leaf pairs" if all_pairs else "cross-leaf tests") if uplink else ("pairs" if all_pairs else "tests")
    if verdict == base.UNTESTED:
        values = [tests[t]["busbw"] for t in passes]
        return ["%s: passed %d cross-leaf %s (\u2265 %s GB/s), where the %g:1 oversubscription caps every "
                "node: not tested at full speed yet" % (name, len(passes), noun, base.gbs(min(values)),
                                                        state["config"]["oversubscription"])] + \
            [_test_line(state, tid, element) for tid in tids[:state["config"]["evidence_lines"]]]
    if verdict == base.PINNED:
        summary = _pinned(state, element, tids, lows, noun)
    elif verdict == base.INTERMITTENT:
        summary = _intermittent(state, element, tids, lows, passes, noun)
    elif verdict == base.LEAF:
        summary = _leaf(state, element)
    elif verdict == base.SUSPECT:
        summary = _suspect(state, element, tids, lows, passes, marginal, noun)
    else:
        values = [tests[t]["busbw"] for t in passes if tests[t]["status"] == base.OK]
        summary = "%s: passed %d of %d %s (\u2265 %s GB/s)" % (
            name, len(passes), len(tids), noun, base.gbs(min(values)) if values else "?")
        if lows:
            summary += "; %d low result(s) explained by %s" % (len(lows), _explainers(state, lows, element) or "?")
    limit = state["config"]["evidence_lines"]
    if verdict == base.CLEARED:
        chosen = (lows + marginal)[:limit]
        chosen += passes[:max(0, min(2, limit - len(chosen)))]
    else:
        chosen = (lows + marginal + passes)[:limit]
    chosen.sort()
    lines = [summary] + [_test_line(state, tid, element) for tid in chosen]
    if len(tids) > len(chosen) and verdict != base.CLEARED:
        lines.append("... and %d more tests" % (len(tids) - len(chosen)))
    return lines
