"""The nvlink_domain stage's measured part (_nvlink_burnin): what a domain's NVLink run, its
InfiniBand-only run and its trays' pairs mean, and what a replay of an older capture gives; and how
the NVLink-domain judge (_nvlink_domains) takes them into the usable capacity and lost racks."""
import json
import sys
from types import SimpleNamespace

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _nvlink_burnin as nb
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _nvlink_verdicts as nv
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_judge import judge_run
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import group_command
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


def judged(outcome, busbw=None, sentence="4-node all_reduce_perf over gpu[001-004] busbw"):
    return {"outcome": outcome, "busbw": busbw, "sentence": sentence, "component": None, "evidence": []}


def domain(busbw, ib=175.0, outcome="ok", ib_outcome="ok", opts=None, trays=None, mnnvl_enable="1"):
    """A measured domain as _nvlink_burnin leaves it for the verdicts."""
    opts = OPTS if opts is None else opts
    full = check_result("nvlink_domain.mnnvl", "pass" if outcome == "ok" else "error", "4-node all_reduce_perf: x",
                        {"outcome": outcome}, "domain nvl01")
    full.update(stage="nvlink_domain", node=None, raw=["nvl01-full-allocation"])
    ib_check = check_result("nvlink_domain.infiniband", "pass", "ib", {}, "domain nvl01")
    ib_check.update(stage="nvlink_domain", node=None, raw=["nvl01-ib-full-allocation"])
    return SimpleNamespace(label="nvl01", domain=DOMAIN, trays=list(TRAYS), opts=opts, env={"NCCL_MNNVL_ENABLE": mnnvl_enable},
                           full=full, judged=judged(outcome, busbw if outcome == "ok" else None),
                           ib_check=ib_check, ib_judged=judged(ib_outcome, ib if ib_outcome == "ok" else None,
                                                               "ib run: no Avg bus bandwidth"),
                           checks=[], tray_checks=trays, rounds=3)


def tray(node, status, verdict="pinned"):
    check = check_result("nvlink_domain.tray", status, "%s: %s" % (node, status), {"verdict": verdict}, node)
    check.update(stage="nvlink_domain", node=node, raw=["nvl01-round1-%s" % node])
    return check


@pytest.mark.parametrize("busbw, ib, status, words", [
    (680.0, 175.0, "pass", "3.9x the same trays over InfiniBand only (175 GB/s)"),
    (180.0, 175.0, "fail", "NCCL fell back to InfiniBand"),
    (340.0, 175.0, "fail", "below the NVLink floor 580 GB/s"),
    (700.0, None, "pass", "judged on the floor alone"),
])
def test_the_domain_run_is_judged_against_the_floor_and_its_infiniband_only_run(busbw, ib, status, words):
    one = domain(busbw, ib, ib_outcome="ok" if ib else "invalid")
    check = nv.mnnvl_check(one)
    assert check["status"] == status and words in check["message"], check["message"]
    assert check["metrics"]["ib_busbw"] == ib and check["metrics"]["trays"] == 4


def test_above_a_floor_set_too_low_and_no_faster_than_infiniband_never_passes_as_nvlink():
    check = nv.mnnvl_check(domain(250.0, 175.0, opts=dict(OPTS, floor=200.0)))
    assert check["status"] == "fail" and check["metrics"]["fell_back"]


def test_without_a_floor_and_without_the_infiniband_run_nvlink_cannot_be_told_apart():
    check = nv.mnnvl_check(domain(700.0, None, ib_outcome="invalid", opts=dict(OPTS, floor=None)))
    assert check["status"] == "error" and "NVLink cannot be told from InfiniBand" in check["message"]


@pytest.mark.parametrize("outcome", ["invalid", "timeout"])
def test_a_run_that_fails_or_hangs_over_nvlink_where_infiniband_works_is_multi_node_nvlink_unavailable(outcome):
    one = domain(None, 175.0, outcome=outcome)
    check = nv.mnnvl_check(one)
    assert check["status"] == "fail" and check["metrics"]["unavailable"]
    assert "multi-node NVLink unavailable" in check["message"] and ("hung" if outcome == "timeout" else "failed") in \
        check["message"]
    checks, row = nv.judge_domain(one, None, "nvl01")
    assert [c["check"] for c in checks] == ["nvlink_domain.mnnvl", "nvlink_domain.infiniband"]
    assert row["unavailable"] and nv.unusable(row) == TRAYS


