"""parse_dcgm_diag: the level and GPUs the output proves, and salvage of noisy captures."""
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    LEVEL_TESTS, level_gaps, parse_dcgm_diag, proven_level)

from conftest import FIXTURES


def _text(name):
    return (FIXTURES / "dcgm_diag" / name).read_text()


def _strict(result):
    return json.loads(json.dumps(result, allow_nan=False))


@pytest.mark.parametrize("name, level_run, level_listed, gpu_ids, gpu_count", [
    # DCGM 4.x text: the docs' -r 3 example, the -r 2 of issue 124, the B200 table of issue 253
    ("text_4x_r3_pass_docs.txt", 3, 3, [0, 1, 2, 3], 4),
    ("text_4x_r2_pass_issue124.txt", 2, 2, [0], 1),
    ("text_4x_r2_pcie_fail_b200_issue253_comment.txt", 2, 2, list(range(8)), 8),
    # DCGM 3.x text: "Pass - All" rows; GPU ids from the lists and the per-GPU messages
    ("text_3x_r3_targeted_power_mixed_sagemaker.txt", 3, 3, [0, 1, 2, 3], 4),
    ("text_3x_r3_cuda_init_fail_all_nccl_tests_issue264.txt", 1, 3, list(range(8)), 8),
    # DCGM 2.x stencil (hand-made): Blacklist, Page Retirement, no Metadata section
    ("text_2x_handmade_blacklist_warn_gpu.txt", 3, 3, [0, 1, 2, 3], 4),
    # JSON 3.x and 4.x
    ("json_3x_r3_virtualclient.json", 3, 3, [0], 1),
    ("json_3x_r3_skips_issue139.json", 1, 3, [0], 1),
    ("json_4x_r1_software_fail_gb10.json", 1, 1, [0], 1),
    ("json_4x_handmade_nulls_mixed_ids.json", 2, 4, [0, 1], 2),
    # only the diagnostic test, no deployment result: no level is proven
    ("json_4x_r3_diagnostic_issue215.json", None, 3, list(range(8)), 8),
])
def test_level_and_gpus_come_from_the_output(name, level_run, level_listed, gpu_ids, gpu_count):
    result = _strict(parse_dcgm_diag(_text(name), level=4))
    assert (result["level_run"], result["level_listed"]) == (level_run, level_listed)
    assert (result["gpu_ids"], result["gpu_count"]) == (gpu_ids, gpu_count)
    assert result["level"] == 4            # what was asked for stays apart from what ran
    assert result["level_evidence"] and result["gpu_evidence"]


def test_level_tests_follow_the_dcgm_suites():
    assert LEVEL_TESTS == {2: ("memory", "pcie"),
                           3: ("diagnostic", "memory_bandwidth", "targeted_stress",
                               "targeted_power"),
                           4: ("memtest", "pulse_test")}
    tests = [{"key": "software", "category": "Deployment", "status": "pass"},
             {"key": "memory", "category": "Hardware", "status": "pass"},
             {"key": "pcie", "category": "Integration", "status": "skip"}]
    assert proven_level(tests) == 1
    assert level_gaps(tests, 2) == [(2, "pcie", "skipped")]
    assert proven_level(tests[:1]) == 1 and proven_level([]) is None


def test_level_evidence_is_the_test_rows():
    result = parse_dcgm_diag(_text("text_4x_r3_pass_docs.txt"))
    assert result["level_evidence"][:4] == [
        "| diagnostic                | Pass                                           |",
        "| memory_bandwidth          | Pass                                           |",
        "| targeted_stress           | Pass                                           |",
        "| targeted_power            | Pass                                           |"]
    assert "| software                  | Pass                                           |" \
        in result["level_evidence"]
    json_result = parse_dcgm_diag(_text("json_3x_r3_virtualclient.json"))
    assert json_result["level_evidence"][:2] == ['"name" : "Diagnostic",', '"status" : "Pass"']


def test_a_test_under_the_wrong_section_proves_nothing():
    text = _text("text_4x_r3_pass_docs.txt")
    damaged = text.replace("+-----  Stress  ------------+------------------------------------------------+\n", "")
    result = parse_dcgm_diag(damaged)
    assert result["level_run"] == 2
    assert "test 'targeted_power' is listed under Integration, dcgmi prints it under Stress: the " \
           "output is damaged" in result["errors"]
    assert result["overall"] == "fail"


def test_a_test_missing_a_gpu_is_an_error():
    text = _text("text_4x_r3_pass_docs.txt")
    lines = text.splitlines(True)
    # drop GPU2's row of targeted_stress
    at = lines.index("| targeted_stress           | Pass                                           |\n")
    del lines[at + 3]
    result = parse_dcgm_diag("".join(lines))
    assert "test 'targeted_stress' reports GPUs 0, 1, 3 but the run tested GPUs 0-3: rows missing " \
           "or damaged" in result["errors"]
    assert result["overall"] == "fail"


