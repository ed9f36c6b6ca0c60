"""The fabric stage on a 16-node simulated cluster with real Slurm: srun across the allocation,
then rounds of concurrent groups that pin each fault to its node or leaf uplink."""
import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration


def fabric_run(tmp_path, name, faults, *extra, **spec_keys):
    with SimRun(spec(name, faults=faults, **spec_keys), tmp_path) as sim:
        return sim.acceptance("--tags", "fabric", *extra)


def fabric_checks(run, status=("fail", "error")):
    return [c for c in run.results["checks"] if c["stage"] == "fabric" and c["status"] in status]


def test_clean_cluster_passes_the_fabric_stage(tmp_path):
    run = fabric_run(tmp_path, "fclean", [])
    assert run.rc == 0, run.output[-3000:]
    assert not fabric_checks(run)
    (launcher,) = [c for c in run.results["checks"] if c["check"] == "launcher"]
    assert launcher["status"] == "pass" and launcher["node"] is None
    assert "srun offers" in launcher["message"] and "on gpu001,gpu002 reported 2 ranks in one run" in launcher["message"]
    assert {"preflight-mpi-list", "preflight-2-ranks"} <= set(run.results["raw"]["_fabric"])
    page = (run.dir / "report.html").read_text()
    assert 'id="fabric-preflight"' in page and "reported 2 ranks in one run" in page.split('id="fabric-preflight"')[1][:600]
    per_node = [c for c in run.results["checks"] if c["check"] == "pair_bandwidth"]
    assert len(per_node) == 16 and all(c["status"] == "pass" for c in per_node)
    matrix = run.results["fabric"]["matrix"]
    assert matrix and all(value > 300 for row in matrix.values() for value in row.values())


def test_slow_node_is_pinned_with_evidence(tmp_path):
    run = fabric_run(tmp_path, "fslow", [{"kind": "slow_node", "node": "gpu006", "factor": 0.5}])
    assert run.rc != 0
    bad = fabric_checks(run)
    assert set(c["node"] for c in bad if c["node"]) == {"gpu006"}
    (node_check,) = [c for c in bad if c["node"] == "gpu006"]
    assert node_check["metrics"]["verdict"] == "pinned"
    assert "each partner passed twice with other nodes" in node_check["message"]
    assert ("gpu006", "fabric") in run.junit_bad()
    assert run.results["fabric"]["pinned"]["nodes"] == ["gpu006"]
    assert len(run.results["fabric"]["rounds"]) <= 3


def test_degraded_uplink_is_pinned_not_its_nodes(tmp_path):
    # Four leaves: with two, every cross-leaf pair crosses both uplinks and cannot tell them apart.
    # The inventory's leaf labels (leaves read from ibnetdiscover: test_fabric_topology_discovery.py).
    run = fabric_run(tmp_path, "fuplink", [{"kind": "degraded_uplink", "leaf": "leaf02", "factor": 0.5}],
                     "-e", "check_fabric_topology_source=labels",
                     fabric={"leaves": 4, "spines": 2, "rails": 8, "oversubscription": 1.0})
    assert run.rc != 0
    bad = fabric_checks(run)
    assert [c["component"] for c in bad if c["check"] == "leaf_uplink"] == ["leaf02 uplink"]
    assert not [c for c in bad if c["check"] == "pair_bandwidth"]
    assert run.results["fabric"]["pinned"]["uplinks"] == ["leaf02"]


def test_whole_slow_leaf_is_one_leaf_fault_not_four_suspects(tmp_path):
    slow = [{"kind": "slow_node", "node": "gpu%03d" % i, "factor": 0.5} for i in range(5, 9)]
    run = fabric_run(tmp_path, "fleaf", slow, "-e", "check_fabric_topology_source=labels",
                     fabric={"leaves": 4, "spines": 2, "rails": 8, "oversubscription": 1.0})
    assert run.rc != 0
    fabric = run.results["fabric"]
    assert fabric["leaf_faults"] == ["leaf02"]
    assert fabric["pinned"] == {"nodes": [], "uplinks": []} and fabric["suspects"] == {"nodes": [], "uplinks": []}
    bad = fabric_checks(run)
    nodes = sorted(c["node"] for c in bad if c["check"] == "pair_bandwidth")
    assert nodes == ["gpu005", "gpu006", "gpu007", "gpu008"]
    assert all(c["metrics"]["verdict"] == "leaf" for c in bad if c["check"] == "pair_bandwidth")
    (switch,) = [c for c in bad if c["check"] == "leaf_uplink"]
    assert switch["component"] == "leaf02 leaf switch or all its nodes"
    assert "leaf-level fault of leaf02" in switch["message"] and "partners of other leaves" in switch["message"]
    assert len(fabric["rounds"]) <= 3
    page = (run.dir / "report.html").read_text()
    assert "LEAF FAULT" in page or "leaf-level fault of leaf02" in page


def test_hanging_all_reduce_is_a_fast_failure_pinned_to_its_node(tmp_path):
    run = fabric_run(tmp_path, "fhang", [{"kind": "hang", "node": "gpu004", "tool": "all_reduce_perf"}],
                     "-e", "check_fabric_timeout=8")
    assert run.rc != 0
    assert set(c["node"] for c in fabric_checks(run) if c["node"]) == {"gpu004"}
    raws = run.results["raw"]["_fabric"]
    hung = [r for name, r in raws.items() if "gpu004" in name or name == "full-allocation"]
    assert hung and all(r["seconds"] < 8 + 15 for r in hung)
    assert any(r["complete"] is False for r in hung)


def test_two_leaf_uplink_fault_names_both_candidates(tmp_path):
    run = fabric_run(tmp_path, "fuplink2", [{"kind": "degraded_uplink", "leaf": "leaf02", "factor": 0.5}],
                     "-e", "check_fabric_max_rounds=2", "-e", "check_fabric_topology_source=labels")
    uplinks = [c for c in fabric_checks(run) if c["check"] == "leaf_uplink"]
    assert sorted(c["component"] for c in uplinks) == ["leaf01 uplink", "leaf02 uplink"]
    assert "cannot tell which one" in uplinks[0]["detail"]
    assert not [c for c in fabric_checks(run) if c["check"] == "pair_bandwidth"]
