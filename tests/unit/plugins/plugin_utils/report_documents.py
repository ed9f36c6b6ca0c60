"""results.json documents for the report tests: the real demo run, and small ones built by the producer's own builder.

Every small document is made with _results.build_document from hand-made checks and stage
documents shaped as the stages write them (plugins/module_utils/_fabric_document.py _document, the workload
and single-node judges' checks), and validated against the schema before a test sees it.
"""
import copy
import json

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results
from conftest import FIXTURES

DEMO_DIR = FIXTURES / "report" / "demo_run"
DEMO_SLOW = "gpu012"  # slow_node 0.5: pinned by the fabric stage
RUN = {"id": "20261201T100000Z-test", "playbook": "acceptance.yml", "started": "2026-12-01T10:00:00+00:00",
       "finished": "2026-12-01T10:05:00+00:00", "profile": "hgx_h100_sxm"}


def demo():
    """The real demo run's results.json (a fresh copy)."""
    return json.loads((DEMO_DIR / "results.json").read_text())


def check(stage, node, name, status="pass", message=None, **extra):
    record = {"stage": stage, "node": node, "check": name, "status": status,
              "message": message or "%s %s on %s" % (name, status, node or "the cluster"), "component": None}
    record.update(extra)
    return record


def build(checks, targets, documents=None, run=None):
    """A schema-valid results.json document (asserted)."""
    document = _results.build_document(dict(run or RUN), checks, targets, {}, documents or {})
    problems = _results.validate(document)
    assert problems == [], problems
    return json.loads(json.dumps(document))


def preflight_only(nodes=("gpu001", "gpu002")):
    """A run of the preflight stage only: no fabric, workload or curves."""
    return build([check("preflight", n, "driver_version") for n in nodes], nodes)


def fabric_group(nodes, status, busbw=None, round_number=1, note=""):
    return {"nodes": list(nodes), "busbw": busbw, "status": status,
            "raw": "round%d-%s" % (round_number, "-".join(nodes)), "note": note}


def fabric_block(status, nodes, rounds, matrix=None, error=None, pinned=(), replayed=False):
    """A fabric block as _fabric_document._document writes it."""
    return {"status": status, "error": error, "mode": "adaptive", "floor": 300.0, "reference": None,
            "nodes": dict((n, {"verdict": v, "leaf": "leaf01" if i % 2 == 0 else "leaf02", "evidence": ["%s: %s" % (n, v)]})
                          for i, (n, v) in enumerate(sorted(nodes.items()))),
            "uplinks": {}, "leaves": {}, "full_allocation": None, "matrix": matrix or {}, "rounds": rounds,
            "summary": {}, "warnings": [], "pinned": {"nodes": list(pinned), "uplinks": []},
            "suspects": {"nodes": [], "uplinks": []}, "replayed": replayed}


def scheduler_error():
    """The fabric stage ended on a scheduler error: every group of round 1 failed, nobody blamed."""
    nodes = ("gpu001", "gpu002", "gpu003", "gpu004")
    message = "the fabric stage could not run: srun: error: Unable to contact slurm controller (connect failure)"
    checks = [check("preflight", n, "driver_version") for n in nodes]
    checks.append(check("fabric", None, "fabric.run", "error", message, component="scheduler"))
    checks.extend(check("fabric", n, "pair_bandwidth", "error", "%s: not measured: the scheduler failed" % n,
                        component="scheduler") for n in nodes)
    rounds = [{"round": 1, "groups": [fabric_group(("gpu001", "gpu002"), "error", note="srun: error"),
                                      fabric_group(("gpu003", "gpu004"), "error", note="srun: error")]}]
    fabric = fabric_block("error", dict((n, "untested") for n in nodes), rounds,
                          error={"component": "scheduler", "message": message, "cause": "srun: error"})
    return build(checks, nodes, {"fabric": fabric})


