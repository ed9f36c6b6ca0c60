"""A clean simulated cluster passes over several noise seeds; fail-fast stops after the first bad stage."""
import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration


# The last case: gpu002 has an extra 200 Gb/s InfiniBand HCA for storage (mlx5_8, near no GPU), as
# many HGX nodes do; the profile names no compute HCAs (nic_names: null): it is reported, not failed.
STORAGE = [{"kind": "storage_hca", "node": "gpu002", "rate": 200}]


@pytest.mark.parametrize("seed, faults", [(1, []), (2, []), (3, []), (4, []), (5, []), (6, STORAGE)])
def test_clean_cluster_passes(seed, faults, tmp_path):
    with SimRun(spec("clean%d" % seed, count=6, seed=seed, faults=faults), tmp_path) as sim:
        run = sim.acceptance("--skip-tags", "fabric,workload")
    bad = run.bad_checks()
    assert run.rc == 0 and not bad, (bad, run.output[-2000:])
    assert run.results["verdict"]["status"] == "pass"
    assert set(run.results["nodes"]) == set("gpu%03d" % i for i in range(1, 7))
    assert "gpucluster.acceptance verdict: PASS" in run.output
    storage = [c for c in run.results["checks"] if c["check"] == "ib.port_count" and c["status"] == "skip"
               and (c.get("metrics") or {}).get("storage")]
    if faults:
        assert [c["node"] for c in storage] == ["gpu002"], storage
        assert "mlx5_8 port 1 (InfiniBand, 200 Gb/s)" in storage[0]["message"], storage[0]["message"]
        assert "no GPU near them" in storage[0]["message"]
    else:
        assert not storage


def test_fail_fast_stops_after_the_first_failing_stage(tmp_path):
    faults = [{"kind": "nvlink_down", "node": "gpu002", "gpus": [0, 1]}]
    with SimRun(spec("ffast", faults=faults, count=4), tmp_path) as sim:
        run = sim.acceptance("--skip-tags", "fabric,workload", "-e", "acceptance_fail_fast=true")
    assert run.rc != 0
    stages = set(c["stage"] for c in run.results["checks"])
    assert "topology" in stages and "gpu_health" not in stages and "dcgm" not in stages
    assert run.bad() == {("gpu002", "topology")}


def test_bad_profile_name_is_a_clear_failure_before_any_node_is_touched(tmp_path):
    with SimRun(spec("badprof", count=2), tmp_path) as sim:
        run = sim.acceptance("-e", "acceptance_profile=hgx_h900")
    assert run.rc != 0
    assert "hgx_h900" in run.output
    assert "Traceback" not in run.output


def test_a_wrongly_typed_stage_setting_fails_once_naming_it(tmp_path):
    # The stage roles validate their argument specs once per play (not per node): still enforced.
    with SimRun(spec("badarg", count=2), tmp_path) as sim:
        run = sim.acceptance("--tags", "topology", "-e", "check_topology_timeout=soon")
    assert run.rc != 0
    assert "Validation of arguments failed" in run.output, run.output[-3000:]
    assert "argument 'check_topology_timeout' is of type str and we were unable to convert to int" in run.output
    assert "Collect and judge the stage's tool outputs" not in run.output  # stopped before any node was touched
    assert "Traceback" not in run.output


@pytest.mark.parametrize("tags, setting, message", [
    # inf left the collector and its sleep on every node after the playbook ended
    ("infiniband", "check_infiniband_counter_interval=inf",
     "check_infiniband_counter_interval a number of seconds from 0 to 3600 (got inf)"),
    ("workload", "check_workload_duration_s=1e400",
     "check_workload_duration_s from 0 to below the timeout (got 1e400 and 900)"),
])
def test_an_endless_interval_or_duration_is_refused_before_any_node_is_touched(tmp_path, tags, setting, message):
    with SimRun(spec("badnum", count=2), tmp_path) as sim:
        run = sim.acceptance("--tags", tags, "-e", setting)
    assert run.rc != 0
    assert message in " ".join(run.output.split()), run.output[-3000:]
    assert "Collect and judge the stage's tool outputs" not in run.output
    assert "Traceback" not in run.output
