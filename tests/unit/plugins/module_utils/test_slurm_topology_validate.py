"""topology.conf whole-file checks (validate_slurm_topology): hand-made files and models."""
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import validate_slurm_topology

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm_topology"


def fixture(name):
    return (FIXTURES / name).read_text()


def codes(problems, severity=None):
    return [p["code"] for p in problems if severity is None or p["severity"] == severity]


# ------------------------------------------------------------------------- hand-made variants

def test_undefined_child_switch():
    problems = validate_slurm_topology(parse_slurm_topology(fixture("handmade_undefined_child.conf")))
    assert codes(problems) == ["undefined_child"]
    assert problems[0]["message"].startswith("line 4: switch spine01 lists child switch leaf03")
    assert "invalid child (leaf03)" in problems[0]["message"]


def test_node_under_two_leaves_is_fatal():
    problems = validate_slurm_topology(parse_slurm_topology(
        fixture("handmade_node_two_leaves.conf")), "gpu[001-016]")
    assert codes(problems) == ["node_multiple_leaves"]
    assert problems[0]["severity"] == "fatal"
    assert "gpu[008-009]" in problems[0]["message"] and "leaf01, leaf02" in problems[0]["message"]


def test_two_fabrics_without_common_root():
    problems = validate_slurm_topology(parse_slurm_topology(fixture("handmade_two_fabrics.conf")))
    assert codes(problems) == ["multiple_roots"]
    assert "no switch reaches all 16 nodes" in problems[0]["message"]


def test_switch_loop():
    problems = validate_slurm_topology(parse_slurm_topology(fixture("handmade_loop.conf")))
    assert codes(problems) == ["switch_loop"]
    assert "spine01 -> spine02 -> spine01" in problems[0]["message"]


# ------------------------------------------------------------------------------- validation

def test_validate_cluster_coverage():
    parsed = parse_slurm_topology("SwitchName=l0 Nodes=gpu[01-04]\nSwitchName=sp Switches=l0\n")
    problems = validate_slurm_topology(parsed, nodes=["gpu01", "gpu02", "gpu05", "gpu06"])
    assert codes(problems) == ["node_not_in_topology", "node_not_in_cluster"]
    assert problems[0]["severity"] == "fatal" and "gpu[05-06]" in problems[0]["message"]
    assert "switches lack access to 2 nodes" in problems[0]["message"]
    assert problems[1]["severity"] == "warning" and "gpu[03-04]" in problems[1]["message"]


def test_validate_accepts_a_hostlist_string_for_nodes():
    parsed = parse_slurm_topology("BlockName=b0 Nodes=n[1-4]\n")
    assert codes(validate_slurm_topology(parsed, "n[1-5]")) == ["node_not_in_topology"]
    assert "Blocks lack access" in validate_slurm_topology(parsed, "n[1-5]")[0]["message"]
    assert validate_slurm_topology(parsed, ["n[1-4]"]) == []


def test_validate_self_child():
    parsed = parse_slurm_topology("SwitchName=l0 Nodes=a\nSwitchName=sp Switches=sp,l0\n")
    assert "self_child" in codes(validate_slurm_topology(parsed), "fatal")


def test_validate_nodes_in_two_blocks():
    parsed = parse_slurm_topology("BlockName=b0 Nodes=n[1-4]\nBlockName=b1 Nodes=n[4-7]\n")
    problems = validate_slurm_topology(parsed)
    assert codes(problems) == ["node_multiple_blocks"]
    assert "node n4 is in more than one block (b0, b1)" in problems[0]["message"]


def test_validate_duplicate_block_and_ring():
    blocks = parse_slurm_topology("BlockName=b0 Nodes=n[1-2]\nBlockName=b0 Nodes=n[3-4]\n")
    assert codes(validate_slurm_topology(blocks)) == ["duplicate_block"]
    rings = parse_slurm_topology("RingName=r0 Nodes=n[1-2]\nRingName=r0 Nodes=n[3-4]\n")
    assert codes(validate_slurm_topology(rings)) == ["duplicate_ring"]


def test_validate_model_without_line_numbers():
    model = {"switches": [{"name": "l0", "nodes": ["a"]}, {"name": "l0", "nodes": ["b"]},
                          {"name": "sp", "switches": ["l0", "l9"]},
                          {"name": "x", "nodes": ["c"], "switches": ["l0"]}]}
    problems = validate_slurm_topology(model)
    assert set(codes(problems)) >= {"duplicate_switch", "undefined_child", "switch_both_children"}
    assert all(not p["message"].startswith("line ") for p in problems)


def test_validate_block_sizes_larger_than_blocks():
    parsed = parse_slurm_topology("BlockName=b0 Nodes=n[1-4]\nBlockSizes=8\n")
    problems = validate_slurm_topology(parsed)
    assert codes(problems) == ["block_too_small"]
    assert "fewer than the base block size 8 (first of BlockSizes)" in problems[0]["message"]


def test_validate_deep_chain_does_not_recurse():
    lines = ["SwitchName=s0 Nodes=n1"]
    lines += ["SwitchName=s%d Switches=s%d" % (i, i - 1) for i in range(1, 3000)]
    parsed = parse_slurm_topology("\n".join(lines))
    assert parsed["errors"] == []
    assert validate_slurm_topology(parsed, ["n1"]) == []


def test_validate_rejects_wrong_input_types():
    with pytest.raises(TypeError):
        validate_slurm_topology("SwitchName=s0")
    with pytest.raises(TypeError):
        validate_slurm_topology({"switches": "s0"})
    with pytest.raises(TypeError):
        validate_slurm_topology({"switches": [{"nodes": ["a"]}]})
    with pytest.raises(ValueError):
        validate_slurm_topology({"switches": [{"name": "s", "nodes": ["a"]}]}, nodes="a[1-")
    with pytest.raises(TypeError):
        validate_slurm_topology({"switches": [{"name": "s", "nodes": ["a"]}]}, nodes=5)


def test_parse_errors_come_first_then_file_checks():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a Foo=1\nSwitchName=sp Switches=s[0-1]\n")
    problems = validate_slurm_topology(parsed)
    assert codes(problems) == ["parse_error", "undefined_child"]
