"""The session's pool of simulated clusters (tests/integration/cluster_pool.py): a borrower of a
shape gets a running cluster that looks freshly started for its own spec, and a cluster that
cannot be made so again is never lent."""
import json
import os
import signal

import pytest
import yaml

import cluster_pool
from harness import SimRun, poll, spec

pytestmark = pytest.mark.integration

XID = {"kind": "xid", "node": "gpu001", "gpu": 1, "xid": 79}


def test_a_second_borrower_of_a_shape_gets_the_running_cluster_with_its_own_spec_and_nothing_left(tmp_path):
    with SimRun(spec("poola", count=2, faults=[XID], seed=3), tmp_path / "a") as first:
        run_dir = first.run_dir
        ctld = first.cluster.state()["slurmctld"]["pid"]
        # What a test leaves behind: a drained node, a running job, the tools' remembered state.
        first.cluster.scontrol("update", "nodename=gpu002", "state=drain", "reason=left by a test")
        job = first.cluster.run(["sbatch", "--wrap", "sleep 600", "-w", "gpu001", "-o", "/dev/null"])
        assert job.returncode == 0, job.stderr
        (run_dir / "gpusim").mkdir(exist_ok=True)
        (run_dir / "gpusim" / "gpu001.json").write_text('{"left_by_a_test": 1}')
    with SimRun(spec("poolb", count=2, seed=9), tmp_path / "b") as second:
        assert second.run_dir == run_dir and second.cluster.state()["slurmctld"]["pid"] == ctld
        assert second.cluster.sinfo() == {"gpu001": "idle", "gpu002": "idle"}
        assert second.cluster.run(["squeue", "--noheader"]).stdout.strip() == ""
        remembered = run_dir / "gpusim" / "gpu001.json"  # a fresh start writes its own (the fake sysfs)
        assert not remembered.exists() or "left_by_a_test" not in remembered.read_text()
        # The fake tools read this test's spec: its name, seed and (no) faults.
        told = yaml.safe_load((run_dir.parent / "spec.yml").read_text())
        assert (told["name"], told["seed"], told["faults"]) == ("poolb", 9, [])
        assert json.loads((run_dir / "spec.json").read_text())["seed"] == 9
        assert second.cluster.spec.seed == 9 and not second.cluster.spec.faults
        # and the inventory sends the tools there
        inventory = yaml.safe_load(open(second.inventory))
        env = inventory["all"]["children"]["gpu_nodes"]["vars"]["acceptance_environment"]
        assert env["GPUCLUSTER_SIM_SPEC"] == str(run_dir.parent / "spec.yml")


def test_a_cluster_whose_slurmctld_died_is_stopped_and_never_lent_again(tmp_path):
    with SimRun(spec("poolk", count=3), tmp_path / "a") as first:
        run_dir = first.run_dir
        slurmds = [i["pid"] for i in first.cluster.state()["slurmd"].values()]
        os.kill(first.cluster.state()["slurmctld"]["pid"], signal.SIGKILL)
    poll(lambda: not any(cluster_pool.simcluster.alive(p) for p in slurmds), 30, "the broken cluster's slurmd to stop")
    with SimRun(spec("poolk2", count=3), tmp_path / "b") as second:
        assert second.run_dir != run_dir
        assert second.cluster.sinfo() == {"gpu001": "idle", "gpu002": "idle", "gpu003": "idle"}


@pytest.mark.parametrize("extra", [{"accounting": True},
                                   {"faults": [{"kind": "slow_node", "node": "gpu001", "factor": 0.5,
                                                "intermittent": 0.5}]}],
                         ids=["accounting", "intermittent"])
def test_specs_that_depend_on_the_cluster_s_history_get_a_cluster_of_their_own(extra):
    data = spec("poolx", count=2, **extra)
    assert not cluster_pool.poolable(data)
    assert cluster_pool.poolable(spec("poolx", count=2))


def test_the_shape_is_what_the_daemons_were_configured_from():
    base = spec("one", count=4, seed=1)
    assert cluster_pool.shape_key(base) == cluster_pool.shape_key(
        spec("two", count=4, seed=5, faults=[XID], tool_times={"nvidia_smi": 1}))
    for other in (spec("one", count=5), spec("one", count=4, transport="ssh"),
                  spec("one", count=4, unreachable=["gpu002"]),
                  spec("one", count=4, fabric={"leaves": 4, "spines": 2, "rails": 8, "oversubscription": 1.0})):
        assert cluster_pool.shape_key(other) != cluster_pool.shape_key(base)
