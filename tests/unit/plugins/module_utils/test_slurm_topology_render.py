"""topology.conf writing (render_slurm_topology): models to text that parses back, bad models refused."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_render import render_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import validate_slurm_topology


# -------------------------------------------------------------------------------- rendering

def test_render_tree():
    model = {"switches": [
        {"name": "leaf01", "nodes": ["gpu003", "gpu001", "gpu002", "gpu010"], "link_speed": 400},
        {"name": "leaf02", "nodes": "gpu[011-012]"},
        {"name": "spine01", "switches": ["leaf01", "leaf02"]},
    ]}
    text = render_slurm_topology(model)
    assert text.splitlines()[1:] == [
        "SwitchName=leaf01 Nodes=gpu[001-003,010] LinkSpeed=400",
        "SwitchName=leaf02 Nodes=gpu[011-012]",
        "SwitchName=spine01 Switches=leaf[01-02]",
    ]
    assert text.startswith("# topology.conf written by gpucluster.acceptance")
    parsed = parse_slurm_topology(text)
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert validate_slurm_topology(parsed, "gpu[001-003,010-012]") == []


def test_render_blocks_and_header():
    text = render_slurm_topology({"blocks": [{"name": "nvl1", "nodes": "gb[01-18]"},
                                             {"name": "nvl2", "nodes": "gb[19-36]"}],
                                  "block_sizes": [18, 36]}, header="line one\n\nline two")
    assert text == ("# line one\n#\n# line two\nBlockName=nvl1 Nodes=gb[01-18]\n"
                    "BlockName=nvl2 Nodes=gb[19-36]\nBlockSizes=18,36\n")
    assert parse_slurm_topology(text)["block_sizes"] == [18, 36]


def test_render_rings_without_header():
    text = render_slurm_topology({"rings": [{"name": "r0", "nodes": ["n1", "n2"]}]}, header=None)
    assert text == "RingName=r0 Nodes=n[1-2]\n"


@pytest.mark.parametrize("model, fragment", [
    ({"switches": [{"name": "s0"}]}, "exactly one of nodes or switches"),
    ({"switches": [{"name": "s0", "nodes": ["a"], "switches": ["s1"]}]}, "exactly one of"),
    ({"switches": [{"name": "s 0", "nodes": ["a"]}]}, "cannot hold"),
    ({"switches": [{"name": "", "nodes": ["a"]}]}, "non-empty string name"),
    ({"switches": [{"name": "s" * 65, "nodes": ["a"]}]}, "longer than 64"),
    ({"switches": [{"name": "s0", "nodes": ["a#b"]}]}, "cannot be written"),
    ({"switches": [{"name": "s0", "nodes": ["a"], "link_speed": "fast"}]}, "link_speed"),
    ({"switches": [{"name": "s0", "nodes": ["a"]}], "blocks": [{"name": "b", "nodes": ["a"]}]},
     "one plugin"),
    ({"blocks": [{"name": "b", "nodes": []}]}, "empty nodes list"),
    ({"blocks": [{"name": "b", "nodes": ["a"]}], "block_sizes": [0]}, "positive integers"),
])
def test_render_rejects_bad_models(model, fragment):
    with pytest.raises(ValueError) as info:
        render_slurm_topology(model)
    assert fragment in str(info.value)


def test_render_rejects_non_mappings():
    with pytest.raises(TypeError):
        render_slurm_topology([])
    with pytest.raises(TypeError):
        render_slurm_topology({"switches": ["s0"]})
