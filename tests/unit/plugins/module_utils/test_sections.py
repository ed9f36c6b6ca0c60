"""Splitting the collector's output, and the collector script itself, run for real."""
import subprocess

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._sections import (
    describe_failure, parse_sections)
from conftest import REPO

COLLECTOR = REPO / "roles" / "collect" / "files" / "gpucluster-collect.sh"


def collect(*args):
    return subprocess.run(["bash", str(COLLECTOR)] + list(args), capture_output=True, text=True,
                          timeout=60, check=True).stdout


def test_collector_output_splits_per_tool_with_exit_codes():
    out = collect("@tool", "hello", "5", "printf", "a\\nb\\n", "@tool", "nope", "5", "no-such-tool-xyz",
                  "@tool", "fails", "5", "sh", "-c", "echo oops; exit 3")
    sections = parse_sections(out)
    assert sections["errors"] == []
    tools = sections["tools"]
    assert tools["hello"]["output"] == "a\nb"
    assert tools["hello"]["rc"] == 0 and tools["hello"]["complete"]
    assert tools["nope"]["rc"] == 127
    assert describe_failure("nope", tools["nope"]) == "nope: not installed on the node (command not found)"
    assert tools["fails"]["rc"] == 3 and tools["fails"]["output"] == "oops"


def test_hung_tool_is_killed_at_its_timeout():
    out = collect("@tool", "hang", "1", "sleep", "30", "@tool", "after", "5", "echo", "still runs")
    tools = parse_sections(out)["tools"]
    assert tools["hang"]["rc"] == 124
    assert 0.9 < tools["hang"]["seconds"] < 10
    assert describe_failure("hang", tools["hang"]).startswith("hang: timed out after 1 s")
    assert tools["after"]["output"] == "still runs"


def test_arguments_are_never_evaluated_by_a_shell():
    out = collect("@tool", "echo", "5", "echo", "$(touch /tmp/gpucluster-pwned)", "; rm -rf /", "`id`")
    assert parse_sections(out)["tools"]["echo"]["output"] == "$(touch /tmp/gpucluster-pwned) ; rm -rf / `id`"


def test_cut_off_output_and_no_markers_are_reported():
    cut = parse_sections("==> gpucluster-begin dcgmi-diag <==\nrunning...\n")
    assert cut["tools"]["dcgmi-diag"]["complete"] is False
    assert "cut off" in describe_failure("dcgmi-diag", cut["tools"]["dcgmi-diag"])
    empty = parse_sections("")
    assert empty["tools"] == {} and empty["errors"]
    assert describe_failure("x", None) == "x: no output collected"


def test_crlf_from_a_tty_is_tolerated():
    text = "==> gpucluster-begin t <==\r\nline\r\n\r\n==> gpucluster-end t rc=0 seconds=0.010 <==\r\n"
    assert parse_sections(text)["tools"]["t"] == {"output": "line", "rc": 0, "seconds": 0.01, "complete": True}


@pytest.mark.parametrize("end", ["rc=0 seconds=1.2.3", "rc=%s seconds=1.0" % ("9" * 5000), "rc=0 seconds=%s" % ("1" * 5000),
                                 "rc=² seconds=1.0", "rc=0 seconds=inf"])
def test_an_odd_end_marker_reads_as_cut_off_never_a_traceback(end):
    text = "==> gpucluster-begin dmesg <==\nline\n\n==> gpucluster-end dmesg %s <==\n" % end
    record = parse_sections(text)["tools"]["dmesg"]
    assert record["complete"] is False and record["rc"] is None
    assert describe_failure("dmesg", record).startswith("dmesg: output cut off")


PIECES = ["==> gpucluster-begin a <==", "==> gpucluster-end a rc=", "0", "9" * 40, ".", " seconds=", " <==", "\n", "x",
          "²", "-"]


@given(st.lists(st.sampled_from(PIECES), max_size=60).map("".join))
def test_any_collector_output_splits_without_an_exception(text):
    """Property: whatever the collector printed, the split names tools or says why not."""
    result = parse_sections(text)
    assert result["tools"] or result["errors"]
    for record in result["tools"].values():
        assert record["rc"] is None or -999999 <= record["rc"] <= 999999
