"""``scontrol show topology`` in its topology/block form (real pasted outputs, every version's
layout) and a running slurmctld's blocks checked against the measured NVLink domains."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_nvlink import validate_blocks
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    parse_scontrol_show_topology, shown_blocks)

from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "slurm_topology"


def read(name):
    return (FIXTURES / name).read_text()


def test_two_gb200_racks_as_slurm_24_11_prints_them():
    shown = parse_scontrol_show_topology(read("scontrol_show_topology_block_gb200_2411.txt"))
    assert shown["errors"] == [] and shown["warnings"] == [] and shown["switches"] == []
    assert [(b["name"], b["index"], b["size"], len(b["nodes"])) for b in shown["blocks"]] == [
        ("block01", 0, 18, 18), ("block02", 1, 18, 18)]
    assert shown["blocks"][1]["nodes"][0] == "node0019"


def test_aggregated_levels_are_read_and_left_out_of_the_base_blocks():
    shown = parse_scontrol_show_topology(read("scontrol_show_topology_block_aggregated_gb300.txt"))
    assert [b["aggregated"] for b in shown["blocks"]] == [False, False, True]
    assert shown["blocks"][2]["name"] == "gb300_b[0-1]" and shown["blocks"][2]["size"] == 4
    assert shown_blocks(shown) == {"gb300_b0": ["10.140.71.103", "10.140.88.115"],
                                   "gb300_b1": ["10.140.79.152", "10.140.93.120"]}


def test_before_24_11_there_is_no_block_size():
    (block,) = parse_scontrol_show_topology(read("scontrol_show_topology_block_2405_no_blocksize.txt"))["blocks"]
    assert block["size"] is None and block["nodes"] == ["sched-worker1", "sched-worker2"]


def test_an_empty_block_and_a_garbled_hostlist():
    shown = parse_scontrol_show_topology("BlockName=b1 BlockIndex=0 BlockSize=18\nBlockName=b2 BlockIndex=1 Nodes=gpu[1-\n")
    assert shown["blocks"][0]["nodes"] == [] and shown["errors"] and "line 2" in shown["errors"][0]


def _results(domains):
    rows = [{"domain": d, "trays": len(t), "trays_passed": len(t), "gpus_passed": 4 * len(t), "passed": t,
             "failed": [], "full": True} for d, t in domains.items()]
    return {"nvlink_domains": {"domain_trays": 18, "gpus_per_tray": 4, "domains": rows, "full_domains": len(rows),
                               "tp_groups": {}, "outside": [], "statement": ""}}


def test_slurmctlds_blocks_are_checked_against_the_measured_domains():
    racks = {"uuid-a.32766": ["node%04d" % i for i in range(1, 19)], "uuid-b.32766": ["node%04d" % i for i in range(19, 37)]}
    right = validate_blocks(read("scontrol_show_topology_block_gb200_2411.txt"), _results(racks))
    assert right["ok"] and right["problems"] == []
    racks["uuid-a.32766"][0], racks["uuid-b.32766"][0] = "node0019", "node0001"   # two trays swapped
    swapped = validate_blocks(read("scontrol_show_topology_block_gb200_2411.txt"), _results(racks))
    assert not swapped["ok"]
    assert sorted(m["node"] for m in swapped["misplaced"]) == ["node0001", "node0019"]


def test_scontrol_without_blocks_is_a_problem_not_a_pass():
    found = validate_blocks("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu[1-2] BlockIndex=0\n", _results({"a.1": ["gpu1"]}))
    assert not found["ok"] and "printed no BlockName= line" in found["problems"][0]


def test_a_block_whose_domain_measured_no_nvlink_bandwidth_is_named():
    racks = {"uuid-a.32766": ["node%04d" % i for i in range(1, 19)], "uuid-b.32766": ["node%04d" % i for i in range(19, 37)]}
    results = _results(racks)
    results["nvlink_domains"]["mnnvl"] = [
        {"domain": "uuid-a.32766", "label": "nvl01", "status": "pass", "busbw": 681.2, "ib_busbw": 175.0, "floor": 580.0,
         "fell_back": False, "rack_fault": False, "slow_trays": [], "rounds": 3},
        {"domain": "uuid-b.32766", "label": "nvl02", "status": "fail", "busbw": 176.4, "ib_busbw": 175.0, "floor": 580.0,
         "fell_back": True, "rack_fault": False, "slow_trays": [], "rounds": 3}]
    found = validate_blocks(read("scontrol_show_topology_block_gb200_2411.txt"), results)
    assert not found["ok"] and [s["block"] for s in found["slow"]] == ["block02"]
    assert "measured 176.4 GB/s over multi-node NVLink, fell back to InfiniBand" in found["messages"][0]
