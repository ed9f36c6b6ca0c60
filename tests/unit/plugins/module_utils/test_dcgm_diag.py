"""parse_dcgm_diag over real dcgmi diag outputs (tests/fixtures/dcgm_diag) and hand-made edge cases."""
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    parse_dcgm_diag)

from conftest import FIXTURES


def _parse(name, **kwargs):
    return parse_dcgm_diag((FIXTURES / "dcgm_diag" / name).read_text(encoding="utf-8"), **kwargs)


def _test(result, name):
    found = [t for t in result["tests"] if t["name"] == name]
    assert len(found) == 1, [t["name"] for t in result["tests"]]
    return found[0]


def _row(name, info):
    return "| %-25s | %-46s |" % (name, info)


HEADER = ("+---------------------------+------------------------------------------------+\n"
          "| Diagnostic                | Result                                         |\n"
          "+===========================+================================================+\n")
FOOTER = "+---------------------------+------------------------------------------------+\n"
DEPLOYMENT = "|-----  Deployment  --------+------------------------------------------------|\n"
HARDWARE = "+-----  Hardware  ----------+------------------------------------------------+\n"


def _table(*rows, **kwargs):
    body = "".join(row + "\n" for row in rows)
    return HEADER + body + ("" if kwargs.get("cut") else FOOTER)


# ------------------------------------------------------------------------------------------
# Real outputs: DCGM 4.x text
# ------------------------------------------------------------------------------------------

def test_4x_text_pcie_global_failure_issue253():
    result = _parse("text_4x_r2_pcie_internal_error_issue253.txt")
    assert result["format"] == "text"
    assert result["dcgm_version"] == "4.2.3"
    assert result["driver_version"] == "570.148.08"
    assert result["metadata"]["GPU Device IDs Detected"] == "26b9, 26b9, 26b9, 26b9"
    assert [(t["name"], t["category"], t["status"]) for t in result["tests"]] == [
        ("software", "Deployment", "pass"), ("memory", "Hardware", "pass"),
        ("pcie", "Integration", "fail")]
    software = _test(result, "software")
    assert software["gpus"] == [0, 1, 2, 3] and software["all_gpus"] is True
    assert software["gpu_results"] == {0: "pass", 1: "pass", 2: "pass", 3: "pass"}
    pcie = _test(result, "pcie")
    # The failure is test-level (an internal error), not tied to any GPU: every GPU passed.
    assert pcie["gpu_results"] == {0: "pass", 1: "pass", 2: "pass", 3: "pass"}
    assert pcie["gpus"] == [] and pcie["all_gpus"] is False
    assert len(pcie["details"]) == 4
    assert pcie["details"][0] == (
        "There was an internal error during the test: 'A child process (152) exited with "
        "non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. "
        "Rerun diagnostics.")
    assert pcie["details"][2].startswith(
        "There was an internal error during the test: 'Output of child process (152) couldn't "
        "be parsed: '* Line 1, Column 1   Syntax error: value, object or array expected. ''")
    assert all(m["level"] == "warning" and m["gpu"] is None for m in pcie["messages"])
    assert result["overall"] == "fail"
    assert result["failed_gpus"] == []
    # The issue cut the table before its closing border: reported, and the parse fails closed.
    assert len(result["errors"]) == 1 and "closing border" in result["errors"][0]
    assert result["errors"][0].startswith("line 49:")


def test_4x_text_complete_table_b200_comment():
    result = _parse("text_4x_r2_pcie_fail_b200_issue253_comment.txt")
    assert result["errors"] == []
    assert result["dcgm_version"] == "4.4.1"
    assert result["gpus"] == list(range(8))
    assert result["counts"] == {"pass": 2, "fail": 1, "warn": 0, "skip": 0}
    pcie = _test(result, "pcie")
    assert pcie["status"] == "fail"
    assert pcie["details"] == [
        "There was an internal error during the test: 'Output of child process (11167) couldn't "
        "be parsed: '* Line 1, Column 1   Syntax error: value, object or array expected. '' "
        "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."]
    assert result["overall"] == "fail"


