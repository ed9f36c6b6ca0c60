"""judge_dcgm over real dcgmi diag outputs (tests/fixtures/dcgm_diag)."""
import copy
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    parse_dcgm_diag)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_dcgm import (
    judge_dcgm, judge_dcgm_stage)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES


def _text(name):
    return (FIXTURES / "dcgm_diag" / name).read_text()


def _diag(name, level=None):
    return parse_dcgm_diag(_text(name), level=level)


def _check(results, name):
    found = [r for r in results if r["check"] == name]
    assert len(found) == 1, results
    return found[0]


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


@pytest.fixture(scope="module")
def four_gpus():
    """The GB200 tray profile: 4 GPUs, level 3 (the GPU count of the 4-GPU fixtures)."""
    return load_profile("gb200_nvl72_tray")


def _sized(profile, gpus, level=3):
    profile = copy.deepcopy(profile)
    profile["gpus_per_node"] = gpus
    profile["dcgm"]["level"] = level
    return profile


def test_level3_pass_states_what_the_output_proved(four_gpus):
    results = judge_dcgm(_diag("text_4x_r3_pass_docs.txt"), four_gpus)
    assert set(r["status"] for r in results) == {"pass"}
    level = results[0]
    assert level["check"] == "dcgm.level"
    assert level["message"] == (
        "dcgmi diag ran level 3 (deployment, memory, PCIe, diagnostic and stress tests) on 4 GPUs "
        "(0-3), 7 tests ran; the profile requires level 3 on 4 GPUs")
    assert "| targeted_power            | Pass                                           |" \
        in level["evidence"]
    assert "| GPU Device IDs Detected   | 25b6, 25b6, 25b6, 25b6                         |" \
        in level["evidence"]
    (tests,) = [r for r in results if r["check"] == "dcgm.tests"]   # the passes, in one result
    assert tests["message"].startswith("dcgmi diag: 7 test(s) passed (Deployment 1, Hardware 2, Integration 1, "
                                       "Stress 3): ")
    assert "targeted_power" in tests["metrics"]["passed"] and tests["metrics"]["gpus"] == [0, 1, 2, 3]
    assert not [r for r in results if r["check"] == "dcgm.test"]
    assert all(r["evidence"] for r in results)


def test_level1_on_four_gpus_fails_a_level3_eight_gpu_profile(h100):
    # The configured level said 3; the output shows only the deployment tests, on 4 GPUs.
    text = _text("text_4x_r3_pass_docs.txt")
    lines = text.splitlines()
    start = lines.index("+-----  Hardware  ----------+------------------------------------------------+")
    level1 = "\n".join(lines[:start] + lines[-1:]) + "\n"
    results = judge_dcgm(parse_dcgm_diag(level1, level=3), h100)
    level = _check(results, "dcgm.level")
    assert level["status"] == "fail"
    assert level["message"].startswith(
        "dcgmi diag ran level 1 (Deployment tests only) on 4 GPUs (0-3) (for level 3, memory, "
        "pcie, diagnostic, memory_bandwidth, targeted_stress and targeted_power not in the "
        "output); the profile requires level 3 on 8 GPUs")
    assert level["metrics"]["found"] == 1 and level["metrics"]["requested"] == 3
    assert "| software                  | Pass                                           |" \
        in level["evidence"]


def test_failed_test_names_gpu_and_details(four_gpus):
    results = judge_dcgm(_diag("text_3x_r3_targeted_power_mixed_sagemaker.txt", level=3),
                         four_gpus)
    failed = [r for r in results if r["status"] == "fail"]
    assert len(failed) == 1
    assert failed[0]["message"].startswith(
        "dcgmi diag test 'Targeted Power' failed on GPU1: GPU 1 Max power of 224.1 did not "
        "reach desired power minimum")
    assert failed[0]["metrics"]["failed_gpus"] == [1]
    assert failed[0]["component"] == "dcgm:targeted_power"
    assert failed[0]["evidence"][:2] == [
        "| Targeted Power            | Pass - GPUs: 0, 2, 3                           |",
        "|                           | Fail - GPU: 1                                  |"]
    assert _check(results, "dcgm.level")["status"] == "pass"


