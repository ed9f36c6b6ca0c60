"""Slurm accounting of the simulated cluster (sim/accounting.py) and its job history (sim/jobhistory.py).

A real MariaDB and slurmdbd per cluster, real sacct / sacctmgr records, real injected node failures.
Needs root and the packages from tools/install-system-deps.sh (slurmdbd, mariadb-server).
Synchronisation is by polling with deadlines, never by fixed sleeps. About 40 s on 2 cores.
"""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness import clusterctl, poll

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

import accounting  # noqa: E402  pylint: disable=wrong-import-position,import-error
import jobhistory  # noqa: E402  pylint: disable=wrong-import-position,import-error
import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from gpusim import spec as tool_spec  # noqa: E402  pylint: disable=wrong-import-position,import-error

pytestmark = pytest.mark.integration  # tests/conftest.py fails fast without root or Slurm

# 16 jobs of 2 s on 2 of 8 nodes; seed 2 plans 4 node failures: two jobs without --requeue and one
# requeued job that fails twice (three sacct records), plus two jobs that exit non-zero.
HISTORY = ["--jobs", "16", "--nodes-per-job", "2", "--seconds", "2", "--node-fail-rate", "0.08",
           "--requeue-fraction", "0.5", "--restart-delay", "1", "--exit-failures", "2", "--seed", "2"]


def run_pids(run_dir):
    """Every daemon pid state.json names: slurmctld, the slurmds, mariadbd and slurmdbd."""
    state = json.loads((Path(run_dir) / "state.json").read_text())
    pids = {"slurmctld": state["slurmctld"]["pid"]}
    pids.update({"slurmd " + n: i["pid"] for n, i in state["slurmd"].items() if i["pid"]})
    for name in ("mariadbd", "slurmdbd"):
        if state.get("accounting"):
            pids[name] = state["accounting"][name]["pid"]
    return pids


def psv(text):
    """sacct / sacctmgr -P output with a header: a list of dicts."""
    lines = text.splitlines()
    head = lines[0].split("|")
    return [dict(zip(head, line.split("|", len(head) - 1))) for line in lines[1:]]


@pytest.fixture(scope="module")
def acct(tmp_path_factory):
    """A running 8-node cluster with accounting (harness.SimRun); stopped at the end."""
    with harness.SimRun(harness.spec("acctit", count=8, accounting=True), tmp_path_factory.mktemp("acct")) as sim:
        yield sim