def test_4x_text_all_pass_docs():
    result = _parse("text_4x_r3_pass_docs.txt")
    assert result["errors"] == [] and result["warnings"] == []
    assert result["overall"] == "pass"
    assert result["dcgm_version"] == "4.0.0"
    assert [t["key"] for t in result["tests"]] == [
        "software", "memory", "diagnostic", "pcie", "memory_bandwidth", "targeted_stress",
        "targeted_power"]
    assert [t["category"] for t in result["tests"]] == [
        "Deployment", "Hardware", "Hardware", "Integration", "Stress", "Stress", "Stress"]
    for test in result["tests"]:
        assert test["status"] == "pass"
        assert test["gpus"] == [0, 1, 2, 3] and test["all_gpus"] is True
        assert test["details"] == []
    assert result["failed_gpus"] == []
    assert result["level"] is None


def test_4x_text_level_from_echoed_command_issue124():
    result = _parse("text_4x_r2_pass_issue124.txt")
    assert result["level"] == 2
    assert result["overall"] == "pass"
    assert result["gpus"] == [0]
    assert result["metadata"] == {"DCGM Version": "4.4.2", "Driver Version Detected": "580.105.08",
                                  "GPU Device IDs Detected": "2237"}


def test_level_argument_wins():
    assert _parse("text_4x_r2_pass_issue124.txt", level=3)["level"] == 3
    assert _parse("text_4x_r3_pass_docs.txt", level="3")["level"] == 3
    result = _parse("text_4x_r3_pass_docs.txt", level="three")
    assert result["level"] is None and "not a number" in result["warnings"][0]


# ------------------------------------------------------------------------------------------
# Real outputs: DCGM 3.x text
# ------------------------------------------------------------------------------------------

def test_3x_text_fail_all_and_wrapped_info_nccl_tests_issue264():
    result = _parse("text_3x_r3_cuda_init_fail_all_nccl_tests_issue264.txt")
    assert result["errors"] == []
    assert result["dcgm_version"] == "3.3.8"
    assert result["level"] == 3  # from the echoed "dcgmi diag --run 3"
    assert result["metadata"]["GPU Device IDs Detected"] == "2330,2330,2330,2330,2330,2330,2330,2330"
    deployment = [t for t in result["tests"] if t["category"] == "Deployment"]
    assert [t["name"] for t in deployment] == [
        "Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
        "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap",
        "Graphics Processes", "Inforom"]
    persistence = _test(result, "Persistence Mode")
    assert persistence["status"] == "pass"
    assert persistence["messages"][0]["level"] == "info"
    assert persistence["details"] == [
        'Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i '
        '<gpuId> -pm 1 " as root.,Persistence mode for GPU 1 is disabled. Enable persistence mode '
        'by running "nvidia-smi -i <gpuId> -pm 1 " as root.,Persistence mode for GPU 2 is '
        'disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.,'
        'Persistence mode for GPU 3 is disabled. Enable persistence mode by running "nvidia-smi '
        '-i <gpuId> -pm 1 " as root.,Persistence mode for GPU 4 is disabled. Enable pers']
    pcie = _test(result, "PCIe")
    assert (pcie["status"], pcie["all_gpus"]) == ("skip", True)
    memory = _test(result, "GPU Memory")
    assert memory["status"] == "fail" and memory["all_gpus"] is True
    assert memory["key"] == "memory" and memory["category"] == "Hardware"
    # "Fail - All" names no GPU; the per-GPU warnings do (GPU 0 ... GPU 7).
    assert memory["gpus"] == list(range(8))
    assert memory["gpu_results"] == {}
    assert len(memory["details"]) == 8
    assert memory["details"][7] == (
        "GPU 7 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. "
        "Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system not yet "
        "initialized'. . Please check if a CUDA sample program can be run successfully on this "
        "host. Refer to https://github.com/nvidia/cuda-samples")
    assert result["failed_gpus"] == list(range(8))
    assert result["counts"] == {"pass": 9, "fail": 1, "warn": 0, "skip": 3}
    assert result["overall"] == "fail"


