"""NVLink error counters (nvidia-smi nvlink -e) read before and after a stage, from the published H100
output and a variant where one link erred under the stage's traffic."""
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _nvlink_errors as nv
from conftest import FIXTURES

CLEAN = (FIXTURES / "nvidia_smi" / "nvlink_e_h100_1gpu.txt").read_text()
ERRED = (FIXTURES / "nvidia_smi" / "nvlink_e_h100_1gpu_link5_errors_handmade.txt").read_text()
PROFILE = {"nvlink": {"error_limits": {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}}}


def test_the_published_h100_output():
    parsed = nv.parse_nvlink_errors(CLEAN)
    assert not parsed["errors"]
    gpu = parsed["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["uuid"] == "GPU-abcdefab-cdef-abdc-abcd-abababababab"
    assert sorted(gpu["links"]) == list(range(18))
    assert gpu["links"][17] == {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}


def test_a_prompt_and_a_driver_line_are_errors_beside_the_counters():
    parsed = nv.parse_nvlink_errors(ERRED)
    assert parsed["gpus"][0]["links"][5] == {"replay_errors": 37, "recovery_errors": 2, "crc_errors": 0}
    assert len(parsed["errors"]) == 2 and "Failed to query NVLink counters" in parsed["errors"][1]


def test_a_link_that_retrained_under_the_stage_fails_naming_it():
    checks = nv.judge_nvlink_errors(nv.parse_nvlink_errors(CLEAN), nv.parse_nvlink_errors(ERRED), PROFILE,
                                    during="all_reduce_perf")
    bad = [c for c in checks if c["status"] == "fail"]
    assert len(bad) == 1 and bad[0]["component"] == "GPU0 NVLink"
    assert bad[0]["message"] == ("GPU0 link 5 recovery errors rose by 2 during all_reduce_perf (0 -> 2, limit 0); "
                                 "link 5 replay errors rose by 37 during all_reduce_perf (0 -> 37, limit 0): "
                                 "the link retrained under load")
    assert "Link 5: Recovery Errors: 2" in bad[0]["evidence"]
    # The unexpected lines are an error next to the finding, never instead of it.
    assert [c["check"] for c in checks if c["status"] == "error"] == ["nvlink.parse"]


def test_unchanged_counters_pass_and_say_what_was_read():
    (check,) = nv.judge_nvlink_errors(nv.parse_nvlink_errors(ERRED.split("\n", 1)[1].rsplit("Failed", 1)[0]),
                                      nv.parse_nvlink_errors(ERRED.split("\n", 1)[1].rsplit("Failed", 1)[0]),
                                      PROFILE, during="all_reduce_perf")
    assert check["status"] == "pass"
    assert check["message"] == "GPU0: no NVLink error counter of 18 link(s) rose during all_reduce_perf"


def test_a_counter_without_a_limit_is_shown_not_judged():
    before = CLEAN.replace("Link 3: CRC Errors: 0", "Link 3: CRC Errors: 0\n         Link 3: Rx Errors: 1")
    after = CLEAN.replace("Link 3: CRC Errors: 0", "Link 3: CRC Errors: 0\n         Link 3: Rx Errors: 9")
    (check,) = nv.judge_nvlink_errors(nv.parse_nvlink_errors(before), nv.parse_nvlink_errors(after), PROFILE)
    assert check["status"] == "pass" and "(not judged: link 3 rx_errors +8)" in check["message"]


def test_missing_or_unreadable_snapshots_are_never_a_pass():
    (skip,) = nv.judge_nvlink_errors(None, None, PROFILE)
    assert skip["status"] == "skip"
    (error,) = nv.judge_nvlink_errors(nv.parse_nvlink_errors(CLEAN), nv.parse_nvlink_errors("garbage\n"), PROFILE)
    assert error["status"] == "error" and "after the stage" in error["message"]
    (error,) = nv.judge_nvlink_errors(nv.parse_nvlink_errors(CLEAN), None, PROFILE)
    assert error["status"] == "error" and "was not captured" in error["message"]


def test_a_gpu_without_nvlink_is_a_skip():
    text = "GPU 0: NVIDIA A10G (UUID: GPU-1d6a3b02-6f03-8a2d-a7e8-3ab7bb0c1d8e)\n"
    (check,) = nv.judge_nvlink_errors(nv.parse_nvlink_errors(text), nv.parse_nvlink_errors(text), PROFILE)
    assert check["status"] == "skip" and "shows no NVLink" in check["message"]


def test_counters_that_read_n_a_prove_nothing():
    text = CLEAN.replace(": 0", ": N/A")
    (check,) = nv.judge_nvlink_errors(nv.parse_nvlink_errors(text), nv.parse_nvlink_errors(text), PROFILE)
    assert check["status"] == "skip" and "not judged" in check["message"]


def _without_links(text, links):
    return "\n".join(line for line in text.splitlines()
                     if not any(line.strip().startswith("Link %d:" % link) for link in links)) + "\n"


def test_an_after_snapshot_that_lost_links_is_an_error_never_a_pass():
    after = _without_links(CLEAN, range(6, 18)).replace("Link 0: Replay Errors: 0", "Link 0: Replay Errors: N/A")
    checks = nv.judge_nvlink_errors(nv.parse_nvlink_errors(CLEAN), nv.parse_nvlink_errors(after), PROFILE,
                                    during="all_reduce_perf")
    assert [c["status"] for c in checks] == ["error"]
    assert checks[0]["message"].startswith(
        "GPU0: the snapshots around all_reduce_perf do not compare like with like (18 link(s) before, 6 after): "
        "link 0 replay_errors N/A after, link 6 missing after, link 7 missing after")
    assert len(checks[0]["metrics"]["lost"]) == 13


def test_a_rise_on_the_links_both_snapshots_read_still_fails_beside_the_lost_ones():
    after = _without_links(ERRED, [0])
    checks = nv.judge_nvlink_errors(nv.parse_nvlink_errors(CLEAN), nv.parse_nvlink_errors(after), PROFILE)
    assert sorted((c["check"], c["status"]) for c in checks) == [
        ("nvlink.errors", "error"), ("nvlink.errors", "fail"), ("nvlink.parse", "error")]


@given(lost=st.sets(st.integers(0, 17), min_size=1), side=st.sampled_from(["before", "after"]))
def test_any_link_missing_from_one_snapshot_is_never_a_pass(lost, side):
    """Property: whichever links one snapshot lost, the GPU is not passed."""
    partial = nv.parse_nvlink_errors(_without_links(CLEAN, lost))
    full = nv.parse_nvlink_errors(CLEAN)
    before, after = (partial, full) if side == "before" else (full, partial)
    checks = nv.judge_nvlink_errors(before, after, PROFILE)
    assert checks and not any(c["status"] == "pass" for c in checks)
    assert any(c["status"] == "error" and "missing %s" % side in c["message"] for c in checks)
