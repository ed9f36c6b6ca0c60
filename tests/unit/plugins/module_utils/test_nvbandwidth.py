"""nvlink.bandwidth: nvbandwidth's GPU-to-GPU copy bandwidth per pair, from real outputs."""
from hypothesis import given, settings, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvbandwidth import (
    judge_nvbandwidth, parse_nvbandwidth)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile
from conftest import FIXTURES

GB200 = load_profile("gb200_nvl72_tray")
NO_FLOOR = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"d2d_read_ce_gb_s_min": None}})
V08 = (FIXTURES / "nvbandwidth" / "nvbandwidth_v08_a6000_6gpu_d2d_read_ce_issue50.txt").read_text()
V02 = (FIXTURES / "nvbandwidth" / "nvbandwidth_v02_rtx4090_h2d_d2h_issue15.txt").read_text()
V07 = (FIXTURES / "nvbandwidth" / "nvbandwidth_v07_a100_d2d_assert_issue34.txt").read_text()


def test_v08_matrix_without_its_running_line_is_named_by_its_sum():
    parsed = parse_nvbandwidth(V08)
    assert parsed["version"] == "v0.8" and parsed["errors"] == []
    test = parsed["tests"]["device_to_device_memcpy_read_ce"]
    assert test["sum"] == 715.53 and test["matrix"][0][0] is None and test["matrix"][3][5] == 26.35
    # No floor: the pairs across the PCIe switches (~22 GB/s) are below 0.85 x the best (26.35)
    slow = judge_nvbandwidth(parsed, NO_FLOOR)
    assert slow and all(c["status"] == "fail" for c in slow)
    assert slow[0]["message"] == ("GPU0 -> GPU3 device_to_device_memcpy_read_ce: 21.95 GB/s, below 0.85 x the node's "
                                  "best pair 26.35 GB/s")
    floored = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"d2d_read_ce_gb_s_min": 25}})
    checks = judge_nvbandwidth(parsed, floored)  # 26.34 on one PCIe switch, ~22 across it
    assert all("below the floor 650" in c["message"] for c in judge_nvbandwidth(parsed, GB200))
    assert len(checks) == 18 and all(c["status"] == "fail" for c in checks)
    assert checks[0]["message"] == "GPU0 -> GPU3 device_to_device_memcpy_read_ce: 21.95 GB/s, below the floor 25"
    assert checks[0]["evidence"][1] == "0       N/A     26.34     26.35     21.95     22.64     21.80"


def test_v02_layout_with_notes_and_device_names_reads_both_blocks():
    parsed = parse_nvbandwidth(V02)
    assert parsed["errors"] == [] and sorted(parsed["tests"]) == ["device_to_host_memcpy_ce", "host_to_device_memcpy_ce"]
    assert parsed["devices"][7] == {"name": "NVIDIA GeForce RTX 4090", "bus_id": None}
    assert parsed["tests"]["host_to_device_memcpy_ce"]["matrix"][0][3] == 26.30
    (check,) = judge_nvbandwidth(parsed, GB200)  # the d2d test was not run
    assert check["status"] == "error" and "did not run" in check["message"]


def test_an_assert_mid_test_is_an_error_in_the_tools_words():
    parsed = parse_nvbandwidth(V07)
    assert parsed["devices"][4]["bus_id"] == "00000000:9b:00"
    (check,) = judge_nvbandwidth(parsed, GB200)
    assert check["status"] == "error" and "did not finish (no SUM line)" in check["message"]
    assert "Invalid value when checking the pattern" in check["message"]