def test_failure_on_all_gpus_and_skipped_level3_tests(h100):
    results = judge_dcgm(_diag("text_3x_r3_cuda_init_fail_all_nccl_tests_issue264.txt"), h100)
    failed = [r for r in results if r["status"] == "fail" and r["check"] == "dcgm.test"]
    assert [r["message"][:88] for r in failed] == [
        "dcgmi diag test 'GPU Memory' failed on GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6 and GPU7"]
    skipped = [r for r in results if r["status"] == "skip"]
    assert "dcgmi diag test 'PCIe' was skipped" in [r["message"] for r in skipped]
    # --run 3 --fail-early: the stress tests were skipped or never printed, PCIe skipped
    level = _check(results, "dcgm.level")
    assert level["status"] == "fail"
    assert level["message"].startswith("dcgmi diag ran level 1 (Deployment tests only) on 8 GPUs "
                                       "(0-7) (for level 3, diagnostic, targeted_stress and "
                                       "targeted_power not in the output; pcie and "
                                       "memory_bandwidth skipped)")


def test_warning_is_pass_with_message(four_gpus):
    results = judge_dcgm(_diag("text_2x_handmade_blacklist_warn_gpu.txt", level=3), four_gpus)
    warned = [r for r in results if r["metrics"].get("warning")]
    assert warned and all(r["status"] == "pass" for r in warned)
    assert warned[0]["message"].startswith("warning: dcgmi diag test 'PCIe' warned on GPU2")
    failed = [r["message"] for r in results if r["status"] == "fail"]
    assert failed == ["dcgmi diag test 'Page Retirement' failed on GPU2: GPU 2 had uncorrectable "
                      "memory errors and row remappings are pending"]


def test_json_document_level1(h100):
    results = judge_dcgm(_diag("json_4x_r1_software_fail_gb10.json", level=1), h100)
    level = _check(results, "dcgm.level")
    assert level["status"] == "fail"
    assert level["message"].startswith("dcgmi diag ran level 1 (Deployment tests only) on 1 GPU "
                                       "(0) (for level 3, memory, pcie")
    assert level["message"].endswith("the profile requires level 3 on 8 GPUs")
    assert '"name" : "software",' in level["evidence"]
    failed = [r for r in results if r["status"] == "fail" and r["check"] == "dcgm.test"]
    assert failed[0]["message"].startswith("dcgmi diag test 'software' failed on GPU0: ")


def test_level_below_the_required_one_fails_above_passes(h100):
    one_gpu = _sized(h100, 1)
    level = _check(judge_dcgm(_diag("text_4x_r2_pass_issue124.txt"), one_gpu), "dcgm.level")
    assert (level["status"], level["message"]) == (
        "fail", "dcgmi diag ran level 2 (deployment, memory and PCIe tests) on 1 GPU (0) (for "
                "level 3, diagnostic, memory_bandwidth, targeted_stress and targeted_power not in "
                "the output); the profile requires level 3 on 1 GPUs")
    assert set(r["status"] for r in judge_dcgm(_diag("text_4x_r2_pass_issue124.txt"),
                                               _sized(h100, 1, level=2))) == {"pass"}
    # a level 3 run passes a profile asking for level 2
    results = judge_dcgm(_diag("json_3x_r3_virtualclient.json"), _sized(h100, 1, level=2))
    assert _check(results, "dcgm.level")["status"] == "pass"


def test_stage_option_level_wins_over_the_profile(h100):
    one_gpu = _sized(h100, 1, level=3)
    checks, metrics = judge_dcgm_stage({"dcgmi-diag": _text("text_4x_r2_pass_issue124.txt")},
                                       one_gpu, {"level": 2})
    assert _check(checks, "dcgm.level")["status"] == "pass"
    assert metrics == {"level": 2, "gpu_count": 1, "gpu_ids": [0]}
    checks, _metrics = judge_dcgm_stage({"dcgmi-diag": _text("text_4x_r2_pass_issue124.txt")},
                                        one_gpu, {})
    assert _check(checks, "dcgm.level")["status"] == "fail"   # the profile's level 3


def test_stage_metrics_give_the_gpus_dcgmi_tested(h100):
    _checks, metrics = judge_dcgm_stage(
        {"dcgmi-diag": _text("text_3x_r3_targeted_power_mixed_sagemaker.txt")}, h100, {"level": 3})
    assert metrics == {"level": 3, "gpu_count": 4, "gpu_ids": [0, 1, 2, 3]}
    checks, metrics = judge_dcgm_stage({"dcgmi-diag": None}, h100, {"level": 3})
    assert [c["status"] for c in checks] == ["skip"] and metrics == {}