def test_3x_text_mixed_gpus_sagemaker():
    result = _parse("text_3x_r3_targeted_power_mixed_sagemaker.txt")
    assert result["errors"] == []
    assert result["dcgm_version"] == "3.3.9"
    assert result["driver_version"] == "570.195.03"
    power = _test(result, "Targeted Power")
    assert power["category"] == "Stress" and power["key"] == "targeted_power"
    assert power["status"] == "fail"
    assert power["gpus"] == [1] and power["all_gpus"] is False
    assert power["gpu_results"] == {0: "pass", 1: "fail", 2: "pass", 3: "pass"}
    assert power["details"] == [
        "GPU 1 Max power of 224.1 did not reach desired power minimum target_power_min_ratio of "
        "224.2 for GPU 1 Verify that the clock speeds and GPU utilization are high.",
        "GPU 0 GPU 0 max power: 299.5 W average power usage: 299.0 W",
        "GPU 2 GPU 2 max power: 227.0 W average power usage: 224.0 W",
        "GPU 3 GPU 3 max power: 225.6 W average power usage: 223.9 W"]
    assert [m["level"] for m in power["messages"]] == ["warning", "info", "info", "info"]
    pcie = _test(result, "PCIe")
    assert (pcie["status"], pcie["gpus"], pcie["all_gpus"]) == ("pass", [0, 1, 2, 3], True)
    eud = _test(result, "EUD Test")
    assert (eud["status"], eud["key"], eud["all_gpus"]) == ("skip", "eud", True)
    assert _test(result, "Memory Bandwidth")["category"] == "Stress"
    assert _test(result, "Denylist")["key"] == "denylist"
    assert result["failed_gpus"] == [1]
    assert result["overall"] == "fail"


def test_3x_fragment_without_header_and_closing_pipe_ml_engineering():
    result = _parse("text_3x_fragment_gpu_memory_ml_engineering.txt")
    memory = _test(result, "GPU Memory")
    assert memory["category"] is None
    assert memory["gpu_results"] == dict([(0, "fail")] + [(g, "pass") for g in range(1, 8)])
    assert memory["gpus"] == [0]
    assert memory["details"] == [
        "GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for "
        "GPU 0 Verify that the cooling on this machine is functional, including external, "
        "thermal material interface, fans, and any other components."]
    assert result["failed_gpus"] == [0]
    assert "fragment" in result["warnings"][0]
    assert result["errors"] and "closing border" in result["errors"][0]
    assert result["overall"] == "fail"


def test_3x_error_row_outside_a_test_ml_engineering():
    result = _parse("text_3x_fragment_deployment_error_ml_engineering.txt")
    assert result["tests"] == []
    assert any("GPU 3 has uncorrectable memory errors and row remappings are pending" in error
               for error in result["errors"])
    assert result["overall"] == "fail"


def test_2x_handmade_blacklist_and_warn_gpu():
    result = _parse("text_2x_handmade_blacklist_warn_gpu.txt")
    assert result["errors"] == [] and result["warnings"] == []
    assert result["dcgm_version"] is None and result["metadata"] == {}
    blacklist = _test(result, "Blacklist")
    assert (blacklist["key"], blacklist["status"], blacklist["all_gpus"]) == ("denylist", "pass", True)
    retirement = _test(result, "Page Retirement")
    assert retirement["key"] == "page_retirement_row_remap"
    assert retirement["status"] == "fail"
    assert retirement["gpus"] == [2] and retirement["all_gpus"] is False
    assert retirement["messages"][0]["level"] == "error"
    assert retirement["details"] == [
        "GPU 2 had uncorrectable memory errors and row remappings are pending"]
    pcie = _test(result, "PCIe")
    assert pcie["status"] == "warn"
    assert pcie["gpus"] == [2]
    assert pcie["gpu_results"] == {0: "pass", 1: "pass", 2: "warn", 3: "pass"}
    assert pcie["details"][0].startswith(
        "GPU 2 Detected more than 8 PCIe replays per minute for GPU 2 : 11 Reconnect PCIe card. "
        "Run system side PCIE diagnostic utilities to verify hops off the GPU board.")
    diagnostic = _test(result, "Diagnostic")
    assert (diagnostic["status"], diagnostic["all_gpus"]) == ("warn", True)
    assert diagnostic["details"][0].endswith("Code: (000000000042)")
    assert _test(result, "EUD Test")["status"] == "skip"
    assert result["counts"] == {"pass": 12, "fail": 1, "warn": 2, "skip": 1}
    assert result["failed_gpus"] == [2]
    assert result["overall"] == "fail"


