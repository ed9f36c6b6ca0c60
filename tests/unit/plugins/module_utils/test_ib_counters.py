"""parse_ib_counters against real perfquery/sysfs outputs (tests/fixtures/ib_counters)."""
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "ib_counters"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_perfquery_x_without_device_name():
    result = parse_ib_counters(fixture("infiniband_diags_16_perfquery_x.txt"))
    assert result["errors"] == []
    assert list(result["counters"]) == ["lid-10"]
    counters = result["counters"]["lid-10"]["1"]
    assert len(counters) == 22
    assert set(counters.values()) == {0}
    assert "PortSelect" not in result["names"] and "port_select" not in counters
    assert result["names"]["SymbolErrorCounter"] == "symbol_error"
    assert result["sources"] == [{"ca": "lid-10", "port": "1", "lid": 10, "capmask": "0x5300",
                                  "format": "perfquery_extended", "line": 2}]
    assert "does not print the device name" in result["warnings"][0]


def test_perfquery_x_with_ca_argument():
    result = parse_ib_counters(fixture("infiniband_diags_16_perfquery_x.txt"), ca="mlx5_0")
    assert list(result["counters"]) == ["mlx5_0"]
    assert result["warnings"] == []
    assert set(result["counters"]["mlx5_0"]["1"]) == {
        "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets",
        "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets", "symbol_error",
        "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors",
        "port_rcv_constraint_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
        "VL15_dropped", "port_xmit_wait", "qp1_dropped"}


def test_perfquery_x_wrapped_header_and_truncated_end():
    result = parse_ib_counters(fixture("netdata_2620_perfquery_x_wrapped_truncated.txt"), ca="mlx5_0")
    counters = result["counters"]["mlx5_0"]["1"]
    assert counters["port_xmit_data"] == 13672645927
    assert counters["port_rcv_data"] == 2341975277576
    assert counters["multicast_rcv_packets"] == 6779
    assert counters["excessive_buffer_overrun_errors"] == 0
    assert "VL15_dropped" not in counters
    assert result["sources"][0]["capmask"] == "0x1600"
    # The wrapped "0x0000000)" is part of the header; the cut "VL15Dro" is an error.
    assert result["errors"] == ["line 25: garbled or truncated line inside the perfquery block for mlx5_0 port 1: "
                                "'VL15Dro'"]
    assert not any("0x0000000" in w for w in result["warnings"])


def test_sysfs_no_pma():
    result = parse_ib_counters(fixture("node_exporter_966_i40iw_no_pma.txt"))
    assert result["counters"] == {}
    assert len(result["unavailable"]) == 8
    assert "i40iw0/1/link_downed" in result["unavailable"]
    assert result["errors"] == ["no readable counter: all 8 counters are unavailable (no PMA on this device?)"]


def test_sysfs_counters_and_hw_counters():
    result = parse_ib_counters(fixture("gpud_h100_sysfs_grep_counters_hw_counters.txt"))
    assert result["errors"] == []
    assert sorted(result["counters"]) == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]
    port = result["counters"]["mlx5_0"]["1"]
    assert len(port) == 47
    assert port["port_rcv_data"] == 230539874932483
    assert port["port_xmit_wait"] == 2489603687
    assert port["port_rcv_errors"] == 14
    assert port["port_rcv_switch_relay_errors"] == 1
    assert port["VL15_dropped"] == 0
    assert port["lifespan"] == 12
    assert "out_of_sequence" in port and "rx_write_requests" in port
    assert result["counters"]["mlx5_1"]["1"]["link_downed"] == 255
    assert result["saturated"] == ["mlx5_0/1/excessive_buffer_overrun_errors",
                                   "mlx5_1/1/excessive_buffer_overrun_errors", "mlx5_1/1/link_downed",
                                   "mlx5_bond_0/1/excessive_buffer_overrun_errors"]
    formats = sorted({s["format"] for s in result["sources"]})
    assert formats == ["sysfs_counters", "sysfs_hw_counters"]
    assert result["names"] == {}


