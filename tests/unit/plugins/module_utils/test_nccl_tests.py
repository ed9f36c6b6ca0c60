# -*- coding: utf-8 -*-
"""Unit tests for the nccl-tests output parser, on real (and documented hand-made) outputs."""
from __future__ import absolute_import, division, print_function

from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import (
    GIB, parse_nccl_tests)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nccl_tests"


def parse(name):
    return parse_nccl_tests((FIXTURES / name).read_text(encoding="utf-8"))


def has_error(result, fragment):
    return any(fragment in message for message in result["errors"])


def has_warning(result, fragment):
    return any(fragment in message for message in result["warnings"])


CONTRACT_KEYS = {
    "rows", "avg_busbw", "out_of_bounds", "ranks", "nranks", "headers", "version", "passed",
    "errors", "warnings", "collective", "nthread", "ngpus", "iters", "warmup_iters",
    "independent_runs", "max_busbw", "large_msg_busbw", "hosts",
}


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
def test_every_fixture_has_contract_shape(name):
    result = parse(name)
    assert CONTRACT_KEYS <= set(result)
    assert result["passed"] is (not result["errors"] and bool(result["rows"]))
    for row in result["rows"]:
        assert {"size", "count", "type", "redop", "root", "oop", "ip"} <= set(row)
        for side in (row["oop"], row["ip"]):
            if side is not None:
                assert {"time_us", "algbw", "busbw", "wrong"} <= set(side)
    for rank in result["ranks"]:
        assert {"rank", "host", "pid", "device", "busid", "gpu_name"} <= set(rank)


# --- modern outputs ---------------------------------------------------------------------------

def test_h100_two_nodes_without_version_line():
    result = parse("all_reduce_h100_2node_no_version.txt")
    assert result["passed"] is True
    assert result["errors"] == [] and result["warnings"] == []
    assert result["version"] is None and result["collective"] is None
    assert (result["nthread"], result["ngpus"], result["iters"], result["warmup_iters"]) == (1, 1, 20, 5)
    assert result["min_bytes"] == 8 and result["max_bytes"] == 8589934592 and result["step_factor"] == 2
    assert result["headers"] == 1 and result["independent_runs"] == 1
    assert len(result["rows"]) == 31
    last = result["rows"][-1]
    assert last["size"] == 8589934592 and last["count"] == 2147483648
    assert (last["type"], last["redop"], last["root"]) == ("float", "sum", -1)
    assert last["oop"] == {"time_us": 47535.0, "algbw": 180.71, "busbw": 338.82, "wrong": 0, "error": None}
    assert last["ip"]["busbw"] == 337.35 and last["ip"]["time_us"] == 47743.0
    assert result["avg_busbw"] == 70.742 and result["out_of_bounds"] == 0
    assert result["max_busbw"] == 338.82
    # four rows of 1 GiB and more: 297.86, 318.40, 330.58, 338.82
    assert result["large_msg_busbw"] == pytest.approx(321.415)
    assert result["large_msg_min_bytes"] == GIB
    assert result["nranks"] == 16 and len(result["ranks"]) == 16
    assert result["hosts"] == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert result["ranks"][10] == {
        "rank": 10, "group": 0, "pid": 6735, "host": "ztan-mig-gq73", "device": 2,
        "busid": "0000:0b:00", "pci_bus": 0x0b, "gpu_name": "NVIDIA H100 80GB HBM3",
        "line": 14, "text": "Rank 10 Group  0 Pid   6735 on ztan-mig-gq73 device  2 "
                            "[0000:0b:00] NVIDIA H100 80GB HBM3"}
    assert result["runs"] == [{"hosts": ["ztan-mig-235z", "ztan-mig-gq73"], "nranks": 16,
                               "line": 4, "text": result["ranks"][0]["text"]}]
    assert last["text"].split()[:3] == ["8589934592", "2147483648", "float"]
    assert last["problems"] == []


