"""A stage's raw outputs travel beside the node's fact, not in it, and still reach raw/<node>/."""
import json
import types

from ansible_collections.gpucluster.acceptance.plugins.callback import acceptance_report
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state, _stages
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _profiles

from conftest import REPO

TOPO = sorted((REPO / "tests" / "fixtures" / "nvidia_topo").glob("*.txt"))[0].read_text()


def _judged(node):
    collected = {"tools": {"nvidia-smi-topo": {"output": TOPO, "rc": 0, "seconds": 0.2, "complete": True}}, "errors": []}
    return _stages.judge_stage({}, "topology", collected, _profiles.load_profile("hgx_h100_sxm"), node=node, run_id="r1")


def _ok(host, result):
    task = types.SimpleNamespace(action="gpucluster.acceptance.collect_stage", run_once=False, _role=None,
                                 get_vars=lambda: {"collect_stage": "topology"}, get_name=lambda: "topology")
    return types.SimpleNamespace(_host=types.SimpleNamespace(get_name=lambda: host), _task=task, _result=result)


def test_the_fact_keeps_the_index_and_the_callback_writes_the_output(tmp_path):
    state, outputs = _run_state.without_outputs(_judged("gpu001"))
    assert outputs == {"nvidia-smi-topo": TOPO}
    assert state["last"]["raw"]["nvidia-smi-topo"] == {"rc": 0, "seconds": 0.2, "complete": True}
    assert TOPO not in json.dumps(state)  # the fact is small: no output in it
    callback = acceptance_report.CallbackModule()
    callback._run_dir = str(tmp_path)
    callback.v2_runner_on_ok(_ok("gpu001", {"ansible_facts": {"collect_node_state": state}, "raw_outputs": outputs}))
    assert (tmp_path / "raw" / "gpu001" / "nvidia-smi-topo.txt").read_text() == TOPO
    assert callback._raw["gpu001"]["nvidia-smi-topo"]["rc"] == 0
    assert [c["stage"] for c in callback._checks] and all(c["node"] == "gpu001" for c in callback._checks)


def test_srun_s_one_result_carries_each_node_s_outputs(tmp_path):
    states, outputs = {}, {}
    for node in ("gpu001", "gpu002"):
        states[node], outputs[node] = _run_state.without_outputs(_judged(node))
    callback = acceptance_report.CallbackModule()
    callback._run_dir = str(tmp_path)
    callback.v2_runner_on_ok(_ok("localhost", {"ansible_facts": {"collect_node_states": states}, "raw_outputs": outputs,
                                               "judged": ["gpu001", "gpu002"]}))
    for node in ("gpu001", "gpu002"):
        assert (tmp_path / "raw" / node / "nvidia-smi-topo.txt").read_text() == TOPO


def test_a_state_without_outputs_is_left_as_it_is():
    assert _run_state.without_outputs({}) == ({}, {})
    state = {"last": {"stage": "x", "raw": {"tool": "not a record"}}}
    assert _run_state.without_outputs(state) == (state, {})
