"""playbooks/health_check.yml against a simulated cluster on real Slurm (slurmctld + slurmd).

One 16-node cluster for the playbook runs (each test points the inventory's GPUCLUSTER_SIM_SPEC at
its own spec file: the fake tools read it on every call, Slurm keeps running) and one 2-node
cluster whose slurmd run the rendered HealthCheckProgram wrapper. No fixed sleeps: polls with
deadlines. Missing prerequisites fail the tests (see slurm_helpers), never skip them.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "slurm"))

from harness import REPO, VENV_BIN, ansible_env, playbook, spec  # noqa: E402  pylint: disable=wrong-import-position
import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from slurm_helpers import missing_prerequisites, poll, sinfo_reasons  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration

FOUR = "gpu001:gpu002:gpu003:gpu004"


def xid(node):
    return {"kind": "xid", "node": node, "gpu": 1, "xid": 79}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    problems = missing_prerequisites()
    if problems:
        pytest.fail("health integration tests cannot run: " + "; ".join(problems), pytrace=False)
    work = tmp_path_factory.mktemp("nh")
    path = work / "spec.yml"
    path.write_text(yaml.safe_dump(spec("nh")))
    sim = simcluster.SimCluster(str(path), run_dir=str(work / "run"))
    try:
        sim.start(timeout=60)
        yield sim
    finally:
        sim.stop()


class Runner(object):
    """Writes a spec variant (faults) + inventory for the running cluster, runs health_check.yml."""

    def __init__(self, cluster, workdir):
        self.cluster = cluster
        self.workdir = Path(workdir)
        self.history = self.workdir / "log" / "drain-history.jsonl"
        self.artifacts = self.workdir / "artifacts"

    def inventory(self, name, faults=()):
        path = self.workdir / ("%s.yml" % name)
        path.write_text(yaml.safe_dump(spec("nh", faults=list(faults))))
        return simcluster.write_inventory(simcluster.load_spec(path), self.workdir / ("inv-" + name),
                                          self.cluster.run_dir)

    def run(self, name, faults=(), nodes=FOUR, args=()):
        extra = ["-e", "node_health_nodes=%s" % nodes, "-e", "node_health_history_log=%s" % self.history]
        return playbook(self.inventory(name, faults), self.artifacts, *(extra + list(args)),
                        playbook_name="health_check.yml", timeout=600)

    def history_lines(self):
        if not self.history.exists():
            return []
        return [json.loads(line) for line in self.history.read_text().splitlines() if line.strip()]


@pytest.fixture
def runner(cluster, tmp_path):
    """Every test starts with no node drained."""
    for node in sinfo_reasons(cluster):
        cluster.scontrol("update", "NodeName=%s" % node, "State=RESUME", check=False)
    poll(lambda: not sinfo_reasons(cluster), timeout=30, what="no drained node")
    return Runner(cluster, tmp_path)


def test_failing_node_is_drained_with_tagged_reason_junit_and_history(runner, cluster):
    run = runner.run("xid3", [xid("gpu003")])
    assert run.rc != 0, run.output  # a failing node fails the run (cron and AWX see it)
    reasons = sinfo_reasons(cluster)
    assert set(reasons) == {"gpu003"}, (reasons, run.output)
    assert reasons["gpu003"].startswith("gpucluster: gpu_health: "), reasons
    assert "79" in reasons["gpu003"], reasons
    # Same artifacts as acceptance: the callback saw the stages.
    assert ("gpu003", "gpu_health") in run.bad() and ("gpu003", "gpu_health") in run.junit_bad()
    # Only gpu003's stage fails; the run's verdict (a failed task on localhost) is reported too.
    assert {b for b in run.bad() if b[0] != "localhost"} == {("gpu003", "gpu_health")}
    lines = runner.history_lines()
    assert [(l["node"], l["action"]) for l in lines] == [("gpu003", "drain")], lines
    assert lines[0]["reason"] == reasons["gpu003"] and lines[0]["evidence"][0]["stage"] == "gpu_health"
    assert lines[0]["time"].endswith("Z")


def test_sdc_between_jobs_drains_the_node_of_the_corrupting_gpu(runner, cluster):
    faults = [{"kind": "sdc", "node": "gpu002", "gpu": 6, "probability": 0.5}]
    run = runner.run("sdc2", faults, args=["-e", '{"node_health_stages": ["gpu_health", "sdc"], "node_health_budget": 200}'])
    assert run.rc != 0, run.output
    reasons = sinfo_reasons(cluster)
    assert set(reasons) == {"gpu002"}, (reasons, run.output)
    assert reasons["gpu002"].startswith("gpucluster: sdc: "), reasons
    assert {b for b in run.bad() if b[0] != "localhost"} == {("gpu002", "sdc")}
    (check,) = [c for c in run.bad_checks("gpu002") if c["check"] == "sdc.consistency"]
    assert check["component"] == "GPU6 (00000000:BA:00.0)"


def test_cap_refuses_when_nine_of_sixteen_fail_and_drains_nothing(runner, cluster):
    bad = ["gpu%03d" % i for i in range(1, 10)]
    run = runner.run("nine", [xid(n) for n in bad], nodes="gpu_nodes")
    assert run.rc != 0
    assert "refused: 9 of 16 nodes failed gpu_health — check the check before draining them" in run.output, run.output
    assert sinfo_reasons(cluster) == {}
    lines = runner.history_lines()
    assert sorted(l["node"] for l in lines) == bad and {l["action"] for l in lines} == {"refused"}
    bad_nodes = {n for n, _stage in run.bad()}
    assert bad_nodes == set(bad), [c for c in run.bad_checks() if c["node"] not in bad]


def test_check_mode_drains_nothing_writes_nothing_and_says_what_it_would_do(runner, cluster):
    run = runner.run("xid3check", [xid("gpu003")], args=["--check"])
    assert "check mode, would have drained: gpu003" in run.output, run.output
    assert sinfo_reasons(cluster) == {}
    assert not runner.history.exists() and not runner.history.parent.exists()


def test_operator_drain_stays_through_a_passing_run(runner, cluster):
    cluster.scontrol("update", "NodeName=gpu002", "State=DRAIN", "Reason=operator: replacing fan")
    run = runner.run("clean")
    assert run.rc == 0, run.output
    assert sinfo_reasons(cluster) == {"gpu002": "operator: replacing fan"}
    # Failing too: still left alone with the operator's reason.
    run = runner.run("xid2", [xid("gpu002")])
    assert sinfo_reasons(cluster) == {"gpu002": "operator: replacing fan"}, run.output
    assert runner.history_lines() == []


def test_our_drain_is_resumed_after_it_passes_a_retest_not_before(runner, cluster):
    runner.run("xid3", [xid("gpu003")])
    assert sinfo_reasons(cluster).get("gpu003", "").startswith("gpucluster: gpu_health:")
    run = runner.run("xid3again", [xid("gpu003")])  # still failing: stays drained
    assert sinfo_reasons(cluster).get("gpu003", "").startswith("gpucluster: gpu_health:"), run.output
    run = runner.run("fixed")  # passes now: resumed
    assert run.rc == 0, run.output
    assert sinfo_reasons(cluster) == {}
    actions = [(l["node"], l["action"]) for l in runner.history_lines()]
    assert actions == [("gpu003", "drain"), ("gpu003", "resume")], actions


def test_healthcheck_program_drains_its_failing_node_within_the_interval(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hc")  # short: slurmd's socket paths are limited
    problems = missing_prerequisites()
    if problems:
        pytest.fail("health integration tests cannot run: " + "; ".join(problems), pytrace=False)
    run_dir = tmp_path / "run"
    wrapper = tmp_path / "gpucluster-healthcheck.sh"
    spec_path = tmp_path / "spec.yml"
    spec_path.write_text(yaml.safe_dump(spec("hc", faults=[xid("gpu002")], count=2,
                                             health_check={"program": str(wrapper), "interval": 10})))
    inventory = simcluster.write_inventory(simcluster.load_spec(spec_path), tmp_path / "inv", run_dir)
    history = tmp_path / "hc" / "drain-history.jsonl"
    settings = {
        "node_health_healthcheck_path": str(wrapper),
        "node_health_healthcheck_inventory": str(inventory),
        "node_health_healthcheck_playbook": str(REPO / "playbooks" / "health_check.yml"),
        "node_health_healthcheck_env_path": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % VENV_BIN,
        "node_health_healthcheck_slurm_conf": str(run_dir / "etc" / "slurm.conf"),
        "node_health_healthcheck_workdir": str(tmp_path / "hc"),
        "node_health_healthcheck_environment": {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".build" / "collections"),
            "GPUCLUSTER_ARTIFACTS_DIR": str(tmp_path / "hc-artifacts")},
        "node_health_healthcheck_extra_args": ["-e", "node_health_history_log=%s" % history],
    }
    varsfile = tmp_path / "settings.json"
    varsfile.write_text(json.dumps(settings))
    # Not through harness.playbook: a run with no stage writes no results.json for Run() to read.
    render = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(inventory),
                             str(REPO / "playbooks" / "health_check.yml"), "--tags", "healthcheck_program",
                             "-e", "@%s" % varsfile], cwd=str(REPO), env=ansible_env(tmp_path / "render-artifacts"),
                            capture_output=True, text=True, timeout=300, check=False)
    assert render.returncode == 0 and wrapper.exists(), render.stdout + render.stderr
    text = wrapper.read_text()
    assert "export PATH SLURM_CONF HOME" in text and '--limit "$node,localhost"' in text
    sim = simcluster.SimCluster(str(spec_path), run_dir=str(run_dir))
    try:  # start inside: a start that fails half-way must still stop what it started
        sim.start(timeout=60)
        t0 = time.monotonic()
        reasons = poll(lambda: {n: r for n, r in sinfo_reasons(sim).items() if r.startswith("gpucluster:")},
                       timeout=60, what="the HealthCheckProgram to drain gpu002")
        took = time.monotonic() - t0
        assert list(reasons) == ["gpu002"] and reasons["gpu002"].startswith("gpucluster: gpu_health:"), reasons

        # The wrapper's run appends to the history after the drain itself: wait for that line.
        def drained_in_history():
            if not history.exists():
                return None
            lines = [json.loads(l) for l in history.read_text().splitlines() if l.strip()]
            return ("gpu002", "drain") in [(l["node"], l["action"]) for l in lines]
        assert poll(drained_in_history, timeout=60, what="the drain in the history log")
        print("HealthCheckProgram drained gpu002 %.1f s after the cluster started" % took)
    finally:
        sim.stop()
