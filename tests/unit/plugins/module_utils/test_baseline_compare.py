"""Baselines: recording a run's numbers and comparing later runs with them (hand-made results documents)."""
import copy
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _baseline
from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline import baseline_from_results, robust_cv
from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline_compare import band_for, compare_stage_result, compare_to_baseline

# Single-node busbw per node: a healthy cluster with ~0.5 % spread.
BUSBW = {"gpu001": 470.0, "gpu002": 468.5, "gpu003": 471.2, "gpu004": 469.4, "gpu005": 470.6, "gpu006": 467.9, "gpu007": 470.0}
VERSIONS = {"driver_version": "565.57.01", "vbios_version": "96.00.74.00.01", "nic_firmware": "28.39.2048",
            "dcgm_version": "3.3.9", "nccl_version": "22304"}


def results_doc(busbw=None, run_id="run-1", status=None, dcgm=None, versions=None, fabric=None, workload=None, full=None):
    """A results.json document like the report callback writes, for the given per-node numbers."""
    busbw = dict(BUSBW if busbw is None else busbw)
    status = status or {}
    checks, raw, nodes = [], {}, {}
    for node in sorted(busbw):
        node_status = status.get(node, "pass")
        nodes[node] = {"status": node_status, "stages": {"preflight": "pass", "nccl_single_node": node_status}, "problems": []}
        node_versions = dict(VERSIONS, **((versions or {}).get(node) or {}))
        checks.append({"stage": "preflight", "node": node, "check": "driver_version", "status": "pass",
                       "message": "driver", "metrics": {"found": node_versions["driver_version"]}, "component": None})
        if busbw[node] is not None:
            checks.append({"stage": "nccl_single_node", "node": node, "check": "nccl.busbw", "status": node_status,
                           "message": "busbw", "metrics": {"busbw": busbw[node], "floor": 360, "unit": "GB/s"}, "component": None})
        for field, value in node_versions.items():
            stage = "nccl_single_node" if field == "nccl_version" else "preflight"
            checks.append({"stage": stage, "node": node, "check": "uniform_" + field, "status": "pass", "message": "same",
                           "metrics": {"value": value, "field": field}, "component": node})
        raw[node] = {"all_reduce_perf": {"path": "raw/%s/all_reduce_perf.txt" % node, "rc": 0, "seconds": 1.1, "complete": True}}
        if dcgm and node in dcgm:
            raw[node]["dcgmi-diag"] = {"path": "raw/%s/dcgmi-diag.txt" % node, "rc": 0, "seconds": dcgm[node], "complete": True}
    if full is not None:
        checks.append({"stage": "fabric", "node": None, "check": "full_allocation", "status": "pass", "message": "full",
                       "metrics": {"busbw": full[0], "nodes": full[1]}, "component": None})
    doc = {"schema": 1, "run": {"id": run_id, "playbook": "acceptance.yml", "started": "2026-11-29T10:00:00+00:00"},
           "verdict": "pass" if all(v["status"] == "pass" for v in nodes.values()) else "fail",
           "nodes": nodes, "checks": checks, "raw": raw}
    if fabric is not None:
        doc["fabric"] = fabric
    if workload is not None:
        doc["workload"] = workload
    return doc


def by(checks, node, metric):
    found = [c for c in checks if c["node"] == node and c["check"] == "baseline." + metric]
    assert len(found) == 1, (node, metric, checks)
    return found[0]


@pytest.fixture
def baseline():
    return baseline_from_results(results_doc(dcgm=dict((n, 60.0 + i) for i, n in enumerate(sorted(BUSBW)))),
                                 cluster="hgx-a", created="2026-11-29T10:30:00Z")


# -- recording ----------------------------------------------------------------------------------
def test_record_has_schema_source_nodes_versions_and_spread(baseline):
    assert baseline["schema"] == 1
    assert baseline["created"] == "2026-11-29T10:30:00Z"
    assert baseline["source_run"]["id"] == "run-1" and baseline["source_run"]["verdict"] == "pass"
    assert baseline["cluster"]["name"] == "hgx-a"
    assert baseline["cluster"]["versions"] == VERSIONS
    assert set(baseline["nodes"]) == set(BUSBW)
    gpu007 = baseline["nodes"]["gpu007"]
    assert gpu007["single_node_busbw"] == 470.0 and gpu007["dcgm_seconds"] == 66.0
    assert gpu007["driver_version"] == "565.57.01" and gpu007["nccl_version"] == "22304"
    assert baseline["cluster"]["medians"]["single_node_busbw"] == 470.0
    assert 0 < baseline["spread"]["single_node_busbw"] < 0.01
    assert baseline["spread"]["single_node_busbw"] == pytest.approx(robust_cv(list(BUSBW.values())))
    assert baseline["pairs"] == {} and baseline["full_allocation_busbw"] is None
    json.dumps(baseline)  # a JSON document


