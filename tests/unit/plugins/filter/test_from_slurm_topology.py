"""from_slurm_topology filter: parse result plus problems; bad input types fail clearly."""
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_slurm_topology import (
    FilterModule, from_slurm_topology)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm_topology"


def test_registered_under_its_name():
    # guarded_filters wraps it: the wrapped function is the one the module defines
    assert dict((k, v.__wrapped__) for k, v in FilterModule().filters().items()) == {"from_slurm_topology": from_slurm_topology}


def test_parses_and_checks_a_real_file():
    result = from_slurm_topology((FIXTURES / "man_tree_example.conf").read_text())
    assert result["plugin"] == "topology/tree"
    assert [s["name"] for s in result["switches"]] == ["s0", "s1", "s2", "s3"]
    assert result["errors"] == [] and result["problems"] == []


def test_nodes_as_keyword_or_positional():
    text = (FIXTURES / "handmade_gpu_cluster.conf").read_text()
    assert from_slurm_topology(text, nodes="gpu[001-016]")["problems"] == []
    problems = from_slurm_topology(text, ["gpu%03d" % i for i in range(1, 18)])["problems"]
    assert [p["code"] for p in problems] == ["node_not_in_topology"]
    assert "gpu017" in problems[0]["message"]


def test_broken_file_reports_fatal_problems():
    result = from_slurm_topology((FIXTURES / "handmade_undefined_child.conf").read_text())
    assert [p["severity"] for p in result["problems"]] == ["fatal"]


@pytest.mark.parametrize("text", ["", "garbage", "\x00\x01", "SwitchName=s0 Nodes=a["])
def test_garbled_text_gives_errors_not_exceptions(text):
    result = from_slurm_topology(text)
    assert result["errors"]
    assert any(p["severity"] == "fatal" for p in result["problems"])


def test_bytes_are_decoded():
    assert from_slurm_topology(b"SwitchName=s0 Nodes=a1\n")["switches"][0]["nodes"] == ["a1"]


@pytest.mark.parametrize("data", [None, {"stdout": "SwitchName=s0 Nodes=a"}, ["SwitchName=s0"]])
def test_non_string_input_is_a_filter_error(data):
    with pytest.raises(AnsibleFilterError) as info:
        from_slurm_topology(data)
    assert ".stdout" in str(info.value)


@pytest.mark.parametrize("nodes", ["gpu[1-", 5, [1, 2]])
def test_malformed_nodes_is_a_filter_error(nodes):
    with pytest.raises(AnsibleFilterError) as info:
        from_slurm_topology("SwitchName=s0 Nodes=a\n", nodes=nodes)
    assert "nodes" in str(info.value)
