"""Multi-node NVLink across each NVLink domain's trays on simulated GB200 NVL72 racks (three racks of
four trays, the profile told so): a slow tray pinned inside its rack, a rack whose NVLink is slow on
every tray as one rack-level fault, a rack lost at once as one fault, the InfiniBand-only rate
reported apart, multi-node NVLink that NCCL refuses and an InfiniBand fallback, neither passing as
NVLink, and replay."""
import json

import pytest

from harness import SimRun, playbook, spec

pytestmark = pytest.mark.integration

SKIP = ("--skip-tags", "fabric,workload,rdma")
SMALL = json.dumps({"acceptance_profile_overrides": {"nvlink": {"domain_trays": 4}}})
LOST = ["gpu009", "gpu010", "gpu011", "gpu012"]   # rack 3: power or cooling, every tray at once
FAULTS = [
    # gpu002's NVLink traffic to the other trays at half the rate; its links and fabric look clean
    {"kind": "nvlink_slow", "node": "gpu002", "factor": 0.5},
    # every tray of rack 2 slow over multi-node NVLink (a switch tray's ports), nothing on any tray
    {"kind": "nvlink_slow", "rack": 2, "factor": 0.5},
    # gpu007's IMEX daemon stopped: gpu_health errors it (so rack 2 runs without it); with the IMEX
    # check turned off it passes, and NCCL refuses multi-node NVLink on any run that includes it
    {"kind": "imex_down", "node": "gpu007"},
]
RACK2 = ["gpu005", "gpu006", "gpu008"]


def racks(name, faults=(), seed=7):
    data = spec(name, faults=faults, count=12, seed=seed, profile="gb200_nvl72_tray", rack_trays=4, unreachable=LOST)
    data["fabric"] = {"leaves": 3, "spines": 2, "rails": 4, "oversubscription": 1.0}
    return data


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    with SimRun(racks("nvlm", FAULTS), tmp_path_factory.mktemp("nvlm")) as sim:
        run = sim.acceptance(*SKIP, "-e", SMALL)
        # a site's NCCL environment that turns multi-node NVLink off: every run takes InfiniBand
        fallback = sim.acceptance(*SKIP, "-e", SMALL, "-e", json.dumps(
            {"check_nvlink_domain_environment": {"NCCL_MNNVL_ENABLE": "0"}}))
        # the IMEX check off: gpu007 passes its per-node stages and rack 2's NVLink run cannot start
        refused = sim.acceptance(*SKIP, "-e", SMALL, "-e", "check_gpu_health_imex=false")
        yield run, fallback, refused


def _stage(run, status=("fail", "error")):
    return [c for c in run.results["checks"] if c["stage"] == "nvlink_domain" and c["status"] in status]


def test_a_slow_tray_is_pinned_inside_its_rack_and_a_slow_rack_is_one_fault(measured):
    run = measured[0]
    assert run.rc != 0
    rows = dict((r["label"], r) for r in run.results["nvlink_domains"]["mnnvl"])
    assert rows["nvl01"]["slow_trays"] == ["gpu002"] and rows["nvl01"]["rounds"] <= 3
    (tray,) = [c for c in _stage(run) if c["check"] == "nvlink_domain.tray"]
    assert tray["node"] == "gpu002" and tray["metrics"]["verdict"] == "pinned"
    assert "each partner passed twice with other nodes" in tray["message"]
    # rack 2: one rack-level fault, none of its trays blamed one by one
    (rack2,) = [c for c in _stage(run) if c["check"] == "nvlink_domain.rack" and c["metrics"].get("domain")]
    assert rack2["metrics"]["nodes"] == RACK2 and rack2["node"] is None
    assert "a rack-level fault (an NVLink switch tray" in rack2["message"]
    assert rows["nvl02"]["rack_fault"] and not rows["nvl02"]["slow_trays"]
    # nothing else on any tray: only gpu002 (measured) and the lost rack's unreachable trays
    failed_trays = set(c["node"] for c in run.results["checks"] if c["status"] in ("fail", "error") and c["node"])
    assert failed_trays == {"gpu002", "gpu007"} | set(LOST), sorted(failed_trays)
    assert [c["check"] for c in run.bad_checks("gpu007")] == ["gpu.imex"]
    assert "gpu[005-006,008] FAIL nvlink_domain: all 3 trays of NVLink domain nvl02" in run.output


def test_a_rack_lost_at_once_is_one_rack_level_fault(measured):
    run = measured[0]
    (lost,) = [c for c in _stage(run) if c["check"] == "nvlink_domain.rack" and c["metrics"].get("rack")]
    assert lost["metrics"] == {"nodes": LOST, "rack": "rack03", "checks": ["unreachable"]}
    assert "all 4 trays of rack rack03 (its inventory label) are unreachable at once" in lost["message"]
    assert run.results["nvlink_domains"]["lost_racks"] == [{"rack": "rack03", "trays": LOST}]
    assert "gpu[009-012] FAIL nvlink_domain: all 4 trays of rack rack03" in run.output


