"""The RDMA pair stage on a simulated cluster with real Slurm: perftest NIC k to NIC k on every
rail, one Slurm step per round, a slow NIC named by node, NIC, rail and GPU while nccl-tests
passes, no false alarm on clean clusters, and infrastructure failures that blame no NIC."""
import json

import pytest

from harness import SimRun, playbook, spec

pytestmark = pytest.mark.integration

HALF = {"kind": "nic_slow", "node": "gpu003", "nic": "mlx5_3", "factor": 0.5}


def rdma_checks(run, status=("fail", "error")):
    """The stage's per-NIC bandwidth checks (not its ib.counters ones) with one of these statuses."""
    return [c for c in run.results["checks"] if c["stage"] == "rdma" and c["check"] == "rdma.nic_bandwidth"
            and c["status"] in status]


def test_half_rate_nic_is_found_by_perftest_and_named_while_busbw_passes(tmp_path):
    with SimRun(spec("rdhalf", faults=[HALF], count=8), tmp_path) as sim:
        run = sim.acceptance("--tags", "rdma,fabric")
    assert run.rc != 0
    (bad,) = rdma_checks(run)
    assert (bad["node"], bad["status"], bad["component"]) == ("gpu003", "fail", "gpu003 mlx5_3")
    assert bad["message"].startswith("gpu003 mlx5_3 (rail 3, GPU3): ")
    assert "each partner passed twice with other nodes" in bad["message"] and "Gb/s" in bad["message"]
    assert bad["metrics"]["verdict"] == "pinned" and bad["metrics"]["rail"] == 3
    assert max(bad["metrics"]["gbits"]) < 0.6 * 400
    # nccl-tests across the nodes does not see it: one rail of eight at half rate.
    fabric = [c for c in run.results["checks"] if c["stage"] == "fabric"]
    assert fabric and all(c["status"] == "pass" for c in fabric)
    assert ("gpu003", "rdma") in run.junit_bad() and not [k for k in run.junit_bad() if k[1] == "fabric"]
    document = run.results["rdma"]
    assert document["rails"]["3"]["pinned"] == ["gpu003"]
    assert all(not r["pinned"] for k, r in document["rails"].items() if k != "3")
    assert document["nics"]["gpu003"]["mlx5_3"] == {"rail": 3, "gpu": 3, "verdict": "pinned"}
    assert len(document["rounds"]) <= 3
    # every output kept: both ends of every test, the step's own lines
    raw = run.results["raw"]["_rdma"]
    first = document["rounds"][0]["tests"][0]["key"]
    assert {first + ".server", first + ".client", "round1.srun"} <= set(raw)
    # Replay is the proof: the same verdicts from the captured outputs alone, the cluster stopped.
    replay = playbook(sim.inventory, tmp_path / "replayed", "--tags", "rdma",
                      "-e", "acceptance_replay_dir=%s" % run.dir)
    assert [(c["node"], c["component"], c["status"], c["message"]) for c in rdma_checks(replay, ("pass", "fail"))] == \
        [(c["node"], c["component"], c["status"], c["message"]) for c in rdma_checks(run, ("pass", "fail"))]
    assert replay.results["rdma"]["replayed"] is True


def test_an_odd_node_count_is_tested_in_a_group_of_three_and_the_slow_nic_still_pinned(tmp_path):
    with SimRun(spec("rdodd", faults=[dict(HALF, node="gpu005")], count=5), tmp_path) as sim:
        run = sim.acceptance("--tags", "rdma")
    (bad,) = rdma_checks(run)
    assert (bad["node"], bad["component"], bad["metrics"]["verdict"]) == ("gpu005", "gpu005 mlx5_3", "pinned")
    passed = rdma_checks(run, ("pass",))
    assert len(passed) == 5 * 8 - 1
    steps = [t for r in run.results["rdma"]["rounds"] for t in r["tests"] if t["step"] == 2]
    assert steps and all(len(t["group"]) == 3 for t in steps)
    assert any(k.endswith("-step2.srun") for k in run.results["raw"]["_rdma"])


