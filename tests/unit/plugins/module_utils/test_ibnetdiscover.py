"""parse_ibnetdiscover against real topology files (tests/fixtures/ibnetdiscover, see SOURCES.md)."""
from collections import Counter
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import (
    host_of,
    parse_ibnetdiscover,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "ibnetdiscover"


def fixture(name):
    return (FIXTURES / name).read_text()


def node(nodes, guid):
    return next(n for n in nodes if n["guid"] == guid)


@pytest.fixture(scope="module")
def ndr():
    return parse_ibnetdiscover(fixture("topograph_example_ndr_full.txt"))


def test_ndr_fabric_counts(ndr):
    assert ndr["errors"] == []
    assert len(ndr["switches"]) == 40
    assert len(ndr["hcas"]) == 582
    assert ndr["routers"] == []
    assert len(ndr["leaf_switches"]) == 31
    assert len(ndr["spine_switches"]) == 9
    assert sum(1 for h in ndr["hcas"] if h["aggregation_node"]) == 40
    assert len(ndr["hca_hosts"]) == 542
    assert sum(1 for h in ndr["hca_hosts"].values() if h is None) == 72
    assert ndr["generated"] == "Wed Aug  6 16:11:23 2025"
    assert ndr["initiated_from"] == "0xe09d730300156ff6"
    assert {(l["width"], l["speed"], l["rate"]) for l in ndr["links"]} == {("4x", "NDR", 400)}
    kinds = Counter(l["kind"] for l in ndr["links"])
    assert kinds["switch-hca"] == 582
    assert set(kinds) == {"switch-hca", "switch-switch"}


def test_ndr_first_leaf(ndr):
    leaf = node(ndr["switches"], "0x2c5eab0300b87b40")
    assert leaf["node_id"] == "S-2c5eab0300b87b40"
    assert leaf["name"] == "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"
    assert (leaf["nports"], leaf["lid"], leaf["lmc"], leaf["port0"]) == (65, 73, 0, "enhanced")
    assert (leaf["vendid"], leaf["devid"], leaf["sysimgguid"]) == ("0x2c9", "0xd2f2", "0x2c5eab0300b87b40")
    assert leaf["leaf"] is True and leaf["guid"] in ndr["leaf_switches"]
    first = leaf["ports"][0]
    assert first["port"] == 1
    assert first["peer_guid"] == "0xe09d7303007a4bd8"
    assert first["peer_node_id"] == "H-e09d7303007a4bd8"
    assert first["peer_type"] == "hca"
    assert first["peer_port"] == 1
    assert first["peer_port_guid"] == "0xe09d7303007a4bd8"
    assert first["peer_name"] == "a08-p1-dgx-04-c01 mlx5_5"
    assert first["peer_lid"] == 647
    assert (first["width"], first["speed"], first["rate"]) == ("4x", "NDR", 400)
    uplink = next(p for p in leaf["ports"] if p["port"] == 35)
    assert uplink["peer_type"] == "switch"
    assert uplink["peer_name"] == "MF0;A10-P1-IBSPINE-02:MQM9701/U1"
    assert (uplink["peer_port"], uplink["peer_lid"]) == (32, 236)
    assert uplink["peer_port_guid"] is None


def test_ndr_spine_has_aggregation_node_but_is_a_spine(ndr):
    spine = node(ndr["switches"], "0x2c5eab0300c26280")
    assert spine["name"] == "MF0;A10-P1-IBSPINE-02:MQM9701/U1"
    assert spine["ports"][-1]["peer_name"] == "Mellanox Technologies Aggregation Node"
    assert spine["leaf"] is False and spine["guid"] in ndr["spine_switches"]
    assert all("SPINE" in node(ndr["switches"], g)["name"] for g in ndr["spine_switches"])
    assert all("LEAF" in node(ndr["switches"], g)["name"] for g in ndr["leaf_switches"])


def test_ndr_hca_block(ndr):
    hca = node(ndr["hcas"], "0xe09d7303007a5a68")
    assert hca["name"] == "a08-p1-dgx-04-c17 mlx5_5"
    assert hca["host"] == "a08-p1-dgx-04-c17"
    assert (hca["nports"], hca["lid"], hca["lmc"], hca["devid"]) == (1, 657, 0, "0x1021")
    port = hca["ports"][0]
    assert (port["port"], port["port_guid"], port["lid"], port["lmc"]) == (1, "0xe09d7303007a5a68", 657, 0)
    assert (port["peer_guid"], port["peer_port"], port["peer_lid"]) == ("0x2c5eab0300b87b40", 17, 73)
    assert port["peer_name"] == "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"
    assert ndr["hca_hosts"]["0xe09d7303007a5a68"] == "a08-p1-dgx-04-c17"
    aggregation = node(ndr["hcas"], "0x2c5eab0300b87b50")
    assert aggregation["aggregation_node"] is True and aggregation["host"] is None
    assert "0x2c5eab0300b87b50" not in ndr["hca_hosts"]


def test_ndr_links_are_deduplicated(ndr):
    keys = {((l["a_guid"], l["a_port"]), (l["b_guid"], l["b_port"])) for l in ndr["links"]}
    assert len(keys) == len(ndr["links"])
    port_ends = sum(len(n["ports"]) for n in ndr["switches"] + ndr["hcas"])
    assert port_ends == 2 * len(ndr["links"])
    for link in ndr["links"]:
        assert link["a_type"] == "switch"
    host_link = next(l for l in ndr["links"] if l["b_guid"] == "0xe09d7303007a5a68")
    assert (host_link["a_guid"], host_link["a_port"], host_link["b_port"]) == ("0x2c5eab0300b87b40", 17, 1)
    assert host_link["kind"] == "switch-hca"


def test_man_page_sdr_fabric():
    result = parse_ibnetdiscover(fixture("rdma_core_man_topology_sdr.txt"))
    assert result["errors"] == []
    assert [s["name"] for s in result["switches"]] == ["ISR9024 Voltaire", "SW-6IB4 Voltaire"]
    isr = result["switches"][0]
    assert (isr["nports"], isr["lid"], isr["port0"], isr["vendid"], isr["devid"]) == (24, 6, "base", "0x8f1", "0x5a06")
    assert isr["guid"] == "0x005442ba00003080"
    assert [p["port"] for p in isr["ports"]] == [22, 10, 8, 6, 12]
    assert isr["ports"][0]["peer_port_guid"] == "0x0008f10403961355"
    assert len(result["hcas"]) == 4
    dual = node(result["hcas"], "0x0008f10403960558")
    assert dual["nports"] == 2
    assert [(p["port"], p["lid"], p["lmc"], p["peer_port"]) for p in dual["ports"]] == [(2, 14, 1, 8), (1, 10, 1, 12)]
    assert dual["lid"] == 14
    assert len(result["links"]) == 7
    # Both ends of this cable disagree (1xSDR vs 4xSDR): a warning, and the slower view is kept.
    inter_switch = [l for l in result["links"] if l["kind"] == "switch-switch"]
    assert len(inter_switch) == 2
    slow = next(l for l in inter_switch if {l["a_port"], l["b_port"]} == {1, 10})
    assert (slow["width"], slow["speed"], slow["rate"]) == ("1x", "SDR", 2.5)
    assert any("reports 1xSDR but its peer reports 4xSDR" in w for w in result["warnings"])
    # Default descriptions ("MT23108 InfiniHost Mellanox Technologies"): no host name.
    assert set(result["hca_hosts"].values()) == {None}
    assert sorted(result["leaf_switches"]) == ["0x0008f10400410015", "0x005442ba00003080"]


def test_hdr_excerpt_with_missing_speed_and_missing_blocks():
    result = parse_ibnetdiscover(fixture("topograph_ib_test_hdr_missing_speed.txt"))
    # An excerpt: four switches are named on ports but their blocks were not copied.
    assert result["errors"] == [
        "4 switch(s) seen on ports but with no block of their own (output truncated?): 0x08c0eb0300539a5c, "
        "0x08c0eb0300539a9c, 0x08c0eb03008ccb5c, 0x08c0eb03008ccc3c"]
    spine = result["switches"][0]
    assert spine["name"] == "MF0;IB-ComputeSpine-03:MQM8700/U1"
    assert (spine["nports"], spine["lid"]) == (41, 304)
    silent = spine["ports"][1]
    assert (silent["port"], silent["peer_lid"], silent["width"], silent["speed"], silent["rate"]) == (
        2, 383, None, None, None)
    assert spine["ports"][0]["speed"] == "HDR" and spine["ports"][0]["rate"] == 200
    assert any("no width/speed" in w for w in result["warnings"])
    assert result["hca_hosts"] == {"0x043f720300f4bc9e": "ngcprd10-luna3086"}
    assert result["leaf_switches"] == []
    assert any("has no connected port" in w for w in result["warnings"])


def test_lone_ca_without_ports():
    result = parse_ibnetdiscover(fixture("topograph_example_bad_gb200_lone_ca.txt"))
    assert result["errors"] == []
    assert result["switches"] == [] and result["links"] == []
    assert result["hcas"][0]["name"] == "dgx-gb200-n01-c1 HCA-1"
    assert result["hcas"][0]["devid"] == "0x1021"
    assert result["hca_hosts"] == {"0xb8e92403009ca838": "dgx-gb200-n01-c1"}
    assert any("has no connected port" in w for w in result["warnings"])


def test_handmade_two_leaves_one_spine():
    result = parse_ibnetdiscover(fixture("handmade_two_leaf_one_spine_full.txt"))
    assert result["errors"] == []
    assert result["leaf_switches"] == ["0x2c5eab0300b87b40", "0x2c5eab0300b87bc0"]
    assert result["spine_switches"] == ["0x2c5eab0300c26280"]
    assert result["hca_hosts"] == {
        "0xe09d7303007a4bd8": "gpu001", "0xe09d7303007a4bdc": "gpu001",
        "0xe09d730300859298": "gpu002", "0xe09d73030085929c": "gpu002",
        "0xe09d730300858270": None, "0xe09d730300858a00": "storage01"}
    kinds = Counter(l["kind"] for l in result["links"])
    assert kinds == {"switch-hca": 8, "switch-switch": 4, "hca-hca": 1}
    hdr = next(l for l in result["links"] if l["b_guid"] == "0xe09d730300859298")
    assert (hdr["width"], hdr["speed"], hdr["rate"]) == ("4x", "HDR", 200)
    degraded = [l for l in result["links"] if l["rate"] == 200 and l["speed"] == "NDR"]
    assert len(degraded) == 1 and degraded[0]["width"] == "2x"
    back_to_back = next(l for l in result["links"] if l["kind"] == "hca-hca")
    assert {back_to_back["a_guid"], back_to_back["b_guid"]} == {"0xe09d730300858270", "0xe09d730300858a00"}
    storage = node(result["hcas"], "0xe09d730300858a00")
    assert storage["ports"][0]["peer_port_guid"] == "0xe09d730300858271"
    assert storage["ports"][0]["peer_type"] == "hca"


def test_truncated_output_is_an_error():
    lines = fixture("handmade_two_leaf_one_spine_full.txt").splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith("Ca"))
    result = parse_ibnetdiscover("\n".join(lines[:cut]))
    assert any("hca(s) seen on ports but with no block of their own" in e for e in result["errors"])
    half_line = "\n".join(lines[:12]) + "\n" + lines[12][:25]
    result = parse_ibnetdiscover(half_line)
    assert any("unreadable" in e for e in result["errors"])


