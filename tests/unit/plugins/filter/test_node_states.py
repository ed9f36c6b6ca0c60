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


def test_passed_nodes_and_any_failed_read_the_same_states():
    from ansible_collections.gpucluster.acceptance.plugins.filter.any_failed import _any_failed
    from ansible_collections.gpucluster.acceptance.plugins.filter.passed_nodes import _passed_nodes
    hostvars = {
        "gpu10": {"collect_node_state": {"run_id": "r", "failed_stages": [], "stages": {"dcgm": {}}}},
        "gpu2": {"collect_node_state": {"run_id": "r", "failed_stages": [], "stages": {"dcgm": {}}}},
        "gpu3": {"collect_node_state": {"run_id": "r", "failed_stages": ["dcgm"], "stages": {"dcgm": {}}}},
        "gpu4": {"collect_node_state": {"run_id": "old", "failed_stages": ["dcgm"], "stages": {"dcgm": {}}}},
        "gpu5": {},
    }
    nodes = ["gpu2", "gpu3", "gpu4", "gpu5", "gpu10"]
    # Only nodes that reported and failed nothing; a node of another run or none is not passed.
    assert _passed_nodes(hostvars, nodes, run_id="r") == ["gpu10", "gpu2"]
    assert _any_failed(hostvars, nodes, run_id="r") is True
    assert _any_failed(hostvars, ["gpu2", "gpu4", "gpu5"], run_id="r") is False  # gpu4's failure is another run's
    # No per-node stage reported (a run of the controller stages alone): every node given.
    assert _passed_nodes(hostvars, ["gpu5", "gpu4"], run_id="r") == ["gpu4", "gpu5"]
