"""Slurm's node list in its three forms (real 22.05 captures, a hand-made 23.11 JSON), states, GRES,
topology labels, reservations and the filters of the slurm inventory plugin."""
import json

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _slurm_inventory as slurm
from conftest import FIXTURES

HERE = FIXTURES / "slurm_nodes"


def _by_name(nodes):
    return dict((n["name"], n) for n in nodes)


def test_sinfo_json_22_05_real_capture():
    nodes, problems = slurm.parse_nodes_json((HERE / "sinfo_json_22.05.json").read_text(), "sinfo --json")
    assert problems == []
    by = _by_name(nodes)
    assert sorted(by) == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert by["gpu003"]["state"] == "idle" and by["gpu003"]["state_flags"] == ["drain"]
    assert by["gpu003"]["reason"] == "test drain"
    assert by["gpu001"]["features"] == ["h100", "ib_ndr"] and by["gpu003"]["features"] == ["h100"]
    assert by["gpu004"]["partitions"] == ["batch", "debug"]
    assert by["gpu001"]["state_flags"] == ["reserved"]
    assert by["gpu001"]["gres_gpus"] is None and by["gpu001"]["address"] == "127.0.0.1"
    assert set(by["gpu001"]) == set(slurm.NODE_KEYS)


def test_oneline_22_05_agrees_with_json():
    """The text form of the same cluster gives the same nodes (reservation aside: -o shows it in State)."""
    text_nodes, problems = slurm.parse_nodes_oneline((HERE / "scontrol_oneline_22.05.txt").read_text())
    assert problems == []
    json_nodes = slurm.parse_nodes_json((HERE / "sinfo_json_22.05.json").read_text())[0]
    for name, node in _by_name(text_nodes).items():
        other = _by_name(json_nodes)[name]
        for key in ("partitions", "features", "active_features", "address", "hostname", "state"):
            assert node[key] == other[key], (name, key)
    gpu003 = _by_name(text_nodes)["gpu003"]
    assert gpu003["state_flags"] == ["drain"] and gpu003["reason"] == "test drain"


def test_scontrol_json_v0040():
    nodes, problems = slurm.parse_nodes_json((HERE / "scontrol_json_v0.0.40_handmade.json").read_text())
    assert problems == []
    by = _by_name(nodes)
    assert by["gpu017"]["gres_gpus"] == 8 and by["gpu017"]["partitions"] == ["gpu", "burnin"]
    assert (by["gpu018"]["state"], by["gpu018"]["state_flags"]) == ("mixed", ["drain"])
    assert (by["login01"]["state"], by["login01"]["state_flags"]) == ("down", ["not_responding"])
    assert by["login01"]["gres_gpus"] is None


@pytest.mark.parametrize("gres, gpus", [
    ("gpu:8", 8), ("gpu:h100:8(S:0-1)", 8), ("gpu:a100:4,gpu:h100:4", 8), ("(null)", None), ("", None),
    ("nic:2", None), (["gpu:h100:8(S:0-1)"], 8), (None, None), ("gpu:h100:4(S:0),shard:8", 4)])
def test_gres_gpus(gres, gpus):
    assert slurm.gres_gpus(gres) == gpus


@pytest.mark.parametrize("state, flags, expected", [
    ("IDLE+DRAIN", (), ("idle", ["drain"])), ("idle*", (), ("idle", ["not_responding"])),
    ("down~", (), ("down", ["powered_down"])), ("mix", (), ("mixed", [])),
    (["ALLOCATED", "COMPLETING"], (), ("allocated", ["completing"])),
    ("idle", ["DRAIN", "RESERVED"], ("idle", ["drain", "reserved"])), ("", (), ("unknown", [])),
    ("DRAIN", (), ("unknown", ["drain"]))])
def test_split_state(state, flags, expected):
    assert slurm.split_state(state, flags) == expected


@pytest.mark.parametrize("text, problem", [
    ("", "did not print JSON"), ("[]", "not an object"), ('{"meta": {}}', "no 'nodes' list"),
    ('{"nodes": [{"state": "idle"}]}', "has no name"),
    ('{"errors": [{"description": "Unable to contact slurm controller"}], "nodes": []}',
     "Unable to contact slurm controller")])
def test_bad_json_named(text, problem):
    problems = slurm.parse_nodes_json(text)[1]
    assert any(problem in p for p in problems), problems


