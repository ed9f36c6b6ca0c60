"""The Slurm topology model from inventory labels (module_utils/_topology_from_labels.py), built with build_topology."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_labels import model_from_labels
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_model import build_topology

from test_topology_from_fabric import codes


# ------------------------------------------------------------------------------- labels


def test_tree_from_hostvars_with_rack_fallback():
    hosts = [{"inventory_hostname": "h1", "slurm_topology_node": "n01", "slurm_topology_leaf": "leaf1"},
             {"inventory_hostname": "n02", "slurm_topology_leaf": "leaf1"},
             {"inventory_hostname": "n03", "slurm_topology_rack": "rack 2"}]
    result = build_topology(hosts, "labels", nodes=["n01", "n02", "n03"])
    assert not result["fatal"], result["problems"]
    assert result["model"]["switches"] == [{"name": "leaf1", "nodes": ["n01", "n02"]},
                                           {"name": "rack_2", "nodes": ["n03"]},
                                           {"name": "root", "switches": ["leaf1", "rack_2"]}]


def test_block_from_rack_labels():
    labels = {"n%02d" % i: {"rack": "nvl72-%d" % ((i - 1) // 4 + 1)} for i in range(1, 9)}
    result = build_topology(labels, "labels", plugin="block", nodes="n[01-08]", block_sizes=[4, 8])
    assert not result["fatal"], result["problems"]
    assert result["text"].splitlines()[1:] == ["BlockName=nvl72-1 Nodes=n[01-04]", "BlockName=nvl72-2 Nodes=n[05-08]",
                                               "BlockSizes=4,8"]
    assert result["plugin"] == "topology/block" and result["blocks"]["nvl72-2"] == ["n05", "n06", "n07", "n08"]


def test_labels_missing_and_unknown_hosts():
    labels = {"n01": {"leaf": "a"}, "n02": {}, "mgmt": {"leaf": "a"}}
    result = build_topology(labels, "labels", nodes=["n01", "n02"])
    assert result["fatal"] and "missing_label" in codes(result) and result["text"] == ""
    assert any("mgmt" in w for w in result["warnings"])
    clash = model_from_labels({"n01": {"leaf": "root"}})
    assert clash["problems"][0]["code"] == "root_name_clash"
    with pytest.raises(TypeError):
        model_from_labels("n01")


def test_small_block_is_fatal():
    labels = {"n01": {"block": "b1"}, "n02": {"block": "b1"}, "n03": {"block": "b2"}}
    result = build_topology(labels, "labels", plugin="block")
    assert result["fatal"] and "block_too_small" in codes(result)
