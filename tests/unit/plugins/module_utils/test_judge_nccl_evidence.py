"""judge_nccl: correctness only when validation ran, implausible values, MPI=0 runs, salvage, evidence.

Each case starts from a real output (tests/fixtures/nccl_tests) and changes what it says.
"""
import copy
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl import (
    judge_nccl_pair, judge_nccl_single_node, judge_nccl_single_node_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_plausibility import (
    ABSOLUTE_MAX_BUSBW, plausibility_errors)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import (
    parse_nccl_tests)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES

H100_2NODE = "all_reduce_h100_2node_no_version.txt"


def _text(name):
    return (FIXTURES / "nccl_tests" / name).read_text()


def _checks(results, name):
    return [r for r in results if r["check"] == name]


def _strict_json(value):
    return json.loads(json.dumps(value, allow_nan=False))


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


def _set_cell(text, size, index, value):
    """The table row of ``size`` with its perf cell ``index`` (0-7: time, algbw, busbw, #wrong of
    out-of-place, then in-place) replaced by ``value``."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == str(size) and len(tokens) >= 9:
            tokens[len(tokens) - 8 + index] = value
            lines[number] = "  ".join(tokens)
            return "\n".join(lines) + "\n"
    raise AssertionError("no row of size %d" % size)


def test_the_real_two_node_run_passes_every_check(h100):
    results = judge_nccl_pair(parse_nccl_tests(_text(H100_2NODE)), h100)
    assert set(r["status"] for r in results) == {"pass"}
    correctness = _checks(results, "nccl.correctness")[0]
    assert correctness["message"] == ("nccl-tests checked every row (validation on): no wrong or "
                                      "out-of-bounds values in 31 rows")
    assert correctness["evidence"][-1] == "Out of bounds values : 0 OK"
    assert "validation: 1" in correctness["evidence"][0]
    busbw = _checks(results, "nccl.busbw")[0]
    assert [line.split()[0] for line in busbw["evidence"]] == [
        "1073741824", "2147483648", "4294967296", "8589934592"]
    assert all(r["evidence"] for r in results)


# --------------------------------------------------------------------------- validation

def test_validation_off_never_passes_correctness(h100):
    parsed = parse_nccl_tests(_text("broadcast_v100_root_validation_off.txt"))
    assert parsed["passed"] is True      # the parser itself only warns
    (correctness,) = _checks(judge_nccl_single_node(parsed, h100), "nccl.correctness")
    assert correctness["status"] == "error"
    assert correctness["message"] == ("nccl-tests ran with validation off (validation: 0, -c 0): "
                                      "#wrong was not checked, correctness not proven")
    assert "validation: 0" in correctness["evidence"][0]


def test_wrong_na_with_validation_on_names_the_rows(h100):
    text = _set_cell(_text(H100_2NODE), 1048576, 3, "N/A")
    text = _set_cell(text, 8589934592, 7, "N/A")
    results = judge_nccl_pair(parse_nccl_tests(text), h100)
    (correctness,) = _checks(results, "nccl.correctness")
    assert correctness["status"] == "error"
    assert correctness["message"] == (
        "nccl-tests: #wrong is N/A in 2 row sides (line 41 (1 MiB) out-of-place, line 54 (8 GiB) "
        "in-place) although validation is on: the results were not checked, correctness not "
        "proven")
    assert [line.split()[0] for line in correctness["evidence"]] == ["1048576", "8589934592"]


def test_alltoall_in_place_na_is_nccl_tests_design(h100):
    parsed = parse_nccl_tests(_text("alltoall_v2183_mpi_help_in_table.txt"))
    (correctness,) = _checks(judge_nccl_pair(parsed, h100), "nccl.correctness")
    assert correctness["status"] == "pass"
    # ... but an out-of-place N/A there is not
    text = _set_cell(_text("alltoall_v2183_mpi_help_in_table.txt"), 1024, 3, "N/A")
    (correctness,) = _checks(judge_nccl_pair(parse_nccl_tests(text), h100), "nccl.correctness")
    assert correctness["status"] == "error"


@pytest.mark.parametrize("value, why", [
    ("1e309", "out-of-place #wrong '1e309' is not a finite number"),
    ("inf", "out-of-place #wrong 'inf' is not a finite number"),
    ("0.5", "out-of-place #wrong 0.5 is not a whole count"),
    ("-1", "out-of-place #wrong -1 is negative"),
])
def test_impossible_wrong_counts_are_errors(value, why, h100):
    text = _set_cell(_text(H100_2NODE), 4096, 3, value)
    parsed = parse_nccl_tests(text)
    assert parsed["passed"] is False
    assert ("line 33: implausible value in the table row (size 4096): %s" % why) in parsed["errors"]
    row = [r for r in parsed["rows"] if r["size"] == 4096][0]
    assert row["oop"]["wrong"] is None and row["problems"] == [why]
    results = _strict_json(judge_nccl_pair(parsed, h100))
    (correctness,) = _checks(results, "nccl.correctness")
    assert correctness["status"] == "error"
    assert correctness["message"].startswith("nccl-tests: #wrong is not a whole count >= 0 in 1 "
                                             "rows (line 33 (4 KiB): %s)" % why)
    assert correctness["evidence"][0].split()[0] == "4096"
    assert not _checks(results, "nccl.parse")   # nothing else is unreadable


# --------------------------------------------------------------------------- plausibility

def test_busbw_above_the_physical_bound_is_an_implausible_value(h100):
    text = _set_cell(_text(H100_2NODE), 8589934592, 2, "99999999")
    parsed = parse_nccl_tests(text)
    assert parsed["passed"] is True     # the parser knows no bound: the profile does
    assert plausibility_errors(parsed, 800) == [
        "line 54 (8 GiB): out-of-place busbw 99999999 GB/s exceeds the physical bound of 800 GB/s: "
        "implausible value"]
    results = judge_nccl_pair(parsed, h100)
    (plausibility,) = _checks(results, "nccl.plausibility")
    assert plausibility["status"] == "error"
    assert plausibility["message"].startswith("nccl-tests: implausible value: line 54 (8 GiB)")
    assert plausibility["evidence"][0].startswith("8589934592")
    (busbw,) = _checks(results, "nccl.busbw")
    assert busbw["status"] == "error" and busbw["message"].startswith(
        "nccl-tests: busbw not judged: implausible values in the table")
    # the single-node bound of the profile is used for the single-node judge
    (single,) = _checks(judge_nccl_single_node(parsed, h100), "nccl.plausibility")
    assert "physical bound of 900 GB/s" in single["message"]
    # and the stage hands no busbw to the peer comparison
    _checks_, metrics = judge_nccl_single_node_stage({"all_reduce_perf": text}, h100, {})
    assert "busbw" not in metrics


def test_a_profile_without_a_bound_still_catches_absurd_values(h100):
    profile = copy.deepcopy(h100)
    del profile["nccl"]["busbw_max_multi_node"]
    text = _set_cell(_text(H100_2NODE), 8589934592, 2, "99999999")
    (plausibility,) = _checks(judge_nccl_pair(parse_nccl_tests(text), profile), "nccl.plausibility")
    assert "physical bound of %d GB/s" % ABSOLUTE_MAX_BUSBW in plausibility["message"]


@pytest.mark.parametrize("index, value, why", [
    (0, "-1", "out-of-place time -1 is negative"),
    (0, "inf", "out-of-place time 'inf' is not a finite number"),
    (4, "nan", "in-place time 'nan' is not a finite number"),
    (1, "1e309", "out-of-place algbw '1e309' is not a finite number"),
    (6, "-338.82", "in-place busbw -338.82 is negative"),
])
def test_negative_or_non_finite_times_and_bandwidths(index, value, why, h100):
    text = _set_cell(_text(H100_2NODE), 2147483648, index, value)
    parsed = _strict_json(parse_nccl_tests(text))
    assert ("line 52: implausible value in the table row (size 2147483648): %s" % why) \
        in parsed["errors"]
    assert plausibility_errors(parsed, 800) == ["line 52 (2 GiB): %s: implausible value" % why]
    results = _strict_json(judge_nccl_pair(parsed, h100))
    assert _checks(results, "nccl.plausibility")[0]["status"] == "error"
    assert _checks(results, "nccl.busbw")[0]["status"] == "error"
    assert not _checks(results, "nccl.parse")


def test_non_finite_summaries_never_reach_the_result(h100):
    text = _text(H100_2NODE).replace("Avg bus bandwidth    : 70.742", "Avg bus bandwidth    : 1e309")
    text = text.replace("Out of bounds values : 0 OK", "Out of bounds values : inf OK")
    parsed = _strict_json(parse_nccl_tests(text))
    assert parsed["avg_busbw"] is None and parsed["out_of_bounds"] is None
    assert "line 56: Avg bus bandwidth value '1e309' is not a finite number: implausible value" \
        in parsed["errors"]
    results = _strict_json(judge_nccl_pair(parsed, h100))
    assert "pass" not in [r["status"] for r in _checks(results, "nccl.correctness")]


# --------------------------------------------------------------------------- MPI=0

def test_sixteen_one_rank_runs_under_srun(h100):
    parsed = parse_nccl_tests(_text("mpi0_srun_16_one_rank_runs_handmade.txt"))
    assert parsed["independent_runs"] == 16
    assert [run["nranks"] for run in parsed["runs"]] == [1] * 16
    assert sorted(run["hosts"][0] for run in parsed["runs"]) == ["gpu001"] * 8 + ["gpu002"] * 8
    (ranks,) = _checks(judge_nccl_pair(parsed, h100), "nccl.ranks")
    assert ranks["status"] == "fail"
    assert ranks["message"] == (
        "nccl-tests output holds 16 independent runs (16 one-rank runs on gpu002 and gpu001): the "
        "ranks did not form one communicator; nccl-tests built without MPI=1?")
    assert len(ranks["evidence"]) == 12 and all("Rank  0" in e for e in ranks["evidence"])
    assert ranks["metrics"]["hosts"] == ["gpu002", "gpu001"]


def test_mpi0_without_any_header_from_the_repeating_sweep(h100):
    # only the table rows of the 16 processes survived the capture
    rows = "\n".join(line for line in _text("mpi0_srun_16_one_rank_runs_handmade.txt").splitlines()
                     if "float" in line)
    parsed = parse_nccl_tests(rows)
    assert parsed["headers"] == 0 and parsed["ranks"] == []
    assert parsed["independent_runs"] == 16
    assert parsed["runs"][0] == {"hosts": [], "nranks": 1, "line": None, "text": None}
    (ranks,) = _checks(judge_nccl_pair(parsed, h100), "nccl.ranks")
    assert ranks["status"] == "fail" and "16 one-rank runs" in ranks["message"]


def test_mpi0_real_fragment_without_header():
    # nccl-tests#294: busbw 0.00 on every row and every size twice: two one-rank runs
    parsed = parse_nccl_tests(_text("all_reduce_overflow_columns_fragment.txt"))
    assert parsed["independent_runs"] == 2
    assert [run["nranks"] for run in parsed["runs"]] == [1, 1]


def test_runs_of_a_normal_launch():
    parsed = parse_nccl_tests(_text("mpi0_h800_two_processes_interleaved.txt"))
    assert [(run["hosts"], run["nranks"]) for run in parsed["runs"]] == [(["hw14"], 8),
                                                                         (["hw15"], 8)]


# --------------------------------------------------------------------------- salvage

def test_shell_prompt_and_command_echo_before_the_output(h100):
    text = ("[root@login01 ~]# srun -N2 --ntasks-per-node=8 ./all_reduce_perf -b 8 -e 8G -f 2\n"
            "+ srun -N2 ./all_reduce_perf\n" + _text(H100_2NODE))
    parsed = parse_nccl_tests(text)
    assert parsed["passed"] is True
    assert any(w.startswith("line 1: shell prompt or command echo ignored: [root@login01 ~]# srun")
               for w in parsed["warnings"])
    assert set(r["status"] for r in judge_nccl_pair(parsed, h100)) == {"pass"}


def test_srun_label_prefix_is_dropped_with_a_warning():
    parsed = parse_nccl_tests(_text("all_gather_gb10_srun_label.txt"))
    assert parsed["passed"] is True
    assert "launcher prefixes ('0:', '1:') removed from 25 lines" in parsed["warnings"]


def test_crash_after_the_output_is_reported_next_to_the_findings(h100):
    text = _text("all_reduce_gh200_wrong_oob_failed.txt") + \
        "terminate called after throwing an instance of 'std::runtime_error'\n"
    results = judge_nccl_single_node(parse_nccl_tests(text), h100)
    (run,) = _checks(results, "nccl.run")
    assert run["status"] == "fail"
    assert "terminate called after throwing an instance of 'std::runtime_error'" in run["evidence"]
    correctness = _checks(results, "nccl.correctness")
    assert [r["status"] for r in correctness] == ["fail", "fail"]


def test_unreadable_row_is_an_error_next_to_the_low_busbw(h100):
    # a garbled row after the summary: the floor finding still stands
    text = _text(H100_2NODE) + "  4294967296    1073741824     float     sum      -1    24\n"
    results = judge_nccl_single_node(parse_nccl_tests(text), h100)
    statuses = dict((r["check"], r["status"]) for r in results)
    assert statuses["nccl.parse"] == "error"
    assert statuses["nccl.busbw"] == "fail"
    (parse,) = _checks(results, "nccl.parse")
    assert parse["evidence"] == ["4294967296    1073741824     float     sum      -1    24"]
    (busbw,) = _checks(results, "nccl.busbw")
    assert busbw["message"].endswith("is below the 360 GB/s floor, from the rows that could be read")
    # no pass from a damaged output
    assert "pass" not in statuses.values()


def test_truncated_before_the_largest_messages_does_not_judge_the_floor(h100):
    results = judge_nccl_single_node(parse_nccl_tests(_text("all_reduce_h100_truncated_in_table.txt")),
                                     h100)
    (busbw,) = _checks(results, "nccl.busbw")
    assert busbw["status"] == "error"
    assert busbw["message"] == ("nccl-tests: the rows of the largest messages are missing (largest "
                                "read 2 GiB, the sweep goes to 8 GiB): busbw not judged")


def test_stage_without_the_capture_is_a_skip(h100):
    checks, metrics = judge_nccl_single_node_stage({"all_reduce_perf": None}, h100, {})
    assert [c["status"] for c in checks] == ["skip"] and metrics == {}


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "nccl_tests").glob("*.txt")))
def test_every_fixture_judged_with_evidence_and_plain_numbers(name, h100):
    parsed = _strict_json(parse_nccl_tests(_text(name)))
    for judge in (judge_nccl_single_node, judge_nccl_pair):
        results = _strict_json(judge(parsed, h100))
        for result in results:
            if result["status"] in ("fail", "pass") or result["check"] != "nccl.ranks":
                assert result["evidence"], result


def test_out_of_bounds_marked_failed_is_never_a_pass(h100):
    text = _text(H100_2NODE).replace("Out of bounds values : 0 OK", "Out of bounds values : 0 FAILED")
    (correctness,) = _checks(judge_nccl_pair(parse_nccl_tests(text), h100), "nccl.correctness")
    assert correctness["status"] == "fail"
    assert correctness["evidence"] == ["Out of bounds values : 0 FAILED"]
