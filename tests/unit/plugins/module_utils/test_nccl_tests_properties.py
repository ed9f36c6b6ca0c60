# -*- coding: utf-8 -*-
"""Property tests for the nccl-tests parser: damaged input never raises and never passes."""
from __future__ import absolute_import, division, print_function

from pathlib import Path

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nccl_tests"


def _read(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


ALL = {p.name: p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.txt"))}
# Complete single-run outputs that pass as published (or as completed, see SOURCES.md).
PASSING = [
    "all_reduce_h100_2node_no_version.txt",
    "all_reduce_h100_mpirun_tag_output.txt",
    "alltoall_v2183_mpi_help_in_table.txt",
    "all_gather_gb10_v2183_unalign.txt",
    "all_gather_gb10_srun_label.txt",
    "all_reduce_a10g_no_hash_markers.txt",
    "broadcast_v100_root_validation_off.txt",
    "very_old_2018_no_hash_ms_res.txt",
]
# Complete outputs, passing or not, of one run each.  The MPI=0 fixtures are left out of the
# "rows missing" properties: with tables of several processes interleaved, rows can only be
# accounted for in whole sweeps (see the unit tests for what is checked there).
SINGLE_RUN = PASSING + ["all_reduce_gh200_wrong_oob_failed.txt"]

INFO_LINES = st.builds(
    lambda host, pid, dev, msg: "%s:%d:%d [%d] NCCL %s" % (host, pid, pid + 7, dev, msg),
    st.sampled_from(["node01", "gpu-1-7", "ztan-mig-235z"]),
    st.integers(1, 99999), st.integers(0, 7),
    st.sampled_from([
        "INFO Bootstrap : Using ib0:10.0.35.1<0>",
        "INFO cudaDriverVersion 12060",
        "INFO Channel 00/0 : 9[1] -> 1[1] [receive] via NET/IB/1/GDRDMA",
        "INFO comm 0x7f5780001ca0 rank 15 nranks 32 cudaDev 7 nvmlDev 7 - Init COMPLETE",
        "INFO 256 Bytes -> Algo 0 proto 0 time 25.229528",
        "WARN NET/IB : Got completion from peer 10.0.0.3<44032> with error 12",
    ]))


def _row_lines(text):
    return set(row["line"] for row in parse_nccl_tests(text)["rows"])


def _check_shape(result):
    assert isinstance(result["errors"], list) and isinstance(result["warnings"], list)
    assert all(isinstance(message, str) for message in result["errors"] + result["warnings"])
    assert result["passed"] is (not result["errors"] and bool(result["rows"]))
    if not result["rows"]:
        assert result["passed"] is False
    for row in result["rows"]:
        for side in (row["oop"], row["ip"]):
            if side is not None and side["wrong"]:
                assert result["passed"] is False


@given(st.sampled_from(sorted(ALL)), st.data())
def test_dropped_lines_never_raise(name, data):
    lines = ALL[name].splitlines()
    keep = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    _check_shape(parse_nccl_tests("\n".join(l for l, k in zip(lines, keep) if k)))


@given(st.sampled_from(SINGLE_RUN), st.data())
def test_missing_rows_never_pass(name, data):
    text = ALL[name]
    lines = text.splitlines()
    rows = sorted(_row_lines(text))
    dropped_rows = data.draw(st.sets(st.sampled_from(rows), min_size=1))
    dropped_other = data.draw(st.sets(st.integers(1, len(lines))))
    dropped = dropped_rows | dropped_other
    damaged = "\n".join(l for n, l in enumerate(lines, 1) if n not in dropped)
    result = parse_nccl_tests(damaged)
    _check_shape(result)
    assert result["passed"] is False


@given(st.sampled_from(SINGLE_RUN), st.data())
def test_truncation_passes_only_when_the_run_is_complete(name, data):
    text = ALL[name].rstrip("\n")
    cut = data.draw(st.integers(0, len(text) - 1))
    original = parse_nccl_tests(text)
    result = parse_nccl_tests(text[:cut])
    _check_shape(result)
    if result["passed"]:
        # Only a cut inside the last summary line can leave a complete-looking run; every row
        # must then be there, with both summary lines.
        assert [r["size"] for r in result["rows"]] == [r["size"] for r in original["rows"]]
        assert result["out_of_bounds"] is not None and result["avg_busbw"] is not None
        assert original["passed"]


@given(st.sampled_from(PASSING), st.data())
def test_truncation_before_the_avg_line_never_passes(name, data):
    text = ALL[name]
    avg_at = text.index("Avg bus bandwidth")
    cut = data.draw(st.integers(0, avg_at))
    result = parse_nccl_tests(text[:cut])
    _check_shape(result)
    assert result["passed"] is False
    assert "no Avg bus bandwidth summary: run incomplete?" in result["errors"]


@given(st.sampled_from(PASSING), st.data())
def test_nonzero_wrong_never_passes(name, data):
    text = ALL[name]
    original = parse_nccl_tests(text)
    counted = [row for row in original["rows"] if row["oop"]["wrong"] is not None]
    if not counted:   # validation off or float error column: no #wrong to damage
        return
    row = data.draw(st.sampled_from(counted))
    wrong = data.draw(st.sampled_from(["1", "96", "1e+06", "1.04858e+06", "2147483647"]))
    lines = text.splitlines()
    tokens = lines[row["line"] - 1].split()
    # the out-of-place #wrong is the 4th value after the optional prefix and lead columns
    prefix = tokens[0] if not tokens[0].isdigit() else None
    cells = tokens[1:] if prefix else tokens
    lead = 5 if row["root"] is not None else 4
    cells[lead + 3] = wrong
    lines[row["line"] - 1] = " ".join(([prefix] if prefix else []) + cells)
    result = parse_nccl_tests("\n".join(lines))
    _check_shape(result)
    assert result["passed"] is False
    assert any("#wrong is nonzero" in message for message in result["errors"])


@given(st.sampled_from(PASSING), st.data())
def test_interleaved_nccl_lines_change_nothing_but_warnings(name, data):
    text = ALL[name]
    lines = text.splitlines()
    inserts = data.draw(st.lists(st.tuples(st.integers(0, len(lines)), INFO_LINES), max_size=20))
    for position, line in sorted(inserts, reverse=True):
        lines.insert(position, line)
    original = parse_nccl_tests(text)
    result = parse_nccl_tests("\n".join(lines))
    _check_shape(result)
    assert result["passed"] is True
    strip = [dict(row, line=None) for row in result["rows"]]
    assert strip == [dict(row, line=None) for row in original["rows"]]
    assert result["avg_busbw"] == original["avg_busbw"]


@given(st.text())
def test_random_text_never_raises(text):
    _check_shape(parse_nccl_tests(text))


@given(st.binary())
def test_random_bytes_never_raise(blob):
    _check_shape(parse_nccl_tests(blob.decode("utf-8", errors="replace")))
    _check_shape(parse_nccl_tests(blob.decode("latin-1")))


@given(st.sampled_from(sorted(ALL)), st.lists(st.text(max_size=80), max_size=10), st.data())
def test_garbage_lines_inside_real_output_never_raise(name, garbage, data):
    lines = ALL[name].splitlines()
    for line in garbage:
        lines.insert(data.draw(st.integers(0, len(lines))), line)
    _check_shape(parse_nccl_tests("\n".join(lines)))


@given(st.sampled_from(PASSING), st.sampled_from(["[1,0]<stdout>:", " 0: ", "12: ", "[0] "]))
def test_launcher_prefix_on_every_line_keeps_the_parse(name, prefix):
    text = ALL[name]
    if text.startswith(("[1,0]", " 0: ")):   # already prefixed
        return
    original = parse_nccl_tests(text)
    result = parse_nccl_tests("\n".join(prefix + line for line in text.splitlines()))
    assert result["passed"] is True, result["errors"]
    assert [dict(r, line=None) for r in result["rows"]] == [dict(r, line=None) for r in original["rows"]]
    assert result["ranks"] == original["ranks"]
