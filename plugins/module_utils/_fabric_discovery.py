# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each node's leaf switch for localisation, read from the fabric itself: no hand labels needed.

Sources, in order of preference (``auto``), each tried only while nodes are still unplaced:

1. ``ibnetdiscover``: a captured file, or ibnetdiscover run on one node of the run (through srun)
   or on the controller. Leaves are the switches with host adapters; a rail-optimised scalable
   unit (every node on one leaf per rail) is one group (_topology_from_fabric.model_from_fabric);
2. ``scontrol``: slurmctld's ``scontrol show topology`` (topology/tree), its leaf switches;
3. ``labels``: the inventory's ``slurm_topology_leaf`` host variables.

A source that fails (a tool error, unreadable output, a fabric that shows no leaf) is recorded
with its words and the next one is tried; what the rest of a partly readable output shows is
kept (an odd line is a warning beside the leaves). Nodes no source places are ``unknown``: the
planner then cannot tell an uplink fault from a node fault, which the check says.

discover(nodes, opts, run) -> {topology: {node: {leaf}}, leaves: {leaf: [nodes]}, source, by_source,
unplaced, tried: [{source, status, sentence, raw}], check}. ``run(key, argv)`` runs (or replays)
one command and returns a _fabric_runs record. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, PASS, SKIP, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist, natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_fabric import model_from_fabric
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    leaves_of, parse_scontrol_show_topology, tree_errors)

STAGE = "fabric_topology"
SOURCES = ("ibnetdiscover", "scontrol", "labels")
IBNETDISCOVER_KEY = "ibnetdiscover"
SCONTROL_KEY = "scontrol-show-topology"
UNKNOWN = "unknown"


def _failed(record, what):
    """A sentence when the command did not run normally, else None."""
    if record.get("check_mode"):
        return "%s: not run in check mode" % what
    if record.get("missing"):
        return "%s is not in the captured outputs" % what
    if record.get("error"):
        return "%s could not start: %s" % (what, record["error"])
    if record.get("timed_out"):
        return "%s hung: killed after its timeout" % what
    text = record.get("output") or ""
    found = classify_failure(text, record.get("rc"))
    if found and record.get("rc") not in (0, None):
        return "%s could not run: %s (%s): %s" % (what, found["cause"], found["component"], found["message"])
    if record.get("rc") not in (0, None):
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("$ ")]
        return "%s exited with status %s%s" % (what, record["rc"], (": " + lines[-1][:200]) if lines else "")
    return None


def from_ibnetdiscover(text, nodes, host_map=None):
    """({node: leaf}, problems, warnings) from ibnetdiscover's topology output."""
    built = model_from_fabric(text, nodes=nodes, host_map=host_map)
    problems = [p["message"] for p in built.get("problems") or [] if p.get("severity") == "fatal"]
    return dict(built.get("node_leaf") or {}), problems, list(built.get("warnings") or [])


def from_scontrol(text, nodes):
    """({node: leaf}, problems, warnings) from ``scontrol show topology``."""
    parsed = parse_scontrol_show_topology(text)
    wanted = set(nodes)
    node_leaf = {}
    for leaf, members in leaves_of(parsed).items():
        for node in members:
            if node in wanted:
                node_leaf.setdefault(node, leaf)
    return node_leaf, tree_errors(parsed), list(parsed.get("warnings") or [])


def _command_text(record):
    """The output without the "$ command" line the live run keeps on top."""
    text = record.get("output") or ""
    return text.split("\n", 1)[1] if text.startswith("$ ") else text


