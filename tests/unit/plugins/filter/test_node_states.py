"""node_states: each target's state from hostvars; None for nodes that never reported in this run."""
from ansible_collections.gpucluster.acceptance.plugins.filter.node_states import _node_states


def test_nodes_without_a_state_of_this_run_are_none():
    hostvars = {
        "a": {"collect_node_state": {"run_id": "r2", "failed_stages": [], "stages": {"topology": {}}}},
        "b": {"collect_node_state": {"run_id": "r1", "failed_stages": [], "stages": {"topology": {}}}},  # cached
        "c": {},
        "d": {"collect_node_state": {}},
    }
    states = _node_states(hostvars, ["a", "b", "c", "d", "e"], run_id="r2")
    assert states["a"]["run_id"] == "r2"
    assert states["b"] is None and states["c"] is None and states["d"] is None and states["e"] is None
    assert _node_states(hostvars, ["b"])["b"]["run_id"] == "r1"  # without a run id any state counts


def test_state_only_under_ansible_facts_is_found_and_the_top_level_wins():
    facts_only = {"ansible_facts": {"collect_node_state": {"run_id": "r", "failed_stages": ["dcgm"]}}}
    both = {"collect_node_state": {"run_id": "r", "failed_stages": ["workload"]},
            "ansible_facts": {"collect_node_state": {"run_id": "r", "failed_stages": []}}}
    states = _node_states({"a": facts_only, "b": both}, ["a", "b"], run_id="r")
    assert states["a"]["failed_stages"] == ["dcgm"]
    assert states["b"]["failed_stages"] == ["workload"]