def test_fewer_gpus_than_the_profile_fails(h100):
    results = judge_dcgm(_diag("text_4x_r3_pass_docs.txt"), h100)
    level = _check(results, "dcgm.level")
    assert level["status"] == "fail"
    assert level["message"] == (
        "dcgmi diag ran level 3 (deployment, memory, PCIe, diagnostic and stress tests) on 4 GPUs "
        "(0-3); the profile requires level 3 on 8 GPUs")


def test_level_not_shown_is_an_error_never_the_configured_one(h100):
    # a document with only the diagnostic test: no deployment result, whatever -r said
    results = judge_dcgm(_diag("json_4x_r3_diagnostic_issue215.json", level=3), h100)
    level = _check(results, "dcgm.level")
    assert level["status"] == "error"
    assert "the output does not show which tests ran" in level["message"]
    assert "ran level 3" not in level["message"]


def test_gpus_not_shown_is_an_error(h100):
    # a 3.x deployment-only document without GPU Device IDs or Serials names no GPU
    document = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]}]}}
    results = judge_dcgm(parse_dcgm_diag(json.dumps(document)), _sized(h100, 8, level=1))
    level = _check(results, "dcgm.level")
    assert level["status"] == "error"
    assert "the output does not show which GPUs were tested" in level["message"]


def test_gpu_id_beyond_the_node_is_an_error(four_gpus):
    text = _text("text_4x_r3_pass_docs.txt").replace("GPU3: Pass", "GPU9: Pass")
    results = judge_dcgm(parse_dcgm_diag(text), four_gpus)
    assert "pass" not in [r["status"] for r in results if r["check"] not in ("dcgm.test", "dcgm.tests")]
    assert any(r["status"] == "error" for r in results)


# ------------------------------------------------------------------------------ error inputs

@pytest.mark.parametrize("name", ["text_3x_fragment_deployment_error_ml_engineering.txt",
                                  "text_3x_fragment_gpu_memory_ml_engineering.txt",
                                  "text_4x_r2_pcie_internal_error_issue253.txt"])
def test_unreadable_output_is_error_never_pass(name, h100):
    results = judge_dcgm(_diag(name, level=3), h100)
    assert results[0]["status"] == "error"
    assert results[0]["message"].startswith("dcgmi diag: output unreadable: ")
    # a failure visible in a truncated table is still reported; nothing passes
    assert "pass" not in set(r["status"] for r in results)


def test_truncated_output_still_reports_the_failed_test(h100):
    results = judge_dcgm(_diag("text_4x_r2_pcie_internal_error_issue253.txt"), h100)
    assert [(r["check"], r["status"]) for r in results] == [
        ("dcgm.parse", "error"), ("dcgm.level", "fail"), ("dcgm.test", "fail")]
    assert results[2]["message"].startswith("dcgmi diag test 'pcie' failed: There was an "
                                            "internal error during the test")
    assert results[0]["evidence"]


@pytest.mark.parametrize("text", ["", "Error: unable to establish a connection to the host "
                                      "engine\n"])
def test_empty_or_refused_is_error(text, h100):
    results = judge_dcgm(parse_dcgm_diag(text, level=3), h100)
    assert all(r["status"] == "error" for r in results)


def test_none_and_all_skipped(h100):
    assert judge_dcgm(None, h100)[0]["message"] == "dcgmi diag: no output was collected"
    diag = {"tests": [{"name": "pcie", "key": "pcie", "status": "skip", "gpus": []}],
            "overall": "fail", "level": 3, "errors": [], "failed_gpus": []}
    results = judge_dcgm(diag, h100)
    assert any(r["status"] == "error" and "skipped every test" in r["message"] for r in results)


def test_runtime_error_is_error(h100):
    results = judge_dcgm(_diag("json_3x_handmade_runtime_error.json", level=3), h100)
    assert [r["status"] for r in results] == ["error"]
    assert results[0]["message"].startswith("dcgmi diag could not run: ")


def test_fail_all_is_every_gpu_not_the_one_a_message_names(h100):
    text = (FIXTURES / "captured" / "rtx3090_8gpu_dcgm_3x_r2_pcie_fail_all_prompt_nolebase" / "dcgmi-diag.txt").read_text()
    failed = [r for r in judge_dcgm(parse_dcgm_diag(text), h100) if r["check"] == "dcgm.test" and r["status"] == "fail"]
    assert failed and failed[0]["message"].startswith("dcgmi diag test 'PCIe' failed on all 8 GPUs")
