"""The Slurm topology model from the fabric (module_utils/_topology_from_fabric.py), built with build_topology.

Real inputs: the ibnetdiscover fixtures in tests/fixtures/ibnetdiscover/ (see SOURCES.md there).
Made-up fabrics come from tests/integration/slurm/fabric_text.py, which writes ibnetdiscover's
format (layout of the hand-made fixture).
"""
import sys
from pathlib import Path

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import parse_ibnetdiscover
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_fabric import model_from_fabric, switch_names
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_model import build_topology

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "ibnetdiscover"
sys.path.insert(0, str(REPO / "tests" / "integration" / "slurm"))
from fabric_text import ibnetdiscover_text  # noqa: E402  pylint: disable=wrong-import-position,import-error

THREE_LEAVES = {"n01": ["leafA"], "n02": ["leafA"], "n03": ["leafB"], "n04": ["leafB"], "n05": ["leafC"],
                "n06": ["leafC"]}


def fatal(result):
    return [p for p in result["problems"] if p["severity"] == "fatal"]


def codes(result):
    return sorted(set(p["code"] for p in result["problems"]))


# ------------------------------------------------------------------------------- fabric


def test_real_ndr_fabric_rail_groups_under_one_root():
    result = build_topology((FIXTURES / "topograph_example_ndr_full.txt").read_text(), "ibnetdiscover")
    assert not result["fatal"], result["problems"]
    model = result["model"]["switches"]
    leaves = [s for s in model if s.get("nodes")]
    assert len(leaves) == 8 and all(s["name"].startswith("su-") for s in leaves)
    assert len(result["leaf_groups"]["su-A09-P1-IBLEAF-01-03"]) == 4  # four rail leaves per scalable unit
    assert model[-1] == {"name": "root", "switches": [s["name"] for s in leaves]}
    assert result["node_leaf"]["a07-p1-dgx-03-c05"] == "su-A09-P1-IBLEAF-01-03"
    # adapters with the default description cannot be placed: said, not guessed
    assert any("default description" in w for w in result["warnings"])
    # rendering, then reading back, gives the same model (this is what slurmctld reads)
    assert parse_slurm_topology(result["text"])["errors"] == []


def test_real_handmade_fixture_dual_rail_host_is_under_one_switch():
    result = build_topology((FIXTURES / "handmade_two_leaf_one_spine_full.txt").read_text(), "ibnetdiscover")
    assert not result["fatal"]
    assert result["model"]["switches"] == [{"name": "su-sw-leaf01", "nodes": ["gpu001", "gpu002"]}]
    assert result["leaf_groups"] == {"su-sw-leaf01": ["sw-leaf01", "sw-leaf02"]}


def test_fabric_without_host_names_writes_nothing():
    result = build_topology((FIXTURES / "rdma_core_man_topology_sdr.txt").read_text(), "ibnetdiscover")
    assert result["fatal"] and result["text"] == "" and codes(result) == ["empty"]


def test_truncated_fabric_is_fatal():
    text = (FIXTURES / "topograph_ib_test_hdr_missing_speed.txt").read_text()
    result = build_topology(text, "ibnetdiscover")
    assert result["fatal"] and "fabric_parse_error" in codes(result) and result["text"] == ""


def test_three_leaves_one_spine_layer():
    result = build_topology(ibnetdiscover_text(THREE_LEAVES, spines=["s1", "s2"]), "ibnetdiscover",
                            nodes="n[01-06]")
    assert not result["fatal"] and result["problems"] == []
    assert result["text"].splitlines()[1:] == [
        "SwitchName=leafA Nodes=n[01-02]", "SwitchName=leafB Nodes=n[03-04]", "SwitchName=leafC Nodes=n[05-06]",
        "SwitchName=root Switches=leafA,leafB,leafC"]
    assert result["leaves"] == {"leafA": ["n01", "n02"], "leafB": ["n03", "n04"], "leafC": ["n05", "n06"]}


