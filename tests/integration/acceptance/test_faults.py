"""Each injected fault is named in JUnit and results.json by node and stage, and nothing else fails.

Two 16-node simulated clusters on real Slurm, each with one fault per node, each judged by one real
ansible-playbook run of acceptance.yml: per-fault tests then read that run's results.
"""
import pytest

from fault_matrix import HANG_TIMEOUT, OVERRIDE_NODE, RUN_A, RUN_B, SKIP, expected, faults  # noqa: F401  (re-exported)
from harness import SimRun, spec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def run_a(fault_matrix_local):
    return fault_matrix_local


@pytest.fixture(scope="module")
def run_b(tmp_path_factory):
    data = spec("fb", faults(RUN_B) + [{"kind": "degraded_uplink", "leaf": "leaf02", "factor": 0.5}],
                unreachable=["gpu005"])
    with SimRun(data, tmp_path_factory.mktemp("fb")) as sim:
        yield sim.acceptance("--skip-tags", SKIP,
                             "-e", '{"check_dcgm_timeouts": {"3": %d}, "check_preflight_timeout": %d}'
                             % (HANG_TIMEOUT, HANG_TIMEOUT))


def test_run_a_fails_exactly_the_injected_nodes_and_stages(run_a):
    assert run_a.rc != 0, run_a.output[-3000:]
    assert run_a.bad() == expected(RUN_A)
    assert run_a.junit_bad() == expected(RUN_A)


def test_run_b_fails_exactly_the_injected_nodes_and_stages(run_b):
    assert run_b.rc != 0
    assert run_b.bad() == expected(RUN_B)
    assert run_b.junit_bad() == expected(RUN_B)


@pytest.mark.parametrize("node", sorted(RUN_A))
def test_fault_in_run_a_names_node_stage_and_component(run_a, node):
    check_component(run_a, node, RUN_A[node][1])


@pytest.mark.parametrize("node", sorted(RUN_B))
def test_fault_in_run_b_names_node_stage_and_component(run_b, node):
    check_component(run_b, node, RUN_B[node][1])


def check_component(run, node, stages):
    for stage, component in stages.items():
        found = [c for c in run.bad_checks(node) if c["stage"] == stage]
        assert found, "%s: no failed check in %s" % (node, stage)
        if component:
            assert any(component in (c.get("component") or "") or component in c["message"] for c in found), found


def test_hung_tool_becomes_an_error_within_its_timeout(run_b):
    (check,) = [c for c in run_b.bad_checks("gpu004") if c["stage"] == "dcgm"]
    assert check["status"] == "error" and "timed out" in check["message"]
    raw = run_b.results["raw"]["gpu004"]["dcgmi-diag"]
    assert raw["rc"] in (124, 137) and raw["seconds"] < HANG_TIMEOUT + 10


def test_unreachable_node_is_an_error_not_a_pass(run_b):
    checks = run_b.bad_checks("gpu005")
    assert checks and all(c["status"] == "error" for c in checks)
    assert "unreachable" in checks[0]["message"]
    assert run_b.results["nodes"]["gpu005"]["status"] == "error"


def test_summary_names_bad_nodes_with_stage_and_reason(run_a):
    assert "gpucluster.acceptance verdict: FAIL" in run_a.output
    assert "gpu002 FAIL topology: GPU2" in run_a.output
    assert "gpu001 " not in run_a.output.split("gpucluster.acceptance verdict")[1]


def test_power_throttle_reason_is_named(run_a):
    messages = " ".join(c["message"] for c in run_a.bad_checks("gpu012"))
    assert "Power" in messages


def test_a_crashed_sdc_probe_fails_its_stage_in_its_own_words_and_is_never_a_pass(run_a):
    """gpu014's probe Python dies of an out-of-memory before the probe's first record (HOST_VARS)."""
    import json
    checks = [c for c in run_a.results["checks"] if c["node"] == OVERRIDE_NODE and c["stage"] == "sdc"]
    errors = [c for c in checks if c["status"] == "error"]
    assert errors and all(c["component"] == "probe" for c in errors), checks
    (exited,) = [c for c in errors if c["check"] == "collect"]
    assert exited["message"].startswith("sdc-probe exited with status 1: the probe did not finish"), exited
    assert exited["message"].endswith("MemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"), exited
    assert any("printed no header record" in c["message"] for c in errors), errors
    assert run_a.results["nodes"][OVERRIDE_NODE]["stages"]["sdc"] == "error"
    # Nothing recorded as a pass: last-pass.json (the Xid window, a health check's resume) has no sdc
    # for that node, and has it for a node whose probe ran.
    last = json.loads((run_a.dir.parent / "last-pass.json").read_text())
    assert "sdc" not in last.get(OVERRIDE_NODE, {}) and "sdc" in last["gpu001"], last.get(OVERRIDE_NODE)


def test_junit_is_valid_for_jenkins_and_gitlab_readers(run_a):
    import xmlschema
    from conftest import FIXTURES
    xmlschema.XMLSchema(str(FIXTURES / "junit" / "junit-ci.xsd")).validate(str(run_a.dir / "junit.xml"))
    cases = list(run_a.junit.iter("testcase"))
    assert len(cases) == len(run_a.results["checks"])
    stages = {"preflight", "topology", "gpu_health", "dcgm", "sdc", "infiniband", "nccl_single_node"}
    assert set(c.get("classname") for c in cases) >= stages


def test_raw_outputs_are_kept_for_every_node_and_tool(run_a):
    for node in ("gpu001", "gpu016"):
        raw = run_a.results["raw"][node]
        assert {"nvidia-smi-topo", "nvidia-smi-q", "dcgmi-diag", "ibstat", "all_reduce_perf"} <= set(raw)
        path = raw["nvidia-smi-topo"].get("path", "raw/%s/nvidia-smi-topo.txt" % node)   # the usual one is left out
        assert (run_a.dir / path).read_text().startswith("\t")


def test_replay_of_the_artifact_directory_reproduces_the_verdict(run_a, tmp_path_factory):
    from harness import playbook
    inventory = run_a.dir.parents[1] / "inventory" / "hosts.yml"
    replay = playbook(inventory, run_a.dir.parent, "--skip-tags", SKIP, "-e", "acceptance_replay_dir=%s" % run_a.dir)
    assert replay.dir != run_a.dir  # a second run gets a directory of its own
    assert len([p for p in run_a.dir.parent.iterdir() if p.is_dir()]) == 2

    def key(checks):
        return sorted((c["node"], c["stage"], c["check"], c["status"], c["message"], str(c.get("component")))
                      for c in checks)
    assert replay.rc == run_a.rc
    assert replay.results["verdict"] == run_a.results["verdict"] and run_a.results["verdict"]["status"] == "fail"
    assert key(replay.results["checks"]) == key(run_a.results["checks"])
    assert replay.bad() == expected(RUN_A)
