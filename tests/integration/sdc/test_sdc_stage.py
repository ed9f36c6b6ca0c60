"""The sdc stage on the simulated cluster: known-answer probes and the compute floor, end to end.

Real ansible-playbook runs of acceptance.yml (--tags sdc) on a real Slurm; the probe is the real
PyTorch code on the CPU, the simulation hook flips bits of one GPU's results (always, or with a
probability) and slows one GPU's simulated device clock. Every verdict is read from the run's
validated results.json, and a replay of the captured outputs must give the same verdicts.
"""
import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration

BUS = {1: "00000000:2A:00.0", 2: "00000000:3A:00.0", 5: "00000000:AB:00.0"}
FAULTS = [
    {"kind": "sdc", "node": "gpu001", "gpu": 5},
    {"kind": "sdc", "node": "gpu002", "gpu": 1, "probability": 0.1},
    {"kind": "slow_gpu", "node": "gpu003", "gpu": 2, "factor": 0.75},
]


def sdc_checks(run, node=None):
    return [c for c in run.results["checks"] if c["stage"] == "sdc" and (node is None or c["node"] == node)]


def bad(run, node):
    return [c for c in sdc_checks(run, node) if c["status"] in ("fail", "error")]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    with SimRun(spec("sdcf", FAULTS, count=4), tmp_path_factory.mktemp("sdcf")) as sim:
        run = sim.acceptance("--tags", "sdc")
        replay = sim.acceptance("--tags", "sdc", "-e", "acceptance_replay_dir=%s" % run.dir)
        yield run, replay


def test_always_corrupting_gpu_is_named_by_node_and_bus_id(faulty):
    run = faulty[0]
    (check,) = [c for c in bad(run, "gpu001") if c["check"] == "sdc.consistency"]
    assert BUS[5] in check["component"] and "GPU5" in check["component"]
    assert "in every iteration" in check["message"] and "first at iteration 0" in check["message"]
    # Only that GPU: the other seven agree with each other.
    assert all(BUS[5] in c["component"] for c in bad(run, "gpu001"))


def test_intermittent_corruption_is_named_with_its_rate(faulty):
    run = faulty[0]
    (check,) = [c for c in bad(run, "gpu002") if c["check"] == "sdc.consistency"]
    assert BUS[1] in check["component"]
    assert "intermittently, rate" in check["message"]
    rates = [w["rate"] for w in check["metrics"]["workloads"]]
    assert rates and all(0 < r < 0.5 for r in rates), rates


def test_slow_gpu_is_named_by_the_floor_and_the_peers(faulty):
    run = faulty[0]
    failed = bad(run, "gpu003")
    assert {c["check"] for c in failed} == {"sdc.compute", "sdc.peers"}
    for check in failed:
        assert BUS[2] in (check["component"] or "") + check["message"]
    (peers,) = [c for c in failed if c["check"] == "sdc.peers"]
    assert "25 % below the median" in peers["message"]


def test_clean_node_passes_and_says_what_it_proved(faulty):
    run = faulty[0]
    assert bad(run, "gpu004") == []
    messages = " | ".join(c["message"] for c in sdc_checks(run, "gpu004"))
    assert "on 8 GPUs, at least 20 iterations" in messages
    assert "bitwise identical across the node's GPUs" in messages
    assert run.results["nodes"]["gpu004"]["stages"]["sdc"] == "pass"
    assert sorted(n for n, v in run.results["nodes"].items() if v["status"] != "pass") == [
        "gpu001", "gpu002", "gpu003"]


def test_replay_gives_the_same_verdicts(faulty):
    run, replay = faulty

    def verdicts(r):
        return sorted((c["node"], c["check"], c["status"], c.get("component")) for c in sdc_checks(r))
    assert verdicts(replay) == verdicts(run)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_clean_cluster_passes_over_seeds(tmp_path, seed):
    with SimRun(spec("sdcc%d" % seed, count=3, seed=seed), tmp_path) as sim:
        run = sim.acceptance("--tags", "sdc", "-e", "check_sdc_seed=%d" % seed)
    assert [c for c in sdc_checks(run) if c["status"] in ("fail", "error")] == []
    assert {c["check"] for c in sdc_checks(run)} >= {"sdc.coverage", "sdc.consistency", "sdc.reference",
                                                     "sdc.compute", "sdc.peers"}