def test_saturated_counters_pr943():
    result = parse_ib_counters(fixture("gpud_943_mlx5_1_saturated_grep.txt"))
    assert result["errors"] == []
    port = result["counters"]["mlx5_1"]["1"]
    assert port["port_xmit_wait"] == 4294967295
    assert port["port_xmit_discards"] == 65535
    assert sorted(result["saturated"]) == ["mlx5_1/1/excessive_buffer_overrun_errors", "mlx5_1/1/link_downed",
                                           "mlx5_1/1/port_xmit_discards", "mlx5_1/1/port_xmit_wait"]
    assert sum("maximum value" in w for w in result["warnings"]) == 4


def test_perfquery_basic_aggregate_and_markers():
    result = parse_ib_counters(fixture("handmade_perfquery_basic_and_aggregate_markers.txt"))
    assert sorted(result["counters"]) == ["mlx5_0", "mlx5_4"]
    basic = result["counters"]["mlx5_0"]["1"]
    assert basic["symbol_error"] == 3
    assert basic["link_error_recovery"] == 1
    assert basic["link_downed"] == 1
    assert basic["port_xmit_packets"] == 1073893312
    assert basic["qp1_dropped"] == 0
    aggregate = result["counters"]["mlx5_4"]["255"]
    assert aggregate["port_xmit_data"] == 230442669431839
    assert [s["format"] for s in result["sources"]] == ["perfquery", "perfquery_extended"]
    assert result["sources"][0]["lid"] == 287
    # 32-bit data counters of plain perfquery are saturated; 64-bit extended ones are not checked.
    assert result["saturated"] == ["mlx5_0/1/port_xmit_data", "mlx5_0/1/port_rcv_data", "mlx5_0/1/port_xmit_wait"]
    assert result["errors"] == ["line 26: perfquery: iberror: failed: Failed to open 'mlx5_3' port '1'"]
    assert any("ibwarn" in w for w in result["warnings"])


@pytest.mark.parametrize("marker", ["mlx5_2", "### mlx5_2", "[mlx5_2]", "==> mlx5_2 <==", "CA 'mlx5_2'",
                                    "$ perfquery -x -C mlx5_2 -P 1", "+ perfquery --Ca=mlx5_2 -x"])
def test_markers_name_the_ca(marker):
    text = marker + "\n" + fixture("infiniband_diags_16_perfquery_x.txt")
    result = parse_ib_counters(text)
    assert list(result["counters"]) == ["mlx5_2"]


def test_counters_without_header_use_portselect():
    text = "\n".join(fixture("infiniband_diags_16_perfquery_x.txt").splitlines()[2:])
    result = parse_ib_counters(text, ca="mlx5_7")
    assert list(result["counters"]["mlx5_7"]) == ["1"]
    assert any("without a '# Port counters' header" in w for w in result["warnings"])


def test_header_without_counters_is_an_error():
    result = parse_ib_counters("# Port extended counters: Lid 1 port 1 (CapMask: 0x5A00 CapMask2: 0x0000000)\n")
    assert any("has no counters" in e for e in result["errors"])


def test_sysfs_truncated_line():
    text = fixture("gpud_943_mlx5_1_saturated_grep.txt") + "/sys/class/infiniband/mlx5_1/ports/1/coun\n"
    result = parse_ib_counters(text)
    assert any("truncated sysfs counter line" in e for e in result["errors"])
    cut = "/sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error:\n"
    assert any("has no value" in e for e in parse_ib_counters(cut)["errors"])


def test_device_level_hw_counters_ignored():
    text = ("/sys/class/infiniband/hfi1_0/hw_counters/RxPkt:12\n"
            "/sys/class/infiniband/hfi1_0/ports/1/hw_counters/RcResend:3\n")
    result = parse_ib_counters(text)
    assert result["counters"] == {"hfi1_0": {"1": {"RcResend": 3}}}
    assert any("device-level hw_counters" in w for w in result["warnings"])


@pytest.mark.parametrize("text", ["", "\n", "hello\nworld\n"])
def test_nothing_to_read(text):
    result = parse_ib_counters(text)
    assert result["counters"] == {}
    assert result["errors"][-1].startswith("no counters found")