def test_oneline_garbage_and_empty():
    assert "printed no node" in slurm.parse_nodes_oneline("")[1][0]
    nodes, problems = slurm.parse_nodes_oneline("slurm_load_node error: Unable to contact slurm controller\n")
    assert nodes == [] and "not a NodeName= record" in problems[0]


def test_oneline_fields_values_with_spaces_and_reason_last():
    fields = slurm.oneline_fields("NodeName=n1 OS=Linux 6.1 #1 SMP State=IDLE+DRAIN Reason=bad = xid 79 [root@2026-01-01]")
    assert fields["OS"] == "Linux 6.1 #1 SMP" and fields["State"] == "IDLE+DRAIN"
    assert fields["Reason"] == "bad = xid 79 [root@2026-01-01]"


def test_topology_leaves_blocks_and_none():
    tree = ("SwitchName=leaf01 Level=0 LinkSpeed=1 Nodes=gpu[001-002]\n"
            "SwitchName=leaf02 Level=0 LinkSpeed=1 Nodes=gpu[003-004]\n"
            "SwitchName=spine Level=1 LinkSpeed=1 Nodes=gpu[001-004] Switches=leaf01,leaf02\n")
    leaves, blocks, problems = slurm.leaves_and_blocks(tree)
    assert leaves == {"gpu001": "leaf01", "gpu002": "leaf01", "gpu003": "leaf02", "gpu004": "leaf02"}
    assert blocks == {} and problems == []
    block = "BlockName=b1 BlockIndex=0 Nodes=gpu[001-018] BlockSize=18\nAggregatedBlock=b[1-2] BlockIndex=2 Nodes=gpu[001-036] BlockSize=36\n"
    leaves, blocks, problems = slurm.leaves_and_blocks(block)
    assert leaves == {} and blocks["gpu018"] == "b1" and "gpu019" not in blocks and problems == []
    assert slurm.leaves_and_blocks("") == ({}, {}, [])
    assert slurm.leaves_and_blocks("SwitchName=leaf01 Nodes=gpu[003-001]\n")[2]


def test_reservation_nodes():
    nodes, problem = slurm.reservation_nodes((HERE / "scontrol_reservation_22.05.txt").read_text(), "accept")
    assert nodes == {"gpu001", "gpu002"} and problem is None
    assert "no reservation named other" in slurm.reservation_nodes("Reservation other not found", "other")[1]


def test_keep_filters():
    nodes = slurm.parse_nodes_json((HERE / "sinfo_json_22.05.json").read_text())[0]

    def kept(**filters):
        return sorted(n["name"] for n in nodes if slurm.keep(n, **filters))
    assert kept(partitions=["debug"]) == ["gpu004"]
    assert kept(states=["drain"]) == ["gpu003"]
    assert kept(states=["idle"]) == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert kept(features=["h100", "ib_ndr"]) == ["gpu001", "gpu002"]
    assert kept(reservation={"gpu002", "gpu004"}, partitions=["batch"]) == ["gpu002", "gpu004"]
    assert kept(features=["b200"]) == []


_FIELD = st.one_of(st.none(), st.text(max_size=12), st.integers(), st.lists(st.text(max_size=6), max_size=3),
                   st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


@given(st.lists(st.dictionaries(st.sampled_from(["name", "state", "state_flags", "features", "partitions", "gres",
                                                 "reason", "address"]), _FIELD, max_size=8), max_size=4))
def test_any_json_record_gives_nodes_or_problems_never_raises(records):
    nodes, problems = slurm.parse_nodes_json(json.dumps({"nodes": records}))
    assert len(nodes) + len(problems) == len(records)
    for node in nodes:
        assert node["state"] in slurm.BASE_STATES and isinstance(node["state_flags"], list)


@given(st.text(max_size=300))
def test_any_text_never_raises(text):
    nodes, problems = slurm.parse_nodes_oneline(text)
    assert nodes or problems
    slurm.leaves_and_blocks(text)
    slurm.reservation_nodes(text, "r")


def test_unreachable_controller_json_is_a_problem_never_an_empty_list():
    """22.05's sinfo --json exits 0 with no node when slurmctld is unreachable (real capture)."""
    nodes, problems = slurm.parse_nodes_json((HERE / "sinfo_json_22.05_unreachable.json").read_text(), "sinfo --json")
    assert nodes == [] and problems == ["sinfo --json reported: Unspecified error"]
