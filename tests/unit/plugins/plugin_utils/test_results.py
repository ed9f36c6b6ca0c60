"""results.json: the one results contract — built, validated against the schema, written atomically."""
import json
import math
import os

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results


def check(node, status="pass", **extra):
    record = {"stage": "topology", "node": node, "check": "topology.nvlink", "status": status, "message": "m",
              "metrics": {}, "component": None, "evidence": [], "raw": ["nvidia-smi-topo"], "seconds": 0.5}
    record.update(extra)
    return record


RUN = {"id": "r1", "playbook": "acceptance.yml", "started": "2026-12-01T00:00:00+00:00"}


def test_a_document_validates_and_round_trips_through_its_compact_text():
    raw = {"a": {"nvidia-smi-topo": {"path": "raw/a/nvidia-smi-topo.txt", "rc": 0, "seconds": 0.5, "complete": True}}}
    doc = _results.build_document(RUN, [check("a"), check("b", "fail")], ["a", "b"], raw)
    assert _results.validate(doc) == []
    assert json.loads(_results.dumps(doc)) == doc
    assert doc["verdict"]["failed_nodes"] == ["b"] and doc["run"]["state"] == "complete"
    assert doc["run"]["targets"] == ["a", "b"]


def test_non_finite_numbers_become_null_and_are_named():
    doc = _results.build_document(RUN, [check("a", metrics={"busbw": float("inf"), "t": float("nan"), "ok": 1.5})], ["a"])
    assert doc["checks"][0]["metrics"] == {"ok": 1.5}   # null metrics are left out
    assert "not finite numbers written as null: /checks/0/metrics/busbw" in doc["run"]["warnings"][0]
    assert _results.validate(doc) == []
    assert "NaN" not in _results.dumps(doc) and "Infinity" not in _results.dumps(doc)


def test_the_validator_names_what_breaks_the_contract():
    doc = _results.build_document(RUN, [check("a")], ["a"])
    doc["checks"][0]["status"] = "warn"
    doc["checks"][0]["surprise"] = 1
    doc["checks"][0]["metrics"] = {"x": float("inf")}
    problems = _results.validate(doc)
    assert any("checks/0/metrics/x: not a finite number" in p for p in problems)
    assert any(p.startswith("checks/0: Additional properties") for p in problems)
    assert any(p.startswith("checks/0/status:") for p in problems)
    with pytest.raises(ValueError):
        _results.dumps(doc)


def test_an_unknown_status_from_a_judge_is_written_as_an_error():
    doc = _results.build_document(RUN, [check("a", status="warn")], ["a"])
    assert doc["checks"][0]["status"] == "error" and "unknown status" in doc["checks"][0]["message"]
    assert _results.validate(doc) == []


def test_workload_ranks_and_busbw_curves_come_from_the_judges_checks():
    checks = [check("a"),
              {"stage": "workload", "node": "a", "check": "workload.node", "status": "pass", "message": "a: 2 ranks",
               "metrics": {"ranks": [{"rank": 3, "gpu": "0", "node": "a", "compute_p50_ms": 12.5, "flagged": True},
                                     {"rank": 2, "gpu": "1", "node": "a", "compute_p50_ms": 4.0}]}, "component": "a"},
              {"stage": "workload", "node": "a", "check": "workload.rank", "status": "fail", "message": "slow",
               "metrics": {"rank": 3, "gpu": "0", "compute_p50_ms": 12.5}, "component": "rank 3"},
              {"stage": "nccl_single_node", "node": "a", "check": "nccl.busbw", "status": "pass", "message": "ok",
               "metrics": {"busbw": 400.0, "curve": [[8388608, 100.0], [1073741824, 400.0]]}, "component": None}]
    doc = _results.build_document(RUN, checks, ["a"])
    assert doc["workload"]["ranks"] == [   # a passing rank that nobody flagged says so by saying nothing
        {"rank": 2, "node": "a", "gpu": "1", "compute_p50_ms": 4.0},
        {"rank": 3, "node": "a", "gpu": "0", "compute_p50_ms": 12.5, "status": "fail", "flagged": True}]
    # the rows live once: not in the node's summary check too
    assert "ranks" not in [c for c in doc["checks"] if c["check"] == "workload.node"][0].get("metrics", {})
    assert doc["nccl"]["curves"] == {"a": [[8388608, 100.0], [1073741824, 400.0]]}
    assert "curve" not in [c for c in doc["checks"] if c["check"] == "nccl.busbw"][0]["metrics"]
    assert _results.validate(doc) == []


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "results.json"
    write_atomic(str(path), "one")
    write_atomic(str(path), "two")
    assert path.read_text() == "two"
    assert os.listdir(str(tmp_path)) == ["results.json"]


def test_load_refuses_an_old_or_broken_document(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": 1, "checks": []}))
    doc, problems = _results.load(str(path))
    assert problems and "not a gpucluster.acceptance/results/2 document" in problems[0]
    path.write_text("{truncated")
    assert "cannot be read" in _results.load(str(path))[1][0]
    good = _results.build_document(RUN, [check("a")], ["a"])
    path.write_text(_results.dumps(good))
    assert _results.load(str(path)) == (good, [])


def test_finite_leaves_finite_numbers_alone():
    assert _results.finite({"a": [1, 2.5, {"b": math.pi}]}) == {"a": [1, 2.5, {"b": math.pi}]}


def test_a_document_of_a_run_still_going_never_says_pass():
    """A killed run leaves a 'running' document: what it found so far is no verdict, never a pass."""
    running = _results.build_document(RUN, [check("a")], ["a"], state="running")
    assert running["verdict"]["status"] == "fail" and running["run"]["state"] == "running"
    assert running["verdict"]["message"] == "the run has not finished (state running): no verdict yet; so far all 1 node(s) passed"
    assert _results.validate(running) == []
    done = _results.build_document(RUN, [check("a")], ["a"], state="complete")
    assert done["verdict"]["status"] == "pass" and done["verdict"]["message"] == "all 1 node(s) passed"
    failing = _results.build_document(RUN, [check("a", "fail")], ["a"], state="running")
    assert failing["verdict"]["message"].startswith("1 of 1 node(s) failed acceptance")  # a failure is one already
