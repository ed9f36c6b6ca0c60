"""nvlink_domain: trays grouped by the NVLink domain their GPUs registered in, judged as racks."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._cluster import judge_cluster
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import judge_nvlink_domains
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

GB200 = load_profile("gb200_nvl72_tray")
SMALL = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"domain_trays": 4}})
RACK_A, RACK_B = "69abe9b3-39ab-5ecc-8a2f-8acf3b726ffa", "0f1e2d3c-4b5a-5968-8776-a5b4c3d2e1f0"


def tray(domain, failed=(), stages_failed=()):
    """A node state as judge_stage leaves it: gpu_health's metrics and every stage's status."""
    metrics = {"nvlink_domain": domain} if domain else {}
    if failed:
        metrics["failed_checks"] = list(failed)
    stages = {"gpu_health": {"status": "fail" if failed else "pass", "metrics": metrics},
              "dcgm": {"status": "fail" if "dcgm" in stages_failed else "pass", "metrics": {}}}
    bad = [s for s, v in stages.items() if v["status"] == "fail"]
    return {"stages": stages, "failed_stages": bad}


def racks(trays_a, trays_b, start=1):
    states = {}
    for i in range(trays_a + trays_b):
        states["gpu%03d" % (i + start)] = tray("%s.32766" % (RACK_A if i < trays_a else RACK_B))
    return states


def test_two_full_racks_pass_with_their_capacity_stated():
    result = judge_nvlink_domains(racks(4, 4), SMALL)
    (check,) = result["checks"]
    assert check["check"] == "nvlink_domain.capacity" and check["status"] == "pass"
    assert check["message"] == ("2 NVLink domain(s) (8 trays, 32 GPUs): 2 full (4 trays each, all passing); tensor-parallel groups that fit "
                                "in a domain: TP4: 8, TP8: 4, TP16: 2")
    doc = result["document"]
    assert doc["full_domains"] == 2 and [r["trays_passed"] for r in doc["domains"]] == [4, 4]
    assert result["failed_nodes"] == []


def test_a_tray_in_another_clique_of_its_rack_is_named_misplaced():
    states = racks(4, 4)
    states["gpu003"] = tray("%s.4027" % RACK_A)
    result = judge_nvlink_domains(states, SMALL)
    (misplaced,) = [c for c in result["checks"] if c["check"] == "nvlink_domain.membership"]
    assert misplaced["status"] == "fail" and misplaced["node"] == "gpu003"
    assert misplaced["message"].startswith("gpu003 is in NVLink clique 4027 of cluster %s while 3 tray(s)" % RACK_A)
    assert result["failed_nodes"] == ["gpu003"]
    sizes = [c for c in result["checks"] if c["check"] == "nvlink_domain.size"]
    assert len(sizes) == 2 and all(c["metrics"]["warning"] for c in sizes)  # 3 of 4, 1 of 4: partial


def test_more_trays_than_a_rack_holds_is_a_failure():
    states = racks(5, 3)  # five trays report rack A's clique: one of them is cabled to another rack's fabric
    (size,) = [c for c in judge_nvlink_domains(states, SMALL)["checks"] if c["check"] == "nvlink_domain.size"
               and c["status"] == "fail"]
    assert "holds 5 trays, one rack holds 4" in size["message"]


def test_a_rack_whose_every_tray_fails_the_same_check_is_one_rack_level_fault():
    states = racks(4, 4)
    for node in ("gpu005", "gpu006", "gpu007", "gpu008"):
        states[node] = tray("%s.32766" % RACK_B, failed=["gpu.fabric"])
    result = judge_nvlink_domains(states, SMALL)
    (rack,) = [c for c in result["checks"] if c["check"] == "nvlink_domain.rack"]
    assert rack["node"] is None and rack["metrics"]["nodes"] == ["gpu005", "gpu006", "gpu007", "gpu008"]
    assert rack["message"].startswith("all 4 trays of NVLink domain %s.32766 fail gpu.fabric: a rack-level fault" % RACK_B)
    capacity = result["checks"][-1]["message"]
    assert "1 full (4 trays each, all passing); %s.32766 with 0 of its 4 trays passing" % RACK_B in capacity
    # one tray failing on its own is a tray fault, not a rack's
    states = racks(4, 4)
    states["gpu005"] = tray("%s.32766" % RACK_B, failed=["gpu.fabric"])
    assert not [c for c in judge_nvlink_domains(states, SMALL)["checks"] if c["check"] == "nvlink_domain.rack"]


def test_trays_in_no_domain_are_counted_apart_and_a_whole_rack_of_them_is_one_fault():
    states = racks(4, 0)
    for i in range(5, 9):
        states["gpu%03d" % i] = tray(None, failed=["gpu.fabric"])
    result = judge_nvlink_domains(states, SMALL)
    assert result["document"]["outside"] == ["gpu005", "gpu006", "gpu007", "gpu008"]
    (rack,) = [c for c in result["checks"] if c["check"] == "nvlink_domain.rack"]
    assert "all 4 trays registered in no NVLink domain fail gpu.fabric" in rack["message"]
    assert result["checks"][-1]["message"].endswith("; 4 tray(s) in no domain (gpu005, gpu006, gpu007 and gpu008)")


def test_a_tray_failing_another_stage_is_not_usable_capacity():
    states = racks(18, 0)
    states["gpu002"] = tray("%s.32766" % RACK_A, stages_failed=["dcgm"])
    doc = judge_nvlink_domains(states, GB200)["document"]
    (row,) = doc["domains"]
    assert (row["trays_passed"], row["gpus_passed"], row["full"], row["failed"]) == (17, 68, False, ["gpu002"])
    assert doc["tp_groups"] == {"4": 17, "8": 8, "16": 4, "32": 2, "64": 1, "72": 0}


def test_off_rack_profiles_there_is_no_domain_stage():
    assert judge_nvlink_domains(racks(2, 0), load_profile("hgx_h100_sxm")) is None
    assert not [r for r in judge_cluster(racks(2, 0), load_profile("hgx_h100_sxm")) if r["stage"] == "nvlink_domain"]
    assert [r["stage"] for r in judge_cluster(racks(4, 4), SMALL)][-1] == "nvlink_domain"


def test_a_degraded_imex_domain_fails_once_for_the_domain_naming_the_node_and_the_silent_tray():
    states = racks(4, 0)
    seen = {"state": "DEGRADED", "nodes": 4, "not_ready": ["#1 172.31.48.11 UNAVAILABLE"], "bad_cells": 7}
    for node in ("gpu001", "gpu003", "gpu004"):
        states[node]["stages"]["gpu_health"]["metrics"]["imex"] = seen
    states["gpu002"] = tray("%s.32766" % RACK_A, failed=["gpu.imex"])  # its own daemon: no answer
    result = judge_nvlink_domains(states, SMALL)
    (imex,) = [c for c in result["checks"] if c["check"] == "nvlink_domain.imex"]
    assert imex["status"] == "fail" and imex["node"] is None
    assert imex["message"] == ("NVLink domain %s.32766: 3 tray(s) see the IMEX domain DEGRADED, not READY: #1 "
                               "172.31.48.11 UNAVAILABLE; the IMEX daemon of gpu002 does not answer: multi-node NVLink "
                               "memory sharing (NCCL MNNVL) fails across the domain" % RACK_A)
    assert not [c for c in result["checks"] if c["check"] == "nvlink_domain.rack"]  # one tray's daemon, not the rack