@pytest.fixture(scope="module")
def history(acct, tmp_path_factory):
    """The job history of HISTORY run by `clusterctl history` on that cluster: (truth, proc)."""
    out = tmp_path_factory.mktemp("hist") / "truth.json"
    proc = clusterctl("history", acct.run_dir, *HISTORY, "--out", out, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc


def test_start_runs_mariadb_and_slurmdbd_and_sacct_shows_a_job(acct):
    state = acct.cluster.state()
    entry = state["accounting"]
    ports = [state["slurmctld"]["port"] + i for i in range(1 + 8 + 2)]
    assert [entry["mariadbd"]["port"], entry["slurmdbd"]["port"]] == ports[-2:]
    for name in ("mariadbd", "slurmdbd"):
        assert simcluster.alive(entry[name]["pid"]), name
    conf = acct.run_dir / "etc" / "slurmdbd.conf"
    info = conf.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == 0
    assert "StorageType=accounting_storage/mysql" in conf.read_text()
    slurm_conf = (acct.run_dir / "etc" / "slurm.conf").read_text()
    assert "AccountingStorageType=accounting_storage/slurmdbd" in slurm_conf
    assert "AccountingStoragePort=%d" % entry["slurmdbd"]["port"] in slurm_conf
    assert (acct.run_dir / "db" / "my.cnf").exists()
    # slurmctld registered the cluster itself.
    clusters = acct.cluster.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=Cluster"]).stdout.split()
    assert clusters == ["acctit"]
    job = acct.cluster.run(["sbatch", "--parsable", "-N1", "-J", "acct-smoke", "-o", "/dev/null", "--wrap", "true"])
    assert job.returncode == 0, job.stderr
    jobid = job.stdout.strip()

    def record():
        proc = acct.cluster.run(["sacct", "-P", "-X", "-j", jobid, "--format=JobID,JobName,State,ExitCode"])
        # The end of a short job may reach the database first: its record says JobName "allocation"
        # until the start message fills it in.
        return proc.returncode == 0 and [r for r in psv(proc.stdout) if r["State"] == "COMPLETED"
                                         and r["JobName"] != "allocation"]
    rows = poll(record, 30, "sacct to show job %s COMPLETED" % jobid)
    assert rows == [{"JobID": jobid, "JobName": "acct-smoke", "State": "COMPLETED", "ExitCode": "0:0"}]


def test_status_reports_mariadb_and_slurmdbd(acct):
    status = json.loads(clusterctl("status", "--run-dir", acct.run_dir).stdout)
    assert status["running"] is True
    state = acct.cluster.state()["accounting"]
    for name in ("mariadbd", "slurmdbd"):
        assert status["accounting"][name] == {"pid": state[name]["pid"], "alive": True, "port": state[name]["port"]}


def test_history_records_match_truth(acct, history):
    truth, proc = history
    assert "sacct matches" in proc.stderr and truth["mismatches"] == []
    assert truth["job_count"] == 16 and truth["rate_per_node_s"] == 0.08 and truth["restart_delay_s"] == 1.0
    fails = truth["node_failures"]
    assert len(fails) + len(truth["missed_failures"]) == truth["planned_node_failures"] == 4
    assert len(fails) >= 3, truth["missed_failures"]
    window = ["-S", truth["window"]["start"], "-E", truth["window"]["end"]]
    out = acct.cluster.run(["sacct", "-a", "-P", "-X", "-D", *window,
                            "--format=JobID,JobName,State,ExitCode,Start,End,ElapsedRaw,NNodes,NodeList,Reason"])
    assert out.returncode == 0, out.stderr
    rows = [r for r in psv(out.stdout) if r["JobName"].startswith("hist-")]
    by_job = {}
    for row in rows:
        by_job.setdefault(row["JobID"], []).append(row)
    # Every job's records, oldest first, are the states truth.json says.
    assert {j["job"]: j["states"] for j in truth["jobs"]} == {j: [r["State"] for r in rs] for j, rs in by_job.items()}
    assert sum(r["State"] == "NODE_FAIL" for r in rows) == len(fails)
    exits = sorted(r["ExitCode"] for r in rows if r["State"] == "FAILED")
    assert exits == ["1:0", "2:0"]
    for fail in fails:
        record = by_job[fail["job"]][fail["run"]]
        assert record["State"] == "NODE_FAIL" and fail["node"] in subprocess.run(
            ["scontrol", "show", "hostnames", record["NodeList"]], env=dict(os.environ, **acct.cluster.env()),
            capture_output=True, text=True, check=True).stdout.split()
    # The requeued job: NODE_FAIL records, then a new run that started restart_delay s or more later.
    assert truth["requeued"], "the plan requeues one job"
    for item in truth["requeued"]:
        chain = by_job[item["job"]]
        assert len(chain) > item["run"] and chain[item["run"] - 1]["State"] == "NODE_FAIL"
        gap = jobhistory._epoch(chain[item["run"]]["Start"]) - jobhistory._epoch(chain[item["run"] - 1]["End"])
        assert 0 <= gap <= 10, gap  # released 1 s after the failure, then scheduled; sacct times are whole seconds
        assert item["restart_s_observed"] >= 1.0
    # Node DOWN events with the reason, one per failure, and every node back afterwards.
    events = acct.cluster.run(["sacctmgr", "-P", "list", "event", "event=node", "start=%s" % truth["window"]["start"],
                               "end=%s" % truth["window"]["end"], "format=NodeName,Start,End,State,Reason,User"])
    assert events.returncode == 0, events.stderr
    downs = [e for e in psv(events.stdout) if e["Reason"] == jobhistory.REASON]
    # (a missed failure, one whose job had ended first, still set its node DOWN once)
    assert sorted(e["NodeName"] for e in downs) == sorted(f["node"] for f in fails + truth["missed_failures"])
    assert all(e["State"] == "DOWN" and e["User"] == "root(0)" for e in downs)
    poll(lambda: set(acct.cluster.sinfo().values()) == {"idle"}, 30, "every node idle after the history")


def test_stop_leaves_no_daemon_of_the_run(tmp_path):
    sim = harness.SimRun(harness.spec("acctstop", count=2, accounting=True), tmp_path)
    with sim:
        pids = run_pids(sim.run_dir)
        assert {"slurmctld", "mariadbd", "slurmdbd"} <= set(pids) and all(simcluster.alive(p) for p in pids.values())
    assert not [name for name, pid in pids.items() if simcluster.alive(pid)]
    assert accounting.Accounting(sim.run_dir, sim.cluster.conf).pids(scan=True) == {"mariadbd": None, "slurmdbd": None}
    state = sim.cluster.state()
    assert state["accounting"]["mariadbd"]["pid"] is None and state["accounting"]["slurmdbd"]["pid"] is None
    assert "nothing running" in clusterctl("stop", "--run-dir", sim.run_dir).stderr


def test_failed_start_leaves_nothing_running(tmp_path, monkeypatch):
    # slurmdbd refuses an unknown key (fatal at start): the start fails after MariaDB is up.
    good = accounting.Accounting._slurmdbd_conf
    monkeypatch.setattr(accounting.Accounting, "_slurmdbd_conf",
                        lambda self, *a: good(self, *a) + "NoSuchSlurmdbdKey=1\n")
    sim = harness.SimRun(harness.spec("acctfail", count=2, accounting=True), tmp_path)
    with pytest.raises(simcluster.SimError, match="accounting: slurmdbd"):
        sim.cluster.start(timeout=20)
    state = sim.cluster.state()
    assert state["accounting"]["mariadbd"]["port"] and state["accounting"]["mariadbd"]["pid"] is None
    assert accounting.Accounting(sim.run_dir, sim.cluster.conf).pids(scan=True) == {"mariadbd": None, "slurmdbd": None}
    assert not sim.cluster._stray_daemons()  # pylint: disable=protected-access


def test_cluster_without_accounting_has_no_slurmdbd_and_sacct_says_so(tmp_path):
    with harness.SimRun(harness.spec("acctnone", count=2), tmp_path) as sim:
        state = sim.cluster.state()
        assert "accounting" not in state and not (sim.run_dir / "db").exists()
        assert not (sim.run_dir / "etc" / "slurmdbd.conf").exists()
        assert "AccountingStorageType=accounting_storage/none" in (sim.run_dir / "etc" / "slurm.conf").read_text()
        assert "accounting" not in json.loads(clusterctl("status", "--run-dir", sim.run_dir).stdout)
        proc = sim.cluster.run(["sacct", "-a", "-P", "-X"])
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "Slurm accounting storage is disabled\n")
        refused = clusterctl("history", sim.run_dir, "--jobs", "2", check=False)
        assert refused.returncode == 1 and "has no accounting" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_accounting_key_must_be_a_boolean_in_both_validators(value):
    data = harness.spec("acctbad", accounting=value)
    with pytest.raises(simcluster.SpecError, match=r"^spec: accounting: must be true or false"):
        simcluster.validate_spec(data)
    with pytest.raises(tool_spec.SpecError, match=r"accounting: must be true or false"):
        tool_spec.validate(data)
    assert simcluster.validate_spec(harness.spec("acctok")).accounting is False
    assert simcluster.load_spec(REPO / "sim" / "clusters" / "acct16.yml").accounting is True
    assert tool_spec.validate(harness.spec("acctok", accounting=True)).data["accounting"] is True


def test_history_options_are_checked_before_anything_runs(tmp_path):
    proc = clusterctl("history", tmp_path, "--seconds", "1", check=False)
    assert proc.returncode == 2 and proc.stderr == "clusterctl: error: --seconds: must be a number >= 2, got 1.0\n"
    proc = clusterctl("history", tmp_path, "--exit-failures", "9", "--jobs", "3", check=False)
    assert proc.returncode == 2 and "--exit-failures: 9 of 3 jobs" in proc.stderr
