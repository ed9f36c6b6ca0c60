"""The nvlink_domain stage's measured part (_nvlink_burnin): what a domain's NVLink run, its
InfiniBand-only run and its trays' pairs mean, and what a replay of an older capture gives; and how
the NVLink-domain judge (_nvlink_domains) takes them into the usable capacity and lost racks."""
import sys

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _nvlink_burnin as nb
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import check_result
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import (
    domain_trays, judge_nvlink_domains)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import REPO

sys.path.insert(0, str(REPO / "sim"))

from gpusim import model, nccl_tests, spec  # noqa: E402  pylint: disable=wrong-import-position

SMALL = load_profile("gb200_nvl72_tray", overrides={"nvlink": {"domain_trays": 4}})
OPTS = {"floor": 580.0, "fallback_ratio": 1.5}
DOMAIN = "69abe9b3-39ab-5ecc-8a2f-8acf3b726ffa.32766"
TRAYS = ["gpu001", "gpu002", "gpu003", "gpu004"]


def mnnvl(busbw):
    check = check_result("nvlink_domain.mnnvl", "pass", "4-node all_reduce_perf over gpu[001-004]: busbw",
                         {"busbw": busbw, "outcome": "ok"}, "domain nvl01")
    check.update(stage="nvlink_domain", node=None)
    return check


def tray(node, status):
    check = check_result("nvlink_domain.tray", status, "%s: %s" % (node, status), {"verdict": "x"}, node)
    check.update(stage="nvlink_domain", node=node, raw=["nvl01-round1-%s" % node])
    return check


@pytest.mark.parametrize("busbw, ib, status, words", [
    (680.0, 175.0, "pass", "3.9x the same trays over InfiniBand only (175 GB/s)"),
    (180.0, 175.0, "fail", "NCCL fell back to InfiniBand"),
    # above a floor set too low, still no faster than InfiniBand: never a pass as NVLink
    (250.0, 175.0, "fail", "no faster than the same trays over InfiniBand only"),
    (340.0, 175.0, "fail", "below the NVLink floor 580 GB/s"),
    (700.0, None, "pass", "floor 580 GB/s"),
])
def test_the_domain_run_is_judged_against_the_floor_and_its_infiniband_only_run(busbw, ib, status, words):
    opts = dict(OPTS, floor=200.0) if busbw == 250.0 else OPTS
    check = nb._mnnvl_verdict(mnnvl(busbw), "nvl01", TRAYS, busbw, ib, opts)
    assert check["status"] == status and words in check["message"], check["message"]
    assert check["metrics"]["ib_busbw"] == ib and check["metrics"]["trays"] == 4


def test_a_run_that_measured_nothing_keeps_its_own_status_and_words():
    check = mnnvl(None)
    check.update(status="error", message="output unreadable (rc 1)")
    judged = nb._mnnvl_verdict(check, "nvl01", TRAYS, None, 175.0, OPTS)
    assert judged["status"] == "error" and judged["message"].endswith("output unreadable (rc 1)")


def test_a_low_domain_with_a_pinned_tray_names_it():
    check = nb._mnnvl_verdict(mnnvl(340.0), "nvl01", TRAYS, 340.0, 175.0, OPTS, slow=["gpu002"])
    assert "the slow tray(s) pinned inside the domain, gpu002" in check["message"]


def test_no_tray_cleared_and_the_domain_low_is_one_rack_level_fault():
    low = nb._mnnvl_verdict(mnnvl(340.0), "nvl01", TRAYS, 340.0, 175.0, OPTS)
    checks, folded = nb._rack_fault([low] + [tray(t, "fail") for t in TRAYS], "nvl01", DOMAIN, TRAYS)
    assert folded
    assert [c["check"] for c in checks] == ["nvlink_domain.mnnvl", "nvlink_domain.rack"]
    rack = checks[-1]
    assert rack["metrics"]["nodes"] == TRAYS and rack["node"] is None and rack["status"] == "fail"
    assert "not 4 tray faults" in rack["message"]
    row = nb._row("nvl01", DOMAIN, TRAYS, checks, 3, folded)
    assert nb._unusable(row) == TRAYS and row["slow_trays"] == []


@pytest.mark.parametrize("statuses", [["pass", "fail", "fail", "fail"], ["fail", "fail", "fail", "error"]])
def test_a_domain_with_a_cleared_or_unmeasured_tray_is_not_folded(statuses):
    low = nb._mnnvl_verdict(mnnvl(340.0), "nvl01", TRAYS, 340.0, 175.0, OPTS)
    checks, folded = nb._rack_fault([low] + [tray(t, s) for t, s in zip(TRAYS, statuses)], "nvl01", DOMAIN, TRAYS)
    assert not folded and len(checks) == 5


