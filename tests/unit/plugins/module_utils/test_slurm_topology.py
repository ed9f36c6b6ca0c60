"""topology.conf: parsing real and hand-made files (with the whole-file checks where a file shows them).

The whole-file checks on their own are in test_slurm_topology_validate.py, writing in
test_slurm_topology_render.py."""
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import validate_slurm_topology

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm_topology"


def fixture(name):
    return (FIXTURES / name).read_text()


def codes(problems, severity=None):
    return [p["code"] for p in problems if severity is None or p["severity"] == severity]


def by_name(parsed):
    return {s["name"]: s for s in parsed["switches"]}


# ------------------------------------------------------------------------------ real fixtures

def test_man_page_tree_example():
    parsed = parse_slurm_topology(fixture("man_tree_example.conf"))
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert parsed["plugin"] == "topology/tree"
    assert [s["name"] for s in parsed["switches"]] == ["s0", "s1", "s2", "s3"]
    assert parsed["switches"][0] == {"name": "s0", "nodes": ["dev%d" % i for i in range(6)],
                                     "switches": [], "link_speed": None, "line": 5}
    assert parsed["switches"][3]["switches"] == ["s0", "s1", "s2"]
    assert parsed["switches"][3]["nodes"] == []
    nodes = expand_hostlist("dev[0-17]")
    assert validate_slurm_topology(parsed, nodes) == []


def test_man_page_block_example():
    parsed = parse_slurm_topology(fixture("man_block_example.conf"))
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert parsed["plugin"] == "topology/block"
    assert parsed["block_sizes"] == [30, 120]
    assert [b["name"] for b in parsed["blocks"]] == ["block1", "block2", "block3", "block4"]
    assert parsed["blocks"][3]["nodes"][0] == "node97" and len(parsed["blocks"][3]["nodes"]) == 32
    assert parsed["switches"] == []
    assert validate_slurm_topology(parsed, "node[1-128]") == []


def test_man_page_ring_example():
    parsed = parse_slurm_topology(fixture("man_ring_example.conf"))
    assert parsed["errors"] == [] and parsed["plugin"] == "topology/ring"
    assert [r["nodes"][0] for r in parsed["rings"]] == ["node01", "node09"]
    assert validate_slurm_topology(parsed, "node[01-16]") == []


def test_guide_binary_tree_has_one_root():
    parsed = parse_slurm_topology(fixture("guide_binary_tree.conf"))
    assert parsed["errors"] == []
    assert by_name(parsed)["s6"]["switches"] == ["s4", "s5"]
    assert validate_slurm_topology(parsed, "tux[0-7]") == []


def test_guide_four_roots_with_link_speed():
    parsed = parse_slurm_topology(fixture("guide_linkspeed_four_roots.conf"))
    assert parsed["errors"] == []
    assert [s["link_speed"] for s in parsed["switches"]] == [900, 900, 900] + [1800] * 5
    problems = validate_slurm_topology(parsed, "tux[0-15]")
    assert codes(problems) == ["multiple_roots"]
    assert problems[0]["severity"] == "warning"
    assert "s[4-7]" in problems[0]["message"]


def test_topograph_generated_tree():
    parsed = parse_slurm_topology(fixture("topograph_tree.conf"))
    assert parsed["errors"] == [] and len(parsed["switches"]) == 19
    core = by_name(parsed)["switch.3.1"]
    assert core["switches"] == ["switch.2.%d" % i for i in range(1, 7)]
    assert by_name(parsed)["switch.1.12"]["nodes"][-1] == "srv6208"
    nodes = [n for s in parsed["switches"] for n in s["nodes"]]
    assert len(nodes) == 96
    assert validate_slurm_topology(parsed, nodes) == []


def test_topograph_generated_blocks():
    parsed = parse_slurm_topology(fixture("topograph_block.conf"))
    assert parsed["errors"] == [] and parsed["block_sizes"] == [8, 16, 32]
    assert len(parsed["blocks"]) == 12 and all(len(b["nodes"]) == 8 for b in parsed["blocks"])
    assert validate_slurm_topology(parsed) == []


def test_cyclecloud_uneven_blocks_are_flagged():
    parsed = parse_slurm_topology(fixture("cyclecloud_block_uneven.conf"))
    assert parsed["errors"] == []
    assert [len(b["nodes"]) for b in parsed["blocks"]] == [16, 13]
    assert parsed["blocks"][1]["nodes"][0] == "hpcbench-hpc-22"
    problems = validate_slurm_topology(parsed)
    assert codes(problems) == ["block_too_small"]
    assert problems[0]["severity"] == "fatal"
    assert problems[0]["message"].startswith("line 6: block block_5e797fc6")
    assert "13 nodes, fewer than the base block size 16" in problems[0]["message"]