def test_more_gpus_than_device_ids_is_an_error():
    text = _text("text_4x_r3_pass_docs.txt").replace("| GPU Device IDs Detected   | 25b6, 25b6, 25b6, 25b6 ",
                                                     "| GPU Device IDs Detected   | 25b6, 25b6, 25b6       ")
    result = parse_dcgm_diag(text)
    assert "the results name 4 GPUs (0-3) but the run lists 3 GPU device ids" in result["errors"]


# ------------------------------------------------------------------------------ salvage

def test_prompt_and_echo_before_a_json_document():
    text = ("user@gpu01:~$ sudo dcgmi diag -r 3 -j\n"
            "+ dcgmi diag -r 3 -j\n" + _text("json_3x_r3_virtualclient.json"))
    result = parse_dcgm_diag(text)
    assert result["overall"] == "pass" and result["level"] == 3
    assert result["level_run"] == 3


def test_srun_label_prefix_on_a_json_document():
    lines = _text("json_4x_r1_software_fail_gb10.json").splitlines()
    result = parse_dcgm_diag("\n".join(" 0: " + line for line in lines))
    plain = parse_dcgm_diag(_text("json_4x_r1_software_fail_gb10.json"))
    assert result["format"] == "json" and result["errors"] == plain["errors"]
    assert [t["status"] for t in result["tests"]] == [t["status"] for t in plain["tests"]]
    assert "launcher prefixes removed from %d lines" % len(lines) in result["warnings"]
    assert (result["gpu_ids"], result["level_run"]) == ([0], 1)


def test_shell_prompt_before_a_text_table_is_a_warning():
    text = "$ kubectl exec dcgm-pod -- dcgmi diag -r 2\n" + _text("text_4x_r2_pcie_fail_b200_issue253_comment.txt")
    result = parse_dcgm_diag(text)
    assert result["level"] == 2 and result["level_run"] == 2


@pytest.mark.parametrize("tail", ["terminate called after throwing an instance of 'std::bad_alloc'",
                                  "Segmentation fault (core dumped)",
                                  "panic: runtime error: invalid memory address"])
def test_a_crash_after_the_output_is_an_error_next_to_the_results(tail):
    result = parse_dcgm_diag(_text("text_4x_r3_pass_docs.txt") + tail + "\n")
    assert result["overall"] == "fail"
    assert result["errors"] == ["line 49: dcgmi reported: %s" % tail]
    assert result["error_lines"] == [tail]
    assert result["counts"]["pass"] == 7 and result["level_run"] == 3
    json_result = parse_dcgm_diag(_text("json_3x_r3_virtualclient.json") + "\n" + tail + "\n")
    assert json_result["errors"] == ["after the JSON document, dcgmi reported: %s" % tail]
    assert json_result["level_run"] == 3


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e309"])
def test_non_finite_numbers_in_json_are_errors(value):
    text = _text("json_4x_r1_software_fail_gb10.json").replace('"4.2.3"', value)
    result = _strict(parse_dcgm_diag(text))
    assert result["overall"] == "fail"
    assert any("the JSON document holds" in e for e in result["errors"])


def test_an_unknown_status_word_in_a_per_gpu_row_is_an_error():
    text = _text("text_3x_r3_targeted_power_mixed_sagemaker.txt").replace(
        "| Fail - GPU: 1       ", "| Fxil - GPU: 1       ")
    result = parse_dcgm_diag(text)
    assert any("test 'Targeted Power' has an unrecognised result 'Fxil - GPU: 1'" in e
               for e in result["errors"])
    assert result["overall"] == "fail"
    text = _text("text_4x_r2_pass_issue124.txt").replace("GPU0: Pass", "GPU0: 0", 1)
    assert "reports an unrecognised result '0' for GPU0" in " ".join(parse_dcgm_diag(text)["errors"])


def test_a_json_gpu_id_that_is_not_one_is_an_error():
    text = _text("json_3x_r3_virtualclient.json").replace('"gpu_ids" : "0"', '"gpu_ids" : "1000000"', 1)
    result = parse_dcgm_diag(text)
    assert "test 'PCIe': results[0] has gpu_ids '1000000', not a list of GPU ids" in result["errors"]
    text = _text("json_4x_r1_software_fail_gb10.json").replace('"entity_id" : 0', '"entity_id" : "x"', 1)
    assert any("not a GPU id" in e for e in parse_dcgm_diag(text)["errors"])
