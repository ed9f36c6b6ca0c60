"""NVLink error counters around the single-node all-reduce on the simulated cluster (real Slurm,
real ansible-playbook): a link that retrains only under traffic is found in the stage whose traffic
raised it, with the link named, while the all-reduce's bandwidth passes."""
import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration


def test_a_link_erring_under_the_all_reduce_fails_that_gpu_only(tmp_path):
    faults = [{"kind": "nvlink_errors", "node": "gpu003", "gpu": 5, "link": 7, "counter": "recovery", "per_run": 1}]
    with SimRun(spec("tnvl", count=4, faults=faults), tmp_path) as sim:
        run = sim.acceptance("--tags", "nccl_single_node")
    assert run.rc != 0
    nvlink = [c for c in run.results["checks"] if c["check"] == "nvlink.errors"]
    assert len(nvlink) == 4 * 8, len(nvlink)
    (bad,) = [c for c in nvlink if c["status"] != "pass"]
    found = (bad["node"], bad["stage"], bad["status"], bad["component"])
    assert found == ("gpu003", "nccl_single_node", "fail", "GPU5 NVLink")
    assert bad["message"] == ("GPU5 link 7 recovery errors rose by 1 during all_reduce_perf (0 -> 1, limit 0): "
                              "the link retrained under load")
    assert run.results["verdict"]["failed_nodes"] == ["gpu003"]
    # Both snapshots are kept next to the all-reduce's output.
    raw = run.dir / "raw" / "gpu003"
    assert "Link 7: Recovery Errors: 0" in (raw / "nvlink-errors-before.txt").read_text()
    assert "Link 7: Recovery Errors: 1" in (raw / "nvlink-errors-after.txt").read_text()
    # The all-reduce itself passed: only the counters show the link.
    (busbw,) = [c for c in run.results["checks"] if c["node"] == "gpu003" and c["check"] == "nccl.busbw"]
    assert busbw["status"] == "pass"
