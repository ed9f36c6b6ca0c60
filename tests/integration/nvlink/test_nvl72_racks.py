"""Rack-scale NVLink on simulated GB200 NVL72 racks (two racks of four trays here, the profile told so):
each fault named at its scope and nothing else, the usable capacity everywhere a user reads it,
replay, and Slurm's topology/block written from and checked against the measured NVLink domains."""
import json

import pytest

from harness import SimRun, playbook, spec

pytestmark = pytest.mark.integration

SKIP = ("--skip-tags", "fabric,workload,rdma")
SMALL = json.dumps({"acceptance_profile_overrides": {"nvlink": {"domain_trays": 4}}})
ZERO = "00000000-0000-0000-0000-000000000000"
FAULTS = [
    # a tray whose GPU1 failed NVLink registration: gpu_health names GPU1
    {"kind": "fabric", "node": "gpu002", "gpu": 1, "status": "Insufficient Resources", "clique_id": 0,
     "cluster_uuid": ZERO},
    # a tray partitioned into another clique of its rack: the NVLink-domain stage names it misplaced
    {"kind": "fabric", "node": "gpu003", "clique_id": 32767},
    # two GPUs of a tray with 2 of 18 links down: gpu_health names them (topology shows NV16)
    {"kind": "nvlink_down", "node": "gpu004", "gpus": [0, 1], "link": "NV16"},
    # an NVLink switch tray down in rack 2: every tray degraded, one rack-level fault
    {"kind": "fabric", "rack": 2, "health": {"Summary": "Limited Capacity", "Bandwidth": "Degraded"}},
    # gpu001's IMEX daemon stopped: its tool gets no answer; rack 1's domain fails once for IMEX
    {"kind": "imex_down", "node": "gpu001"},
]
# (node, stage) the faults must fail, and what else the same faults may fail on the same trays.
REQUIRED = {("gpu001", "gpu_health"), (None, "nvlink_domain"), ("gpu002", "gpu_health"), ("gpu003", "nvlink_domain"), ("gpu004", "gpu_health"),
            ("gpu005", "gpu_health"), ("gpu006", "gpu_health"), ("gpu007", "gpu_health"), ("gpu008", "gpu_health")}
ALLOWED = REQUIRED | {("gpu004", "topology"), ("gpu004", "nccl_single_node")}
# gpu004 (rack 1) and gpu005 (rack 2) swapped in a provider's block file.
SWAPPED = "BlockName=block_a Nodes=gpu[001-003],gpu005\nBlockName=block_b Nodes=gpu004,gpu[006-008]\nBlockSizes=4\n"
RIGHT = "BlockName=block_a Nodes=gpu[001-004]\nBlockName=block_b Nodes=gpu[005-008]\nBlockSizes=4\n"


def racks(name, faults=(), seed=7):
    data = spec(name, faults=faults, count=8, seed=seed, profile="gb200_nvl72_tray", rack_trays=4)
    data["fabric"] = {"leaves": 2, "spines": 2, "rails": 4, "oversubscription": 1.0}
    return data


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    with SimRun(racks("nvlf", FAULTS), tmp_path_factory.mktemp("nvlf")) as sim:
        yield sim.acceptance(*SKIP, "-e", SMALL)


def test_each_fault_is_named_at_its_scope_and_nothing_else(faulty):
    assert faulty.rc != 0
    bad = faulty.bad()
    assert REQUIRED <= bad <= ALLOWED | {(None, "nvlink_domain")}, sorted(bad, key=str)
    by = dict(((c["node"], c["check"]), c) for c in faulty.results["checks"] if c["status"] in ("fail", "error"))
    assert by[("gpu002", "gpu.fabric")]["component"] == "GPU1"
    assert "Status Insufficient Resources: NVLink registration failed" in by[("gpu002", "gpu.fabric")]["message"]
    assert by[("gpu003", "nvlink_domain.membership")]["message"].startswith("gpu003 is in NVLink clique 32767")
    links = [c for c in faulty.bad_checks("gpu004") if c["check"] == "gpu.nvlink_links"]
    assert sorted(c["component"] for c in links) == ["GPU0", "GPU1"]
    assert "16 of 18 NVLinks active" in links[0]["message"]
    (rack,) = [c for c in faulty.results["checks"] if c["check"] == "nvlink_domain.rack"]
    assert rack["metrics"]["nodes"] == ["gpu005", "gpu006", "gpu007", "gpu008"]
    assert "fail gpu.fabric: a rack-level fault" in rack["message"]
    imex = [c for c in faulty.results["checks"] if c["check"] == "nvlink_domain.imex"]
    assert any("the IMEX daemon of gpu001 does not answer" in c["message"] for c in imex), imex
    assert all("UNAVAILABLE" in c["message"] for c in imex)
    assert [c["component"] for c in faulty.bad_checks("gpu001")] == ["imex"]