def test_a_fallback_is_not_a_rack_fault_and_leaves_the_whole_domain_unusable():
    fell = nb._mnnvl_verdict(mnnvl(180.0), "nvl01", TRAYS, 180.0, 175.0, OPTS)
    checks, folded = nb._rack_fault([fell] + [tray(t, "fail") for t in TRAYS], "nvl01", DOMAIN, TRAYS)
    assert not folded
    row = nb._row("nvl01", DOMAIN, TRAYS, checks, 3, folded)
    assert row["fell_back"] and nb._unusable(row) == TRAYS


def test_pinned_trays_alone_are_unusable_and_failed():
    low = nb._mnnvl_verdict(mnnvl(340.0), "nvl01", TRAYS, 340.0, 175.0, OPTS, slow=["gpu002"])
    checks = [low] + [tray(t, "fail" if t == "gpu002" else "pass") for t in TRAYS]
    result = nb._result(checks, {}, [nb._row("nvl01", DOMAIN, TRAYS, checks, 3, False)])
    assert result["failed_nodes"] == ["gpu002"] and result["unusable"] == ["gpu002"]


def test_a_replay_of_a_capture_made_before_the_stage_skips_it_as_not_captured(tmp_path):
    (tmp_path / "raw" / "gpu001").mkdir(parents=True)
    result = nb.nvlink_stage({DOMAIN: TRAYS, "other.7": ["gpu009"]}, dict(OPTS, replay_dir=str(tmp_path)), {})
    statuses = [(c["check"], c["status"]) for c in result["checks"]]
    assert statuses == [("nvlink_domain.mnnvl", "skip"), ("nvlink_domain.mnnvl", "skip")]
    assert "not captured: the replayed run directory has no raw/_nvlink_domain" in result["checks"][0]["message"]
    assert "fewer than 2 of its trays passed" in result["checks"][1]["message"]
    assert result["failed_nodes"] == [] and result["unusable"] == []


def test_domain_labels_follow_the_sorted_domains():
    assert nb.labels({"b.2": [], "a.1": []}) == {"a.1": "nvl01", "b.2": "nvl02"}


def _state(domain, ok=True):
    metrics = {"nvlink_domain": domain} if domain else {}
    status = "pass" if ok else "fail"
    return {"stages": {"gpu_health": {"status": status, "metrics": metrics}}, "failed_stages": [] if ok else ["gpu_health"]}


def test_the_trays_measured_are_those_that_passed_grouped_by_their_own_domain():
    states = {"gpu001": _state(DOMAIN), "gpu002": _state(DOMAIN, ok=False), "gpu003": _state("b.7"),
              "gpu004": None, "gpu005": _state(None)}
    assert domain_trays(states) == {DOMAIN: ["gpu001"], "b.7": ["gpu003"]}


def test_the_capacity_leaves_out_what_multi_node_nvlink_found_unusable():
    states = dict((t, _state(DOMAIN)) for t in TRAYS)
    row = {"domain": DOMAIN, "label": "nvl01", "status": "fail", "busbw": 340.0, "ib_busbw": 175.0, "floor": 580.0,
           "fell_back": False, "rack_fault": False, "slow_trays": ["gpu002"], "rounds": 3, "trays": TRAYS}
    result = judge_nvlink_domains(states, SMALL, mnnvl={"domains": [row], "unusable": ["gpu002"]})
    doc = result["document"]
    assert doc["domains"][0]["trays_passed"] == 3 and doc["domains"][0]["failed"] == ["gpu002"]
    assert doc["mnnvl"][0]["slow_trays"] == ["gpu002"] and "trays" not in doc["mnnvl"][0]
    assert doc["statement"].endswith("multi-node NVLink: nvl01 340 GB/s (InfiniBand only 175), slow: gpu002")


