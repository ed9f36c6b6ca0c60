"""parse_perftest against real perftest outputs (tests/fixtures/perftest, see SOURCES.md)."""
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import GBIT_FACTOR, parse_perftest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perftest"
DASH = "-" * 87


def fixture(name):
    return (FIXTURES / name).read_text()


def test_mb_per_sec_is_mebibytes():
    # perftest divides by 0x100000 for [MB/sec] and [MiB/sec]: 1 MB/sec = 8 * 2**20 bit/s.
    assert GBIT_FACTOR["MB/sec"] == GBIT_FACTOR["MiB/sec"] == pytest.approx(0.008388608)
    assert GBIT_FACTOR["Gb/sec"] == 1.0
    # perftest issue 225: 11728.47 MB/sec on a 100 Gb/s card is 98.39 Gb/s (not 93.83).
    text = (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
            " 65536      5000             11730.12            11728.47            0.187655\n" + DASH + "\n")
    assert parse_perftest(text)["bw_average"] == pytest.approx(98.3855, abs=0.0001)


def test_all_sizes_gbits_roce():
    result = parse_perftest(fixture("nvidia_gpu_operator_write_bw_a_gbits_roce.txt"))
    assert result["errors"] == [] and result["warnings"] == []
    assert result["test"] == "RDMA_Write BW Test"
    assert (result["device"], result["link_type"], result["transport_type"]) == ("mlx5_0", "Ethernet", "IB")
    assert (result["qps"], result["mtu"], result["gid_index"], result["tx_depth"]) == (1, 1024, 5, 128)
    assert result["connection_type"] == "RC"
    assert result["role"] == "client" and result["bidirectional"] is False
    assert result["unit"] == "Gb/sec"
    assert len(result["rows"]) == 23
    assert [r["msg_size"] for r in result["rows"]] == [2 ** i for i in range(1, 24)]
    assert (result["msg_size"], result["iterations"]) == (8388608, 5000)
    assert (result["bw_peak"], result["bw_average"], result["msg_rate"]) == (92.39, 92.39, 0.001377)
    assert result["bw_average_max"] == 92.46
    first = result["rows"][0]
    assert first == {"msg_size": 2, "iterations": 5000, "bw_peak": 0.11, "bw_peak_raw": 0.11,
                     "bw_average": 0.11, "bw_average_raw": 0.11, "msg_rate": 6.897101, "line": 23}


def test_post_list_single_row_gbits_with_tabs():
    result = parse_perftest(fixture("perftest_273_write_postlist_gbits.txt"))
    assert result["errors"] == []
    assert result["test"] == "RDMA_Write Post List BW Test"
    assert (result["device"], result["link_type"], result["post_list"], result["cq_moderation"]) == (
        "ib0", "Ethernet", 128, 128)
    assert (result["msg_size"], result["iterations"]) == (8, 224958464)
    assert (result["bw_peak"], result["bw_average"], result["msg_rate"]) == (0.0, 0.48, 7.498617)
    assert any("BW peak was not measured" in w for w in result["warnings"])


def test_atomic_mb_per_sec():
    result = parse_perftest(fixture("pib_4_atomic_bw_mb.txt"))
    assert result["errors"] == []
    assert result["test"] == "Atomic CMP_AND_SWAP BW Test"
    assert (result["device"], result["link_type"]) == ("pib_1", "IB")
    assert result["unit"] == "MB/sec"
    row = result["rows"][0]
    assert (row["bw_peak_raw"], row["bw_average_raw"]) == (1.70, 1.67)
    assert result["bw_peak"] == pytest.approx(1.70 * 0.008388608, abs=1e-6)
    assert result["bw_average"] == pytest.approx(1.67 * 0.008388608, abs=1e-6)
    assert result["msg_rate"] == 0.219031
    assert result["warnings"] == ["line 3: Device not recognized to implement inline feature. Disabling it"]


