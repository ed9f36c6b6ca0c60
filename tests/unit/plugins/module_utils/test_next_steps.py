"""What to do next per kind of failure (module_utils/_next_steps.py): one table, every stage covered."""
import pytest

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._next_steps import (
    ERROR_RULES, RULES, error_kind, next_step, next_steps)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES

HARDWARE_ADVICE = ("RMA", "reseat", "replace", "cable", "cooling", "baseboard")


def _check(stage, check, status="fail", component=None, node="gpu001", **extra):
    return dict({"stage": stage, "check": check, "status": status, "component": component, "node": node}, **extra)


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


def test_the_tables_are_well_formed():
    for text in [rule[-1] for rule in RULES] + [text for _kind, text in ERROR_RULES]:
        assert text and len(text) < 140 and not text.endswith(".")
    assert RULES[-1][:2] == (None, None)
    for _kind, text in ERROR_RULES:  # nothing was measured: never hardware advice
        assert not any(word in text for word in HARDWARE_ADVICE), text
        assert text.endswith("then re-run with --tags {stage}")


@pytest.mark.parametrize("check, kind, expected", [
    # dcgmi could not reach its host engine: DCGM's problem, not the GPU's
    (_check("dcgm", "collect", "error", "dcgmi-diag", tool="dcgmi-diag",
            message="dcgmi diag did not run: unable to connect to host engine"), "tool",
     "fix or install dcgmi-diag (it did not run normally"),
    # a probe that crashed
    (_check("sdc", "sdc.parse", "error", "probe", tool="sdc-probe", message="sdc-probe printed no header record"),
     "probe", "the probe did not finish"),
    (_check("sdc", "sdc.setup", "error", "pytorch", message="sdc-probe ran on the CPU"), "probe", "the probe did not finish"),
    # the fabric after slurmctld went away: no node passed, nothing to test
    (_check("fabric", "full_allocation", "error", None, node=None, metrics={"nodes": 0},
            message="fewer than 2 nodes passed the per-node stages: no multi-node test to run"),
     "too_few_nodes", "fix what the per-node stages found first"),
    (_check("rdma", "rdma.run", "error", None, node=None, metrics={"nodes": 1}), "too_few_nodes", "fix what the per-node"),
    # a tenant without the kernel log
    (_check("gpu_health", "collect", "error", "dmesg", tool="dmesg",
            message="dmesg: read kernel buffer failed: Operation not permitted"), "permission",
     "give dmesg the rights it needs"),
    (_check("gpu_health", "gpu.throttle", "error", "GPU3 (00000000:3A:00.0)", tool="nvidia-smi-q",
            message="GPU3 clock event reasons cannot be read: N/A"), "tool", "fix or install nvidia-smi-q"),
])
def test_an_error_gets_advice_about_what_did_not_work(check, kind, expected):
    assert error_kind(check) == kind
    text = next_step(check)
    assert text.startswith(expected) and text.endswith("re-run with --tags %s" % check["stage"]), text
    assert not any(word in text for word in HARDWARE_ADVICE), text


_STATUS_COMPONENTS = st.one_of(st.none(), st.sampled_from(["transport", "scheduler", "launcher", "probe", "pytorch",
                                                           "nodes", "dcgmi-diag", "GPU1", "mlx5_0"]), st.text(max_size=12))


@given(stage=st.sampled_from(sorted(STAGES) + ["fabric", "rdma", "workload", "peers", "uniformity", "x"]),
       name=st.one_of(st.sampled_from([r[1] for r in RULES if r[1]] + ["collect", "run", "judge"]), st.text(max_size=12)),
       component=_STATUS_COMPONENTS, message=st.text(max_size=40), node=st.one_of(st.none(), st.just("gpu001")))
def test_no_error_is_ever_told_to_rma_or_reseat(stage, name, component, message, node):
    """Property: an error (nothing measured) never gets hardware advice, whatever its stage, name,
    component or message; it always gets an instruction that ends in a re-run of its stage."""
    check = _check(stage, name, "error", component, node=node, message=message)
    text = next_step(check)
    assert text and not any(word in text for word in HARDWARE_ADVICE), (check, text)
    assert text.endswith("re-run with --tags %s" % stage)


def test_errors_come_before_failures_in_the_summary():
    steps = next_steps([_check("gpu_health", "gpu.ecc", node="gpu002"),
                        _check("sdc", "sdc.parse", "error", "probe", node="gpu003"),
                        _check("dcgm", "collect", "error", "scheduler", node="gpu004")])
    assert [nodes for _text, nodes in steps] == [["gpu004"], ["gpu003"], ["gpu002"]]


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