def test_a_rack_whose_every_tray_never_reported_is_one_fault_and_a_partial_one_is_not():
    states = dict((t, _state(DOMAIN)) for t in TRAYS)
    states.update({"gpu005": None, "gpu006": None, "gpu007": None, "gpu008": None, "gpu009": None, "gpu010": _state("c.1")})
    racks = dict(("gpu%03d" % i, "rack%02d" % ((i - 1) // 4 + 1)) for i in range(1, 11))
    racks["gpu011"] = "rack03"   # not a target of this run: not counted
    result = judge_nvlink_domains(states, SMALL, racks=racks)
    (lost,) = [c for c in result["checks"] if c["check"] == "nvlink_domain.rack"]
    assert lost["metrics"]["nodes"] == ["gpu005", "gpu006", "gpu007", "gpu008"] and lost["component"] == "rack rack02"
    assert result["document"]["lost_racks"] == [{"rack": "rack02", "trays": ["gpu005", "gpu006", "gpu007", "gpu008"]}]
    assert "lost at once: rack rack02 (4 trays)" in result["document"]["statement"]


def _sim(faults, count=8):
    the_spec = spec.validate({"name": "mnnvl", "profile": "gb200_nvl72_tray", "seed": 5, "rack_trays": 4,
                              "nodes": {"prefix": "gpu", "count": count, "width": 3, "start": 1}, "faults": faults})
    return the_spec, dict((n, model.node_state(the_spec, n)) for n in the_spec.nodes)


def test_the_simulator_slows_multi_node_nvlink_only_for_runs_with_the_slow_tray_or_rack(monkeypatch):
    monkeypatch.delenv("NCCL_MNNVL_ENABLE", raising=False)
    the_spec, states = _sim([{"kind": "nvlink_slow", "node": "gpu002", "factor": 0.5},
                             {"kind": "nvlink_slow", "rack": 2, "factor": 0.25},
                             {"kind": "imex_down", "node": "gpu004"}])
    assert nccl_tests._mnnvl(the_spec, states, ["gpu001", "gpu003"]) == 1.0
    assert nccl_tests._mnnvl(the_spec, states, ["gpu001", "gpu002"]) == 0.5
    assert nccl_tests._mnnvl(the_spec, states, ["gpu005", "gpu006"]) == 0.25
    # a stopped IMEX daemon: the runs that include its tray fall back; its peers' runs do not
    assert nccl_tests._mnnvl(the_spec, states, ["gpu003", "gpu004"]) == 0
    monkeypatch.setenv("NCCL_MNNVL_ENABLE", "0")
    assert nccl_tests._mnnvl(the_spec, states, ["gpu001", "gpu003"]) == 0


@pytest.mark.parametrize("fault, key", [
    ({"factor": 0.5}, "faults[0] (nvlink_slow)"),
    ({"node": "gpu001", "rack": 1, "factor": 0.5}, "faults[0] (nvlink_slow)"),
    ({"node": "gpu001", "factor": 1.5}, "faults[0].factor"),
    ({"rack": 3, "factor": 0.5}, "faults[0].rack"),
])
def test_the_spec_refuses_an_nvlink_slow_fault_it_cannot_place(fault, key):
    data = {"name": "mnnvl", "profile": "gb200_nvl72_tray", "rack_trays": 4,
            "nodes": {"prefix": "gpu", "count": 8, "width": 3, "start": 1}, "faults": [dict({"kind": "nvlink_slow"}, **fault)]}
    with pytest.raises(spec.SpecError) as raised:
        spec.validate(data)
    assert key in str(raised.value)


def test_a_run_where_no_tray_reported_blames_no_rack():
    """--tags fabric alone: no per-node stage ran, so no tray reported; no rack is lost for it."""
    states = dict(("gpu%03d" % i, None) for i in range(1, 9))
    racks = dict(("gpu%03d" % i, "rack%02d" % ((i - 1) // 4 + 1)) for i in range(1, 9))
    result = judge_nvlink_domains(states, SMALL, racks=racks)
    assert not [c for c in result["checks"] if c["check"] == "nvlink_domain.rack"]
    assert "lost_racks" not in result["document"]


def test_a_replayed_tray_with_every_stage_skipped_counts_as_never_reached():
    skipped = {"stages": {"gpu_health": {"status": "skip", "metrics": {}}}, "failed_stages": []}
    states = dict((t, _state(DOMAIN)) for t in TRAYS)
    states.update(dict(("gpu%03d" % i, skipped) for i in range(5, 9)))
    racks = dict(("gpu%03d" % i, "rack%02d" % ((i - 1) // 4 + 1)) for i in range(1, 9))
    (lost,) = [c for c in judge_nvlink_domains(states, SMALL, racks=racks)["checks"] if c["check"] == "nvlink_domain.rack"]
    assert lost["metrics"]["rack"] == "rack02"
