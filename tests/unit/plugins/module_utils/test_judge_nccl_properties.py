"""Property tests: a real nccl-tests output with one impossible value is never judged pass.

Uses the hypothesis profile loaded in tests/conftest.py (no max_examples here).
"""
import copy
import json

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    worst_status)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl import (
    judge_nccl_pair, judge_nccl_single_node)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_plausibility import (
    plausibility_errors)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import (
    parse_nccl_tests)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES

# Complete, validated, single-run real outputs (or documented completions, see SOURCES.md).
PASSING = [
    "all_reduce_h100_2node_no_version.txt",
    "all_reduce_h100_mpirun_tag_output.txt",
    "alltoall_v2183_mpi_help_in_table.txt",
    "all_gather_gb10_v2183_unalign.txt",
    "all_gather_gb10_srun_label.txt",
    "all_gather_gb10_avg_check_ok.txt",
    "all_reduce_a10g_no_hash_markers.txt",
    "very_old_2018_no_hash_ms_res.txt",
]
TEXT = dict((name, (FIXTURES / "nccl_tests" / name).read_text()) for name in PASSING)
PARSED = dict((name, parse_nccl_tests(text)) for name, text in TEXT.items())
BOUND = 2000.0

IMPOSSIBLE_WRONG = ["1e309", "-1e309", "inf", "-inf", "nan", "NaN", "0.5", "-1", "-3", "2.25",
                    "1e-3", "N/A"]
IMPOSSIBLE_MEASURE = ["-1", "-0.5", "inf", "-inf", "nan", "1e309", "-1e309", "Infinity"]


def _hosts(parsed):
    return sorted(set(r.get("host") for r in parsed.get("ranks") or [] if r.get("host")))


def _profile(parsed):
    """A profile under which the unchanged output passes every check."""
    profile = copy.deepcopy(load_profile("hgx_h100_sxm"))
    profile["gpus_per_node"] = parsed["nranks"] // max(1, len(_hosts(parsed)))
    for key in ("single_node_busbw_min", "multi_node_pair_busbw_min"):
        profile["nccl"][key] = 0
    for key in ("busbw_max_single_node", "busbw_max_multi_node"):
        profile["nccl"][key] = BOUND
    return profile


def _judged(parsed, profile):
    """A run over several hosts is a multi-node run: the single-node judge fails it as such."""
    hosts = _hosts(parsed)
    if len(hosts) > 1:
        return judge_nccl_pair(parsed, profile, nodes=len(hosts))
    return judge_nccl_single_node(parsed, profile)


PROFILES = dict((name, _profile(parsed)) for name, parsed in PARSED.items())


def test_a_multi_host_run_is_never_a_single_node_pass():
    parsed = PARSED["all_reduce_h100_2node_no_version.txt"]
    profile = dict(PROFILES["all_reduce_h100_2node_no_version.txt"], gpus_per_node=parsed["nranks"])
    results = judge_nccl_single_node(parsed, profile)   # the rank count is right, the hosts are not
    ranks = [r for r in results if r["check"] == "nccl.ranks"]
    assert ranks[0]["status"] == "fail" and "not a single-node run" in ranks[0]["message"]
    assert [r["status"] for r in results if r["check"] == "nccl.busbw"] == ["skip"]


def test_every_baseline_passes():
    for name in PASSING:
        results = _judged(PARSED[name], PROFILES[name])
        assert set(r["status"] for r in results) == {"pass"}, (name, results)


def _replace(text, line, index, value):
    """Line ``line`` (1-based) with its perf cell ``index`` (0-7 from the first time column)."""
    lines = text.splitlines()
    tokens = lines[line - 1].split()
    tokens[len(tokens) - 8 + index] = value
    lines[line - 1] = " ".join(tokens)
    return "\n".join(lines) + "\n"


def _judge(name, text):
    parsed = parse_nccl_tests(text)
    results = _judged(parsed, PROFILES[name])
    json.dumps([parsed, results], allow_nan=False)   # no NaN/Infinity anywhere
    return parsed, results


def _checked_sides(row):
    """Perf-cell offsets of the #wrong (or error) cells nccl-tests filled in on this row."""
    sides = []
    for offset, key in ((3, "oop"), (7, "ip")):
        side = row[key]
        if side is not None and (side["wrong"] is not None or side["error"] is not None):
            sides.append((offset, side))
    return sides


@given(st.sampled_from(PASSING), st.data())
def test_an_impossible_wrong_count_never_passes(name, data):
    rows = [row for row in PARSED[name]["rows"] if _checked_sides(row)]
    row = data.draw(st.sampled_from(rows))
    offset, side = data.draw(st.sampled_from(_checked_sides(row)))
    choices = IMPOSSIBLE_WRONG if side["wrong"] is not None else \
        [v for v in IMPOSSIBLE_WRONG if v not in ("0.5", "2.25", "1e-3")]  # fractions are deviations
    value = data.draw(st.sampled_from(choices))
    parsed, results = _judge(name, _replace(TEXT[name], row["line"], offset, value))
    assert worst_status(results) in ("fail", "error")
    assert "pass" not in [r["status"] for r in results if r["check"] == "nccl.correctness"]


@given(st.sampled_from(PASSING), st.data())
def test_an_impossible_time_or_bandwidth_never_passes(name, data):
    row = data.draw(st.sampled_from(PARSED[name]["rows"]))
    offsets = [0, 1, 2] + ([4, 5, 6] if row["ip"] is not None else [])
    offset = data.draw(st.sampled_from(offsets))
    value = data.draw(st.sampled_from(IMPOSSIBLE_MEASURE))
    parsed, results = _judge(name, _replace(TEXT[name], row["line"], offset, value))
    assert worst_status(results) == "error"
    assert [r["status"] for r in results if r["check"] == "nccl.plausibility"] == ["error"]
    assert "pass" not in [r["status"] for r in results if r["check"] == "nccl.busbw"]
    assert plausibility_errors(parsed, BOUND)


@given(st.sampled_from(PASSING), st.data(),
       st.floats(min_value=BOUND * 1.1, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_a_busbw_above_the_physical_bound_never_passes(name, data, busbw):
    row = data.draw(st.sampled_from(PARSED[name]["rows"]))
    offset = data.draw(st.sampled_from([2] + ([6] if row["ip"] is not None else [])))
    value = data.draw(st.sampled_from(["%.2f" % busbw, "%g" % busbw, "%.1e" % busbw]))
    parsed, results = _judge(name, _replace(TEXT[name], row["line"], offset, value))
    assert worst_status(results) == "error"
    assert any("exceeds the physical bound" in e for e in plausibility_errors(parsed, BOUND))
    assert "pass" not in [r["status"] for r in results if r["check"] == "nccl.busbw"]


@pytest.mark.parametrize("name", [n for n in PASSING if PARSED[n]["validation"] == 1])
def test_validation_claimed_but_not_done_never_passes(name):
    # every checked cell N/A: nccl-tests only prints that with -c 0, never with validation: 1
    text = TEXT[name]
    for row in PARSED[name]["rows"]:
        for offset, _side in _checked_sides(row):
            text = _replace(text, row["line"], offset, "N/A")
    _parsed, results = _judge(name, text)
    assert "pass" not in [r["status"] for r in results if r["check"] == "nccl.correctness"]
    assert worst_status(results) == "error"