def test_a_healthy_tray_passes_and_a_floor_from_the_profile_is_applied():
    rows = ["memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", "           0         1         2         3"]
    for r in range(4):
        rows.append(" %d" % r + "".join("%10s" % ("N/A" if c == r else "%.2f" % (765.1 - c)) for c in range(4)))
    text = "Running device_to_device_memcpy_read_ce.\n" + "\n".join(rows) + "\n\nSUM device_to_device_memcpy_read_ce 9178.00\n"
    (check,) = judge_nvbandwidth(parse_nvbandwidth(text), GB200)
    assert check["status"] == "pass" and check["message"].startswith("device_to_device_memcpy_read_ce: 12 GPU pairs, min 762, median 764")
    floored = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"d2d_read_ce_gb_s_min": 764}})
    failed = judge_nvbandwidth(parse_nvbandwidth(text), floored)
    assert sorted(set(c["component"] for c in failed)) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert "below the floor 764" in failed[0]["message"]
    assert judge_nvbandwidth(None, GB200) == []


_WORDS = ["Running device_to_device_memcpy_read_ce.", "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
          "0 1", " 0 N/A 765.1", " 1 765.1 N/A", "SUM device_to_device_memcpy_read_ce 1530.2", "Waived:", "x", "..."]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=15).map("\n".join))
def test_garbage_made_of_its_words_passes_only_as_a_whole_finished_test(text):
    parsed = parse_nvbandwidth(text)
    statuses = [c["status"] for c in judge_nvbandwidth(parsed, GB200)]
    test = parsed["tests"].get("device_to_device_memcpy_read_ce")
    whole = (not parsed["errors"] and test and test["sum"] is not None and test["matrix"]
             and all(v is not None for r, cols in test["matrix"].items() for c, v in cols.items() if r != c))
    assert statuses and (whole or "pass" not in statuses), (text, statuses)


V09 = (FIXTURES / "nvbandwidth" / "nvbandwidth_v09_rtx5060ti_2gpu_h2d_bidir.txt").read_text()
V010 = (FIXTURES / "nvbandwidth" / "nvbandwidth_v010_b300_7gpu_full.txt").read_text()


def test_v09_host_name_line_and_coefficient_of_variation_are_read_not_errors():
    parsed = parse_nvbandwidth(V09)
    assert parsed["errors"] == [] and parsed["version"] == "v0.9" and parsed["hostname"] == "archlinux"
    assert sorted(parsed["devices"]) == [0, 1]
    block = parsed["tests"]["host_to_device_bidirectional_memcpy_ce"]
    assert block["sum"] == 36.0 and block["cv"] == 0.0 and block["matrix"] == {0: {0: 18.02, 1: 17.98}}


def test_v010_layout_a_b300_node_passes_with_every_pair_read():
    parsed = parse_nvbandwidth(V010)
    assert parsed["errors"] == [] and parsed["version"] == "v0.10.0" and parsed["devices"] == {}
    block = parsed["tests"]["device_to_device_memcpy_read_ce"]
    assert block["sum"] == 32140.19 and block["cv"] == 0.0 and len(block["matrix"]) == 7
    assert block["matrix"][6][5] == 766.21 and block["matrix"][3][3] is None
    # a bidirectional test: three matrices, each under its own SUM key; the variation after _total only
    assert [parsed["tests"]["device_to_device_bidirectional_memcpy_read_ce_" + k]["sum"] for k in ("read1", "read2", "total")] \
        == [31945.78, 31924.12, 63869.9]
    assert parsed["tests"]["device_to_device_bidirectional_memcpy_read_ce_read1"]["cv"] is None
    assert parsed["tests"]["device_to_device_bidirectional_memcpy_read_ce_total"]["cv"] == 0.0
    (check,) = judge_nvbandwidth(parsed, load_profile("gb200_nvl72_tray"))
    assert check["status"] == "pass" and check["metrics"]["pairs"] == 42 and check["metrics"]["min"] == 764.16


def test_v010_a_test_cut_off_after_its_matrix_is_still_an_error():
    cut = V010.split("SUM device_to_device_memcpy_read_ce")[0]
    (check,) = judge_nvbandwidth(parse_nvbandwidth(cut), load_profile("gb200_nvl72_tray"))
    assert check["status"] == "error" and "did not finish (no SUM line)" in check["message"]