def test_record_leaves_out_nodes_that_did_not_pass():
    doc = baseline_from_results(results_doc(status={"gpu003": "fail"}))
    assert "gpu003" not in doc["nodes"]
    assert "fail" in doc["excluded"]["gpu003"]
    assert "gpu003" in baseline_from_results(results_doc(status={"gpu003": "fail"}), include_failed=True)["nodes"]


def test_record_takes_fabric_pairs_full_allocation_and_workload_ranks():
    fabric = {"matrix": {"gpu001": {"gpu002": 45.1, "gpu003": 44.8}, "gpu002": {"gpu001": 45.3}}, "rounds": []}
    workload = {"ranks": {"0": {"node": "gpu001", "gpu": 0, "compute_p50": 101.0},
                          "1": {"node": "gpu001", "gpu": 1, "compute_p50": 103.0},
                          "8": {"node": "gpu002", "gpu": 0, "compute_p50": 99.0}}}
    doc = baseline_from_results(results_doc(fabric=fabric, workload=workload, full=(43.9, 7)))
    assert doc["pairs"] == {"gpu001|gpu002": 45.3, "gpu001|gpu003": 44.8}
    assert doc["full_allocation_busbw"] == 43.9 and doc["full_allocation_nodes"] == 7
    assert doc["nodes"]["gpu001"]["step_p50_ranks"] == {"0": 101.0, "1": 103.0}
    assert doc["nodes"]["gpu001"]["step_p50"] == 102.0
    assert "step_p50" not in doc["nodes"]["gpu003"]


def test_record_from_node_states():
    states = {"gpu001": {"failed_stages": [], "stages": {
        "preflight": {"status": "pass", "metrics": {"driver_version": "565.57.01", "dcgm_version": "3.3.9"}},
        "nccl_single_node": {"status": "pass", "metrics": {"busbw": 466.0, "nccl_version": "22304"}}}},
        "gpu002": None}
    doc = baseline_from_results(states)
    assert doc["nodes"] == {"gpu001": {"single_node_busbw": 466.0, "driver_version": "565.57.01", "dcgm_version": "3.3.9",
                                       "nccl_version": "22304"}}


def test_record_reparses_raw_output_when_no_check_carries_busbw(tmp_path):
    text = open(_fixture("nccl_tests")).read()
    doc = results_doc(busbw={"gpu001": None, "gpu002": 470.0})
    (tmp_path / "raw" / "gpu001").mkdir(parents=True)
    (tmp_path / "raw" / "gpu001" / "all_reduce_perf.txt").write_text(text)
    recorded = baseline_from_results(doc, run_dir=str(tmp_path))
    assert recorded["nodes"]["gpu001"]["single_node_busbw"] > 0


def _fixture(folder):
    import glob
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.join(here, "..", "..", "..", "fixtures", folder)
    for path in sorted(glob.glob(os.path.join(root, "*.txt"))):
        from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
        parsed = parse_nccl_tests(open(path).read())
        if not parsed.get("errors") and parsed.get("large_msg_busbw"):
            return path
    raise AssertionError("no clean nccl-tests fixture under tests/fixtures/%s" % folder)


# -- comparing ----------------------------------------------------------------------------------
def test_ten_percent_drop_on_one_node_fails_with_the_baseline_value(baseline):
    run = results_doc(dict(BUSBW, gpu007=423.0), run_id="run-2")
    checks = compare_to_baseline(run, baseline)
    bad = [c for c in checks if c["status"] in ("fail", "error")]
    assert [(c["node"], c["check"]) for c in bad] == [("gpu007", "baseline.single_node_busbw")]
    message = bad[0]["message"]
    assert message.startswith("gpu007 single-node busbw 423 GB/s is 10.0 % below its baseline 470 GB/s (band ±")
    assert bad[0]["stage"] == "baseline" and bad[0]["component"] == "gpu007"
    assert bad[0]["metrics"]["baseline"] == 470.0 and bad[0]["metrics"]["reference"] == "node"
    assert bad[0]["metrics"]["baseline_run"] == "run-1"
    assert bad[0]["metrics"]["rel_diff"] == pytest.approx(-0.1)
    result = compare_stage_result(run, baseline)
    assert result["stage"] == "baseline" and result["failed_nodes"] == ["gpu007"]