def replay_not_replayable():
    """A replay whose capture lacked one round-1 group: that group is not replayable, its nodes skipped."""
    nodes = ("gpu001", "gpu002", "gpu003", "gpu004")
    checks = [check("fabric", "gpu001", "pair_bandwidth", "pass", "gpu001: passed 1 of 1 pairs"),
              check("fabric", "gpu002", "pair_bandwidth", "pass", "gpu002: passed 1 of 1 pairs"),
              check("fabric", "gpu003", "pair_bandwidth", "skip", "gpu003: not replayable: the captured outputs hold no test of it"),
              check("fabric", "gpu004", "pair_bandwidth", "skip", "gpu004: not replayable: the captured outputs hold no test of it")]
    rounds = [{"round": 1, "groups": [fabric_group(("gpu001", "gpu002"), "pass", 347.1),
                                      fabric_group(("gpu003", "gpu004"), "not_replayable", note="not in the capture")]},
              {"round": 2, "groups": [fabric_group(("gpu003", "gpu004"), "not_replayable", round_number=2,
                                                   note="not in the capture")]}]
    fabric = fabric_block("pass", {"gpu001": "cleared", "gpu002": "cleared", "gpu003": "untested", "gpu004": "untested"},
                          rounds, matrix={"gpu001": {"gpu002": 347.1}, "gpu002": {"gpu001": 347.1}}, replayed=True)
    run = dict(RUN, replay_of="/data/artifacts/20261130T090000Z-live")
    return build(checks, nodes, {"fabric": fabric}, run=run)


CURVE_SIZES = [8 << 20, 64 << 20, 512 << 20, 1 << 30, 8 << 30]


def workload_and_curves(nodes=("gpu001", "gpu002", "gpu003"), ranks_per_node=2, slow="gpu003"):
    """Single-node curves kept in the nccl.busbw metrics, and the workload judge's per-node summaries
    (workload.node, their step-time rows in metrics.ranks) with a workload.rank result for the flagged
    rank: what the builder copies to nccl.curves and workload.ranks."""
    checks = []
    for i, node in enumerate(nodes):
        factor = 0.05 if node == slow else 1.0
        curve = [[size, round(factor * (150.0 + 60.0 * k), 2)] for k, size in enumerate(CURVE_SIZES)]
        status = "fail" if node == slow else "pass"
        checks.append(check("nccl_single_node", node, "nccl.busbw", status,
                            metrics={"busbw": curve[-1][1], "floor": 360, "unit": "GB/s", "curve": curve}))
        rows = []
        for gpu in range(ranks_per_node):
            rank = i * ranks_per_node + gpu
            compute = 16.0 if node == slow and gpu == 0 else 8.0 + 0.1 * rank
            row = {"rank": rank, "gpu": str(gpu), "node": node, "steps": 27, "compute_p50_ms": compute,
                   "compute_p95_ms": compute * 1.1, "compute_p99_ms": compute * 1.2,
                   "sync_p50_ms": 1.0 if compute > 10 else 9.0, "sync_p95_ms": 1.5 if compute > 10 else 10.0}
            if compute > 10:
                row["flagged"] = True
                checks.append(check("workload", node, "workload.rank", "fail",
                                    "rank %d (%s GPU%d) compute p50 %.1f ms is 2x the median" % (rank, node, gpu, compute),
                                    metrics=dict(row, compute_ratio=2.0)))
            rows.append(row)
        checks.append(check("workload", node, "workload.node", "pass", "%s: %d rank(s)" % (node, len(rows)),
                            metrics={"rank_count": len(rows), "ranks": rows,
                                     "compute_p50_ms": max(r["compute_p50_ms"] for r in rows)}))
    return build(checks, nodes)


def renamed(document, mapping):
    """The document with node names replaced everywhere (keys and values)."""
    text = json.dumps(document)
    for old, new in mapping.items():
        text = text.replace('"%s"' % old, json.dumps(new))
    return json.loads(text)


def mutated(document, change):
    """A deep copy of the document with change(copy) applied."""
    copied = copy.deepcopy(document)
    change(copied)
    return copied