# ------------------------------------------------------------------------------------------
# Real outputs: JSON
# ------------------------------------------------------------------------------------------

def test_3x_json_virtualclient():
    result = _parse("json_3x_r3_virtualclient.json")
    assert result["format"] == "json" and result["schema"] == "3.x"
    assert result["errors"] == [] and result["warnings"] == []
    assert len(result["tests"]) == 16
    assert [t["category"] for t in result["tests"]][8:11] == ["Deployment", "Integration",
                                                              "Hardware"]
    denylist = _test(result, "Denylist")
    assert (denylist["status"], denylist["gpu_results"], denylist["all_gpus"]) == ("pass", {}, True)
    pcie = _test(result, "PCIe")
    assert pcie["gpu_results"] == {0: "pass"}
    assert pcie["details"][0].startswith("GPU 0 GPU 0 GPU to Host bandwidth:\t\t13.15 GB/s")
    eud = _test(result, "EUD Test")
    assert (eud["status"], eud["gpus"]) == ("skip", [0])
    assert result["counts"] == {"pass": 15, "fail": 0, "warn": 0, "skip": 1}
    assert result["overall"] == "pass"


def test_3x_json_gpu_id_key_and_skips_issue139():
    result = _parse("json_3x_r3_skips_issue139.json")
    assert result["errors"] == []
    memory = _test(result, "GPU Memory")
    assert (memory["status"], memory["gpu_results"]) == ("skip", {0: "skip"})
    assert result["counts"] == {"pass": 2, "fail": 0, "warn": 0, "skip": 6}
    assert result["overall"] == "pass"


def test_4x_json_gb10_software_fail():
    result = _parse("json_4x_r1_software_fail_gb10.json")
    assert result["format"] == "json" and result["schema"] == "4.x"
    assert result["dcgm_version"] == "4.2.3"
    assert result["driver_version"] == "580.82.09"
    assert result["metadata"] == {"Driver Version Detected": "580.82.09", "version": "4.2.3"}
    software = _test(result, "software")
    assert software["category"] == "Deployment"
    assert software["status"] == "fail"
    assert software["gpu_results"] == {0: "fail"}
    assert software["gpus"] == [0]
    assert software["details"] == [
        'GPU 0: Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode '
        'by running "nvidia-smi -i <gpuId> -pm 1 " as root.',
        "Error getting the SRAM Threshold Count for GPU 0. Status = 0. Value = "
        "9223372036854775794. SRAM Threshold checking was skipped."]
    assert software["messages"][0]["error_id"] == 29
    assert result["failed_gpus"] == [0]
    assert result["overall"] == "fail"


def test_4x_json_entities_issue215():
    result = _parse("json_4x_r3_diagnostic_issue215.json")
    assert result["errors"] == []
    assert result["dcgm_version"] is None  # the hand-made wrapper has no metadata
    diagnostic = _test(result, "diagnostic")
    assert diagnostic["gpu_results"] == dict((g, "pass") for g in range(8))
    assert diagnostic["gpus"] == list(range(8)) and diagnostic["all_gpus"] is True
    assert "GPU 1 calculated at approximately 859.08 gigaflops during this test" in diagnostic["details"]
    assert "GPU 2: Allocated space for 138 output matricies from 76077622886 bytes available." \
        in diagnostic["details"]
    assert result["overall"] == "pass"