def test_version_line_collective_and_wrong_values():
    result = parse("all_reduce_gh200_wrong_oob_failed.txt")
    assert result["passed"] is False
    assert result["version"] == "2.17.8"
    assert (result["nccl_headers"], result["nccl_library"]) == (22902, 22902)
    assert result["collective"] == "all_reduce" and result["program"] == "all_reduce_perf"
    assert result["concluded"] is True
    bad = [row for row in result["rows"] if row["size"] == 1048576][0]
    assert bad["oop"]["wrong"] == 96 and bad["ip"]["wrong"] == 32
    assert result["out_of_bounds"] == 4
    assert has_error(result, "#wrong is nonzero in 1 rows")
    assert has_error(result, "Out of bounds values: 4 FAILED")
    assert has_error(result, "line 43: .. gpu-1-1 pid 662195: Test failure common.cu:1189")
    assert result["ranks"][1]["pid"] == 2448661 and result["ranks"][1]["host"] == "gpu-1-7"


def test_abort_before_the_table():
    result = parse("all_reduce_gh200_abort_before_table.txt")
    assert result["passed"] is False
    assert result["rows"] == [] and result["avg_busbw"] is None
    assert has_error(result, "no data rows")
    assert "no Avg bus bandwidth summary: run incomplete?" in result["errors"]
    assert result["errors"][0] == ("line 14: gpu-1-1: Test CUDA failure common.cu:1304 "
                                   "'CUDA-capable device(s) is/are busy or unavailable'")
    assert has_error(result, "... and 2 more failure lines")
    assert result["nranks"] == 8 and result["hosts"] == ["gpu-1-1", "gpu-1-7"]
    assert result["ranks"][3]["busid"] == "0039:01:00" and result["ranks"][3]["pci_bus"] == 1
    assert has_warning(result, "'concluded' lines")


def test_alltoall_with_mpi_help_text_inside_the_table():
    result = parse("alltoall_v2183_mpi_help_in_table.txt")
    assert result["passed"] is True, result["errors"]
    assert result["collective"] == "alltoall" and result["version"] == "2.18.3"
    assert result["unalign"] == 0 and result["graph"] == 0 and result["agg_iters"] == 1
    assert result["nccl_version"] == "2.30.3+cuda13.0"
    assert len(result["rows"]) == 24
    first = result["rows"][0]
    assert (first["redop"], first["root"]) == ("none", -1)
    assert first["oop"]["wrong"] == 0 and first["ip"]["wrong"] is None
    slow = [row for row in result["rows"] if row["size"] == 16777216][0]
    assert slow["ip"]["time_us"] == 70123.2 and slow["ip"]["busbw"] == 0.22
    assert result["avg_busbw"] == 8.64628
    # 1, 2, 4, 8 GiB out-of-place busbw: 7.25, 13.90, 27.82, 37.31
    assert result["large_msg_busbw"] == pytest.approx((7.25 + 13.90 + 27.82 + 37.31) / 4)
    assert result["hosts"] == ["R6KD-CX8aaS-GPU-11", "R6KD-CX8aaS-GPU-12"]


def test_all_gather_unalign_and_noise_lines():
    result = parse("all_gather_gb10_v2183_unalign.txt")
    assert result["passed"] is True
    assert result["collective"] == "all_gather" and result["unalign"] == 0
    assert [row["size"] for row in result["rows"]] == [GIB, 2 * GIB, 4 * GIB]
    assert all(row["redop"] == "none" for row in result["rows"])
    assert result["ranks"][0]["busid"] == "000f:01:00" and result["ranks"][0]["gpu_name"] == "NVIDIA GB10"
    assert result["large_msg_busbw"] == pytest.approx((19.73 + 21.23 + 22.14) / 3, abs=1e-4)
    assert result["max_busbw"] == 22.46


def test_wrong_in_scientific_notation():
    result = parse("all_gather_gb10_wrong_scientific.txt")
    assert result["rows"][1]["oop"]["wrong"] == 1048580
    assert isinstance(result["rows"][1]["oop"]["wrong"], int)
    assert result["passed"] is False
    assert has_error(result, "#wrong is nonzero") and has_error(result, "1 FAILED")


