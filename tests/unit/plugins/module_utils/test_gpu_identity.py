# -*- coding: utf-8 -*-
"""GPU identity: a missing GPU is named by PCI bus id and slot, never by nvidia-smi's renumbered
index; the tools that list GPUs are cross-checked across stages (gpu.identity)."""

import copy

from ansible_collections.gpucluster.acceptance.plugins.module_utils._cluster import (
    judge_cluster, judge_gpu_identity)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    judge_gpu_health, judge_gpu_health_stage, name_missing, profile_layout)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_topology import (
    judge_topology_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import parse_nvidia_smi_q
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
H200 = load_profile("hgx_h200")  # no known layout
Q_TEXT = (FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text()
BUSES = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
         "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]


def without_gpu(bus):
    """The -q report of a node whose GPU at bus fell off: its section gone, 7 attached."""
    start = Q_TEXT.index("GPU %s\n" % bus)
    following = [Q_TEXT.index("GPU %s\n" % b) for b in BUSES if Q_TEXT.index("GPU %s\n" % b) > start]
    end = min(following) if following else len(Q_TEXT)
    return Q_TEXT[:start].replace("Attached GPUs                             : 8",
                                  "Attached GPUs                             : 7") + Q_TEXT[end:]


def count_check(results):
    (check,) = [r for r in results if r["check"] == "gpu.count"]
    return check


def test_missing_gpu_is_named_by_bus_id_and_slot_not_by_renumbered_index():
    results = judge_gpu_health(parse_nvidia_smi_q(without_gpu("00000000:AB:00.0")), None, None, H100)
    check = count_check(results)
    assert check["status"] == "fail"
    assert check["message"] == ("nvidia-smi -q shows 7 GPUs, expected 8; missing 00000000:AB:00.0 (slot 5 of "
                                "the hgx_h100_sxm layout)")
    assert "GPU7" not in check["message"]
    assert check["metrics"]["missing"] == [{"slot": 5, "bus_id": "00000000:AB:00.0"}]
    assert check["evidence"][0] == "Attached GPUs : 7" or check["evidence"][0].startswith("Attached GPUs")
    assert "GPU 00000000:BA:00.0" in check["evidence"]


def test_without_a_layout_the_present_bus_ids_are_listed_and_the_missing_one_is_not_named():
    profile = copy.deepcopy(H100)
    profile["gpu_bus_ids"] = None
    check = count_check(judge_gpu_health(parse_nvidia_smi_q(without_gpu("00000000:AB:00.0")), None, None, profile))
    assert check["status"] == "fail"
    assert "present: 00000000:18:00.0, " in check["message"]
    assert "cannot be named: the profile has no GPU bus-id layout (gpu_bus_ids)" in check["message"]
    assert "gpu.identity" in check["message"]


def test_a_board_that_is_not_the_layout_is_not_named_from_it():
    text = without_gpu("00000000:AB:00.0").replace("00000000:18:00.0", "00000000:19:00.0")
    check = count_check(judge_gpu_health(parse_nvidia_smi_q(text), None, None, H100))
    assert "cannot be named: its GPUs are not that layout (00000000:19:00.0 is not in it)" in check["message"]
    full = count_check(judge_gpu_health(parse_nvidia_smi_q(Q_TEXT.replace("00000000:18:00.0", "00000000:19:00.0")),
                                        None, None, H100))
    assert full["status"] == "pass" and full["metrics"]["warning"]
    assert "not the hgx_h100_sxm layout" in full["message"]


def test_layout_slots_with_no_known_bus_id():
    layout = profile_layout({"gpu_bus_ids": ["18:00.0", None, "0000:3a:00"]})
    assert layout == ["00000000:18:00.0", None, "00000000:3A:00.0"]
    assert name_missing(["00000000:18:00.0"], layout, 3) == {
        "missing": [(2, "00000000:3A:00.0")], "unnamed": 1, "reason": None}
    assert profile_layout({"gpu_bus_ids": None}) is None and profile_layout({}) is None


def test_the_gpu_health_and_topology_stages_record_what_their_tools_saw():
    _checks, metrics = judge_gpu_health_stage({"nvidia-smi-q": Q_TEXT, "nvidia-smi-csv": None, "dmesg": None},
                                              H100, {})
    assert metrics["gpu_count"] == 8 and metrics["gpu_bus_ids"] == BUSES
    assert metrics["gpu_uuids"][0] == "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1"
    assert set(metrics["gpu_identity"]) == {"nvidia-smi-q"}
    topo = (FIXTURES / "nvidia_topo" / "dgx_a100_7of8_gpus_handmade.txt").read_text()
    _checks, metrics = judge_topology_stage({"nvidia-smi-topo": topo}, H100, {})
    assert metrics["gpu_count"] == 7
    # and, for the RDMA pair stage, the GPU nearest each NIC
    assert metrics["nic_gpu"]["mlx5_0"] == {"gpu": 0, "relation": "PXB"}
    assert metrics["nic_gpu"]["mlx5_2"]["gpu"] == 2


# ---------------------------------------------------------------------------- cluster-wide ----

def state(q_buses=None, list_count=8, topo=8, dcgm=None, csv_buses=None):
    q_buses = BUSES if q_buses is None else q_buses
    stages = {
        "preflight": {"status": "pass", "metrics": {"gpu_identity": {
            "nvidia-smi-list": {"count": list_count, "bus_ids": None, "uuids": None},
            "nvidia-smi-versions": {"count": len(csv_buses or q_buses), "bus_ids": list(csv_buses or q_buses)}}}},
        "gpu_health": {"status": "pass", "metrics": {"gpu_identity": {
            "nvidia-smi-q": {"count": len(q_buses), "bus_ids": list(q_buses)}}}},
        "topology": {"status": "pass", "metrics": {"gpu_count": topo}},
    }
    if dcgm is not None:
        stages["dcgm"] = {"status": "pass", "metrics": {"gpu_count": len(dcgm), "gpu_ids": dcgm}}
    return {"stages": stages, "failed_stages": []}


def identity_checks(states, profile=H100):
    return dict(((c["node"], r["stage"]), c) for r in judge_gpu_identity(states, profile) for c in r["checks"])


def test_tools_that_agree_pass():
    checks = identity_checks({"gpu001": state(dcgm=list(range(8)))})
    (check,) = checks.values()
    assert check["status"] == "pass" and check["stage"] == "gpu_health"
    assert check["message"].startswith("gpu001: nvidia-smi -L (preflight), ") and "agree on 8 GPUs" in check["message"]
    assert "dcgmi diag (dcgm): 8 GPUs (ids 0,1,2,3,4,5,6,7)" in check["evidence"]


def test_the_disagreeing_tool_fails_its_stage_naming_which_tool_saw_which_gpus():
    checks = identity_checks({"gpu004": state(dcgm=[0, 1, 2, 3, 4, 5, 6])})
    check = checks[("gpu004", "dcgm")]
    assert check["status"] == "fail" and check["component"] == "gpu004"
    assert check["message"].startswith("gpu004: the GPU-listing tools disagree: dcgmi diag (dcgm): 7 GPUs "
                                       "(ids 0,1,2,3,4,5,6); the other tools see 8 GPUs (")
    assert "nvidia-smi -q (gpu_health): 8 GPUs (00000000:18:00.0" in check["message"]
    assert len(checks) == 1


def test_a_bus_id_seen_by_one_tool_only_is_named():
    other = BUSES[:5] + ["00000000:AC:00.0"] + BUSES[6:]
    checks = identity_checks({"gpu002": state(csv_buses=other)})
    check = checks[("gpu002", "preflight")]
    assert check["status"] == "fail"
    assert "missing from nvidia-smi --query-gpu (preflight): 00000000:AB:00.0" in check["message"]


def test_peers_layout_names_the_missing_gpu_when_the_profile_has_none():
    seven = [b for b in BUSES if b != "00000000:AB:00.0"]
    states = dict(("gpu%03d" % i, state()) for i in range(1, 5))
    states["gpu005"] = state(q_buses=seven, list_count=7, topo=7)
    checks = identity_checks(states, H200)
    check = checks[("gpu005", "gpu_health")]
    assert check["status"] == "fail"
    assert check["message"] == ("gpu005 shows 7 GPUs where most of its peers show 8: missing 00000000:AB:00.0 "
                                "(slot 5 of the peers' layout)")
    assert all(checks[("gpu%03d" % i, "gpu_health")]["status"] == "pass" for i in range(1, 5))
    # With the profile's layout, gpu_health already names it: no second failure here.
    assert identity_checks(states, H100)[("gpu005", "gpu_health")]["status"] == "pass"


def test_without_peers_or_layout_nothing_is_named():
    seven = [b for b in BUSES if b != "00000000:AB:00.0"]
    checks = identity_checks({"gpu001": state(q_buses=seven, list_count=7, topo=7), "gpu002": state()}, H200)
    assert checks[("gpu001", "gpu_health")]["status"] == "pass"  # its tools agree; too few peers


def test_judge_cluster_includes_gpu_identity():
    results = judge_cluster({"gpu001": state(), "gpu002": state(topo=7), "gpu003": None}, H100)
    identity = [r for r in results if any(c["check"] == "gpu.identity" for c in r["checks"])]
    assert {r["stage"] for r in identity} == {"gpu_health", "topology"}
    topology = [r for r in identity if r["stage"] == "topology"][0]
    assert topology["failed_nodes"] == ["gpu002"]
