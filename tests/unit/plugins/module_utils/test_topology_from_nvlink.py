"""topology/block from the measured NVLink domains, and a provider's block file checked against them."""
import sys
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.filter.slurm_topology_from_fabric import slurm_topology_from_fabric
from ansible_collections.gpucluster.acceptance.plugins.filter.slurm_topology_validate_blocks import (
    slurm_topology_validate_blocks)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import judge_nvlink_domains
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_nvlink_domains import RACK_A, RACK_B, racks, tray  # noqa: E402

SMALL = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"domain_trays": 4}})


def results(states):
    """The part of results.json the topology reads: the nvlink_domain stage's document."""
    return {"nvlink_domains": judge_nvlink_domains(states, SMALL)["document"]}


def test_one_block_per_measured_domain_with_the_rack_as_base_size():
    built = slurm_topology_from_fabric(results(racks(4, 4)), "nvlink", plugin="block")
    assert not built["fatal"], built["problems"]
    parsed = parse_slurm_topology(built["text"])
    assert [(b["name"], b["nodes"]) for b in parsed["blocks"]] == [
        ("nvl01", ["gpu001", "gpu002", "gpu003", "gpu004"]), ("nvl02", ["gpu005", "gpu006", "gpu007", "gpu008"])]
    assert "BlockSizes=4" in built["text"]
    assert "from the NVLink domains the GPUs registered in" in built["text"]


def test_trays_in_no_domain_are_left_out_and_a_small_domain_sets_the_base():
    states = racks(4, 3)
    states["gpu008"] = tray(None, failed=["gpu.fabric"])
    built = slurm_topology_from_fabric(results(states), "nvlink", plugin="block")
    assert not built["fatal"], built["problems"]
    assert "BlockSizes=3" in built["text"] and "gpu008" not in built["text"]
    assert "trays in no NVLink domain, left out of every block: gpu008" in built["warnings"]
    assert any("the smallest domain holds 3 trays, fewer than a rack's 4" in w for w in built["warnings"])


def test_a_provider_file_with_two_trays_swapped_between_racks_is_caught_with_the_measured_domains():
    conf = ("BlockName=block_a Nodes=gpu[001-003],gpu005\n"
            "BlockName=block_b Nodes=gpu004,gpu[006-008]\n"
            "BlockSizes=4\n")
    found = slurm_topology_validate_blocks(conf, results=results(racks(4, 4)))
    assert not found["ok"]
    assert [(m["node"], m["block"]) for m in found["misplaced"]] == [("gpu005", "block_a"), ("gpu004", "block_b")]
    assert found["misplaced"][0]["evidence"] == (
        "gpu005 registered in NVLink domain %s.32766; block block_a's other trays are in %s.32766" % (RACK_B, RACK_A))
    assert found["messages"][0].startswith("gpu005 is in block block_a but its GPUs are in NVLink domain %s.32766 "
                                           "(the domain of block block_b)" % RACK_B)
    right = slurm_topology_validate_blocks("BlockName=a Nodes=gpu[001-004]\nBlockName=b Nodes=gpu[005-008]\n",
                                           results=results(racks(4, 4)))
    assert right["ok"] and right["messages"] == []


def test_split_domains_missing_trays_and_unreadable_files_are_named():
    found = slurm_topology_validate_blocks("BlockName=a Nodes=gpu[001-002]\nBlockName=b Nodes=gpu003\n",
                                           results=results(racks(4, 0)))
    assert found["split"] == [{"domain": "%s.32766" % RACK_A, "blocks": ["a", "b"]}]
    assert found["missing"] == ["gpu004"] and not found["ok"]
    bad = slurm_topology_validate_blocks("SwitchName=s1 Nodes=gpu[001-004]\n", results=results(racks(4, 0)))
    assert not bad["ok"] and bad["problems"]


def test_a_results_document_without_domains_is_refused_naming_what_to_run():
    with pytest.raises(Exception, match="no nvlink_domains block: run acceptance with a rack-scale profile"):
        slurm_topology_validate_blocks("BlockName=a Nodes=gpu001\n", results={"checks": []})
    with pytest.raises(Exception, match="source nvlink writes topology/block"):
        slurm_topology_from_fabric(results(racks(4, 0)), "nvlink", plugin="tree")