def test_avg_bus_bandwidth_followed_by_failed_or_ok():
    failed = parse("all_gather_gb10_avg_check_failed.txt")
    assert failed["passed"] is False and failed["avg_busbw_status"] == "FAILED"
    assert failed["avg_busbw"] == 21.4033
    assert has_error(failed, "Avg bus bandwidth 21.4033 reported FAILED")
    ok = parse("all_gather_gb10_avg_check_ok.txt")
    assert ok["passed"] is True and ok["avg_busbw_status"] == "OK"


# --- launcher prefixes and noise ---------------------------------------------------------------

def test_mpirun_tag_output_prefix_and_nccl_lines_in_table():
    plain = parse("all_reduce_h100_2node_no_version.txt")
    tagged = parse("all_reduce_h100_mpirun_tag_output.txt")
    assert tagged["passed"] is True

    def strip(rows):
        return [dict(row, line=None) for row in rows]
    assert strip(tagged["rows"]) == strip(plain["rows"])
    assert tagged["ranks"] == plain["ranks"]
    assert tagged["avg_busbw"] == plain["avg_busbw"]
    assert has_warning(tagged, "NCCL WARN NET/IB : Got completion from peer")


def test_srun_label_prefix():
    result = parse("all_gather_gb10_srun_label.txt")
    assert result["passed"] is True
    assert len(result["rows"]) == 3 and result["nranks"] == 2
    assert result["nccl_version"] == "2.28.9+cuda13.0"
    assert result["collective"] == "all_gather"


def test_prepend_rank_labels_glued_inside_rows():
    result = parse("all_reduce_prepend_rank_label_fragment.txt")
    assert len(result["rows"]) == 10
    row = result["rows"][0]
    assert (row["size"], row["root"]) == (1048576, -1)
    assert row["oop"]["time_us"] == 1626.5 and row["ip"]["busbw"] == 0.87
    assert result["passed"] is False   # a fragment: no header, ranks or summary


def test_values_wider_than_their_columns():
    result = parse("all_reduce_overflow_columns_fragment.txt")
    assert [row["ip"]["algbw"] for row in result["rows"]] == [
        263017.30, 428400.03, 1747057.96, 1777718.25, 857621.27]
    assert result["rows"][2]["oop"]["algbw"] == 243.79


# --- old formats ---------------------------------------------------------------------------------

def test_2018_table_without_hash_markers_ms_times_and_res_column():
    result = parse("very_old_2018_no_hash_ms_res.txt")
    assert result["passed"] is True, result["errors"]
    assert result["headers"] == 1 and result["ngpus"] == 8 and result["iters"] == 20
    assert result["agg_iters"] is None and result["validation"] == 1
    row = result["rows"][-1]
    assert (row["redop"], row["root"]) == ("sum", None)
    assert row["oop"]["time_us"] == 14140.0      # printed 14.140 ms
    assert row["oop"]["wrong"] is None and row["oop"]["error"] == pytest.approx(1e-07)
    rank = dict(result["ranks"][7], line=None, text=None)
    assert rank == {"rank": 7, "group": None, "pid": None, "host": "node03", "device": 7,
                    "busid": "0x00", "pci_bus": 0, "gpu_name": "Tesla P100-PCIE-16GB",
                    "line": None, "text": None}
    assert result["avg_busbw"] == 7.0734 and result["out_of_bounds"] == 0


def test_2018_nccl_failure_right_after_the_header():
    result = parse("very_old_2018_nccl_failure.txt")
    assert result["passed"] is False
    assert "line 15: NCCL failure all_reduce.cu:95 'unhandled cuda error'" in result["errors"]


def test_markdown_stripped_hash_markers():
    result = parse("all_reduce_a10g_no_hash_markers.txt")
    assert result["passed"] is True, result["errors"]
    assert len(result["rows"]) == 22 and result["avg_busbw"] == 0.0
    assert result["ranks"][0]["host"] == "nccl-846b9d30a6bb6b529fb3c170f4809fea-1725464730-worker-0"
    assert result["iters"] == 5
    # no row reaches 1 GiB: the plateau is the sizes within 8x of the largest, 2 MiB .. 16 MiB
    assert result["large_msg_min_bytes"] == 2 * 1024 * 1024


