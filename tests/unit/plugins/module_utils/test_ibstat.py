"""parse_ibstat against real ibstat outputs (tests/fixtures/ibstat, see SOURCES.md) and edge cases."""
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "ibstat"


def fixture(name):
    return (FIXTURES / name).read_text()


def ca_by_name(result, name):
    return next(ca for ca in result["cas"] if ca["name"] == name)


def test_a100_spaces_with_ibpanic():
    result = parse_ibstat(fixture("gpud_a100_ibpanic_spaces.txt"))
    assert [ca["name"] for ca in result["cas"]] == ["mlx5_%d" % i for i in range(8)]
    first = result["cas"][0]
    assert first["type"] == "MT4124"
    assert first["nports"] == 1
    assert first["firmware"] == "20.41.1000"
    assert first["hardware_version"] == "0"
    assert first["node_guid"] == "0x00155dfffe3411eb"
    assert first["system_guid"] == "0xb83fd203006e2704"
    port = first["ports"][0]
    assert port["port"] == 1
    assert port["state"] == "Active"
    assert port["physical_state"] == "LinkUp"
    assert port["rate"] == 200
    assert port["lid"] == 13247
    assert port["sm_lid"] == 1
    assert port["lmc"] == 0
    assert port["capability_mask"] == "0xa651ec48"
    assert port["guid"] == "0x00155dfffd3411eb"
    assert port["link_layer"] == "InfiniBand"
    assert result["cas"][7]["ports"][0]["lid"] == 13305
    # The panic: mlx5_8 could not be read, so the list of CAs is incomplete.
    assert len(result["errors"]) == 1
    assert "line 137" in result["errors"][0]
    assert "ibpanic" in result["errors"][0] and "mlx5_8" in result["errors"][0]
    assert result["failed_cas"] == ["mlx5_8"]


def test_h100_roce_tabs_polling_disabled():
    result = parse_ibstat(fixture("gpud_h100_roce_tabs_polling.txt"))
    assert result["errors"] == []
    assert result["warnings"] == []
    assert len(result["cas"]) == 12
    assert {ca["ports"][0]["link_layer"] for ca in result["cas"]} == {"Ethernet"}
    polling = ca_by_name(result, "mlx5_11")["ports"][0]
    assert (polling["state"], polling["physical_state"], polling["rate"]) == ("Down", "Polling", 40)
    disabled = ca_by_name(result, "mlx5_5")["ports"][0]
    assert (disabled["state"], disabled["physical_state"], disabled["rate"]) == ("Down", "Disabled", 40)
    cx7 = ca_by_name(result, "mlx5_0")
    assert cx7["type"] == "MT4129"
    assert cx7["ports"][0]["rate"] == 400
    assert cx7["ports"][0]["guid"] == "0xa288c2fffeadeab8"
    cx6dx = ca_by_name(result, "mlx5_1")
    assert cx6dx["type"] == "MT4125"
    assert cx6dx["ports"][0]["rate"] == 100
    assert cx6dx["ports"][0]["lid"] == 0


def test_h100_infiniband_active_with_bond():
    result = parse_ibstat(fixture("gpud_h100_ib_active_bond_spaces.txt"))
    assert result["errors"] == []
    names = [ca["name"] for ca in result["cas"]]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    ib = [ca for ca in result["cas"] if ca["ports"][0]["link_layer"] == "InfiniBand"]
    assert len(ib) == 8
    assert all(ca["ports"][0]["rate"] == 400 and ca["ports"][0]["state"] == "Active" for ca in ib)
    assert ca_by_name(result, "mlx5_9")["ports"][0]["lid"] == 2015
    bond = ca_by_name(result, "mlx5_bond_0")
    assert bond["type"] == "MT41692"
    assert bond["hardware_version"] == "1"
    assert bond["ports"][0]["link_layer"] == "Ethernet"
    assert bond["ports"][0]["rate"] == 200