def test_a_run_that_measured_nothing_on_either_path_keeps_its_own_status_and_blames_no_tray():
    one = domain(None, None, outcome="invalid", ib_outcome="invalid")
    checks, row = nv.judge_domain(one, None, "nvl01")
    assert checks[0]["status"] == "error" and row["busbw"] is None and nv.unusable(row) == []


def test_a_low_domain_with_a_pinned_tray_names_it_and_loses_only_it():
    trays = [tray(t, "fail" if t == "gpu002" else "pass", "pinned" if t == "gpu002" else "cleared") for t in TRAYS]
    checks, row = nv.judge_domain(domain(340.0, trays=trays), None, "nvl01")
    assert "the slow tray(s) pinned inside the domain, gpu002" in checks[0]["message"]
    assert row["slow_trays"] == ["gpu002"] and nv.unusable(row) == ["gpu002"]
    result = nv.result(checks, {}, [row])
    assert result["failed_nodes"] == ["gpu002"] and result["unusable"] == ["gpu002"]


def test_no_tray_cleared_and_the_domain_low_is_one_rack_level_fault():
    checks, row = nv.judge_domain(domain(340.0, trays=[tray(t, "fail", "suspect") for t in TRAYS]), None, "nvl01")
    assert [c["check"] for c in checks] == ["nvlink_domain.mnnvl", "nvlink_domain.rack", "nvlink_domain.infiniband"]
    rack = checks[1]
    assert rack["metrics"]["nodes"] == TRAYS and rack["node"] is None and rack["status"] == "fail"
    assert "not 4 tray faults" in rack["message"]
    assert row["rack_fault"] and nv.unusable(row) == TRAYS and row["slow_trays"] == []


@pytest.mark.parametrize("trays", [
    [tray("gpu001", "pass", "cleared")] + [tray(t, "fail") for t in TRAYS[1:]],   # one cleared
    [tray(t, "fail") for t in TRAYS[:3]] + [tray("gpu004", "error", "untested")],  # one not measured
    [tray(t, "fail", "pinned") for t in TRAYS[:2]],                                # not every tray judged
    [],                                                                            # the rounds never ran
])
def test_a_domain_with_a_cleared_unmeasured_or_unjudged_tray_is_not_folded(trays):
    checks, row = nv.judge_domain(domain(340.0, trays=trays), None, "nvl01")
    assert not row["rack_fault"] and not [c for c in checks if c["check"] == "nvlink_domain.rack"]


def test_a_fallback_is_not_a_rack_fault_and_leaves_the_whole_domain_unusable():
    checks, row = nv.judge_domain(domain(180.0), None, "nvl01")
    assert row["fell_back"] and not row["rack_fault"] and nv.unusable(row) == TRAYS
    assert not [c for c in checks if c["check"] == "nvlink_domain.tray"]


def test_a_launcher_that_failed_on_the_first_domain_skips_the_others_and_blames_no_tray():
    first, other = domain(None), domain(None)
    launcher = check_result("nvlink_domain.launcher", "error", "srun: error: slurm_load_partitions", {}, "launcher")
    launcher.update(stage="nvlink_domain", node=None, raw=[])
    first.checks = [launcher]
    checks, row = nv.judge_domain(first, "srun cannot reach slurmctld", "nvl01")
    assert [c["status"] for c in checks] == ["error"] and nv.unusable(row) == []
    checks, row = nv.judge_domain(other, "srun cannot reach slurmctld", "nvl01")
    assert checks[0]["status"] == "skip" and "the launcher failed on domain nvl01" in checks[0]["message"]


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