def test_infiniband_is_reported_apart_and_the_capacity_leaves_out_what_failed(measured):
    run = measured[0]
    rows = dict((r["label"], r) for r in run.results["nvlink_domains"]["mnnvl"])
    for row in rows.values():
        assert 120 < row["ib_busbw"] < 300 and row["busbw"] >= 1.5 * row["ib_busbw"]
    ib = [c for c in run.results["checks"] if c["check"] == "nvlink_domain.infiniband"]
    assert len(ib) == 2 and all("over InfiniBand only (NCCL_MNNVL_ENABLE=0)" in c["message"] for c in ib)
    assert set(c["status"] for c in ib) == {"pass"}
    mnnvl = dict((c["metrics"]["domain"], c) for c in run.results["checks"] if c["check"] == "nvlink_domain.mnnvl")
    assert all(c["node"] is None for c in mnnvl.values())
    passed = dict((r["domain"], r["trays_passed"]) for r in run.results["nvlink_domains"]["domains"])
    assert sorted(passed.values()) == [0, 3]     # rack 1 without gpu002; rack 2 none (slow as a whole)
    assert "multi-node NVLink: nvl01" in run.results["nvlink_domains"]["statement"]
    page = (run.dir / "report.html").read_text()
    assert "Multi-node NVLink across each domain&#x27;s trays" in page or "Multi-node NVLink across each domain's trays" in page
    assert "busbw over InfiniBand only" in page
    metrics = (run.dir / "metrics.prom").read_text()
    assert 'path="infiniband"' in metrics and 'path="nvlink"' in metrics
    assert set(run.results["raw"]["_nvlink_domain"]) >= {"nvl01-full-allocation", "nvl01-ib-full-allocation"}


def test_an_infiniband_fallback_never_passes_as_nvlink(measured):
    fallback = measured[1]
    assert fallback.rc != 0
    rows = fallback.results["nvlink_domains"]["mnnvl"]
    assert [r["fell_back"] for r in rows] == [True, True], rows
    mnnvl = [c for c in fallback.results["checks"] if c["check"] == "nvlink_domain.mnnvl"]
    assert all(c["status"] == "fail" and "NCCL fell back to InfiniBand" in c["message"] for c in mnnvl)
    # a domain that fell back holds no multi-tray NVLink job: nothing usable
    assert all(r["trays_passed"] == 0 for r in fallback.results["nvlink_domains"]["domains"])


def test_multi_node_nvlink_that_nccl_refuses_is_one_domain_finding_not_tray_faults(measured):
    refused = measured[2]
    rows = dict((r["label"], r) for r in refused.results["nvlink_domains"]["mnnvl"])
    assert rows["nvl02"]["unavailable"] and rows["nvl02"]["busbw"] is None and 120 < rows["nvl02"]["ib_busbw"] < 300
    assert not rows["nvl01"]["unavailable"] and rows["nvl01"]["slow_trays"] == ["gpu002"]
    (check,) = [c for c in refused.results["checks"] if c["check"] == "nvlink_domain.mnnvl" and c["status"] == "fail"
                and c["metrics"].get("unavailable")]
    assert "multi-node NVLink unavailable" in check["message"] and "MNNVL is not supported on this system" in \
        check["message"]
    # no tray of rack 2 blamed one by one, none of them usable
    assert not [c for c in refused.results["checks"] if c["check"] == "nvlink_domain.tray" and c["node"] in
                ("gpu005", "gpu006", "gpu007", "gpu008")]
    domains = dict((r["domain"], r["trays_passed"]) for r in refused.results["nvlink_domains"]["domains"])
    assert sorted(domains.values()) == [0, 3]
    raw = (refused.dir / "raw" / "_nvlink_domain" / "nvl02-full-allocation.txt").read_text()
    assert "--export=ALL,NCCL_MNNVL_ENABLE=1" in raw.splitlines()[0]


def test_replay_with_the_cluster_gone_gives_the_same_verdict(measured, tmp_path):
    run = measured[0]
    inventory = run.dir.parents[1] / "inventory" / "hosts.yml"
    replay = playbook(inventory, tmp_path / "replay", "-e", SMALL, "-e", "acceptance_replay_dir=%s" % run.dir)
    # (the live run's exit code says hosts were unreachable, 4; a replay reaches no host: 2)
    assert run.rc == 4 and replay.rc == 2
    assert replay.results["verdict"]["status"] == run.results["verdict"]["status"] == "fail"
    assert replay.results["verdict"]["failed_nodes"] == run.results["verdict"]["failed_nodes"]
    assert replay.results["nvlink_domains"]["mnnvl"] == run.results["nvlink_domains"]["mnnvl"]
    assert [c["message"] for c in _stage(replay)] == [c["message"] for c in _stage(run)]


def test_a_provider_block_right_about_its_trays_but_without_nvlink_bandwidth_is_named(measured):
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_nvlink import validate_blocks
    run, fallback = measured[:2]
    shown = ("BlockName=b1 BlockIndex=0 Nodes=gpu[001-004] BlockSize=4\n"
             "BlockName=b2 BlockIndex=1 Nodes=gpu[005-008] BlockSize=4\n")   # scontrol show topology, 24.11+
    found = validate_blocks(shown, run.results)
    assert found["misplaced"] == [] and found["split"] == []
    # rack 1's slow tray is the tray's fault (pinned), rack 2 is slow as a whole
    assert [s["block"] for s in found["slow"]] == ["b2"] and not found["ok"]
    assert "a rack-level fault" in found["slow"][0]["message"]
    assert [s["block"] for s in validate_blocks(shown, fallback.results)["slow"]] == ["b1", "b2"]