def test_mlx4_two_ports_tabs_ibwarn_truncated():
    result = parse_ibstat(fixture("rdma_core_pr847_mlx4_ibwarn_truncated.txt"))
    ca = result["cas"][0]
    assert ca["name"] == "mlx4_0" and ca["type"] == "MT4099" and ca["nports"] == 2
    one, two = ca["ports"]
    assert (one["port"], one["state"], one["physical_state"], one["rate"], one["lid"], one["sm_lid"]) == (
        1, "Down", "Disabled", 10, 38, 13)
    assert (two["port"], two["state"], two["physical_state"], two["rate"]) == (2, "Active", "LinkUp", 56)
    assert two["lid"] is None and two["link_layer"] is None
    # ibwarn lines of `ibstat -d` are noise, not errors; the cut "Base lid:" is an error.
    assert sum("ibwarn" in w for w in result["warnings"]) == 5
    assert result["errors"] == ["line 29: 'Base lid' has no value (output truncated?)"]


def test_flush_left_from_web_page():
    result = parse_ibstat(fixture("advancedclustering_kb_flush_left.txt"))
    # The page's "# ibstat" root prompt is benign capture noise: a warning, not an error.
    assert result["errors"] == [] and result["warnings"] == [
        "line 1: shell prompt or command echo ignored: # ibstat"]
    port = result["cas"][0]["ports"][0]
    assert (port["state"], port["physical_state"], port["rate"], port["lid"], port["link_layer"]) == (
        "Active", "LinkUp", 40, 1, "InfiniBand")


def test_roce_multi_ca_truncated_inside_port():
    result = parse_ibstat(fixture("mooncake_1999_roce_truncated.txt"))
    assert [ca["name"] for ca in result["cas"]] == ["mlx5_0", "mlx5_1", "mlx5_10"]
    assert ca_by_name(result, "mlx5_1")["ports"][0]["rate"] == 200
    assert ca_by_name(result, "mlx5_1")["ports"][0]["link_layer"] == "Ethernet"
    assert ca_by_name(result, "mlx5_1")["system_guid"] == "0x58a2e10300dae626"
    last = ca_by_name(result, "mlx5_10")["ports"][0]
    assert (last["state"], last["physical_state"], last["rate"]) == ("Down", "Disabled", None)
    assert result["errors"] == ["line 43: CA mlx5_10 port 1: no 'Rate' line (output truncated?)"]


def test_cx6dx_roce_100():
    result = parse_ibstat(fixture("l2fwd_nv_6_cx6dx_roce_100.txt"))
    assert result["errors"] == [] and result["warnings"] == []
    assert [(ca["name"], ca["ports"][0]["rate"], ca["ports"][0]["link_layer"]) for ca in result["cas"]] == [
        ("mlx5_0", 100, "Ethernet"), ("mlx5_1", 100, "Ethernet")]


def test_hdr_tabs_truncated_after_ca_header():
    result = parse_ibstat(fixture("lustreperfmon_27_hdr_tabs_truncated.txt"))
    hdr = ca_by_name(result, "mlx5_4")
    assert hdr["type"] == "MT4123"
    assert (hdr["ports"][0]["rate"], hdr["ports"][0]["lid"], hdr["ports"][0]["sm_lid"]) == (200, 90, 2)
    down = ca_by_name(result, "mlx5_2")["ports"][0]
    assert (down["state"], down["physical_state"], down["rate"], down["lid"]) == ("Down", "Disabled", 10, 65535)
    assert result["errors"] == ["line 36: CA mlx5_0 has no Port block (output truncated, or ibstat -s?); "
                                "port state unknown"]


def test_handmade_xdr_states_fdr10_sdr():
    result = parse_ibstat(fixture("handmade_xdr800_states_fdr10.txt"))
    assert result["errors"] == [] and result["warnings"] == []
    xdr = ca_by_name(result, "mlx5_0")
    assert xdr["type"] == "MT4131"
    assert xdr["ports"][0]["rate"] == 800
    assert xdr["ports"][0]["effective_speed"] == 800
    states = [(ca["name"], p["state"], p["physical_state"]) for ca in result["cas"] for p in ca["ports"]]
    assert ("mlx5_1", "Initializing", "LinkUp") in states
    assert ("mlx5_2", "Armed", "LinkUp") in states
    assert ("mlx5_3", "Down", "Sleep") in states
    fdr10, sdr = ca_by_name(result, "mlx4_0")["ports"]
    assert (fdr10["rate"], fdr10["rate_note"]) == (40, "FDR10")
    assert sdr["rate"] == 2.5 and sdr["rate_note"] is None


