"""IB port counters read around the fabric stage on the simulated cluster (real Slurm): a link that
flaps only under the all-reduce's traffic is found by the fabric stage, while the idle infiniband
window and the RDMA pair tests (other traffic) see nothing."""
import json

import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration


def test_a_link_flapping_under_the_all_reduce_is_found_by_the_fabric_stage(tmp_path):
    faults = [{"kind": "link_flap", "node": "gpu003", "nic": "mlx5_2", "during": "nccl"}]
    with SimRun(spec("tfcnt", count=4, faults=faults), tmp_path) as sim:
        run = sim.acceptance("--tags", "infiniband,rdma,fabric")
    assert run.rc != 0
    counters = [c for c in run.results["checks"] if c["check"] == "ib.counters"]
    bad = [(c["stage"], c["node"], c["status"], c["component"]) for c in counters if c["status"] != "pass"]
    assert bad == [("fabric", "gpu003", "fail", "mlx5_2 port 1"), ("fabric", "gpu003", "fail", "mlx5_2 port 1")], bad
    messages = sorted(c["message"] for c in counters if c["status"] == "fail")
    assert messages[0].startswith("mlx5_2 port 1 link_downed rose by ") and "during the fabric stage (limit 0)" in messages[0]
    assert messages[1].startswith("mlx5_2 port 1 link_error_recovery rose by ")
    # The idle window and the perftest pairs passed on every node: only this traffic moved them.
    assert {c["stage"] for c in counters if c["status"] == "pass"} >= {"infiniband", "rdma", "fabric"}
    assert run.results["verdict"]["failed_nodes"] == ["gpu003"]
    # The all-reduce's bandwidth itself is fine: nobody is pinned for speed.
    assert run.results["fabric"]["pinned"] == {"nodes": [], "uplinks": []}
    before = (run.dir / "raw" / "_fabric" / "counters-before.txt").read_text()
    assert "### node gpu003" in before and "mlx5_2/ports/1/counters/link_downed:0" in before


def test_a_stage_the_scheduler_broke_blames_no_node_for_its_counters(tmp_path):
    with SimRun(spec("tfcnt2", count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "fabric", "-e", json.dumps({"check_fabric_launcher_args": ["--partition=nosuch"]}))
    assert run.results["fabric"]["error"]["component"] == "scheduler"
    assert not [c for c in run.results["checks"] if c["check"] == "ib.counters"]
    assert run.results["verdict"]["failed_nodes"] == []
    # The step was tried and kept with the scheduler's words.
    assert "Invalid partition name" in (run.dir / "raw" / "_fabric" / "counters-before.txt").read_text()