def test_grouping_ext_ports_and_router():
    text = (
        "Chassis 1 (guid 0x5442ba00003000)\n\n# Spine Nodes\n"
        "vendid=0x8f1\ndevid=0x5a06\nsysimgguid=0x5442ba00003000\t\t# Chassis 1 (ISR9288) slot 1\n"
        "switchguid=0x5442ba00003080(5442ba00003080)\t# ISR9288/ISR9096 Voltaire sLB-24D\n"
        'Switch\t24 "S-005442ba00003080"\t\t# "ISR9288 Voltaire" base port 0 lid 6 lmc 0\n'
        '[22][ext 3]\t"R-0008f10403961354"[1](8f10403961355) \t\t# "router01" lid 4 4xQDR\n'
        "\nNon-Chassis Nodes\n\nrtguid=0x8f10403961354\n"
        'Rt\t1 "R-0008f10403961354"\t\t# "router01"\n'
        '[1](8f10403961355) \t"S-005442ba00003080"[22][ext 3]\t\t# lid 4 lmc 0 "ISR9288 Voltaire" lid 6 4xQDR\n')
    result = parse_ibnetdiscover(text)
    assert result["errors"] == []
    port = result["switches"][0]["ports"][0]
    assert (port["port"], port["ext_port"], port["peer_type"], port["rate"]) == (22, 3, "router", 40)
    assert result["routers"][0]["ports"][0]["peer_ext_port"] == 3
    assert result["links"][0]["kind"] == "switch-router"
    assert result["spine_switches"] == ["0x005442ba00003080"]