def test_soperator_bare_root_switch_is_refused():
    parsed = parse_slurm_topology(fixture("soperator_bare_root.conf"))
    assert parsed["switches"] == []
    assert any("neither Nodes= nor Switches=" in e for e in parsed["errors"])
    assert any("No switches configured" in e for e in parsed["errors"])
    assert set(codes(validate_slurm_topology(parsed), "fatal")) == {"parse_error", "empty"}


# ------------------------------------------------------------------------- hand-made variants

def test_healthy_gpu_cluster_with_continuation_and_mixed_case_keys():
    parsed = parse_slurm_topology(fixture("handmade_gpu_cluster.conf"))
    assert parsed["errors"] == [] and parsed["warnings"] == []
    switches = by_name(parsed)
    assert switches["leaf02"]["line"] == 4 and switches["leaf02"]["link_speed"] == 400
    assert switches["spine01"]["switches"] == ["leaf01", "leaf02"]
    assert switches["spine01"]["line"] == 6
    assert validate_slurm_topology(parsed, "gpu[001-016]") == []


def test_unknown_keys_are_errors():
    parsed = parse_slurm_topology(fixture("handmade_unknown_key.conf"))
    assert any(e.startswith("line 2: unrecognized key 'Node'") for e in parsed["errors"])
    assert any(e.startswith("line 3: unrecognized key 'Speed'") for e in parsed["errors"])
    assert all("unrecognized key" not in w for w in parsed["warnings"])


def test_switch_with_both_or_neither_children_is_dropped():
    parsed = parse_slurm_topology(fixture("handmade_both_children.conf"))
    assert [s["name"] for s in parsed["switches"]] == ["leaf01", "spine01"]
    assert any(e.startswith("line 3: switch leaf02 has both") for e in parsed["errors"])
    assert any(e.startswith("line 4: switch leaf03 has neither") for e in parsed["errors"])
    problems = validate_slurm_topology(parsed)
    assert "undefined_child" in codes(problems, "fatal")   # spine01 -> leaf02, as slurmctld


def test_duplicate_switch_reported_once():
    parsed = parse_slurm_topology(fixture("handmade_duplicate_switch.conf"))
    assert parsed["errors"] == ["line 3: switch leaf01 is already defined on line 2 (slurmctld "
                                "stops with 'Switch (leaf01) has already been defined')"]
    problems = validate_slurm_topology(parsed)
    assert codes(problems) == ["duplicate_switch"]


def test_mixed_plugins():
    parsed = parse_slurm_topology(fixture("handmade_mixed_plugins.conf"))
    assert parsed["plugin"] is None
    assert any(e.startswith("line 4: BlockName/BlockSizes lines") for e in parsed["errors"])
    assert len(parsed["switches"]) == 2 and len(parsed["blocks"]) == 1


def test_bad_block_sizes():
    parsed = parse_slurm_topology(fixture("handmade_bad_blocksizes.conf"))
    assert parsed["block_sizes"] == [8, 24]
    assert parsed["errors"] == ["line 4: BlockSizes=8,24: 24 is not the base size 8 times a power "
                                "of two (slurmctld stops with 'Invalid BlockSizes value')"]


def test_garbage_line_and_bad_hostlist():
    parsed = parse_slurm_topology(fixture("handmade_garbage.conf"))
    assert parsed["errors"][0] == ("line 2: cannot read '[root@head ~]' as Key=Value pairs "
                                   "(slurmctld stops with 'Parse error in file')")
    assert parsed["errors"][1].startswith("line 3: Nodes=gpu[001-008 is not a valid hostlist")
    assert by_name(parsed)["leaf01"]["nodes"] == []
    assert parsed["warnings"] == []


@pytest.mark.parametrize("name", ["handmade_empty.conf", "handmade_comments_only.conf"])
def test_empty_files(name):
    parsed = parse_slurm_topology(fixture(name))
    assert parsed["plugin"] is None and parsed["switches"] == []
    assert len(parsed["errors"]) == 1 and "No switches configured" in parsed["errors"][0]
    assert codes(validate_slurm_topology(parsed)) == ["empty"]


# ----------------------------------------------------------------------------- grammar cases

def test_keys_are_case_insensitive_values_are_not():
    parsed = parse_slurm_topology("SWITCHNAME=Leaf nODES=GPU[1-2] linkspeed=5\n")
    assert parsed["switches"] == [{"name": "Leaf", "nodes": ["GPU1", "GPU2"], "switches": [],
                                   "link_speed": 5, "line": 1}]


def test_comments_escapes_and_quotes():
    text = ('SwitchName=s0 Nodes=a[1-2] # trailing comment\n'
            'SwitchName=s\\#1 Nodes="b1 b2"\n'
            '   # indented comment\n'
            'SwitchName = s2  Switches = s0\n')
    parsed = parse_slurm_topology(text)
    assert parsed["errors"] == []
    assert [s["name"] for s in parsed["switches"]] == ["s0", "s#1", "s2"]
    assert parsed["switches"][1]["nodes"] == ["b1", "b2"]
    assert parsed["switches"][2]["line"] == 4