def test_a_replay_names_each_domain_as_the_live_run_did_so_none_reads_anothers_outputs(tmp_path):
    """Live: domains a.1 and b.2 were nvl01 and nvl02. Replayed where a.1's trays all failed a per-node
    stage: b.2 alone must still read nvl02's outputs, not nvl01's (a.1's)."""
    (tmp_path / "results.json").write_text(json.dumps({"nvlink_domains": {"mnnvl": [
        {"domain": "a.1", "label": "nvl01"}, {"domain": "b.2", "label": "nvl02"}]}}))
    assert nb.labels({"b.2": []}, str(tmp_path)) == {"b.2": "nvl02"}
    assert nb.labels({"c.3": []}, str(tmp_path)) == {"c.3": "nvl01-uncaptured"}
    (tmp_path / "raw" / "_nvlink_domain").mkdir(parents=True)
    result = nb.nvlink_stage({"c.3": TRAYS}, dict(OPTS, replay_dir=str(tmp_path)), {})
    assert [c["status"] for c in result["checks"]] == ["skip"] and "the domain was not in it" in result["checks"][0]["message"]


def test_no_domain_reported_is_one_skip_not_a_silent_stage():
    result = nb.nvlink_stage({}, OPTS, {})
    (check,) = result["checks"]
    assert check["status"] == "skip" and "no tray reported the NVLink domain" in check["message"]


def test_the_nvlink_setting_is_on_the_launch_line_whatever_the_site_exports():
    opts = {"binary": "all_reduce_perf", "args": [], "gpus_per_process": 4, "tasks_per_node": 1,
            "launcher": "srun", "launch_env": {"NCCL_MNNVL_ENABLE": "0"}}
    assert "--export=ALL,NCCL_MNNVL_ENABLE=0" in group_command(["gpu001", "gpu002"], opts)
    argv = group_command(["gpu001", "gpu002"], dict(opts, launcher="mpirun"))
    assert argv[argv.index("-x") + 1] == "NCCL_MNNVL_ENABLE=0"
    assert not [a for a in group_command(["gpu001"], dict(opts, launch_env={})) if a.startswith("--export")]


def test_the_simulator_refuses_a_required_mnnvl_it_cannot_give_as_nccl_does(monkeypatch):
    """NCCL_MNNVL_ENABLE=1 where MNNVL cannot work: NCCL's init fails ('MNNVL is not supported on this
    system'), nccl-tests prints its NCCLCHECK line, and the fabric judge sees a run that measured nothing."""
    the_spec, states = _sim([{"kind": "imex_down", "node": "gpu004"}])
    assert nccl_tests._mnnvl_refused(the_spec, states, ["gpu003", "gpu004"], {"NCCL_MNNVL_ENABLE": "1"})
    assert not nccl_tests._mnnvl_refused(the_spec, states, ["gpu003", "gpu004"], {"NCCL_MNNVL_ENABLE": "2"})
    assert not nccl_tests._mnnvl_refused(the_spec, states, ["gpu001", "gpu003"], {"NCCL_MNNVL_ENABLE": "1"})
    me = nccl_tests.Proc(0, "gpu003", 0, [0, 1, 2, 3], 4242)
    head = nccl_tests.Result("# nccl-tests version 2.17.10\n#  Rank  0 Group  0 Pid   4242 on     gpu003 device  0\n"
                             "#\n#  size\n", "", 0)
    failed = nccl_tests._init_failure(head, me)
    assert failed.code == 3 and failed.out.endswith(
        "gpu003: Test NCCL failure common.cu:1091 'unhandled system error (run with NCCL_DEBUG=INFO for details) / MNNVL is "
        "not supported on this system'\n .. gpu003 pid 4242: Test failure common.cu:1189\n")
    record = {"nodes": ["gpu003", "gpu004"], "output": failed.out, "rc": 3, "timed_out": False, "key": "k"}
    verdict = judge_run(record, {"binary": "all_reduce_perf", "tasks_per_node": 1, "gpus_per_process": 4, "timeout": 60})
    assert verdict["outcome"] == "invalid" and verdict["busbw"] is None


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