def test_noise_within_the_band_passes(baseline):
    noisy = dict((node, value * factor) for (node, value), factor
                 in zip(sorted(BUSBW.items()), (0.985, 1.01, 0.97, 1.02, 0.99, 0.965, 1.0)))
    checks = compare_to_baseline(results_doc(noisy, dcgm=dict((n, 61.0) for n in BUSBW)), baseline)
    busbw = [c for c in checks if c["check"] == "baseline.single_node_busbw"]
    assert len(busbw) == len(BUSBW) and all(c["status"] == "pass" for c in busbw), busbw
    assert "within ±5.0 % of its baseline" in by(checks, "gpu006", "single_node_busbw")["message"]
    assert all(c["status"] == "pass" for c in checks), [c for c in checks if c["status"] != "pass"]


def test_band_is_k_times_the_baselines_spread_when_that_is_wider(baseline):
    assert band_for("single_node_busbw", baseline, {}) == 0.05
    wide = copy.deepcopy(baseline)
    wide["spread"]["single_node_busbw"] = 0.03
    assert band_for("single_node_busbw", wide, {}) == pytest.approx(0.09)
    assert band_for("single_node_busbw", wide, {"k": 1}) == pytest.approx(0.05)
    run = results_doc(dict(BUSBW, gpu007=470.0 * 0.92))
    assert by(compare_to_baseline(run, wide), "gpu007", "single_node_busbw")["status"] == "pass"
    assert by(compare_to_baseline(run, baseline), "gpu007", "single_node_busbw")["status"] == "fail"
    tight = compare_to_baseline(results_doc(dict(BUSBW, gpu007=470.0 * 0.97)), baseline, {"min_band": 0.02})
    assert by(tight, "gpu007", "single_node_busbw")["status"] == "fail"
    assert "(band ±2.0 %)" in by(tight, "gpu007", "single_node_busbw")["message"]


def test_better_than_the_band_is_a_warning_not_a_failure(baseline):
    check = by(compare_to_baseline(results_doc(dict(BUSBW, gpu001=530.0)), baseline), "gpu001", "single_node_busbw")
    assert check["status"] == "pass" and check["message"].startswith("warning:") and check["metrics"]["warning"]


def test_slower_dcgm_diag_fails_with_the_wider_timing_band(baseline):
    dcgm = dict((n, 60.0 + i) for i, n in enumerate(sorted(BUSBW)))
    checks = compare_to_baseline(results_doc(dcgm=dict(dcgm, gpu002=61.0 * 1.4)), baseline)
    check = by(checks, "gpu002", "dcgm_seconds")
    assert check["status"] == "fail" and "40.0 % above its baseline 61 s" in check["message"]
    assert by(checks, "gpu001", "dcgm_seconds")["status"] == "pass"


def test_new_node_is_compared_with_the_cluster_baseline(baseline):
    busbw = dict(BUSBW)
    del busbw["gpu003"]
    busbw["gpu017"] = 468.0
    checks = compare_to_baseline(results_doc(busbw), baseline)
    check = by(checks, "gpu017", "single_node_busbw")
    assert check["status"] == "pass"
    assert "gpu017 (new since the baseline)" in check["message"]
    assert "the cluster baseline (median of 7 nodes) 470 GB/s" in check["message"]
    assert check["metrics"]["reference"] == "cluster" and check["metrics"]["baseline"] == 470.0
    assert by(checks, "gpu017", "driver_version")["status"] == "pass"
    assert "cluster baseline" in by(checks, "gpu017", "driver_version")["message"]
    assert not [c for c in checks if c["node"] == "gpu003"]  # not in this run: not reported

    slow = compare_to_baseline(results_doc(dict(busbw, gpu017=420.0)), baseline)
    check = by(slow, "gpu017", "single_node_busbw")
    assert check["status"] == "fail"
    assert "new since the baseline" in check["message"] and "below the cluster baseline" in check["message"]


def test_missing_data_is_skipped_with_a_reason_never_passed(baseline):
    run = results_doc(dict(BUSBW, gpu004=None))
    check = by(compare_to_baseline(run, baseline), "gpu004", "single_node_busbw")
    assert check["status"] == "skip" and "no single-node busbw in this run" in check["message"]

    partial = copy.deepcopy(baseline)
    del partial["nodes"]["gpu005"]["single_node_busbw"]
    check = by(compare_to_baseline(results_doc(), partial), "gpu005", "single_node_busbw")
    assert check["status"] == "skip" and "the baseline has no single-node busbw for gpu005" in check["message"]

    # The run measured the DCGM diag time, the baseline never did.
    no_dcgm = baseline_from_results(results_doc())
    check = by(compare_to_baseline(results_doc(dcgm={"gpu001": 60.0}), no_dcgm), "gpu001", "dcgm_seconds")
    assert check["status"] == "skip"
    # The baseline has it, this run does not (the dcgm stage did not run).
    check = by(compare_to_baseline(results_doc(), baseline), "gpu001", "dcgm_seconds")
    assert check["status"] == "skip" and "no DCGM diag time in this run" in check["message"]

    # A metric neither side has (no workload anywhere) gives no check at all.
    assert not [c for c in compare_to_baseline(results_doc(), baseline) if c["check"] == "baseline.step_p50"]


