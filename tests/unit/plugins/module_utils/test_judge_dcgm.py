"""judge_dcgm over real dcgmi diag outputs (tests/fixtures/dcgm_diag)."""
import copy

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    parse_dcgm_diag)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_dcgm import judge_dcgm
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES


def _diag(name, level=None):
    return parse_dcgm_diag((FIXTURES / "dcgm_diag" / name).read_text(), level=level)


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


def test_level3_pass(h100):
    results = judge_dcgm(_diag("text_4x_r3_pass_docs.txt", level=3), h100)
    assert set(r["status"] for r in results) == {"pass"}
    assert results[0]["check"] == "dcgm.level"
    assert "dcgmi diag test 'targeted_power' passed" in [r["message"] for r in results]


def test_failed_test_names_gpu_and_details(h100):
    results = judge_dcgm(_diag("text_3x_r3_targeted_power_mixed_sagemaker.txt", level=3), h100)
    failed = [r for r in results if r["status"] == "fail"]
    assert len(failed) == 1
    assert failed[0]["message"].startswith(
        "dcgmi diag test 'Targeted Power' failed on GPU1: GPU 1 Max power of 224.1 did not "
        "reach desired power minimum")
    assert failed[0]["metrics"]["failed_gpus"] == [1]
    assert failed[0]["component"] == "dcgm:targeted_power"


def test_failure_on_all_gpus(h100):
    results = judge_dcgm(_diag("text_3x_r3_cuda_init_fail_all_nccl_tests_issue264.txt"), h100)
    failed = [r for r in results if r["status"] == "fail"]
    assert [r["message"][:88] for r in failed] == [
        "dcgmi diag test 'GPU Memory' failed on GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6 and GPU7"]
    skipped = [r for r in results if r["status"] == "skip"]
    assert "dcgmi diag test 'PCIe' was skipped" in [r["message"] for r in skipped]


def test_warning_is_pass_with_message(h100):
    results = judge_dcgm(_diag("text_2x_handmade_blacklist_warn_gpu.txt", level=3), h100)
    warned = [r for r in results if r["metrics"].get("warning")]
    assert warned and all(r["status"] == "pass" for r in warned)
    assert warned[0]["message"].startswith("warning: dcgmi diag test 'PCIe' warned on GPU2")
    failed = [r["message"] for r in results if r["status"] == "fail"]
    assert failed == ["dcgmi diag test 'Page Retirement' failed on GPU2: GPU 2 had uncorrectable "
                      "memory errors and row remappings are pending"]


def test_json_document(h100):
    results = judge_dcgm(_diag("json_4x_r1_software_fail_gb10.json", level=1), h100)
    level = [r for r in results if r["check"] == "dcgm.level"][0]
    assert level["status"] == "error"
    assert level["message"] == "dcgmi diag ran at level 1, the profile requires level 3"
    failed = [r for r in results if r["status"] == "fail"]
    assert failed[0]["message"].startswith("dcgmi diag test 'software' failed on GPU0: ")


def test_level_mismatch_is_error(h100):
    results = judge_dcgm(_diag("text_4x_r2_pass_issue124.txt"), h100)
    level = [r for r in results if r["check"] == "dcgm.level"]
    assert [(r["status"], r["message"]) for r in level] == [
        ("error", "dcgmi diag ran at level 2, the profile requires level 3")]
    profile = copy.deepcopy(h100)
    profile["dcgm"]["level"] = 2
    assert set(r["status"] for r in judge_dcgm(_diag("text_4x_r2_pass_issue124.txt"),
                                               profile)) == {"pass"}


def test_unknown_level_is_error(h100):
    results = judge_dcgm(_diag("json_3x_r3_virtualclient.json"), h100)
    level = [r for r in results if r["check"] == "dcgm.level"][0]
    assert level["status"] == "error"
    assert "run level is unknown" in level["message"]


# ------------------------------------------------------------------------------ error inputs

@pytest.mark.parametrize("name", ["text_3x_fragment_deployment_error_ml_engineering.txt",
                                  "text_3x_fragment_gpu_memory_ml_engineering.txt",
                                  "text_4x_r2_pcie_internal_error_issue253.txt"])
def test_unreadable_output_is_error_never_pass(name, h100):
    results = judge_dcgm(_diag(name, level=3), h100)
    assert results[0]["status"] == "error"
    assert results[0]["message"].startswith("dcgmi diag: output unreadable: ")
    # a failure visible in a truncated table is still reported; nothing passes
    assert set(r["status"] for r in results[1:]) <= {"fail"}


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
