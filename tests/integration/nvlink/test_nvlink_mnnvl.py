"""Multi-node NVLink across each NVLink domain's trays on simulated GB200 NVL72 racks (three racks of
four trays, the profile told so): a slow tray pinned inside its rack, a rack whose NVLink is slow on
every tray as one rack-level fault, a rack lost at once as one fault, the InfiniBand-only rate
reported apart, an InfiniBand fallback that never passes as NVLink, and replay."""
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
]


def racks(name, faults=(), seed=7):
    data = spec(name, faults=faults, count=12, seed=seed, profile="gb200_nvl72_tray", rack_trays=4, unreachable=LOST)
    data["fabric"] = {"leaves": 3, "spines": 2, "rails": 4, "oversubscription": 1.0}
    return data


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    with SimRun(racks("nvlm", FAULTS), tmp_path_factory.mktemp("nvlm")) as sim:
        run = sim.acceptance(*SKIP, "-e", SMALL)
        fallback = sim.acceptance(*SKIP, "-e", SMALL, "-e", json.dumps(
            {"check_nvlink_domain_environment": {"NCCL_MNNVL_ENABLE": "0"}}))
        yield run, fallback


def _stage(run, status=("fail", "error")):
    return [c for c in run.results["checks"] if c["stage"] == "nvlink_domain" and c["status"] in status]


def test_a_slow_tray_is_pinned_inside_its_rack_and_a_slow_rack_is_one_fault(measured):
    run, _fallback = measured
    assert run.rc != 0
    rows = dict((r["label"], r) for r in run.results["nvlink_domains"]["mnnvl"])
    assert rows["nvl01"]["slow_trays"] == ["gpu002"] and rows["nvl01"]["rounds"] <= 3
    (tray,) = [c for c in _stage(run) if c["check"] == "nvlink_domain.tray"]
    assert tray["node"] == "gpu002" and tray["metrics"]["verdict"] == "pinned"
    assert "each partner passed twice with other nodes" in tray["message"]
    # rack 2: one rack-level fault, none of its trays blamed one by one
    (rack2,) = [c for c in _stage(run) if c["check"] == "nvlink_domain.rack" and c["metrics"].get("domain")]
    assert rack2["metrics"]["nodes"] == ["gpu005", "gpu006", "gpu007", "gpu008"] and rack2["node"] is None
    assert "a rack-level fault (an NVLink switch tray" in rack2["message"]
    assert rows["nvl02"]["rack_fault"] and not rows["nvl02"]["slow_trays"]
    # nothing else on any tray: only gpu002 (measured) and the lost rack's unreachable trays
    failed_trays = set(c["node"] for c in run.results["checks"] if c["status"] in ("fail", "error") and c["node"])
    assert failed_trays == {"gpu002"} | set(LOST), sorted(failed_trays)
    assert "gpu[005-008] FAIL nvlink_domain: all 4 trays of NVLink domain nvl02" in run.output


def test_a_rack_lost_at_once_is_one_rack_level_fault(measured):
    run, _fallback = measured
    (lost,) = [c for c in _stage(run) if c["check"] == "nvlink_domain.rack" and c["metrics"].get("rack")]
    assert lost["metrics"] == {"nodes": LOST, "rack": "rack03", "checks": ["unreachable"]}
    assert "all 4 trays of rack rack03 (its inventory label) are unreachable at once" in lost["message"]
    assert run.results["nvlink_domains"]["lost_racks"] == [{"rack": "rack03", "trays": LOST}]
    assert "gpu[009-012] FAIL nvlink_domain: all 4 trays of rack rack03" in run.output


def test_infiniband_is_reported_apart_and_the_capacity_leaves_out_what_failed(measured):
    run, _fallback = measured
    rows = dict((r["label"], r) for r in run.results["nvlink_domains"]["mnnvl"])
    for row in rows.values():
        assert 120 < row["ib_busbw"] < 300 and row["busbw"] > 1.5 * row["ib_busbw"] * 0.5
    ib = [c for c in run.results["checks"] if c["check"] == "nvlink_domain.infiniband"]
    assert len(ib) == 2 and all("over InfiniBand only (NCCL_MNNVL_ENABLE=0)" in c["message"] for c in ib)
    assert set(c["status"] for c in ib) == {"pass"}
    mnnvl = dict((c["metrics"]["domain"], c) for c in run.results["checks"] if c["check"] == "nvlink_domain.mnnvl")
    assert all(c["node"] is None for c in mnnvl.values())
    passed = dict((r["domain"], r["trays_passed"]) for r in run.results["nvlink_domains"]["domains"])
    assert sorted(passed.values()) == [0, 3]     # rack 1 without gpu002; rack 2 none
    assert "multi-node NVLink: nvl01" in run.results["nvlink_domains"]["statement"]
    page = (run.dir / "report.html").read_text()
    assert "Multi-node NVLink across each domain&#x27;s trays" in page or "Multi-node NVLink across each domain's trays" in page
    assert "busbw over InfiniBand only" in page
    metrics = (run.dir / "metrics.prom").read_text()
    assert 'path="infiniband"' in metrics and 'path="nvlink"' in metrics
    assert set(run.results["raw"]["_nvlink_domain"]) >= {"nvl01-full-allocation", "nvl01-ib-full-allocation"}


def test_an_infiniband_fallback_never_passes_as_nvlink(measured):
    _run, fallback = measured
    assert fallback.rc != 0
    rows = fallback.results["nvlink_domains"]["mnnvl"]
    assert [r["fell_back"] for r in rows] == [True, True], rows
    mnnvl = [c for c in fallback.results["checks"] if c["check"] == "nvlink_domain.mnnvl"]
    assert all(c["status"] == "fail" and "NCCL fell back to InfiniBand" in c["message"] for c in mnnvl)
    # a domain that fell back holds no multi-tray NVLink job: nothing usable
    assert all(r["trays_passed"] == 0 for r in fallback.results["nvlink_domains"]["domains"])


def test_replay_with_the_cluster_gone_gives_the_same_verdict(measured, tmp_path):
    run, _fallback = measured
    inventory = run.dir.parents[1] / "inventory" / "hosts.yml"
    replay = playbook(inventory, tmp_path / "replay", "-e", SMALL, "-e", "acceptance_replay_dir=%s" % run.dir)
    # (the live run's exit code says hosts were unreachable, 4; a replay reaches no host: 2)
    assert run.rc == 4 and replay.rc == 2
    assert replay.results["verdict"]["status"] == run.results["verdict"]["status"] == "fail"
    assert replay.results["verdict"]["failed_nodes"] == run.results["verdict"]["failed_nodes"]
    assert replay.results["nvlink_domains"]["mnnvl"] == run.results["nvlink_domains"]["mnnvl"]
    assert [c["message"] for c in _stage(replay)] == [c["message"] for c in _stage(run)]