def test_read_all_sizes_mb_without_rules():
    result = parse_perftest(fixture("ucx_8852_read_bw_a_mb_truncated.txt"))
    assert result["errors"] == []  # no dashed lines at all in this copy: the cut cannot be seen
    assert result["test"] == "RDMA_Read BW Test"
    assert [r["msg_size"] for r in result["rows"]] == [2, 4, 8, 16, 32, 64, 128, 256]
    assert result["rows"][6]["bw_average_raw"] == 310.05
    assert result["msg_size"] == 256
    assert result["bw_average"] == pytest.approx(391.49 * 0.008388608, abs=1e-6)
    assert result["bw_average_max"] == result["bw_average"]


def test_server_truncated_inside_row():
    result = parse_perftest(fixture("perftest_234_write_bw_server_truncated.txt"))
    assert result["role"] == "server"
    assert (result["device"], result["link_type"], result["gid_index"]) == ("mlx5_0", "Ethernet", 3)
    assert result["rows"] == [] and result["bw_average"] is None
    assert result["errors"] == [
        "line 26: result row has 2 of 5 columns (output truncated?): '65536      664644'",
        "line 25: result header without data rows (test failed or output truncated)"]


def test_client_could_not_connect():
    result = parse_perftest(fixture("perftest_228_client_couldnt_connect.txt"))
    assert result["errors"][:2] == [
        "line 2: Couldn't connect to 192.168.125.211:18515",
        "line 3: Unable to open file descriptor for socket connection Unable to init the socket connection"]
    assert result["errors"][2].startswith("no result table")
    assert result["bw_average"] is None


def test_server_rdma_cm_failure():
    result = parse_perftest(fixture("perftest_132_server_rdma_cm_errors.txt"))
    assert len(result["errors"]) == 4
    assert "Couldn't read remote address" in result["errors"][0]
    assert "Failed to exchange data" in result["errors"][2]


def test_bidirectional_mib_with_warnings():
    result = parse_perftest(fixture("handmade_mib_bidirectional_cpu_freq_warnings.txt"))
    assert result["errors"] == []
    assert result["test"] == "RDMA_Write Bidirectional BW Test"
    assert result["bidirectional"] is True
    assert result["qps"] == 2
    assert result["unit"] == "MiB/sec"
    assert result["bw_average"] == pytest.approx(47312.41 * 1048576 * 8 / 1e9, abs=1e-4)
    assert result["bw_peak"] == 0.0
    assert any("WARNING: BW peak won't be measured" in w for w in result["warnings"])
    assert any("Conflicting CPU frequency" in w for w in result["warnings"])


def table(header, *rows, closed=True):
    return "\n".join([DASH, header] + list(rows) + ([DASH] if closed else [])) + "\n"


def test_missing_closing_rule_is_truncation():
    text = table(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                 " 65536      5000             92.39              92.38              0.176196", closed=False)
    result = parse_perftest(text)
    assert any("no closing '-----' line" in e for e in result["errors"])
    assert result["bw_average"] == 92.38