def discover(nodes, opts, run):
    nodes = sorted(set(nodes), key=natural_key)
    order = list(SOURCES) if opts.get("source", "auto") == "auto" else [opts["source"]]
    placed, by_source, tried, warnings = {}, {}, [], []
    for source in order:
        todo = [n for n in nodes if n not in placed]
        if not todo:
            break
        node_leaf, problem, raw = {}, None, None
        if source == "ibnetdiscover":
            argv, raw, where = opts.get("ibnetdiscover_argv"), IBNETDISCOVER_KEY, opts.get("ibnetdiscover_where") or ""
            if not argv and not opts.get("ibnetdiscover_file"):
                problem = "no ibnetdiscover command or captured file"
            else:
                record = run(raw, argv)
                what = "ibnetdiscover%s" % (" (%s)" % where if where else "")
                problem = _failed(record, what)
                if problem is None:
                    node_leaf, problems, found = from_ibnetdiscover(_command_text(record), todo, opts.get("host_map"))
                    warnings.extend("ibnetdiscover: %s" % w if not w.startswith("ibnetdiscover") else w for w in found)
                    problem = "; ".join(problems[:2]) if problems and not node_leaf else None
                    warnings.extend(problems if node_leaf else [])
        elif source == "scontrol":
            raw = SCONTROL_KEY
            record = run(raw, opts.get("scontrol_argv") or ["scontrol", "show", "topology"])
            problem = _failed(record, "scontrol show topology")
            if problem is None:
                node_leaf, problems, found = from_scontrol(_command_text(record), todo)
                warnings.extend("scontrol show topology: %s" % w for w in found)
                problem = "; ".join(problems[:2]) if problems and not node_leaf else None
        else:
            labels = opts.get("labels") or {}
            node_leaf = dict((n, str(labels[n])) for n in todo if labels.get(n) not in (None, ""))
            if not node_leaf:
                problem = "no node has a slurm_topology_leaf label"
        node_leaf = dict((n, leaf) for n, leaf in node_leaf.items() if n in todo)
        if problem is None and not node_leaf:
            problem = "places none of the nodes %s" % compress_hostlist(todo)
        entry = {"source": source, "status": ERROR if problem else PASS, "raw": raw,
                 "sentence": problem or "placed %d node(s)" % len(node_leaf)}
        tried.append(entry)
        if node_leaf and placed:
            warnings.append("%s placed by %s after %s placed the others: the two name switches apart, so their "
                            "leaves are not compared with each other" % (
                                compress_hostlist(sorted(node_leaf)), source, ", ".join(sorted(set(by_source.values())))))
        for node, leaf in node_leaf.items():
            placed[node] = leaf
            by_source[node] = source
    unplaced = [n for n in nodes if n not in placed]
    topology = dict((n, {"leaf": placed.get(n, UNKNOWN)}) for n in nodes)
    leaves = {}
    for node in nodes:
        leaves.setdefault(topology[node]["leaf"], []).append(node)
    used = [t["source"] for t in tried if t["status"] == PASS]
    result = {"topology": topology, "leaves": leaves, "source": used[0] if used else None, "by_source": by_source,
              "unplaced": unplaced, "tried": tried, "warnings": warnings}
    result["check"] = leaves_check(result, nodes)
    return result


def leaves_check(found, nodes):
    """The stage's one check: where the leaves came from, every node placed or not."""
    leaves = dict((leaf, members) for leaf, members in found["leaves"].items() if leaf != UNKNOWN)
    listed = ", ".join("%s (%s)" % (leaf, compress_hostlist(leaves[leaf])) for leaf in sorted(leaves, key=natural_key))
    sources = sorted(set(found["by_source"].values()), key=SOURCES.index)
    failed = [t["sentence"] if t["sentence"].startswith(t["source"]) else "%s: %s" % (t["source"], t["sentence"])
              for t in found["tried"] if t["status"] != PASS]
    evidence = failed + found["warnings"][:6]
    metrics = {"leaves": len(leaves), "nodes": len(nodes), "unplaced": len(found["unplaced"]),
               "sources": sources}
    if not nodes:
        return check_result("leaves", SKIP, "no node to place", metrics)
    if found["unplaced"] and not leaves:
        message = "no source placed any node under a leaf switch (%s): localisation cannot tell an uplink " \
                  "fault from a node fault" % "; ".join(failed)
        return check_result("leaves", SKIP, message, metrics, component="fabric topology", evidence=evidence)
    message = "%d node(s) under %d leaf switch(es) from %s: %s" % (
        len(nodes) - len(found["unplaced"]), len(leaves), " and ".join(sources), listed)
    if found["unplaced"]:
        message += "; leaf unknown for %s" % compress_hostlist(found["unplaced"])
    if failed:
        message += " (not from %s)" % "; ".join(failed)
    return check_result("leaves", PASS if not found["unplaced"] else SKIP, message, metrics,
                        component="fabric topology", evidence=evidence)