def test_error_column_without_redop_or_root_and_no_header():
    result = parse("all_gather_error_column_no_redop_fragment.txt")
    assert len(result["rows"]) == 13
    row = result["rows"][0]
    assert (row["size"], row["count"], row["type"], row["redop"], row["root"]) == (
        32768, 4096, "float", None, None)
    assert row["oop"] == {"time_us": 13.39, "algbw": 1.22, "busbw": 1.22, "wrong": None, "error": 0.0}
    assert result["out_of_bounds"] == 0
    assert has_error(result, "no '# nThread")


def test_alltoall_with_empty_redop_and_float_error():
    result = parse("alltoall_error_column_empty_redop_fragment.txt")
    row = result["rows"][1]
    assert (row["size"], row["redop"], row["root"]) == (536870912, None, None)
    assert row["oop"]["time_us"] == 1041974.0
    assert row["ip"]["error"] == 1.0 and row["ip"]["wrong"] is None
    assert result["avg_busbw"] == 0.507636
    assert not has_error(result, "#wrong")     # a float deviation is not a wrong count


def test_broadcast_root_column_and_validation_off():
    result = parse("broadcast_v100_root_validation_off.txt")
    assert result["passed"] is True
    assert all(row["root"] == 0 and row["redop"] is None for row in result["rows"])
    assert all(row["oop"]["wrong"] is None and row["ip"]["wrong"] is None for row in result["rows"])
    assert result["validation"] == 0
    assert has_warning(result, "validation disabled")
    assert has_warning(result, "NCCL WARN Failed to open libibverbs.so")
    assert result["nccl_version"] == "2.9.6+cuda11.2"
    assert [r["pid"] for r in result["ranks"]] == [14926, 9210]


def test_reduce_scatter_rows_of_zero_bytes():
    result = parse("reduce_scatter_zero_sizes_fragment.txt")
    assert [row["size"] for row in result["rows"]] == [0, 0, 0, 0, 0, 128, 256]
    assert result["rows"][5]["count"] == 4 and result["rows"][5]["ip"]["algbw"] == 0.01


def test_sendrecv_in_place_not_checked():
    result = parse("sendrecv_inplace_na_fragment.txt")
    assert all(row["ip"]["wrong"] is None for row in result["rows"])
    assert result["ranks"][0]["busid"] == "0x31" and result["ranks"][0]["pci_bus"] == 0x31
    assert has_error(result, "5 rows for float/sum but each sweep from minBytes to maxBytes has 23 sizes")


# --- the MPI=0 symptom ---------------------------------------------------------------------------

def test_mpi0_header_repeated_and_tables_interleaved():
    result = parse("mpi0_h800_two_processes_interleaved.txt")
    assert result["headers"] == 2 and result["independent_runs"] == 2
    assert result["nranks"] == 8 and len(result["ranks"]) == 16
    assert result["hosts"] == ["hw14", "hw15"]
    assert result["ranks"][8]["rank"] == 0 and result["ranks"][8]["pid"] == 803
    assert result["ranks"][0]["busid"] == "0x0f" and result["ranks"][0]["pci_bus"] == 0x0f
    assert has_warning(result, "2 independent runs")
    assert has_warning(result, "built without MPI=1")
    assert result["passed"] is True          # the numbers themselves are fine
    assert len(result["rows"]) == 8 and result["avg_busbw"] == 182.391


def test_mpi0_old_format_with_error_column():
    result = parse("mpi0_v100_error_column.txt")
    assert result["independent_runs"] == 2 and result["nranks"] == 1
    assert result["hosts"] == ["ip-172-31-20-228", "ip-172-31-22-230"]
    assert result["step_bytes"] == 1048576 and result["step_factor"] is None
    assert result["rows"][0]["root"] is None and result["rows"][0]["oop"]["error"] == 0.0
    assert result["avg_busbw"] == 0.0
    assert has_warning(result, "independent runs")


# --- truncation and failures inside the table ----------------------------------------------------

def test_truncated_inside_the_table():
    result = parse("all_reduce_h100_truncated_in_table.txt")
    assert result["passed"] is False
    assert len(result["rows"]) == 29
    assert "no Avg bus bandwidth summary: run incomplete?" in result["errors"]
    assert has_error(result, "29 rows for float/sum")
    # the cut row is unreadable: an error next to the 29 rows that were read
    assert has_error(result, "line 53: incomplete or garbled table row: 4294967296")


