"""judge_sdc over real probe outputs (tests/fixtures/sdc): what a pass proves, who a failure names."""
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_sdc import (
    judge_sdc_stage, reference_tolerance)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

PROFILE = load_profile("hgx_h100_sxm")
OPTIONS = {"precisions": ["fp64", "fp32", "tf32", "bf16"], "min_iterations": 20}


def _text(name):
    return (FIXTURES / "sdc" / name).read_text()


def _judge(text, profile=PROFILE, options=None):
    return judge_sdc_stage({"sdc-probe": text}, profile, OPTIONS if options is None else options)


def _bad(checks):
    return [c for c in checks if c["status"] in ("fail", "error")]


def test_healthy_node_passes_and_says_what_it_proved():
    checks, metrics = _judge(_text("gpu004.jsonl"))
    assert _bad(checks) == []
    text = " | ".join(c["message"] for c in checks)
    assert "on 8 GPUs, at least 20 iterations each" in text
    assert "960 results: every result bitwise identical across the node's GPUs and iterations" in text
    assert "48 results within tolerance of the float64 CPU reference" in text
    assert "(simulated device clock)" in text
    assert len(metrics["sdc"]["gpus"]) == 8 and metrics["sdc"]["suspects"] == []


def test_the_odd_gpu_is_named_by_index_and_bus_id():
    checks, metrics = _judge(_text("gpu001.jsonl"))
    (bad,) = [c for c in _bad(checks) if c["check"] == "sdc.consistency"]
    assert bad["component"] == "GPU5 (00000000:AB:00.0)"
    assert "20 of 20 results differ from the result of the other 7 GPUs" in bad["message"]
    assert metrics["sdc"]["suspects"] == ["00000000:AB:00.0"]
    assert {c["component"] for c in _bad(checks)} == {"GPU5 (00000000:AB:00.0)"}


def test_intermittent_corruption_has_its_rate_and_first_iteration():
    checks = _judge(_text("gpu002.jsonl"))[0]
    (bad,) = [c for c in _bad(checks) if c["check"] == "sdc.consistency"]
    assert bad["component"] == "GPU1 (00000000:2A:00.0)"
    for workload in bad["metrics"]["workloads"]:
        assert 0 < workload["rate"] < 0.5 and workload["bad"] < workload["iterations"]
        assert isinstance(workload["first_iteration"], int)


def test_slow_gpu_fails_the_floor_with_what_nvidia_smi_showed():
    checks = _judge(_text("gpu003.jsonl"))[0]
    (bad,) = _bad(checks)
    assert bad["check"] == "sdc.compute" and bad["component"] == "GPU2 (00000000:3A:00.0)"
    assert "below the compute floor of 60 % of the dense peak" in bad["message"]
    assert "SM clock median" in bad["message"] and "nvidia.com" in bad["message"]


def test_probe_on_the_cpu_of_a_gpu_node_tests_nothing():
    checks = _judge(_text("cpu_no_hook.jsonl"), options={"precisions": ["fp32"], "min_iterations": 3})[0]
    setup = [c for c in checks if c["check"] == "sdc.setup"]
    assert [c["status"] for c in setup] == ["error"]
    assert "no GPU was tested" in setup[0]["message"] and setup[0]["component"] == "pytorch"
    assert [c["status"] for c in checks if c["check"] == "sdc.compute"] == ["skip"]


def test_fewer_gpus_or_workloads_than_asked_is_not_a_pass():
    lines = _text("gpu004.jsonl").splitlines()
    kept = [l for l in lines if json.loads(l).get("gpu") != 7]
    checks = _judge("\n".join(kept))[0]
    (coverage,) = [c for c in checks if c["check"] == "sdc.coverage"]
    assert coverage["status"] == "fail" and "tested 7 of the 8 GPUs" in coverage["message"]
    checks = _judge(_text("gpu004.jsonl"), options=dict(OPTIONS, precisions=["fp64", "fp32", "tf32", "bf16", "fp16"]))[0]
    (coverage,) = [c for c in checks if c["check"] == "sdc.coverage"]
    assert coverage["status"] == "fail" and "did not run gemm_fp16" in coverage["message"]


