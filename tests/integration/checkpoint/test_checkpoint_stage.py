"""The checkpoint stages on the simulated cluster: real torch.save + fsync, torch.load, sha256 and fio on
each node, alone then all at once (role check_checkpoint through playbooks/checkpoint_plan.yml, its plan
made from a quoted M: the accounting part is tests/integration/checkpoint/test_checkpoint_plan_playbook.py). The simulated
storage clock makes a slow_storage node's MB/s exact and splits the shared file system among the nodes
writing at once. Verdicts from the run's validated results.json."""
import pytest

from conftest import FIXTURES
from harness import SimRun, spec

pytestmark = pytest.mark.integration

PLAYBOOK = "checkpoint_plan.yml"
PLAN = ["-e", "checkpoint_plan_accounting=false", "-e", "checkpoint_plan_mtbf_node_h=1000"]
NODES = ["gpu%03d" % i for i in range(1, 7)]
STAGES = ("checkpoint_alone", "checkpoint")
CRASHING_PYTHON = FIXTURES / "crashing_python" / "python-oom"
# What the checkpoint plan reads from every node's stages (the checkpoint.async check carries it).
CONTRACT = {"shard_bytes", "local_write_s", "local_read_s", "shared_write_s", "shared_read_s", "release_s",
            "durable_s", "local_write_mb_s", "shared_write_mb_s", "fio", "verified", "simulated"}


def checkpoint_checks(run, node=None, check=None):
    return [c for c in run.results["checks"] if c["stage"] in STAGES and (node is None or c["node"] == node)
            and (check is None or c["check"] == check)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    faults = [{"kind": "slow_storage", "node": "gpu003", "factor": 0.2}]
    with SimRun(spec("ckpt", faults, count=len(NODES)), tmp_path_factory.mktemp("ckpt")) as sim:
        slow = sim.acceptance(*PLAN, playbook_name=PLAYBOOK)
        missing = sim.acceptance(*PLAN, "-e", "check_checkpoint_shared_path=/nonexistent/gpucluster-ckpt",
                                 "-e", "check_checkpoint_isolation=false", playbook_name=PLAYBOOK)
        leftovers = sorted(str(p) for p in sim.run_dir.glob("*/gpucluster-checkpoint-*"))
        crashed = sim.acceptance(*PLAN, "-e", "check_checkpoint_python=%s" % CRASHING_PYTHON, playbook_name=PLAYBOOK)
        yield slow, missing, leftovers, crashed


def test_slow_nvme_node_is_named_with_its_rate_and_the_peers_median(runs):
    run = runs[0]
    assert run.rc != 0
    assert sorted(run.bad()) == [("gpu003", "checkpoint"), ("gpu003", "checkpoint_alone")], run.bad()
    for stage in STAGES:
        (peer,) = [c for c in checkpoint_checks(run, "gpu003", "peers_local_write_mb_s") if c["stage"] == stage]
        assert peer["status"] == "fail"
        assert "gpu003 local NVMe checkpoint write" in peer["message"]
        assert "400 MB/s is 80 % below the cluster median 2000 MB/s" in peer["message"]
    (write,) = [c for c in checkpoint_checks(run, "gpu003", "checkpoint.write")
                if c["stage"] == "checkpoint" and c["component"].startswith("local NVMe")]
    assert "400 MB/s" in write["message"] and "(simulated storage clock)" in write["message"]


def test_clean_nodes_pass_both_stages(runs):
    run = runs[0]
    for node in NODES:
        if node != "gpu003":
            checks = checkpoint_checks(run, node)
            others = [c["message"] for c in checks if c["status"] != "pass"]
            assert checks and not others, others
    assert {c["check"] for c in checkpoint_checks(run, "gpu001")} == {
        "checkpoint.write", "checkpoint.async", "checkpoint.verify", "checkpoint.fio", "peers_local_write_mb_s",
        "peers_shared_write_mb_s", "checkpoint.contention"}


def test_both_stages_record_the_metrics_contract(runs):
    run = runs[0]
    for node in NODES:
        for stage in STAGES:
            (pattern,) = [c for c in checkpoint_checks(run, node, "checkpoint.async") if c["stage"] == stage]
            metrics = pattern["metrics"]
            assert CONTRACT <= set(metrics), (node, stage, sorted(CONTRACT - set(metrics)))
            assert metrics["shard_bytes"] > 8000000 and metrics["verified"] is True and metrics["simulated"] is True
            assert set(metrics["fio"]) == {"local", "shared"} and metrics["fio"]["local"]["write_mb_s"] > 0
            assert metrics["durable_s"] > metrics["release_s"] > 0
            expected = 400.0 if node == "gpu003" else 2000.0
            assert metrics["local_write_mb_s"] == expected
            # Alone a node reaches its client's 2 GB/s; six at once split the 4 GB/s aggregate.
            assert metrics["shared_write_mb_s"] == (2000.0 if stage == "checkpoint_alone" else pytest.approx(666.67))
    contention = checkpoint_checks(run, check="checkpoint.contention")
    assert len(contention) == len(NODES)
    assert "with 6 nodes at once: 667 MB/s, 33 % of the 2000 MB/s it writes alone" in contention[0]["message"]


def test_missing_shared_path_is_an_error_naming_node_stage_and_tool(runs):
    run, leftovers = runs[1], runs[2]
    assert run.rc != 0
    for node in NODES:
        (error,) = [c for c in checkpoint_checks(run, node) if c["status"] == "error"]
        assert error["stage"] == "checkpoint" and error["check"] == "checkpoint.setup" and error["node"] == node
        assert error["message"] == (
            "checkpoint-probe on %s (stage checkpoint): shared file system path /nonexistent/gpucluster-ckpt: "
            "/nonexistent/gpucluster-ckpt does not exist (nor its parent /nonexistent)" % node)
        # the local NVMe is still measured
        assert [c["status"] for c in checkpoint_checks(run, node, "checkpoint.write")] == ["pass"]
    assert leftovers == []  # every checkpoint and fio file was removed


def test_a_crashed_checkpoint_probe_is_an_error_in_its_own_words_and_plans_nothing(runs):
    """The probe's Python dies of an out-of-memory before its first record on every node."""
    run = runs[3]
    assert run.rc != 0
    for node in NODES:
        assert run.results["nodes"][node]["stages"] == {"checkpoint_alone": "error", "checkpoint": "error"}
        for stage in STAGES:
            crash = [c for c in checkpoint_checks(run, node) if c["stage"] == stage and c["check"] == "collect"]
            assert len(crash) == 1 and crash[0]["component"] == "probe", crash
            assert crash[0]["message"].startswith("checkpoint-probe%s exited with status 1: the probe did not finish"
                                                  % ("-alone" if stage == "checkpoint_alone" else ""))
            assert crash[0]["message"].endswith("MemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert not [c for c in checkpoint_checks(run) if c["status"] == "pass" and not c["message"].startswith("warning:")]
    # No write time was measured: the plan has nothing to plan from.
    write = run.results["checkpoint_plan"]["write"]
    assert write is None or write.get("source") != "measured", write