def test_three_levels_make_pods_under_a_root():
    hosts = {"g%02d" % i: ["l%d" % ((i - 1) // 2 + 1)] for i in range(1, 9)}
    text = ibnetdiscover_text(hosts, spines=["s1", "s2"], leaf_spines={"l1": ["s1"], "l2": ["s1"], "l3": ["s2"],
                                                                       "l4": ["s2"]},
                              spine_cores={"s1": ["c1"], "s2": ["c1"]})
    result = build_topology(text, "ibnetdiscover")
    assert not result["fatal"]
    assert result["model"]["switches"][4:] == [
        {"name": "pod-s1", "switches": ["l1", "l2"]},
        {"name": "pod-s2", "switches": ["l3", "l4"]},
        {"name": "root", "switches": ["pod-s1", "pod-s2"]}]


def test_separate_fabrics_get_no_common_root():
    hosts = {"g%02d" % i: ["l%d" % ((i - 1) // 2 + 1)] for i in range(1, 9)}
    text = ibnetdiscover_text(hosts, spines=["s1", "s2"], leaf_spines={"l1": ["s1"], "l2": ["s1"], "l3": ["s2"],
                                                                       "l4": ["s2"]})
    result = build_topology(text, "ibnetdiscover")
    assert any("2 separate fabrics" in w for w in result["warnings"])
    assert {"name": "root", "switches": ["l1", "l2"]} in result["model"]["switches"]
    assert {"name": "root2", "switches": ["l3", "l4"]} in result["model"]["switches"]
    assert "multiple_roots" in codes(result) and not result["fatal"]


def test_rail_optimized_fabric_and_a_missing_rail():
    hosts = {"g%02d" % i: ["r%d-su%d" % (k, (i - 1) // 4 + 1) for k in range(1, 5)] for i in range(1, 9)}
    hosts["g03"] = hosts["g03"][:3]
    result = build_topology(ibnetdiscover_text(hosts, spines=["s1", "s2"]), "ibnetdiscover", nodes="g[01-08]")
    assert not result["fatal"]
    assert result["leaves"] == {"su-r1-su1": ["g01", "g02", "g03", "g04"], "su-r1-su2": ["g05", "g06", "g07", "g08"]}
    assert any(w.startswith("g03 reaches 3 of the 4 leaves of su-r1-su1 (not r4-su1)") for w in result["warnings"])


def test_cluster_nodes_missing_from_the_fabric_are_fatal_and_others_left_out():
    hosts = dict(THREE_LEAVES, storage01=["leafC"])
    result = build_topology(ibnetdiscover_text(hosts), "ibnetdiscover", nodes="n[01-07]")
    assert result["fatal"] and codes(result) == ["node_not_in_topology"] and "n07" in fatal(result)[0]["message"]
    assert any("storage01" in w for w in result["warnings"])
    assert result["text"] == ""


def test_host_map_domains_and_case():
    hosts = {"N01.cluster.local": ["leafA"], "node-two": ["leafA"]}
    result = model_from_fabric(parse_ibnetdiscover(ibnetdiscover_text(hosts)), nodes=["n01", "n02"],
                               host_map={"node-two": "n02"})
    assert result["leaves"] == {"leafA": ["n01", "n02"]}
    kept = model_from_fabric(ibnetdiscover_text(hosts), strip_domain=False)
    assert sorted(kept["node_leaf"]) == ["N01.cluster.local", "node-two"]


def test_switch_names():
    switches = [{"guid": "0x0000000000000001", "name": "MF0;leaf-a:MQM9700/U1"},
                {"guid": "0x0000000000000002", "name": "Mellanox Technologies"},
                {"guid": "0x0000000000000003", "name": "ISR9024 Voltaire"},
                {"guid": "0x00000000000000a4", "name": "MF0;dup:MQM9700/U1"},
                {"guid": "0x00000000000000a5", "name": "MF0;dup:MQM9700/U1"}]
    assert switch_names(switches) == {"0x0000000000000001": "leaf-a", "0x0000000000000002": "sw-0000000000000002",
                                      "0x0000000000000003": "ISR9024_Voltaire",
                                      "0x00000000000000a4": "dup-0000a4", "0x00000000000000a5": "dup-0000a5"}