def test_qos_and_cpu_util_columns():
    qos = table(" #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                " 65536      3           5000           92.40              92.30                  0.176000")
    result = parse_perftest(qos)
    assert result["errors"] == []
    assert result["rows"][0]["sl"] == 3 and result["bw_average"] == 92.30 and result["iterations"] == 5000
    cpu = table(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    CPU_Util[%]",
                " 65536      5000             92.39              92.38              0.176196\t    12.50")
    result = parse_perftest(cpu)
    assert result["errors"] == [] and result["rows"][0]["cpu_util"] == 12.5


def test_dual_port_columns():
    text = table(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   BW Port1[Gb/sec]"
                 "   MsgRate Port1[Mpps]   BW Port2[Gb/sec]   MsgRate Port2[Mpps]",
                 " 65536      5000           180.00            179.50\t\t   0.342000        89.75            0.171000"
                 "              89.75            0.171000")
    result = parse_perftest(text)
    assert result["errors"] == []
    row = result["rows"][0]
    assert (row["bw_port1"], row["bw_port2"], row["msg_rate_port2"]) == (89.75, 89.75, 0.171)


def test_negative_bandwidth_is_an_error():
    text = table(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                 " 65536      5000             0.00               -3.12              -0.005950")
    result = parse_perftest(text)
    assert any("negative bandwidth" in e for e in result["errors"])


def test_latency_output_is_rejected():
    text = table(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
                 "   99% percentile[usec]   99.9% percentile[usec] ",
                 " 2       1000          1.05           3.21         1.09     \t       1.10        \t0.05\t\t1.30 \t\t3.21")
    result = parse_perftest(text)
    assert any("latency test table" in e for e in result["errors"])
    assert result["rows"] == []


def test_multiple_tables_and_units():
    text = (table(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
                  " 65536      5000             11000.00           10900.00           0.174400")
            + table(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                    " 1048576    5000             92.00              91.00              0.011000"))
    result = parse_perftest(text)
    assert result["errors"] == []
    assert result["msg_size"] == 1048576 and result["bw_average"] == 91.0
    assert result["bw_average_max"] == pytest.approx(91.4358, abs=0.0001)  # 10900 MB/sec
    assert any("different units" in w for w in result["warnings"])
    assert any("2 result tables" in w for w in result["warnings"])


def test_garbled_row_and_unknown_unit():
    text = table(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                 " 65536      5000             9x.39              92.38              0.176196")
    assert any("garbled result row" in e for e in parse_perftest(text)["errors"])
    text = table(" #bytes     #iterations    BW peak[KB/sec]    BW average[KB/sec]   MsgRate[Mpps]",
                 " 65536      5000             92.39              92.38              0.176196")
    assert any("unknown bandwidth unit" in e for e in parse_perftest(text)["errors"])


@pytest.mark.parametrize("text", ["", "\n", "************************************\n"
                                  "* Waiting for client to connect... *\n************************************\n"])
def test_nothing_to_read(text):
    result = parse_perftest(text)
    assert result["rows"] == []
    assert result["errors"][-1].startswith("no result table")


def test_srun_labels_are_stripped():
    lines = fixture("nvidia_gpu_operator_write_bw_a_gbits_roce.txt").splitlines()
    result = parse_perftest("\n".join("0: " + line for line in lines))
    assert result["errors"] == []
    assert result["bw_average"] == 92.39


def test_info_lines_are_read_key_by_key():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import key_values
    assert key_values(" Dual-port       : OFF\t\tDevice         : mlx5_0") == [("Dual-port", "OFF"), ("Device", "mlx5_0")]
    assert key_values(" rdma_cm QPs\t : OFF") == [("rdma_cm QPs", "OFF")]
    assert key_values(" local address: LID 0x01 QPN 0x0148 PSN 0x4c6f26") == [("local address", "LID 0x01 QPN 0x0148 PSN 0x4c6f26")]
    assert key_values(" GID: 254:128:00:00  Mtu : 4096[B]") == [("GID", "254:128:00:00"), ("Mtu", "4096[B]")]
    assert key_values("12:34 no key here: ") == []


@pytest.mark.parametrize("line", ["a" * 400000, "a b " * 100000, "x: " + "y " * 200000, "Device : " + "mlx5_0 " * 60000,
                                  "a:" * 200000, " Dual-port       : OFF\t" * 20000])
def test_a_huge_garbled_line_is_read_in_linear_time(line):
    """The info block's key/value reading is one pass: a 400 KB line in well under a second (the
    regular expression it replaces took 32 s on 64 KB). Generous bound: the cores are shared."""
    import time
    started = time.process_time()
    parsed = parse_perftest(line + "\n")
    assert time.process_time() - started < 2.0
    assert parsed["rows"] == []