def test_4x_json_handmade_nulls_and_string_ids():
    result = _parse("json_4x_handmade_nulls_mixed_ids.json")
    assert result["errors"] == []
    assert result["warnings"][0] == ("line 1: text before the JSON document: WARNING: dcgmi diag "
                                     "is running without root privileges; some tests may be skipped")
    assert result["dcgm_version"] == "4.1.1" and result["driver_version"] == "570.124.06"
    assert [t["name"] for t in result["tests"]] == [
        "software", "memory", "pulse_test", "pcie", "cpu_eud"]
    software = _test(result, "software")
    assert software["gpu_results"] == {0: "pass", 1: "pass"}
    memory = _test(result, "memory")
    assert (memory["status"], memory["gpus"], memory["all_gpus"]) == ("fail", [1], False)
    assert memory["details"] == [
        "GPU 1: A DBE occurred on GPU 1: Xid 48 detected; uncorrectable ECC error"]
    pulse = _test(result, "pulse_test")
    assert pulse["status"] == "skip" and "not run" in pulse["details"][0]
    pcie = _test(result, "pcie")
    assert (pcie["status"], pcie["gpus"], pcie["gpu_results"]) == ("warn", [0],
                                                                   {0: "warn", 1: "pass"})
    assert pcie["details"] == ["GPU 0 PCIe replay rate is elevated"]
    cpu = _test(result, "cpu_eud")
    assert cpu["gpu_results"] == {} and cpu["entity_results"] == {"CPU0": "pass"}
    assert result["failed_gpus"] == [1]
    assert result["gpus"] == [0, 1]
    assert result["overall"] == "fail"


def test_3x_json_runtime_error():
    result = _parse("json_3x_handmade_runtime_error.json")
    assert result["tests"] == []
    assert result["runtime_error"] == "Error: Diagnostic could not be run while DCGM is paused."
    assert result["errors"] == ["dcgmi could not run the diagnostic: Error: Diagnostic could "
                                "not be run while DCGM is paused."]
    assert result["dcgm_version"] == "3.3.9"
    assert result["overall"] == "fail"


def test_3x_json_iterations_csv_ids_and_deployment_quirk():
    result = _parse("json_3x_handmade_iterations.json")
    assert result["dcgm_version"] == "3.1.8" and result["driver_version"] == "525.125.06"
    blacklist = _test(result, "Blacklist")
    assert blacklist["gpu_results"] == {0: "pass", 1: "pass", 2: "pass", 3: "pass"}
    retirement = _test(result, "Page Retirement/Row Remap")
    assert (retirement["status"], retirement["gpus"], retirement["all_gpus"]) == ("fail", [3], False)
    assert retirement["details"] == [
        "GPU 3 had uncorrectable memory errors and row remappings are pending"]
    pcie = _test(result, "PCIe")
    assert pcie["gpu_results"] == {0: "pass", 1: "pass", 2: "fail", 3: "pass"}
    assert pcie["details"] == ["GPU 2 Xid 79 detected: GPU has fallen off the bus"]
    assert result["failed_gpus"] == [2, 3]
    assert result["errors"] == ["dcgmi reported the iterations as failed: The diagnostic failed"]
    assert "2 iterations" in result["warnings"][0]
    assert result["overall"] == "fail"


# ------------------------------------------------------------------------------------------
# Edge cases
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   \n\n", "\ufeff"])
def test_empty_input(text):
    result = parse_dcgm_diag(text)
    assert result["overall"] == "fail"
    assert result["tests"] == []
    assert result["errors"]


@pytest.mark.parametrize("text", [
    "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n",
    "GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access "
    "to the entire GPU.\n",
    "bash: dcgmi: command not found\n",
    "+-----------------------+\n| nothing | here |\n+-----------------------+\n",
])
def test_not_a_diag_output(text):
    result = parse_dcgm_diag(text)
    assert result["overall"] == "fail"
    assert result["errors"]