def test_too_few_iterations_is_not_a_pass():
    checks = _judge(_text("gpu004.jsonl"), options=dict(OPTIONS, min_iterations=50))[0]
    (coverage,) = [c for c in checks if c["check"] == "sdc.coverage"]
    assert coverage["status"] == "fail" and "fewer than 50 iterations" in coverage["message"]


def test_killed_probe_is_an_error_beside_its_findings():
    lines = _text("gpu001.jsonl").splitlines()
    checks = _judge("\n".join(l for l in lines if '"done"' not in l))[0]
    assert any(c["check"] == "sdc.parse" and c["status"] == "error" and "did not finish" in c["message"] for c in checks)
    assert any(c["check"] == "sdc.consistency" and c["status"] == "fail" for c in checks)


def test_garbled_line_is_an_error_and_a_foreign_line_a_warning():
    lines = _text("gpu004.jsonl").splitlines()
    text = "\n".join(["[W init.cpp:767] Warning: something from libtorch"] + lines[:3] + ['{"record": "res'] + lines[3:])
    checks = _judge(text)[0]
    parse = [c for c in checks if c["check"] == "sdc.parse"]
    assert sorted(c["status"] for c in parse) == ["error", "pass"]
    assert any(c["message"].startswith("warning:") for c in parse)
    assert [c for c in _bad(checks) if c["check"] != "sdc.parse"] == []


def test_no_output_and_no_header():
    checks = _judge("")[0]
    assert [c["status"] for c in checks] == ["error"]
    checks = _judge('{"record": "done", "iterations": 1, "seconds": 1}')[0]
    assert _bad(checks) and all(c["check"] == "sdc.parse" for c in checks)


def test_nondeterministic_run_cannot_be_compared():
    lines = _text("gpu004.jsonl").splitlines()
    header = json.loads(lines[0])
    header["deterministic"]["use_deterministic_algorithms"] = False
    checks = _judge("\n".join([json.dumps(header)] + lines[1:]))[0]
    assert any(c["check"] == "sdc.setup" and c["status"] == "error" and "deterministic" in c["message"] for c in checks)


@pytest.mark.parametrize("workload,k,expected", [
    ("gemm_fp64", 64, 8 * (2 * 2.0 ** -53 + 8 * 2.0 ** -53)),
    ("gemm_fp32", 8192, 8 * (2 * 2.0 ** -24 + 8192 ** 0.5 * 2.0 ** -24)),
    ("gemm_tf32", 8192, 8 * (2 * 2.0 ** -24 + 2.0 ** -10 + 8192 ** 0.5 * 2.0 ** -24)),
    ("gemm_bf16", 4096, 8 * (2 * 2.0 ** -8 + 64 * 2.0 ** -24)),
    ("elementwise_fp32", 4096, 8 * 4 * 2.0 ** -24),
])
def test_reference_tolerance(workload, k, expected):
    assert reference_tolerance(workload, k) == pytest.approx(expected)


def test_tolerance_orders_precisions_and_grows_with_k():
    for order in (("fp64", "fp32", "tf32", "bf16"), ("fp32", "fp16", "bf16")):
        tols = [reference_tolerance("gemm_" + p, 1024) for p in order]
        assert tols == sorted(tols) and len(set(tols)) == len(tols)
    assert reference_tolerance("gemm_fp32", 16384) > reference_tolerance("gemm_fp32", 1024)
    with pytest.raises(ValueError):
        reference_tolerance("gemm_int8", 10)


def test_reference_error_above_tolerance_fails_and_non_finite_fails():
    lines = _text("gpu004.jsonl").splitlines()
    out = []
    for line in lines:
        rec = json.loads(line)
        if rec.get("record") == "result" and rec["gpu"] == 3 and rec["workload"] == "gemm_bf16":
            rec["reference"]["max_rel_err"] = 0.2
        if rec.get("record") == "result" and rec["gpu"] == 4 and rec["workload"] == "gemm_fp32":
            rec["reference"]["max_rel_err"] = "non-finite"
        out.append(json.dumps(rec))
    checks = _judge("\n".join(out))[0]
    bad = sorted(c["component"] for c in _bad(checks) if c["check"] == "sdc.reference")
    assert bad == ["GPU3 (00000000:5D:00.0)", "GPU4 (00000000:9A:00.0)"]