def test_ports_report_is_rejected():
    text = ("CA    44  1 0x0002c9030045e7a1 4x QDR - SW     1 13 0x0008f10400411e1b "
            "( 'node01 HCA-1' - 'ISR9024D Voltaire' )\n")
    result = parse_ibnetdiscover(text)
    assert any("ibnetdiscover -p" in e for e in result["errors"])


@pytest.mark.parametrize("text", ["", "\n\n", "# Topology file: generated on Tue Jun  5 14:15:10 2007\n"])
def test_empty(text):
    result = parse_ibnetdiscover(text)
    assert result["errors"][-1].startswith("no Switch or Ca node found")


def test_iberror_line():
    result = parse_ibnetdiscover("ibwarn: [12] mad_rpc_open_port: can't open UMAD port ((null):0)\n"
                                 "ibnetdiscover: iberror: failed: discover failed\n")
    assert "line 2: ibnetdiscover: iberror: failed: discover failed" in result["errors"]
    assert result["warnings"][0].startswith("line 1: ibwarn")


def test_port_line_before_node_and_mismatched_peer():
    text = ('[1]\t"S-0000000000000002"[1]\t\t# "b" lid 2 4xNDR\n'
            'Switch\t2 "S-0000000000000001"\t\t# "a" enhanced port 0 lid 1 lmc 0\n'
            '[1]\t"S-0000000000000002"[1]\t\t# "b" lid 2 4xNDR\n'
            'Switch\t2 "S-0000000000000002"\t\t# "b" enhanced port 0 lid 2 lmc 0\n'
            '[1]\t"S-0000000000000001"[2]\t\t# "a" lid 1 4xNDR\n')
    result = parse_ibnetdiscover(text)
    assert "line 1: port line before any Switch/Ca line" in result["errors"]
    assert any("says its peer is" in w for w in result["warnings"])


@pytest.mark.parametrize("description, host", [
    ("gpu001 mlx5_0", "gpu001"),
    ("a06-p1-dgx-02-c01 HCA-6", "a06-p1-dgx-02-c01"),
    ("H_32000 HCA-1 (Mellanox HCA)", "H_32000"),
    ("MT4129 ConnectX7   Mellanox Technologies", None),
    ("Mellanox Technologies Aggregation Node", None),
    ("localhost mlx5_0", None),
    ("", None),
    (None, None),
])
def test_host_of(description, host):
    assert host_of(description) == host
