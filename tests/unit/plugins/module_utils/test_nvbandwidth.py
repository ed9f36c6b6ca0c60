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
