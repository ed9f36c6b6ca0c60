"""collector_output: one tool's record from the collector's framed output, never an empty success."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.collector_output import FilterModule

collector_output = FilterModule().filters()["collector_output"]


def test_the_tools_output_rc_and_time():
    text = "==> gpucluster-begin workload <==\nline 1\nline 2\n\n==> gpucluster-end workload rc=3 seconds=1.250 <==\n"
    assert collector_output(text, "workload") == {"output": "line 1\nline 2", "rc": 3, "seconds": 1.25, "complete": True}


def test_a_cut_off_tool_is_incomplete_with_the_collectors_status():
    record = collector_output("==> gpucluster-begin workload <==\nline 1\n", "workload", rc=143)
    assert record["complete"] is False and record["rc"] == 143 and record["output"] == "line 1"


def test_a_missing_tool_says_so():
    record = collector_output("bash: gpucluster-collect: expected @tool", "workload", rc=2)
    assert record["complete"] is False and record["rc"] == 2 and "no output of it" in record["error"]
    with pytest.raises(AnsibleFilterError):
        collector_output(None, "workload")
