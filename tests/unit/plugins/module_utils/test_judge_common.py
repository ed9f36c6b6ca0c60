"""Check results, robust statistics and peer outliers shared by the judges."""
import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    check_result, fmt_num, join_names, mad, median, parse_error_results, peer_outliers,
    profile_get, robust_z, warning_result, worst_status)


def test_check_result_shape():
    result = check_result("gpu.ecc", "fail", "GPU1 has 2 ...", {"n": 2}, "GPU1")
    assert result == {"check": "gpu.ecc", "status": "fail", "message": "GPU1 has 2 ...",
                      "metrics": {"n": 2}, "component": "GPU1", "evidence": []}
    assert check_result("x", "pass", "ok")["metrics"] == {}


def test_check_result_rejects_unknown_status():
    with pytest.raises(ValueError, match="status must be one of"):
        check_result("x", "warn", "no warn status: warnings are passes")


def test_warning_result_is_a_pass_with_marker():
    result = warning_result("gpu.throttle", "GPU1 clocks are limited by SW Power Cap")
    assert result["status"] == "pass"
    assert result["message"].startswith("warning: ")
    assert result["metrics"]["warning"] is True


@pytest.mark.parametrize("parsed, fragment", [
    (None, "no output was collected"),
    ("text", "expected a parsed result"),
    ({"errors": ["line 3: bad"], "gpus": []}, "output unreadable: line 3: bad"),
    ({"errors": [], "gpus": None}, "lacks gpus"),
])
def test_parse_error_results(parsed, fragment):
    results = parse_error_results("t.parse", "tool -x", parsed, required=("gpus",))
    assert len(results) == 1
    assert results[0]["status"] == "error"
    assert results[0]["message"].startswith("tool -x: ")
    assert fragment in results[0]["message"]


def test_parse_error_results_usable():
    assert parse_error_results("t", "tool", {"errors": [], "gpus": []}, ("gpus",)) == []


def test_median_and_mad():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 2, 3]) == 2.5
    assert mad([1, 2, 3, 4, 100]) == 1
    with pytest.raises(ValueError):
        median([])


def test_robust_z_zero_mad():
    assert robust_z(5, 5, 0) == 0
    assert robust_z(4, 5, 0) == -math.inf
    assert robust_z(6, 5, 0) == math.inf
    assert robust_z(4, 5, 1) == pytest.approx(-0.6745)


def test_peer_outliers_flags_low_node():
    values = dict(("gpu%03d" % i, 386.0 + (i % 3)) for i in range(16))
    values["gpu017"] = 301.0
    out = peer_outliers(values)
    assert list(out) == ["gpu017"]
    assert out["gpu017"]["rel_diff"] == pytest.approx(301.0 / 387.0 - 1, rel=1e-3)


def test_peer_outliers_needs_relative_drop():
    # z-score huge (tight cluster) but only 3 % below: not an outlier with a 10 % floor.
    values = dict(("n%d" % i, 400.0) for i in range(10))
    values["slow"] = 388.0
    assert peer_outliers(values, min_rel_drop=0.10) == {}
    assert list(peer_outliers(values, min_rel_drop=0.02)) == ["slow"]


def test_peer_outliers_needs_z():
    # Very noisy cluster: 15 % below the median is inside the normal spread.
    values = {"a": 100.0, "b": 160.0, "c": 60.0, "d": 130.0, "e": 85.0, "f": 110.0}
    assert peer_outliers(values, k=3.5, min_rel_drop=0.10) == {}


def test_peer_outliers_high_is_bad_and_min_nodes():
    values = {"a": 10.0, "b": 10.0, "c": 10.0, "d": 30.0}
    assert list(peer_outliers(values, low_is_bad=False)) == ["d"]
    assert peer_outliers(values, low_is_bad=True) == {}
    assert peer_outliers({"a": 1.0, "b": 100.0}) == {}        # below min_nodes
    assert peer_outliers({"a": 1.0, "b": None, "c": "x"}) == {}


@given(st.lists(st.floats(min_value=1, max_value=1e4, allow_nan=False), min_size=3,
                max_size=40))
def test_peer_outliers_identical_values_never_flagged(values):
    same = dict(("n%d" % i, values[0]) for i in range(len(values)))
    assert peer_outliers(same) == {}


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.floats(min_value=1, max_value=1e4),
                       min_size=3, max_size=30),
       st.floats(min_value=0.01, max_value=100))
def test_peer_outliers_scale_invariant(values, factor):
    center = median(list(values.values()))
    spread = mad(list(values.values()), center)
    for value in values.values():
        z = robust_z(value, center, spread)
        rel = (value - center) / center
        # float rounding may move a value that sits exactly on a threshold: leave those out
        assume(abs(abs(rel) - 0.10) > 1e-6)
        assume(math.isinf(z) or abs(abs(z) - 3.5) > 1e-6)
    scaled = dict((k, v * factor) for k, v in values.items())
    assert set(peer_outliers(values)) == set(peer_outliers(scaled))


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.floats(min_value=1, max_value=1e4),
                       min_size=3, max_size=30))
def test_peer_outliers_are_below_median(values):
    for info in peer_outliers(values).values():
        assert info["value"] < info["median"]
        assert info["rel_diff"] <= -0.10


def test_helpers():
    assert fmt_num(386.4) == "386"
    assert fmt_num(21.034) == "21.03"
    assert fmt_num(2.50) == "2.5"
    assert fmt_num(7) == "7"
    assert join_names(["a"]) == "a"
    assert join_names(["a", "b", "c"]) == "a, b and c"
    assert join_names([str(i) for i in range(10)], limit=3) == "0, 1, 2 and 7 more"
    profile = {"nccl": {"floor": 3}, "x": None}
    assert profile_get(profile, "nccl.floor") == 3
    assert profile_get(profile, "nccl.missing", 7) == 7
    assert profile_get(profile, "x", 1) == 1
    assert worst_status([]) == "skip"
    assert worst_status([check_result("a", "pass", ""), check_result("b", "error", ""),
                         check_result("c", "fail", "")]) == "error"
