"""Splitting the collector's output, and the collector script itself, run for real."""
import subprocess

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