def test_changed_version_warns_by_default_and_fails_when_asked(baseline):
    run = results_doc(versions={"gpu002": {"driver_version": "570.86.10"}})
    check = by(compare_to_baseline(run, baseline), "gpu002", "driver_version")
    assert check["status"] == "pass" and check["message"].startswith("warning: gpu002 driver 570.86.10 differs from its baseline 565.57.01")
    assert by(compare_to_baseline(run, baseline, {"versions": "fail"}), "gpu002", "driver_version")["status"] == "fail"
    assert not [c for c in compare_to_baseline(run, baseline, {"versions": "ignore"}) if c["check"] == "baseline.driver_version"]


def test_pairs_full_allocation_and_workload_step_times():
    fabric = {"matrix": {"gpu001": {"gpu002": 45.0}, "gpu003": {"gpu004": 45.2}, "gpu005": {"gpu006": 44.9}}}
    workload = {"ranks": dict((str(i), {"node": n, "gpu": 0, "compute_p50": 100.0 + i * 0.1}) for i, n in enumerate(sorted(BUSBW)))}
    recorded = baseline_from_results(results_doc(fabric=fabric, workload=workload, full=(44.0, 7)))
    slower = copy.deepcopy(workload)
    slower["ranks"]["6"]["compute_p50"] = 115.0
    fabric2 = {"matrix": {"gpu001": {"gpu002": 38.0}, "gpu003": {"gpu004": 45.0}}}
    result = compare_stage_result(results_doc(fabric=fabric2, workload=slower, full=(43.5, 7)), recorded)
    checks = result["checks"]
    pair = [c for c in checks if c["check"] == "baseline.pair_busbw"]
    assert [(c["component"], c["status"]) for c in pair] == [("gpu001|gpu002", "fail"), ("gpu003|gpu004", "pass")]
    assert pair[0]["node"] is None and "gpu001↔gpu002 pair busbw 38 GB/s is 15.6 % below its baseline 45 GB/s" in pair[0]["message"]
    assert result["failed_cluster_checks"] == ["gpu001|gpu002"]
    full = [c for c in checks if c["check"] == "baseline.full_allocation_busbw"]
    assert len(full) == 1 and full[0]["status"] == "pass" and full[0]["node"] is None
    step = by(checks, "gpu007", "step_p50")
    assert step["status"] == "fail" and "workload step p50 115 ms" in step["message"]
    assert by(checks, "gpu001", "step_p50")["status"] == "pass"
    assert result["failed_nodes"] == ["gpu007"]

    other_size = compare_to_baseline(results_doc(full=(40.0, 4)), recorded)
    full = [c for c in other_size if c["check"] == "baseline.full_allocation_busbw"]
    assert full[0]["status"] == "skip" and "spans 4 nodes, the baseline 7" in full[0]["message"]


def test_compare_from_node_states(baseline):
    states = dict((node, {"failed_stages": [], "stages": {
        "nccl_single_node": {"status": "pass", "metrics": {"busbw": value, "nccl_version": "22304"}}}})
        for node, value in BUSBW.items())
    states["gpu007"]["stages"]["nccl_single_node"]["metrics"]["busbw"] = 420.0
    states["gpu008"] = None
    result = compare_stage_result(states, baseline)
    assert result["failed_nodes"] == ["gpu007"]
    assert "below its baseline 470 GB/s" in by(result["checks"], "gpu007", "single_node_busbw")["message"]


def test_bad_baseline_and_options_are_value_errors(baseline):
    with pytest.raises(ValueError, match="schema"):
        compare_to_baseline(results_doc(), dict(baseline, schema=2))
    with pytest.raises(ValueError, match="dict"):
        compare_to_baseline(results_doc(), "baseline.json")
    with pytest.raises(ValueError, match="versions"):
        compare_to_baseline(results_doc(), baseline, {"versions": "maybe"})
    with pytest.raises(ValueError):
        compare_to_baseline(["not", "a", "run"], baseline)


def test_robust_cv_needs_three_values_and_a_nonzero_median():
    assert robust_cv([1.0, 2.0]) is None
    assert robust_cv([0.0, 0.0, 0.0]) is None
    assert robust_cv([100.0, 100.0, 100.0]) == 0.0
    assert robust_cv([99.0, 100.0, 101.0]) == pytest.approx(_baseline.MAD_SCALE * 1.0 / 100.0)