def test_continuation_joins_without_a_space():
    parsed = parse_slurm_topology("SwitchName=s0 \\\nNodes=a1\nSwitchName=s1\\\nNodes=a2\n")
    assert parsed["switches"][0]["nodes"] == ["a1"]
    # 's1' and 'Nodes=a2' join into one value, as in slurmctld: a switch with no children
    assert any("switch s1Nodes=a2 has neither" in e for e in parsed["errors"])


def test_even_backslashes_do_not_continue():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a\\\\\nSwitchName=s1 Nodes=b\n")
    assert [s["nodes"] for s in parsed["switches"]] == [["a\\"], ["b"]]


def test_file_ending_in_a_continuation():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a1 \\")
    assert parsed["switches"][0]["nodes"] == ["a1"]
    assert parsed["warnings"] == ["line 1: the file ends in a continuation backslash"]


def test_windows_line_endings():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a[1-2]\r\nSwitchName=s1 Switches=s0\r\n")
    assert parsed["errors"] == [] and parsed["switches"][1]["switches"] == ["s0"]


@pytest.mark.parametrize("line, fragment", [
    ("Nodes=a1", "unrecognized key 'Nodes'"),
    ("NodeName=a1", "unrecognized key 'NodeName'"),
    ("SwitchName=s0 Nodes=a1 extra", "cannot read 'extra'"),
    ("SwitchName=s0 Nodes=", "cannot read 'Nodes='"),
    ("SwitchName=s0 Nodes=a1 SwitchName=s1", "unrecognized key 'SwitchName' on a SwitchName line"),
    ("BlockSizes=4 Nodes=a", "unexpected 'Nodes=' after BlockSizes"),
    ("BlockSizes=4,x", "not a comma-separated list of whole numbers"),
    ("BlockSizes=0", "0 is not a positive size"),
    ("BlockSizes=4,6", "6 is not a multiple of the base size 4"),
    ("BlockSizes=1,65536", "more than 2^15 times"),
    ("SwitchName=%s Nodes=a" % ("x" * 65), "longer than 64 characters"),
    ("SwitchName=s0 Nodes= Switches=s1", "looks like another Key=Value"),
    ("SwitchName=s0 Nodes=a[1-", "is not a valid hostlist"),
    ("SwitchName=s0 Switches=s[2-1]", "is not a valid hostlist"),
    ("RingName=r0 Nodes=n[1-17]", "ring r0 has 17 nodes"),
    ("BlockName=b0", "block b0 has no Nodes="),
    ("SwitchName=s0 Nodes=a[0-999999]b[0-9]", "more than 1000000 names"),
])
def test_line_errors(line, fragment):
    parsed = parse_slurm_topology(line + "\n")
    assert any(e.startswith("line 1: ") and fragment in e for e in parsed["errors"]), parsed["errors"]


@pytest.mark.parametrize("text, fragment", [
    ("SwitchName=s0 Nodes=a LinkSpeed=fast\n", "LinkSpeed=fast of switch s0 is not a whole number"),
    ("SwitchName=s0 Nodes=a Nodes=b\n", "Nodes= is given twice"),
    ("SwitchName=s0 Nodes+=a\n", "'Nodes+=' is read as 'Nodes='"),
    ("SwitchName=s[0-1] Nodes=a\n", "is taken literally"),
    ("SwitchName=s0 Nodes=,\n", "empty Nodes= list"),
    ("BlockName=b1 Nodes=a\nBlockSizes=1\nBlockSizes=1\n", "BlockSizes is set again"),
    ("include /etc/slurm/extra.conf\nSwitchName=s0 Nodes=a\n", "is not followed"),
])
def test_line_warnings(text, fragment):
    parsed = parse_slurm_topology(text)
    assert any(fragment in w for w in parsed["warnings"]), parsed["warnings"]


def test_last_value_wins_for_a_repeated_key():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a Nodes=b\n")
    assert parsed["switches"][0]["nodes"] == ["b"]


def test_link_speed_out_of_range():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a LinkSpeed=4294967296\n")
    assert parsed["switches"][0]["link_speed"] is None and parsed["warnings"]


def test_unknown_key_errors_once_per_line():
    parsed = parse_slurm_topology("SwitchName=s0 Nodes=a Foo=1 Bar=2 garbage\n")
    assert len([e for e in parsed["errors"] if "unrecognized" in e or "cannot read" in e]) == 1
    assert parsed["switches"][0]["nodes"] == ["a"]   # slurmctld keeps what it read before Foo