def test_test_nccl_failure_inside_the_table():
    result = parse("all_reduce_h100_test_nccl_failure_in_table.txt")
    assert result["passed"] is False
    assert has_error(result, "line 53: ztan-mig-gq73: Test NCCL failure common.cu:1005")
    assert has_error(result, "line 54: .. ztan-mig-gq73 pid 6733: Test failure")


def test_abort_inside_the_table_fragment():
    result = parse("all_reduce_abort_inside_table_fragment.txt")
    assert len(result["rows"]) == 5 and result["rows"][-1]["size"] == 17179869184
    assert sum("Test NCCL failure" in e for e in result["errors"]) == 4
    assert result["passed"] is False


# --- small inline cases --------------------------------------------------------------------------

HEADER = ("# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 "
          "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
          "#  Rank  0 Group  0 Pid   4349 on     node01 device  0 [0x01] NVIDIA A100 80GB PCIe\n"
          "#  Rank  1 Group  0 Pid   4350 on     node01 device  1 [0x23] NVIDIA A100 80GB PCIe\n")
COLUMNS = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
           "     time   algbw   busbw #wrong\n"
           "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
           "            (us)  (GB/s)  (GB/s)\n")
ROWS = ("        1024           256     float     sum      -1    20.00    0.05    0.05      0"
        "    19.00    0.05    0.05      0\n"
        "        2048           512     float     sum      -1    21.00    0.10    0.10      0"
        "    20.00    0.10    0.10      0\n")
SUMMARY = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.075 \n"


def test_inline_minimal_run_passes():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + SUMMARY)
    assert result["passed"] is True, result["errors"]
    assert result["nranks"] == 2 and result["hosts"] == ["node01"]


@pytest.mark.parametrize("text", ["", "\n\n", "garbage\x00\xff", "   #   ", "Rank"])
def test_empty_or_garbage_input(text):
    result = parse_nccl_tests(text)
    assert result["passed"] is False
    assert result["errors"]
    assert result["rows"] == [] and result["independent_runs"] == 0


def test_none_input_is_treated_as_empty():
    assert parse_nccl_tests(None)["errors"]


def test_missing_avg_line_gives_the_documented_message():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + "# Out of bounds values : 0 OK\n")
    assert result["passed"] is False
    assert "no Avg bus bandwidth summary: run incomplete?" in result["errors"]


def test_missing_out_of_bounds_line():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + "# Avg bus bandwidth    : 0.075\n")
    assert result["passed"] is False and has_error(result, "no Out of bounds values summary")


def test_missing_row_breaks_the_sweep():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS.splitlines(True)[0] + SUMMARY)
    assert result["passed"] is False
    assert has_error(result, "1 rows for float/sum but each sweep from minBytes to maxBytes has 2 sizes")


def test_reduced_max_bytes_shortens_the_sweep():
    text = HEADER + "#\n# Reducing maxBytes to 1024 due to memory limitation\n" + COLUMNS + \
        ROWS.splitlines(True)[0] + SUMMARY
    result = parse_nccl_tests(text)
    assert result["passed"] is True, result["errors"]
    assert has_warning(result, "maxBytes reduced to 1024")


def test_version_with_commit_hash():
    result = parse_nccl_tests("# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102\n")
    assert result["version"] == "2.20.0" and result["nccl_tests_commit"] == "b4d5bee"
    assert result["nccl_library"] == 23102


def test_rows_after_the_last_summary():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + SUMMARY + ROWS)
    assert result["passed"] is False
    assert has_error(result, "table rows after the last Avg bus bandwidth summary")


def test_avg_value_not_a_number():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + "# Out of bounds values : 0 OK\n"
                              "# Avg bus bandwidth    : nan \n")
    assert result["passed"] is False and has_error(result, "'nan' is not a finite number")
    assert result["avg_busbw"] is None