@pytest.mark.parametrize("rate", [10, 40, 56, 100, 200, 400, 800])
def test_all_rates(rate):
    text = ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
            "\tHardware version: 0\n\tNode GUID: 0x1\n\tSystem image GUID: 0x1\n\tPort 1:\n"
            "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: %d\n\t\tBase lid: 3\n"
            "\t\tLMC: 0\n\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0x1\n"
            "\t\tLink layer: InfiniBand\n" % rate)
    result = parse_ibstat(text)
    assert result["errors"] == []
    assert result["cas"][0]["ports"][0]["rate"] == rate


def test_single_port_form():
    # `ibstat mlx5_0 1` prints "CA: '<name>'" and an unindented port block (ibstat.c, port_dump alone).
    text = ("CA: 'mlx5_0'\nPort 1:\nState: Active\nPhysical state: LinkUp\nRate: 400\nBase lid: 12\nLMC: 0\n"
            "SM lid: 1\nCapability mask: 0xa651e848\nPort GUID: 0x946dae0300a80001\nLink layer: InfiniBand\n")
    result = parse_ibstat(text)
    assert result["errors"] == []
    assert result["cas"][0]["name"] == "mlx5_0"
    assert result["cas"][0]["ports"][0]["rate"] == 400


def test_short_form_without_ports_is_an_error():
    # `ibstat -s` prints no port: the port states are unknown, which must not pass as healthy.
    text = ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
            "\tHardware version: 0\n\tNode GUID: 0x1\n\tSystem image GUID: 0x1\n")
    result = parse_ibstat(text)
    assert result["errors"] == ["line 1: CA mlx5_0 has no Port block (output truncated, or ibstat -s?); "
                                "port state unknown"]


def test_fewer_ports_than_announced():
    text = fixture("rdma_core_pr847_mlx4_ibwarn_truncated.txt").split("\tPort 2:")[0]
    result = parse_ibstat(text)
    assert any("announces 2 port(s) but 1 Port block(s) follow" in e for e in result["errors"])


@pytest.mark.parametrize("text", ["", "\n\n", "   \t  \n"])
def test_empty_output(text):
    result = parse_ibstat(text)
    assert result["cas"] == []
    assert result["errors"][0].startswith("no CA found")


def test_none_input():
    assert parse_ibstat(None)["errors"]


def test_ibpanic_alone():
    result = parse_ibstat("ibpanic: [1234] main: stat of IB device 'mlx5_0' failed: No such file or directory\n")
    assert result["failed_cas"] == ["mlx5_0"]
    assert result["errors"][0] == (
        "line 1: ibpanic: [1234] main: stat of IB device 'mlx5_0' failed: No such file or directory")
    assert any(e.startswith("no CA found") for e in result["errors"])


def test_port_before_ca_and_garbage():
    result = parse_ibstat("Port 1:\nState: Active\nhello world\n")
    assert "line 1: 'Port 1:' before any CA line" in result["errors"]
    assert any("outside the CA/Port block" in e for e in result["errors"])
    assert any("unrecognised line" in w for w in result["warnings"])


def test_non_numeric_rate_and_unknown_state():
    text = "CA 'mlx5_0'\nPort 1:\nState: Sleeping\nPhysical state: LinkUp\nRate: fast\nLink layer: InfiniBand\n"
    result = parse_ibstat(text)
    assert any("'Rate' is not a number" in e for e in result["errors"])
    assert any("unknown State 'Sleeping'" in w for w in result["warnings"])


def test_launcher_prefixes_are_stripped():
    lines = fixture("advancedclustering_kb_flush_left.txt").splitlines()
    tagged = "\n".join("[1,0]<stdout>:" + line for line in lines)
    result = parse_ibstat(tagged)
    assert result["errors"] == []
    assert result["cas"][0]["ports"][0]["rate"] == 40


def test_crlf_line_ends():
    result = parse_ibstat(fixture("l2fwd_nv_6_cx6dx_roce_100.txt").replace("\n", "\r\n"))
    assert result["errors"] == []
    assert result["cas"][1]["ports"][0]["guid"] == "0x0e42a1fffe1dd12b"