def test_dcgmi_error_line_is_reported():
    result = parse_dcgm_diag("Error: Diagnostic could not be run while DCGM is paused.\n")
    assert result["errors"][0] == ("line 1: dcgmi reported: Error: Diagnostic could not be run "
                                   "while DCGM is paused.")


def test_unknown_status_is_an_error_not_a_pass():
    text = _table(DEPLOYMENT.rstrip("\n"), _row("Denylist", "Pass"), _row("Inforom", "Maybe"))
    result = parse_dcgm_diag(text)
    assert _test(result, "Inforom")["status"] == "fail"
    assert result["errors"] == ["line 6: test 'Inforom' has an unrecognised result 'Maybe'"]
    assert result["overall"] == "fail"


def test_every_test_skipped_is_not_a_pass():
    text = _table(HARDWARE.rstrip("\n"), _row("GPU Memory", "Skip - All"),
                  _row("Diagnostic", "Skip - All"))
    result = parse_dcgm_diag(text)
    assert result["errors"] == []
    assert result["overall"] == "fail"
    assert "every test was skipped" in result["warnings"][-1]


def test_4x_not_run_cell_is_skip():
    text = _table("+-----  Stress  ------------+------------------------------------------------+",
                  _row("targeted_power", ""), _row("", "GPU0: Skip"),
                  _row("memory_bandwidth", "Pass"), _row("", "GPU0: Pass"))
    result = parse_dcgm_diag(text)
    power = _test(result, "targeted_power")
    assert power["status"] == "skip" and power["details"] == ["not run"]
    assert result["overall"] == "pass"


def test_truncated_table_never_passes():
    text = _table(DEPLOYMENT.rstrip("\n"), _row("Denylist", "Pass"), _row("NVML Library", "Pass"),
                  cut=True)
    result = parse_dcgm_diag(text)
    assert [t["status"] for t in result["tests"]] == ["pass", "pass"]
    assert result["overall"] == "fail"
    assert "looks truncated" in result["errors"][0]


def test_table_interrupted_by_text():
    text = HEADER + DEPLOYMENT + _row("Denylist", "Pass") + "\nsome other output\n" + FOOTER
    result = parse_dcgm_diag(text)
    assert "cut off" in result["errors"][0]
    assert result["overall"] == "fail"


def test_two_tables_are_merged_worst_wins():
    first = _table(HARDWARE.rstrip("\n"), _row("GPU Memory", "Pass - All"))
    second = _table(HARDWARE.rstrip("\n"), _row("GPU Memory", "Pass - GPUs: 0, 1"),
                    _row("", "Fail - GPU: 2"))
    result = parse_dcgm_diag("Successfully ran diagnostic for group.\n" + first
                             + "Successfully ran diagnostic for group.\n" + second
                             + "Aborting the iterative runs of the diagnostic due to failure: "
                               "Some tests failed\n")
    memory = _test(result, "GPU Memory")
    assert memory["status"] == "fail" and memory["gpus"] == [2]
    assert "2 result tables" in result["warnings"][0]
    assert "Aborting the iterative runs" in result["errors"][0]


def test_crlf_and_srun_labels():
    text = _table(DEPLOYMENT.rstrip("\n"), _row("Denylist", "Pass"))
    labelled = "".join("0: " + line + "\r\n" for line in text.splitlines())
    result = parse_dcgm_diag(labelled)
    assert result["errors"] == []
    assert result["overall"] == "pass"
    assert _test(result, "Denylist")["status"] == "pass"


def test_wrapped_chunk_with_trailing_space_keeps_word_boundary():
    # "There was an internal error during the test: " is exactly 45 characters and ends in a
    # space; the next chunk starts with a quote. The space must survive the unwrapping.
    text = _table("+-----  Integration  -------+------------------------------------------------+",
                  _row("pcie", "Fail"),
                  _row("Warning", "There was an internal error during the test:"),
                  _row("", "'A child process (152) exited'"),
                  _row("", "GPU0: Pass"))
    pcie = _test(parse_dcgm_diag(text), "pcie")
    assert pcie["details"] == [
        "There was an internal error during the test: 'A child process (152) exited'"]