def test_empty_host_name_and_rccl_style_bus_id():
    text = ("#  Rank  0 Group  0 Pid   4349 on        device  0 [0x01] NVIDIA A100 80GB PCIe\n"
            "#   Rank  1 Pid 117738 on sharbox-ultra device  1 [0000:43:00.0] AMD Instinct MI210\n")
    ranks = parse_nccl_tests(text)["ranks"]
    assert ranks[0]["host"] == "" and ranks[0]["device"] == 0 and ranks[0]["pci_bus"] == 1
    assert ranks[1]["busid"] == "0000:43:00.0" and ranks[1]["pci_bus"] == 0x43
    assert ranks[1]["group"] is None and ranks[1]["pid"] == 117738


def test_rank_gap_warns():
    text = HEADER.replace("Rank  1", "Rank  3") + COLUMNS + ROWS + SUMMARY
    result = parse_nccl_tests(text)
    assert has_warning(result, "not contiguous")


def test_per_iteration_and_timestamp_columns():
    columns = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
               "    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min"
               "    i_max    i_p99    i_cv%            timestamp\n")
    rows = ("        1024           256     float     sum      -1    20.00    0.05    0.05       0"
            "    19.10    22.40    22.40     3.20    19.00    0.05    0.05       0    18.70    20.90"
            "    20.90     2.80  2026-06-08 10:00:01\n"
            "        2048           512     float     sum      -1    21.00    0.10    0.10       0"
            "    20.10    23.40    23.40     3.10    20.00    0.10    0.10       0    19.70    21.90"
            "    21.90     2.70  2026-06-08 10:00:02\n")
    result = parse_nccl_tests(HEADER + columns + rows + SUMMARY)
    assert result["passed"] is True, result["errors"]
    row = result["rows"][0]
    assert row["oop"]["busbw"] == 0.05 and row["oop"]["i_p99_us"] == 22.4
    assert row["ip"]["time_us"] == 19.0 and row["ip"]["i_cv_pct"] == 2.8


def test_error_line_and_several_collectives_warn():
    text = ("# Collective test starting: all_reduce_perf\n" + HEADER + COLUMNS + ROWS + SUMMARY
            + "# Collective test concluded: all_reduce_perf\n# error: remote process exited\n"
            + "# Collective test starting: all_gather_perf\n")
    result = parse_nccl_tests(text)
    assert result["collective"] == "all_reduce"
    assert has_warning(result, "nccl-tests reported: remote process exited")
    assert has_warning(result, "several collectives in one output: all_gather_perf, all_reduce_perf")


def test_more_tables_than_summaries():
    text = HEADER + COLUMNS + ROWS + SUMMARY + COLUMNS
    result = parse_nccl_tests(text)
    assert has_error(result, "2 result tables but 1 Avg bus bandwidth summaries")


def test_out_of_bounds_ok_label_with_nonzero_count_fails():
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + SUMMARY.replace("0 OK", "3 OK"))
    assert result["passed"] is False and result["out_of_bounds"] == 3


def test_mpi0_rows_missing_from_one_process():
    text = (FIXTURES / "mpi0_h800_two_processes_interleaved.txt").read_text(encoding="utf-8")
    # drop the four rows of the second process (the 2nd, 4th, 6th rows and the one after the
    # first summary): four rows remain, a whole sweep, but two runs were announced
    lines = text.splitlines()
    rows = [n for n, line in enumerate(lines) if line.startswith("  ") and "float" in line]
    keep = [line for n, line in enumerate(lines) if n not in (rows[1], rows[3], rows[5], rows[7])]
    result = parse_nccl_tests("\n".join(keep))
    assert result["passed"] is False
    assert has_error(result, "4 rows but 2 independent runs of 4 sizes each")


@pytest.mark.parametrize("line", [
    "mpirun noticed that process rank 3 with PID 0 on node gpu-1-7 exited on signal 11 (Segmentation fault).",
    "srun: error: gpu-1-7: task 5: Exited with exit code 1",
])
def test_launcher_reports_a_dead_rank(line):
    result = parse_nccl_tests(HEADER + COLUMNS + ROWS + SUMMARY + line + "\n")
    assert result["passed"] is False and has_error(result, line[:30])


def test_nccl_version_from_an_info_line():
    text = "node01:749452:749452 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
    assert parse_nccl_tests(text)["nccl_version"] == "2.19.3+cuda12.2"
