"""The drain policy of node_health: reasons, the blast-radius cap, resume candidates."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._drain_policy import (
    cap_limit, drain_reason, parse_sinfo_reasons, plan_drains)


def states(n, bad=(), stage="gpu_health", missing=()):
    out = {}
    for i in range(1, n + 1):
        node = "gpu%03d" % i
        out[node] = None if node in missing else {"failed_stages": [stage] if node in bad else [], "stages": {}}
    return out


def test_one_failing_node_is_drained_with_stage_and_first_message():
    findings = {"gpu003": {"gpu_health": {"check": "xid", "message": "GPU1: Xid 79  (fallen off the bus)\nmore"}}}
    plan = plan_drains(states(16, bad=["gpu003"]), findings)
    assert plan["drain"] == {"gpu003": "gpu_health: GPU1: Xid 79 (fallen off the bus) more"}
    assert not plan["refused"]
    assert "gpu003" not in plan["resume"] and len(plan["resume"]) == 15
    assert plan["evidence"]["gpu003"][0]["check"] == "xid"


def test_nine_of_sixteen_are_refused_and_nothing_drained():
    bad = ["gpu%03d" % i for i in range(1, 10)]
    plan = plan_drains(states(16, bad=bad), {})
    assert plan["refused"] and plan["drain"] == {}
    assert plan["message"].startswith("refused: 9 of 16 nodes failed gpu_health — check the check")
    assert len(plan["failing"]) == 9


def test_cap_is_fraction_and_count_and_at_least_one():
    assert cap_limit(16, 0.10, 2) == 1
    assert cap_limit(40, 0.10, 2) == 2
    assert cap_limit(1, 0.10, 2) == 1
    assert cap_limit(0, 0.10, 2) == 0
    assert cap_limit(10, 0.5, 0) == 0
    assert plan_drains(states(4, bad=["gpu001", "gpu002"]), max_fraction=0.5, max_nodes=2)["drain"]
    assert plan_drains(states(4, bad=["gpu001", "gpu002"]), max_fraction=0.5, max_nodes=1)["refused"]


def test_drains_elsewhere_by_us_count_against_max_nodes_but_others_do_not():
    reasons = {"gpu009": "gpucluster: gpu_health: Xid 79", "gpu010": "gpucluster: dcgm: failed",
               "gpu011": "operator: bad fan"}
    plan = plan_drains(states(1, bad=["gpu001"]), {}, 0.1, 2, reasons)
    assert plan["refused"] and plan["drained_elsewhere"] == ["gpu009", "gpu010"]
    plan = plan_drains(states(1, bad=["gpu001"]), {}, 0.1, 3, reasons)
    assert plan["drain"] == {"gpu001": "gpu_health: failed"}


def test_unreported_nodes_are_neither_drained_nor_resumed():
    plan = plan_drains(states(4, missing=["gpu002"]))
    assert plan["unreported"] == ["gpu002"] and "gpu002" not in plan["resume"] and plan["drain"] == {}


def test_reason_is_trimmed_to_one_short_line():
    reason = drain_reason("dcgm", "x" * 500)
    assert len(reason) <= 120 and reason.endswith("...") and reason.startswith("dcgm: ")


def test_bad_settings_raise():
    with pytest.raises(ValueError):
        plan_drains(states(2), max_fraction=0)
    with pytest.raises(ValueError):
        plan_drains([], max_fraction=0.1)


def test_parse_sinfo_reasons():
    assert parse_sinfo_reasons("gpu001|gpucluster: x\nbad line\ngpu002|op|with bar\n") == {
        "gpu001": "gpucluster: x", "gpu002": "op|with bar"}


def timeout_finding(retry=None, tool="ibstat"):
    found = {"check": "collect", "message": "%s: timed out after 3 s and was killed" % tool, "component": tool,
             "timeout": True}
    if retry:
        found["retry"] = retry
    return found


def test_a_timeout_that_passes_its_retry_is_not_a_failure_and_the_node_is_resumed():
    plan = plan_drains(states(4, bad=["gpu002"], stage="infiniband"),
                       {"gpu002": {"infiniband": timeout_finding("passed")}})
    assert plan["drain"] == {} and plan["failing"] == {} and plan["errored"] == {}
    assert "gpu002" in plan["resume"] and not plan["refused"]


def test_a_timeout_not_retried_is_an_error_of_the_tool_neither_drained_nor_resumed():
    plan = plan_drains(states(4, bad=["gpu002"], stage="infiniband"), {"gpu002": {"infiniband": timeout_finding()}})
    assert plan["drain"] == {} and plan["failing"] == {} and "gpu002" not in plan["resume"]
    assert "error of the tool, not hardware" in plan["errored"]["gpu002"]
    assert "1 node(s) with a tool timeout: gpu002 (infiniband: ibstat: timed out" in plan["message"]


def test_only_a_repeated_timeout_or_a_real_failure_drains():
    findings = {"gpu001": {"infiniband": timeout_finding("timed out again")},
                "gpu002": {"infiniband": dict(timeout_finding("failed"), timeout=False, check="ports",
                                              message="mlx5_0 port 1 Down")}}
    plan = plan_drains(states(4, bad=["gpu001", "gpu002"], stage="infiniband"), findings, max_fraction=0.5)
    assert plan["drain"]["gpu001"] == ("infiniband: ibstat: timed out after 3 s and was killed (timed out twice: "
                                       "the first attempt and its retry)")
    assert plan["drain"]["gpu002"] == "infiniband: mlx5_0 port 1 Down"
    assert plan["evidence"]["gpu001"][0]["component"] == "ibstat"


def test_loaded_host_timeouts_on_most_nodes_do_not_trip_the_cap_or_drain():
    # The incident: a 3 s ibstat timeout on 5 of 7 healthy nodes of a loaded host.
    bad = ["gpu%03d" % i for i in range(1, 6)]
    plan = plan_drains(states(7, bad=bad, stage="infiniband"), dict((n, {"infiniband": timeout_finding()}) for n in bad))
    assert not plan["refused"] and plan["drain"] == {} and sorted(plan["errored"]) == bad