def test_a_link_that_flaps_only_under_traffic_is_found_by_the_stage_whose_traffic_it_was(tmp_path):
    flap = {"kind": "link_flap", "node": "gpu003", "nic": "mlx5_1"}
    with SimRun(spec("rdflap", faults=[flap], count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "infiniband,rdma")
    assert run.rc != 0
    # idle, the infiniband stage's window sees nothing; under perftest the link went down and came back
    idle = [c for c in run.results["checks"] if c["stage"] == "infiniband" and c["check"] == "ib.counters"]
    assert idle and all(c["status"] == "pass" for c in idle)
    bad = [c for c in run.results["checks"] if c["status"] in ("fail", "error")]
    assert bad and set((c["node"], c["stage"], c["check"], c["component"]) for c in bad) == {
        ("gpu003", "rdma", "ib.counters", "mlx5_1 port 1")}
    # once per round gpu003's mlx5_1 carried traffic, both counters
    assert {"mlx5_1 port 1 link_downed rose by 1 during perftest round 1 (limit 0)",
            "mlx5_1 port 1 link_error_recovery rose by 1 during perftest round 1 (limit 0)"} <= set(c["message"] for c in bad)
    assert len(bad) == 2 * len([r for r in run.results["rdma"]["rounds"]
                                if any("gpu003" in (t["server"], t["client"]) and t["rail"] == 1 for t in r["tests"])])
    assert any(line.startswith("after: ") and line.endswith("link_downed:1") for c in bad for line in c["evidence"])
    # the bandwidth alone would have passed it (the flap cost 1.5 % of one run)
    assert all(c["status"] == "pass" for c in run.results["checks"] if c["check"] == "rdma.nic_bandwidth")
    counters = [c for c in run.results["checks"] if c["stage"] == "rdma" and c["check"] == "ib.counters"
                and c["status"] == "pass"]
    assert sorted(c["node"] for c in counters) == ["gpu001", "gpu002", "gpu004"]
    assert "round1.counters-gpu003.after" in run.results["raw"]["_rdma"]
    replay = playbook(sim.inventory, tmp_path / "replayed", "--tags", "rdma", "-e", "acceptance_replay_dir=%s" % run.dir)
    assert sorted(c["message"] for c in replay.results["checks"] if c["status"] in ("fail", "error")) == \
        sorted(c["message"] for c in bad)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_clean_cluster_raises_no_alarm(tmp_path, seed):
    with SimRun(spec("rdclean%d" % seed, count=4, seed=seed), tmp_path) as sim:
        run = sim.acceptance("--tags", "rdma", "-e", "check_rdma_seed=%d" % seed)
    assert run.rc == 0, run.output[-3000:]
    checks = rdma_checks(run, ("pass", "fail", "error", "skip"))
    assert len(checks) == 4 * 8 and all(c["status"] == "pass" for c in checks)
    # and no counter rose under the perftest traffic on any node
    counters = [c for c in run.results["checks"] if c["stage"] == "rdma" and c["check"] == "ib.counters"]
    assert sorted(c["node"] for c in counters) == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert all(c["status"] == "pass" for c in counters)
    assert all(350 < v for c in checks for v in c["metrics"]["gbits"])


def test_a_port_that_is_down_is_named_with_perftest_s_words(tmp_path):
    with SimRun(spec("rddown", faults=[{"kind": "nic_down", "node": "gpu002", "nic": "mlx5_5"}], count=4),
                tmp_path) as sim:
        # No infiniband stage ran: perftest meets the port itself. The start-up window is what a
        # round waits for the server that refused the test (its client retries until it closes)
        # and, twice over, for the client that did (its server waits for nobody): 10 s, not 30.
        run = sim.acceptance("--tags", "rdma", "-e", "check_rdma_startup=10")
    (bad,) = rdma_checks(run)
    assert (bad["node"], bad["component"]) == ("gpu002", "gpu002 mlx5_5")
    assert "the NIC refused the test: Port number 1 state is Down" in bad["message"]


def test_a_launcher_failure_is_an_error_that_blames_no_nic(tmp_path):
    with SimRun(spec("rdinfra", count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "rdma", "-e", json.dumps({"check_rdma_launcher_args": ["--partition=nosuch"]}))
    assert run.rc != 0
    checks = rdma_checks(run, ("pass", "fail", "error"))
    assert checks and all(c["status"] == "error" for c in checks)
    assert not run.results["rdma"]["rails"]["0"]["pinned"]
    assert run.results["rdma"]["error"]["component"] == "launcher"
    assert "nosuch" in run.results["rdma"]["error"]["cause"] or "partition" in run.results["rdma"]["error"]["cause"]


def test_check_mode_lists_the_first_round_and_runs_no_perftest(tmp_path):
    with SimRun(spec("rdcheck", count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "rdma", "--check")
    assert run.rc == 0, run.output[-3000:]
    assert "perftest pairs from the controller, first round: 16 test(s) on 8 rail(s) in one Slurm step" in run.output
    assert not list(tmp_path.glob("artifacts/*/raw/_rdma/*"))
