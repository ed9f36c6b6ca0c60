# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric block of results.json (_document): the node and uplink verdicts, the pair matrix,
every round's groups with their status, the full-allocation run and the stage's error, as the report
draws them and the baseline compares them (schema $defs/fabric).

Apart from the stage (_fabric): the block is the results contract's side of the stage, read by
plugin_utils/_report_fabric.py; a stage that ended on the infrastructure blames nobody in it.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize


def _group_status(test_result, outcome):
    if outcome == "missing":
        return "not_replayable"
    if outcome in ("infra", "invalid"):
        return "error"
    if outcome == "timeout":
        return "timeout"
    return test_result or ("low" if outcome in ("build", "wrong") else "error")


def _document(fabric, state, full_view, status, error, floor):
    """The fabric block of results.json: what the report draws and the baseline compares."""
    public = _localize.public_state(state) if state else {}
    results = {}
    for test in public.get("tests") or []:
        results[(test["round"], tuple(test["group"]))] = test.get("result")
    rounds = []
    for entry in fabric.rounds:
        groups = []
        for group in entry["groups"]:
            result = results.get((entry["round"], tuple(sorted(group["nodes"]))))
            groups.append({"nodes": group["nodes"], "busbw": group["busbw"], "raw": group["key"],
                           "status": _group_status(result, group["outcome"]), "note": group["note"]})
        rounds.append({"round": entry["round"], "groups": groups})
    nodes = {}
    for node, info in sorted((public.get("nodes") or {}).items()):
        verdict = info.get("verdict")
        if node in fabric.infra_nodes and verdict in (_localize.UNTESTED, _localize.SUSPECT):
            verdict = "error"
        if error:
            verdict = _localize.UNTESTED if verdict in _localize.FAULTS else verdict
        nodes[node] = {"verdict": verdict, "leaf": info.get("leaf"), "evidence": list(info.get("evidence") or [])}
    uplinks = dict((leaf, {"verdict": info.get("verdict"), "evidence": list(info.get("evidence") or [])})
                   for leaf, info in sorted((public.get("uplinks") or {}).items()))
    references = public.get("references") or {}
    intra = references.get("intra") or {}
    none = {"nodes": [], "uplinks": []}
    return {"status": status, "error": error, "mode": public.get("mode"), "floor": floor,
            "reference": intra.get("median"), "reference_basis": intra.get("basis"), "nodes": nodes, "uplinks": uplinks,
            "leaves": public.get("leaves") or {}, "full_allocation": full_view,
            "matrix": public.get("matrix") or {}, "rounds": rounds,
            "summary": public.get("summary") or {}, "warnings": list(public.get("warnings") or []),
            # A stage that ended on the infrastructure blames nobody, whatever it saw before.
            "pinned": none if error else public.get("pinned") or none,
            "suspects": none if error else public.get("suspects") or none,
            "intermittent": none if error else public.get("intermittent") or none,
            "leaf_faults": [] if error else list(public.get("leaf_faults") or []),
            "replayed": bool(fabric.opts.get("replay_dir"))}