def test_the_usable_capacity_is_in_the_summary_results_report_and_metrics(faulty):
    block = faulty.results["nvlink_domains"]
    assert block["full_domains"] == 0 and block["outside"] == ["gpu002"]
    # rack 1's domain (gpu001, gpu004), gpu003's clique of rack 1, rack 2's domain
    assert sorted((r["trays"], r["trays_passed"]) for r in block["domains"]) == [(1, 0), (2, 0), (4, 0)]
    statement = block["statement"]
    assert "NVLink domains: %s" % statement in faulty.output
    assert "tensor-parallel groups that fit in a domain" in statement and "1 tray(s) in no domain (gpu002)" in statement
    assert "gpu[005-008] FAIL nvlink_domain: all 4 trays of NVLink domain" in faulty.output
    page = (faulty.dir / "report.html").read_text()
    assert '<section id="nvlink">' in page and "Trays registered in no NVLink domain: gpu002" in page
    metrics = (faulty.dir / "metrics.prom").read_text()
    assert "gpucluster_acceptance_nvlink_domains_full 0" in metrics
    assert 'gpucluster_acceptance_nvlink_domain_tp_groups{tp="4"}' in metrics


def test_replay_with_the_cluster_gone_gives_the_same_verdict(faulty, tmp_path):
    """Replayed with every stage asked for: the ones the run did not capture (fabric, RDMA, the
    workload) are skipped as not captured, never an error that blames the launcher on each node."""
    inventory = faulty.dir.parents[1] / "inventory" / "hosts.yml"
    replay = playbook(inventory, tmp_path / "replay", "-e", SMALL, "-e", "acceptance_replay_dir=%s" % faulty.dir)
    assert replay.rc == faulty.rc
    assert replay.results["verdict"]["failed_nodes"] == faulty.results["verdict"]["failed_nodes"]
    assert replay.results["verdict"]["message"] == faulty.results["verdict"]["message"]
    assert replay.results["nvlink_domains"] == faulty.results["nvlink_domains"]
    uncaptured = [c for c in replay.results["checks"] if c["stage"] in ("fabric", "rdma", "workload")]
    assert uncaptured and set(c["status"] for c in uncaptured) == {"skip"}, [
        (c["stage"], c["status"], c["message"]) for c in uncaptured if c["status"] != "skip"][:5]
    assert any(c["message"].startswith("not captured: the replayed run") for c in uncaptured if c["stage"] == "rdma")


def _topology(sim, tmp_path, results, *args, **extra):
    variables = {"slurm_topology_action": "validate", "slurm_topology_plugin": "block",
                 "slurm_topology_nodes": ["gpu[001-008]"], "slurm_topology_results_file": str(results),
                 "slurm_topology_environment": "{{ acceptance_controller_environment }}"}
    variables.update(extra)
    path = tmp_path / ("vars-%d.json" % len(list(tmp_path.glob("vars-*.json"))))
    path.write_text(json.dumps(variables))
    return playbook(sim.inventory, tmp_path / "topology-artifacts", "-e", "@%s" % path, *args,
                    playbook_name="slurm_topology.yml")


@pytest.mark.parametrize("seed", [3, 5, 9])
def test_clean_racks_pass_and_slurm_blocks_come_from_the_measured_cliques(tmp_path, seed):
    from ansible_collections.gpucluster.acceptance.plugins.filter.slurm_topology_from_fabric import (
        slurm_topology_from_fabric)
    with SimRun(racks("nvlc", seed=seed), tmp_path) as sim:
        run = sim.acceptance(*SKIP, "-e", SMALL)
        assert run.rc == 0, run.output[-3000:]
        assert run.results["nvlink_domains"]["full_domains"] == 2
        assert "NVLink domains: 2 NVLink domain(s) (8 trays, 32 GPUs): 2 full (4 trays each, all passing)" in run.output
        built = slurm_topology_from_fabric(run.results, "nvlink", plugin="block")
        assert [line for line in built["text"].splitlines() if not line.startswith("#")] == [
            "BlockName=nvl01 Nodes=gpu[001-004]", "BlockName=nvl02 Nodes=gpu[005-008]", "BlockSizes=4"]
        if seed != 3:
            return
        planned = _topology(sim, tmp_path, run.dir / "results.json", "--check", "--diff", slurm_topology_action="install",
                            slurm_topology_source="nvlink", slurm_topology_conf_path=str(tmp_path / "topology.conf"))
        # The InfiniBand fabric stage turns multi-node NVLink off: a pair of one rack measures
        # InfiniBand (~170 GB/s here), never the rack's NVLink (~610 GB/s with it on).
        fabric = sim.acceptance("--tags", "fabric", "-e", SMALL)
        swapped = _topology(sim, tmp_path, run.dir / "results.json", slurm_topology_content=SWAPPED)
        right = _topology(sim, tmp_path, run.dir / "results.json", slurm_topology_content=RIGHT)
    assert swapped.rc != 0 and "topology.conf misdescribes the fabric" in swapped.output, swapped.output[-3000:]
    out = " ".join(swapped.output.split())
    assert "gpu005 is in block block_a but its GPUs are in NVLink domain" in out, swapped.output[-3000:]
    assert "gpu004 is in block block_b but its GPUs are in NVLink domain" in out
    assert right.rc == 0, right.output[-3000:]
    assert fabric.rc == 0, fabric.output[-3000:]
    pairs = [v for row in fabric.results["fabric"]["matrix"].values() for v in row.values()]
    assert pairs and all(120 < v < 300 for v in pairs), pairs
    # install from the measured domains in check mode: the file it would write, nothing written
    assert planned.rc == 0, planned.output[-3000:]
    assert "+BlockName=nvl01 Nodes=gpu[001-004]" in planned.output and "+BlockSizes=4" in planned.output
    assert not (tmp_path / "topology.conf").exists()