def test_4x_entity_warning_rows_are_attributed_to_the_gpu():
    text = _table("+-----  Hardware  ----------+------------------------------------------------+",
                  _row("memory", "Fail"), _row("", "GPU0: Pass"), _row("", "GPU1: Fail"),
                  _row("Warning: GPU1", "A DBE occurred on GPU 1: Xid 48"))
    result = parse_dcgm_diag(text)
    memory = _test(result, "memory")
    assert memory["gpus"] == [1] and memory["gpu_results"] == {0: "pass", 1: "fail"}
    assert memory["messages"][0]["gpu"] == 1 and memory["messages"][0]["entity"] == "GPU1"
    assert memory["details"] == ["GPU 1: A DBE occurred on GPU 1: Xid 48"]
    assert result["failed_gpus"] == [1]


@pytest.mark.parametrize("document, error", [
    ("{", "invalid JSON"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [', "invalid JSON"),
    ("[1, 2, 3]", "not a dcgmi diag object"),
    ('{"foo": 1}', "not a dcgmi diag -j document"),
    ('{"DCGM Diagnostic": {}}', "no test_categories"),
    ('{"DCGM Diagnostic": {"test_categories": 5}}', "not a list"),
    ('{"DCGM Diagnostic": {"test_categories": []}}', "no test results found"),
])
def test_bad_json(document, error):
    result = parse_dcgm_diag(document)
    assert result["format"] == "json"
    assert result["overall"] == "fail"
    assert any(error in message for message in result["errors"]), result["errors"]


def test_json_null_status_is_an_error():
    document = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0, "status": None}]}]}]}}
    result = parse_dcgm_diag(json.dumps(document))
    assert _test(result, "memory")["status"] == "fail"
    assert result["errors"] == ["test 'memory': results[0] has no status None"]
    assert result["overall"] == "fail"


def test_json_gpu_ids_forms():
    document = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Integration", "tests": [
        {"name": "PCIe", "results": [{"gpu_ids": "GPU3", "status": "Pass"},
                                     {"gpu_ids": ["4", 5], "status": "Pass"},
                                     {"gpu_id": None, "status": "Pass"}]}]}]},
        "GPU Device Serials": {"3": "1650", "4": "1651", "5": "1652"}}
    result = parse_dcgm_diag(json.dumps(document))
    assert _test(result, "PCIe")["gpu_results"] == {3: "pass", 4: "pass", 5: "pass"}
    assert result["gpus"] == [3, 4, 5]
    assert (result["gpu_ids"], result["gpu_count"]) == ([3, 4, 5], 3)
    assert result["overall"] == "pass"


def test_json_results_on_gpus_the_run_did_not_declare_are_an_error():
    document = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Integration", "tests": [
        {"name": "PCIe", "results": [{"gpu_ids": "3", "status": "Pass"}]}]}]},
        "GPU Device Serials": {"0": "1650", "7": "1651"}}
    result = parse_dcgm_diag(json.dumps(document))
    assert result["overall"] == "fail"
    assert "GPU 3 named in the results but not among the GPUs of the run (0, 7)" in result["errors"]


def test_shell_prompt_in_brackets_is_not_json():
    # go-dcgm #52 pastes "[root@host:/home/ubuntu]$ dcgmi diag -r 2 -g 8 ..." above the table.
    text = ("[root@minion183-23-23-39:/home/ubuntu]$ dcgmi diag -r 2 -g 8 --host 10.0.0.1:5555\n"
            "Successfully ran diagnostic for group.\n"
            + _table(DEPLOYMENT.rstrip("\n"), _row("Denylist", "Pass")))
    result = parse_dcgm_diag(text)
    assert result["format"] == "text"
    assert result["level"] == 2
    assert result["overall"] == "pass"
