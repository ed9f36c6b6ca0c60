"""gpu.nvlink_links: every NVLink of every GPU up at the profile's rate (nvidia-smi nvlink -s)."""
from hypothesis import given, settings, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_status import (
    judge_nvlink_status, parse_nvlink_status)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile
from conftest import FIXTURES

GB200 = load_profile("gb200_nvl72_tray")
V100 = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"links_per_gpu": 6, "link_gb_s": 25.781}})
GB200_S = (FIXTURES / "nvidia_smi" / "nvlink_s_gb200_gpu0_k8s_test_infra371.txt").read_text()
V100_S = (FIXTURES / "nvidia_smi" / "nvlink_s_v100_two_inactive_azhpc73.txt").read_text()


def test_a_gb200_gpu_with_18_links_at_53_gb_s_passes():
    parsed = parse_nvlink_status(GB200_S)
    assert parsed["errors"] == [] and list(parsed["gpus"]) == [0]
    assert parsed["gpus"][0]["links"] == dict((n, 53.125) for n in range(18))
    (check,) = judge_nvlink_status(parsed, GB200)
    assert check["status"] == "pass" and check["message"] == "all 1 GPUs: 18 NVLinks each active at 53.125 GB/s"
    assert check["evidence"][0].startswith("GPU 0: NVIDIA GB200 (UUID: GPU-d1b93026")


def test_inactive_links_fail_naming_the_gpu_and_each_link():
    (check,) = judge_nvlink_status(parse_nvlink_status(V100_S), V100)
    assert check["status"] == "fail" and check["component"] == "GPU3"
    assert check["message"] == "GPU3 4 of 6 NVLinks active; inactive: Link 3 and Link 5"
    assert check["evidence"] == ["GPU 3: Tesla V100-SXM2-32GB (UUID: ...)", "Link 3: <inactive>", "Link 5: <inactive>"]


def test_a_link_trained_below_the_rate_is_slow_and_named():
    text = GB200_S.replace("Link 7: 53.125 GB/s", "Link 7: 26.562 GB/s")
    (check,) = judge_nvlink_status(parse_nvlink_status(text), GB200)
    assert check["status"] == "fail" and check["message"] == "GPU0 below 53.125 GB/s: Link 7 at 26.562 GB/s"


def test_a_gpu_that_lists_no_links_fails_and_an_empty_output_is_an_error():
    (check,) = judge_nvlink_status(parse_nvlink_status("GPU 0: NVIDIA GB200 (UUID: GPU-1)\n"), GB200)
    assert check["status"] == "fail" and check["message"] == "GPU0 0 of 18 NVLinks active"
    (check,) = judge_nvlink_status(parse_nvlink_status(""), GB200)
    assert check["status"] == "error" and "empty or not `nvidia-smi nvlink -s` output" in check["message"]


def test_an_unreadable_line_is_an_error_beside_the_findings_never_instead():
    text = V100_S + "NVML: Unable to retrieve NVLink information\n"
    checks = judge_nvlink_status(parse_nvlink_status(text), V100)
    assert sorted(c["status"] for c in checks) == ["error", "fail"]
    (error,) = [c for c in checks if c["status"] == "error"]
    assert "line 8: not an nvidia-smi nvlink -s line" in error["message"] and "(the rest is judged)" in error["message"]


def test_no_link_count_in_the_profile_is_a_skip_and_not_collected_is_nothing():
    (check,) = judge_nvlink_status(parse_nvlink_status(GB200_S), load_profile("gb200_nvl72_tray", overrides={
        "nvlink": {"links_per_gpu": None}}))
    assert check["status"] == "skip" and "nvlink.links_per_gpu" in check["message"]
    assert judge_nvlink_status(None, GB200) == []


# Words of the real format: garbage made of them must still prove nothing.
_WORDS = ["GPU 0:", "GPU 1: NVIDIA GB200 (UUID: GPU-1)", "Link 0:", "Link 17: 53.125 GB/s", "<inactive>", "53.125",
          "GB/s", "Link 3: 26.562 GB/s", "N/A", "\t", ":", "x", "9" * 30]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), max_size=5).map(" ".join), max_size=25).map("\n".join))
def test_garbage_made_of_its_words_never_passes(text):
    """A pass needs every GPU printed with 18 links at the rate; anything else is a fail or an error."""
    checks = judge_nvlink_status(parse_nvlink_status(text), GB200)
    parsed = parse_nvlink_status(text)
    whole = parsed["gpus"] and not parsed["errors"] and all(
        len(g["links"]) == 18 and all(r == 53.125 for r in g["links"].values()) for g in parsed["gpus"].values())
    assert checks and (whole or "pass" not in [c["status"] for c in checks]), (text, checks)
