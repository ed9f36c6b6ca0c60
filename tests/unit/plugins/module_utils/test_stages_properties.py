"""The judge family: every per-node stage of the registry, fed garbage for each of its tools.

Property: garbage never passes a stage and never escapes a judge as an exception (judge_stage
turns one into a 'judge' error, which this test also counts as a defect). Stages are taken from
_stages.STAGES: a new stage is tried without a line here.
"""
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES, judge_stage
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

H100 = load_profile("hgx_h100_sxm")
# Words of the real formats, to make garbage that looks like output: a judge must still see
# that it proves nothing.
WORDS = ["GPU 0", "GPU 00000000:18:00.0", "Link 1:", "PASS", "Pass", "0", "1", "400", "{", '{"record": "header"}',
         '{"record": "done"}', "N/A", "|", "  ", "x", ":", "mlx5_0", "State: Active", "Rate: 400", "#", "8", "bytes",
         "busbw", "NV18", "SYS", "Xid", "NVRM:", "=====", "-", "+---", "Diagnostic", "Skip", "\t", "\u00b2", "9" * 40]
LINES = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
OUTPUT = st.lists(LINES, max_size=10).map("\n".join)


@given(stage=st.sampled_from(sorted(STAGES)), data=st.data())
def test_garbage_never_passes_a_stage_and_never_breaks_its_judge(stage, data):
    tools = STAGES[stage][0]
    collected = {"errors": [], "tools": dict(
        (tool, {"output": data.draw(OUTPUT, label=tool), "rc": data.draw(st.sampled_from([0, 0, 1]), label="rc"),
                "seconds": 1.0, "complete": True}) for tool in tools)}
    state = judge_stage({}, stage, collected, H100, {}, node="gpu001", run_id="r1")
    checks = state["last"]["checks"]
    assert state["stages"][stage]["status"] != "pass", [(c["check"], c["status"], c["message"]) for c in checks]
    assert not [c for c in checks if c["check"] == "judge"], [c["message"] for c in checks if c["check"] == "judge"]
    assert all(c["node"] == "gpu001" and c["stage"] == stage for c in checks)
