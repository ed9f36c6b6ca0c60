"""What to do next per kind of failure (module_utils/_next_steps.py): one table, every stage covered."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._next_steps import RULES, next_step, next_steps
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES


def _check(stage, check, status="fail", component=None, node="gpu001"):
    return {"stage": stage, "check": check, "status": status, "component": component, "node": node}


@pytest.mark.parametrize("check, expected", [
    (_check("topology", "topology.nvlink"), "reseat the GPU baseboard"),
    (_check("gpu_health", "gpu.ecc"), "RMA the GPU (uncorrectable ECC"),
    (_check("gpu_health", "gpu.remapped_rows"), "RMA the GPU (row remapping"),
    (_check("gpu_health", "gpu.xid"), "act on the Xid class"),
    (_check("infiniband", "ib.port_state"), "reseat the cable / transceiver"),
    (_check("fabric", "fabric.slow_node"), "re-run the pairs with --tags fabric"),
    (_check("dcgm", "run", "error", "launcher"), "fix the launcher"),
    (_check("dcgm", "run", "error", "transport"), "check ssh to the node"),
    (_check("nccl_single_node", "nccl.run", "error", "scheduler"), "fix Slurm"),
])
def test_each_kind_of_failure_has_its_instruction(check, expected):
    assert next_step(check).startswith(expected)


def test_errors_name_the_stage_to_re_run():
    assert next_step(_check("dcgm", "run", "error", "launcher")).endswith("re-run with --tags dcgm")
    assert next_step(_check("gpu_health", "nvidia-smi", "error", "transport")).endswith("--tags gpu_health")


def test_a_passed_check_needs_nothing_and_an_unknown_one_gets_the_catch_all():
    assert next_step(_check("topology", "topology.nvlink", "pass")) is None
    assert next_step(_check("topology", "topology.nvlink", "warn")) is None
    assert next_step(_check("newstage", "x.y")) == "read the check's message in report.html; re-run with --tags newstage"
    for stage in STAGES:  # every per-node stage has an answer for any failure
        assert next_step(_check(stage, "whatever"))


def test_next_steps_groups_nodes_by_instruction_in_table_order():
    checks = [_check("gpu_health", "gpu.ecc", node="gpu003"), _check("topology", "topology.nvlink", node="gpu002"),
              _check("gpu_health", "gpu.ecc", node="gpu001"), _check("topology", "topology.nvlink", "pass", node="gpu004"),
              _check("dcgm", "run", "error", "transport", node="gpu005")]
    steps = next_steps(checks)
    assert [nodes for _step, nodes in steps] == [["gpu005"], ["gpu002"], ["gpu001", "gpu003"]]
    assert steps[0][0].startswith("check ssh") and steps[1][0].startswith("reseat") and steps[2][0].startswith("RMA")


def test_the_table_is_well_formed():
    for stage, prefix, component, text in RULES:
        assert text and len(text) < 140 and not text.endswith(".")
        assert component in (None, "transport", "scheduler", "launcher")
    assert RULES[-1][:3] == (None, None, None)


def test_the_console_summary_ends_with_the_next_steps():
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report import summary_lines
    checks = [_check("topology", "topology.nvlink", node="gpu002"), _check("topology", "topology.nvlink", node="gpu003"),
              _check("fabric", "fabric.uplink", node=None)]
    document = {"verdict": {"status": "fail", "nodes_failed": 2, "nodes_total": 4, "failed_nodes": [],
                            "cluster_failed": True, "cluster_problems": []},
                "checks": checks, "run": {"state": "complete"}, "nodes": {}}
    lines = summary_lines(document, "artifacts/x")
    start = lines.index("next steps:")
    assert lines[start + 1] == "  gpu[002-003]: reseat the GPU baseboard / NVLink bridges; RMA the baseboard if it stays"
    assert lines[start + 2].startswith("  cluster: re-run the pairs with --tags fabric")
    assert lines[-1].startswith("artifacts: artifacts/x")
