"""The run's bookkeeping: the node-state fold, stale runs, fail-fast and the one verdict."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state


def check(stage, node, status, name="x", message="m"):
    return {"stage": stage, "node": node, "check": name, "status": status, "message": message}


def test_fold_drops_a_state_of_another_run_and_records_failed_stages():
    old = _run_state.fold_stage({}, "topology", [check("topology", "n", "fail")], node="n", run_id="old")
    assert old["failed_stages"] == ["topology"]
    new = _run_state.fold_stage(old, "dcgm", [check("dcgm", "n", "pass")], {"level": 3}, node="n", run_id="new")
    assert new["run_id"] == "new"
    assert new["failed_stages"] == []           # the old run's failure does not carry over
    assert set(new["stages"]) == {"dcgm"}
    assert new["stages"]["dcgm"] == {"status": "pass", "metrics": {"level": 3}}
    again = _run_state.fold_stage(new, "gpu_health", [check("gpu_health", "n", "error")], node="n", run_id="new")
    assert again["failed_stages"] == ["gpu_health"] and set(again["stages"]) == {"dcgm", "gpu_health"}


def test_a_stage_with_only_skips_is_skip_and_not_failed():
    state = _run_state.fold_stage({}, "dcgm", [check("dcgm", "n", "skip")], node="n")
    assert state["stages"]["dcgm"]["status"] == "skip" and state["failed_stages"] == []


def test_stage_failed_nodes_reads_states_of_this_run_only():
    hostvars = {
        "a": {"collect_node_state": _run_state.fold_stage({}, "topology", [check("topology", "a", "fail")], run_id="r")},
        "b": {"ansible_facts": {"collect_node_state": _run_state.fold_stage(
            {}, "topology", [check("topology", "b", "error")], run_id="r")}},
        "c": {"collect_node_state": _run_state.fold_stage({}, "topology", [check("topology", "c", "fail")], run_id="old")},
        "d": {},
    }
    states = _run_state.node_states(hostvars, ["a", "b", "c", "d", "e"], run_id="r")
    assert states["c"] is None and states["d"] is None and states["e"] is None
    assert _run_state.stage_failed_nodes(states, "topology") == ["a", "b"]
    assert _run_state.passed_nodes(states, ["a", "b", "c"]) == []
    assert _run_state.passed_nodes({"x": None}, ["y", "x"]) == ["x", "y"]  # nobody reported: every target


def test_a_node_failing_twice_counts_once_and_the_cluster_is_no_node():
    checks = [check("topology", "gpu003", "fail"), check("nccl_single_node", "gpu003", "fail"),
              check("preflight", "gpu016", "fail"), check("fabric", "gpu012", "fail"),
              check("fabric", None, "fail", "full_allocation")]
    checks += [check("topology", "gpu%03d" % i, "pass") for i in range(1, 17)]
    verdict = _run_state.run_verdict(checks, ["gpu%03d" % i for i in range(1, 17)])
    assert verdict["status"] == "fail"
    assert verdict["nodes_total"] == 16
    assert verdict["failed_nodes"] == ["gpu003", "gpu012", "gpu016"]
    assert verdict["nodes_failed"] == 3
    assert verdict["cluster_failed"] is True
    assert verdict["message"] == ("3 of 16 node(s) failed acceptance: gpu003, gpu012, gpu016; "
                                  "cluster-level problems in fabric")
    assert "cluster" not in verdict["nodes"]


def test_a_node_that_never_reported_fails_when_others_did():
    verdict = _run_state.run_verdict([check("topology", "a", "pass")], ["a", "b"])
    assert verdict["nodes"]["b"]["status"] == "untested"
    assert verdict["failed_nodes"] == ["b"] and verdict["status"] == "fail"


def test_nothing_checked_is_never_a_pass_and_all_pass_says_so():
    assert _run_state.run_verdict([], ["a"])["status"] == "fail"
    ok = _run_state.run_verdict([check("topology", "a", "pass"), check("dcgm", "a", "skip")], ["a"])
    assert ok["status"] == "pass" and ok["message"] == "all 1 node(s) passed"


def test_an_unknown_status_is_an_error():
    verdict = _run_state.run_verdict([check("topology", "a", "warn")], ["a"])
    assert verdict["nodes"]["a"]["status"] == "error" and verdict["failed_nodes"] == ["a"]


def test_a_stage_run_once_for_the_play_gives_each_node_its_own_state():
    fold_stage, node_state_of, node_states = _run_state.fold_stage, _run_state.node_state_of, _run_state.node_states
    first = fold_stage({}, "preflight", [{"status": "pass"}], node="gpu002", run_id="r")
    # srun stage: every host holds every node's state; gpu002's is its own, a fold further.
    srun = {"gpu001": fold_stage({}, "topology", [{"status": "fail"}], node="gpu001", run_id="r"),
            "gpu002": fold_stage(first, "topology", [{"status": "pass"}], node="gpu002", run_id="r")}
    host = {"inventory_hostname": "gpu002", "collect_node_state": first, "collect_node_states": srun}
    assert node_state_of(host)["last"]["stage"] == "topology"
    assert node_state_of(host)["folds"] == 2
    # then an ssh stage folds on top of it: the single state is the newer again
    later = fold_stage(node_state_of(host), "dcgm", [{"status": "pass"}], node="gpu002", run_id="r")
    host["collect_node_state"] = later
    assert node_state_of(host)["last"]["stage"] == "dcgm"
    assert sorted(node_state_of(host)["stages"]) == ["dcgm", "preflight", "topology"]
    # a host the plural does not name keeps its single state; node_states reads both
    other = {"inventory_hostname": "gpu003", "collect_node_states": srun}
    assert node_state_of(other) is None
    states = node_states({"gpu001": {"inventory_hostname": "gpu001", "collect_node_states": srun},
                          "gpu002": host, "gpu003": other}, ["gpu001", "gpu002", "gpu003"], run_id="r")
    assert states["gpu001"]["failed_stages"] == ["topology"] and states["gpu003"] is None
    assert states["gpu002"]["last"]["stage"] == "dcgm"
    # on the controller (where the srun transport's task leaves them), read through hostvars
    hostvars = {"localhost": {"collect_node_states": srun}, "gpu001": {"inventory_hostname": "gpu001"}}
    assert node_states(hostvars, ["gpu001"], run_id="r")["gpu001"]["failed_stages"] == ["topology"]
    assert node_state_of({"inventory_hostname": "gpu001", "hostvars": hostvars})["last"]["stage"] == "topology"
    # a state of another run (a persistent fact cache) never wins over this run's
    stale = dict(srun["gpu002"], run_id="old", folds=9)
    assert node_state_of(dict(host, collect_node_states={"gpu002": stale}), run_id="r")["last"]["stage"] == "dcgm"


def test_nodes_not_judged_are_counted_apart_from_nodes_with_a_measured_fault():
    """slurmctld went away during a stage: no node was measured, none is said to have a fault."""
    nodes = ["gpu%03d" % i for i in range(1, 5)]
    checks = [dict(check("gpu_health", n, "error", "collect", "srun: error: Unable to contact slurm controller"),
                   component="scheduler") for n in nodes]
    verdict = _run_state.run_verdict(checks, nodes)
    assert verdict["message"] == ("4 of 4 node(s) failed acceptance: gpu001, gpu002, gpu003, gpu004 "
                                  "(0 with a measured fault; 4 not judged \u2014 scheduler error: 4)")
    checks[0] = check("gpu_health", "gpu001", "fail", "gpu.ecc")
    checks.append(dict(check("sdc", "gpu002", "error", "sdc.parse"), component="probe"))
    measured, kinds = _run_state.failure_split(checks, nodes)
    assert measured == ["gpu001"]
    assert kinds == {"scheduler": ["gpu002", "gpu003", "gpu004"], "probe": ["gpu002"]}
    assert _run_state.split_text(checks, nodes) == (
        " (1 with a measured fault; 3 not judged \u2014 scheduler error: 3, probe error: 1)")


def test_every_bad_node_judged_adds_nothing_and_a_silent_node_has_no_result():
    checks = [check("topology", "a", "fail"), check("topology", "b", "pass")]
    assert _run_state.split_text(checks, ["a"]) == ""
    verdict = _run_state.run_verdict(checks, ["a", "b", "c"])
    assert verdict["message"] == ("2 of 3 node(s) failed acceptance: a, c "
                                  "(1 with a measured fault; 1 not judged \u2014 no result: 1)")
