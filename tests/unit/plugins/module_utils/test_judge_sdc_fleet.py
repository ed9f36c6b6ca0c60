"""judge_sdc_fleet: every GPU against all GPUs of the same part and software in the run."""
import copy

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_sdc import judge_sdc_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_sdc_fleet import judge_sdc_fleet
from ansible_collections.gpucluster.acceptance.plugins.module_utils._cluster import judge_cluster
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

PROFILE = load_profile("hgx_h100_sxm")
OPTIONS = {"precisions": ["fp64", "fp32", "tf32", "bf16"], "min_iterations": 20}


def _metrics(name):
    _checks, metrics = judge_sdc_stage({"sdc-probe": (FIXTURES / "sdc" / name).read_text()}, PROFILE, OPTIONS)
    return metrics


def _state(metrics):
    return {"stages": {"sdc": {"status": "pass", "metrics": copy.deepcopy(metrics)}}}


def _bad(checks):
    return sorted((c["check"], c["component"], c["status"]) for c in checks if c["status"] in ("fail", "error"))


def _many_nodes(count):
    """count copies of the healthy node (the same part, software and inputs)."""
    healthy = _metrics("gpu004.jsonl")
    return dict(("gpu%03d" % i, _state(healthy)) for i in range(1, count + 1))


def test_odd_gpu_among_many_nodes_is_found():
    states = _many_nodes(64)
    gpus = states["gpu037"]["stages"]["sdc"]["metrics"]["sdc"]["gpus"]
    gpus["00000000:9A:00.0"]["checksum"]["gemm_bf16"] = "0" * 32  # one GPU of 512, one workload
    checks = judge_sdc_fleet(states, PROFILE)
    assert _bad(checks) == [("sdc.fleet_consistency", "gpu037", "fail")]
    (bad,) = [c for c in checks if c["status"] == "fail"]
    assert "gpu037 GPU4 (00000000:9A:00.0)" in bad["message"] and "gemm_bf16" in bad["message"]


def test_a_whole_node_agreeing_on_a_wrong_answer_is_found_by_the_fleet():
    states = _many_nodes(8)
    for entry in states["gpu002"]["stages"]["sdc"]["metrics"]["sdc"]["gpus"].values():
        entry["checksum"]["gemm_fp64"] = "f" * 32
    checks = judge_sdc_fleet(states, PROFILE)
    bad = [c for c in checks if c["status"] == "fail"]
    assert len(bad) == 8 and {c["component"] for c in bad} == {"gpu002"}


def test_a_gpu_its_node_named_is_not_named_twice():
    states = _many_nodes(4)
    states["gpu001"] = _state(_metrics("gpu001.jsonl"))  # GPU5 corrupt, named by sdc.consistency
    checks = judge_sdc_fleet(states, PROFILE)
    assert [c for c in checks if c["check"] == "sdc.fleet_consistency"] == []


def test_no_majority_is_an_error_not_a_guess():
    healthy = _metrics("gpu004.jsonl")
    states = {"gpu001": _state(healthy), "gpu002": _state(healthy)}
    for name in ("gpu001", "gpu002"):
        gpus = states[name]["stages"]["sdc"]["metrics"]["sdc"]["gpus"]
        for i, entry in enumerate(sorted(gpus)):
            gpus[entry]["checksum"]["reduce_fp32"] = ("%032x" % i) if name == "gpu002" else "a" * 32
    checks = judge_sdc_fleet(states, PROFILE)
    assert ("sdc.fleet_consistency", "gpu001", "error") in _bad(checks)


def test_other_software_is_another_group():
    states = _many_nodes(4)
    other = states["gpu004"]["stages"]["sdc"]["metrics"]["sdc"]
    other["software"] = other["software"].replace("torch ", "torch 9.9-")
    for entry in other["gpus"].values():
        entry["checksum"]["gemm_fp32"] = "e" * 32  # a different library may round differently
    assert _bad(judge_sdc_fleet(states, PROFILE)) == []


def test_slow_gpu_is_named_by_the_peers_and_healthy_nodes_pass():
    states = _many_nodes(3)
    states["gpu003"] = _state(_metrics("gpu003.jsonl"))
    checks = judge_sdc_fleet(states, PROFILE)
    assert _bad(checks) == [("sdc.peers", "gpu003", "fail")]
    (bad,) = [c for c in checks if c["status"] == "fail"]
    assert "GPU2 (00000000:3A:00.0)" in bad["message"] and "25 % below the median" in bad["message"]
    assert sorted(c["component"] for c in checks if c["status"] == "pass") == ["gpu001", "gpu002"]


def test_judge_cluster_reports_them_as_the_sdc_stage_of_the_node():
    states = _many_nodes(3)
    states["gpu003"] = _state(_metrics("gpu003.jsonl"))
    (result,) = [r for r in judge_cluster(states, PROFILE) if r["stage"] == "sdc"]
    assert result["failed_nodes"] == ["gpu003"]
    assert all(c["stage"] == "sdc" and c["node"] == c["component"] for c in result["checks"])


def test_no_sdc_stage_no_checks():
    assert judge_sdc_fleet({"gpu001": {"stages": {}}, "gpu002": None}, PROFILE) == []
