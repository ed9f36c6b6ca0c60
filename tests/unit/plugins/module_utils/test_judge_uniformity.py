"""Cluster-wide judges: version uniformity and peer comparison of performance metrics."""
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_uniformity import (
    judge_peers, judge_uniformity)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_q)

from conftest import FIXTURES


def _by_component(results):
    return dict((r["component"], r) for r in results)


# ---------------------------------------------------------------------------------- uniformity

def test_uniformity_majority_and_outlier():
    values = dict(("gpu%03d" % i, "550.54.15") for i in range(1, 17))
    values["gpu007"] = "535.129.03"
    results = _by_component(judge_uniformity(values, "driver"))
    assert results["gpu007"]["status"] == "fail"
    assert results["gpu007"]["message"] == \
        "gpu007 driver 535.129.03 differs from 550.54.15 on 15 of 16 nodes"
    assert results["gpu001"]["status"] == "pass"
    assert results["gpu001"]["message"] == "gpu001 driver 550.54.15 matches 15 of 16 nodes"
    assert results["gpu001"]["check"] == "uniformity.driver"


def test_uniformity_no_majority_fails_everyone_with_distribution():
    values = {"a": "2.21.5", "b": "2.21.5", "c": "2.19.3", "d": "2.19.3"}
    results = judge_uniformity(values, "nccl")
    assert [r["status"] for r in results] == ["fail"] * 4
    assert "no NCCL version is shared by a majority of the 4 nodes" in results[0]["message"]
    assert "2.19.3 on 2 (c and d)" in results[0]["message"]
    assert "2.21.5 on 2 (a and b)" in results[0]["message"]


def test_uniformity_per_device_values():
    values = {
        "n1": {"GPU0": "96.00.89.00.01", "GPU1": "96.00.89.00.01"},
        "n2": {"GPU0": "96.00.89.00.01", "GPU1": "96.00.74.00.0B"},
        "n3": ["96.00.89.00.01", "96.00.89.00.01"],
    }
    results = _by_component(judge_uniformity(values, "vbios"))
    assert results["n2"]["status"] == "fail"
    assert "n2 has mixed VBIOS versions across its devices" in results["n2"]["message"]
    assert "96.00.74.00.0B on GPU1" in results["n2"]["message"]
    assert results["n1"]["status"] == "pass"
    assert results["n3"]["message"] == "n3 VBIOS 96.00.89.00.01 matches 2 of 2 nodes"


def test_uniformity_missing_value_is_error_never_pass():
    results = judge_uniformity({"a": "1", "b": "1", "c": None, "d": ""}, "cuda_version")
    by = _by_component(results)
    assert by["c"]["status"] == "error" and by["d"]["status"] == "error"
    assert by["c"]["message"] == "c reported no CUDA version"
    assert by["a"]["status"] == "pass"


def test_uniformity_partial_device_values():
    results = judge_uniformity({"a": ["1.0", None], "b": ["1.0", "1.0"], "c": "1.0"},
                               "nic_firmware")
    statuses = [(r["component"], r["status"]) for r in results]
    assert ("a", "error") in statuses and ("a", "pass") in statuses


def test_uniformity_from_parsed_nvidia_smi():
    # Real nvidia-smi -q outputs of two driver generations, as two "nodes" plus a third copy.
    h100 = parse_nvidia_smi_q((FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text())
    a100 = parse_nvidia_smi_q(
        (FIXTURES / "nvidia_smi" / "q_a100_sxm4_4gpu_pending_remap_555.txt").read_text())
    drivers = {"gpu001": h100["driver_version"], "gpu002": h100["driver_version"],
               "gpu003": a100["driver_version"]}
    by = _by_component(judge_uniformity(drivers, "driver"))
    assert by["gpu003"]["status"] == "fail"
    assert "differs from %s on 2 of 3 nodes" % h100["driver_version"] in by["gpu003"]["message"]
    vbios = {"gpu001": [g["vbios_version"] for g in h100["gpus"]]}
    assert judge_uniformity(vbios, "vbios")[0]["status"] == "pass"


@given(st.dictionaries(st.sampled_from(["n%d" % i for i in range(12)]),
                       st.sampled_from(["535.129.03", "550.54.15", "560.35.03"]), min_size=1))
def test_uniformity_properties(values):
    results = judge_uniformity(values, "driver")
    assert len(results) == len(values)
    counts = {}
    for value in values.values():
        counts[value] = counts.get(value, 0) + 1
    top, top_count = max(counts.items(), key=lambda kv: kv[1])
    majority = top_count * 2 > len(values)
    for result in results:
        expected = "pass" if majority and values[result["component"]] == top else "fail"
        assert result["status"] == expected


# --------------------------------------------------------------------------------------- peers

def test_peers_message_and_statuses():
    values = dict(("gpu%03d" % i, 386.0 + (i % 5) - 2) for i in range(1, 17))
    values["gpu017"] = 301.0
    results = _by_component(judge_peers(values, "nccl.peers", "single-node busbw", "GB/s"))
    assert results["gpu017"]["status"] == "fail"
    assert results["gpu017"]["message"] == \
        "gpu017 single-node busbw 301 GB/s is 22 % below the cluster median 386 GB/s"
    assert results["gpu001"]["status"] == "pass"
    assert results["gpu017"]["metrics"]["median"] == 386.0


def test_peers_above_floor_still_fails():
    # 420 GB/s clears a 360 floor but is 12 % below peers at ~478 (NVLS on).
    values = dict(("n%02d" % i, 478.0 + (i % 3)) for i in range(10))
    values["slow"] = 420.0
    results = _by_component(judge_peers(values, "nccl.peers", "single-node busbw", "GB/s"))
    assert results["slow"]["status"] == "fail"


def test_peers_missing_values_and_small_cluster():
    results = _by_component(judge_peers({"a": 1.0, "b": None}, "x.peers", "metric"))
    assert results["b"]["status"] == "error"
    assert results["a"]["status"] == "skip"
    assert "needs at least 3 nodes" in results["a"]["message"]


def test_peers_high_is_bad():
    values = {"a": 2.0, "b": 2.1, "c": 1.9, "d": 2.0, "e": 9.0}
    results = _by_component(judge_peers(values, "ib.latency_peers", "latency", "us",
                                        low_is_bad=False))
    assert results["e"]["status"] == "fail"
    assert "above the cluster median" in results["e"]["message"]
