"""--check's duration estimates: each tool's expected time from what it is asked to do, bounded by
its timeout; the workload's from its duration or steps; the summary's per-stage and total lines."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _check_plan, _estimates


@pytest.mark.parametrize("argv, expected", [
    (["dcgmi", "diag", "-r", "1", "-j"], 90), (["dcgmi", "diag", "-r", "3", "-j"], 2100),
    (["dcgmi", "diag", "-r", "4", "-j"], 6300)])
def test_dcgm_by_level(argv, expected):
    assert _estimates.tool_estimate({"name": "dcgmi-diag", "argv": argv, "timeout": 10000}) == (expected, 10000)


def test_bounded_by_timeout_and_pause_counted():
    assert _estimates.tool_estimate({"name": "dcgmi-diag", "argv": ["dcgmi", "diag", "-r", "3"], "timeout": 600}) == (600, 600)
    assert _estimates.tool_estimate({"name": "ib-counters-after", "argv": ["sh"], "timeout": 60, "pause_before": 30}) == (32, 90)
    assert _estimates.tool_estimate({"name": "sdc-probe", "argv": ["python3", "-c", "x", "--seconds", "300"],
                                     "timeout": 900}) == (360, 900)
    # Garbage in a bound is no estimate, never a crash.
    assert _estimates.tool_estimate({"name": "x", "argv": None, "timeout": "soon", "pause_before": float("inf")}) == (2, 2)


def test_workload_from_duration_or_steps():
    assert _estimates.workload_estimate(["srun", "--steps", "30", "--duration-s", "7200"], "9600") == (7260, 9600)
    assert _estimates.workload_estimate(["srun", "--steps", "30", "--duration-s", "0"], None) == (90, 90)


def test_summary_has_each_stage_and_the_total():
    plan = [("dcgm", "dcgmi diag -r 3 -j", ["gpu001"]), ("fabric", "nccl-tests", ["gpu001"])]
    estimates = {}
    _check_plan.note_estimate(estimates, "dcgm", {"estimate_s": 2100, "limit_s": 3600})
    _check_plan.note_estimate(estimates, "dcgm", {"estimate_s": 1800, "limit_s": 3600})  # another node: the slowest kept
    lines = _check_plan.summary_lines(plan, estimates)
    assert "  dcgm: ~35m (at most 1h00m)" in lines
    assert lines[-1] == "  total: ~35m (at most 1h00m), every node at once; plus fabric: rounds until every slow node is pinned"
    assert _check_plan.summary_lines(plan)[-1].startswith("  fabric on")  # no estimates: no block
