"""Health-check hardening on a simulated cluster (real slurmctld + slurmd, fake GPU tools).

* Two health-check runs at once (real ansible-playbook processes) over different failing nodes
  never drain more than node_health_max_drain_nodes in total: the drain step holds a cluster-wide
  lock and reads Slurm's drains again inside it; the second run's refusal says why, and the history
  keeps every line of both runs.
* A variable name of the HealthCheckProgram wrapper that is not a shell name is refused before
  anything is written or run; values with $(...), quotes and newlines stay data.
* No sleeps: the test holds the drain lock itself until both runs wait for it (polled, with a
  deadline), so the runs overlap at the drain on every run of the test.
"""
import fcntl
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "slurm"))

from harness import REPO, VENV_BIN, ansible_env, playbook_started, spec, wait_for  # noqa: E402  pylint: disable=wrong-import-position
import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from slurm_helpers import missing_prerequisites, sinfo_reasons  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration

# Printed once a run has read Slurm's drains and planned; its drain comes after.
PLANNED = "TASK [gpucluster.acceptance.node_health : Say what this run found]"


def xid(node):
    return {"kind": "xid", "node": node, "gpu": 1, "xid": 79}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    problems = missing_prerequisites()
    if problems:
        pytest.fail("health integration tests cannot run: " + "; ".join(problems), pytrace=False)
    work = tmp_path_factory.mktemp("hh")
    path = work / "spec.yml"
    path.write_text(yaml.safe_dump(spec("hhlock", count=8)))
    sim = simcluster.SimCluster(str(path), run_dir=str(work / "run"))
    try:
        sim.start(timeout=60)
        yield sim
    finally:
        sim.stop()


class Started(object):
    """A running ansible-playbook whose output is read as it comes (to see which task it is in)."""

    def __init__(self, proc):
        self.proc = proc
        self.out = []
        self.err = []
        self.threads = [threading.Thread(target=self._read, args=(proc.stdout, self.out), daemon=True),
                        threading.Thread(target=self._read, args=(proc.stderr, self.err), daemon=True)]
        for thread in self.threads:
            thread.start()

    @staticmethod
    def _read(stream, into):
        for line in stream:
            into.append(line)

    def text(self):
        return "".join(self.out) + "".join(self.err)

    def finish(self, timeout):
        rc = self.proc.wait(timeout=timeout)
        for thread in self.threads:
            thread.join(timeout)
        return rc


def inventory(cluster, workdir, name, faults):
    path = workdir / ("%s.yml" % name)
    path.write_text(yaml.safe_dump(spec("hhlock", faults=list(faults), count=8)))
    return simcluster.write_inventory(simcluster.load_spec(path), workdir / ("inv-" + name), cluster.run_dir)


def test_two_concurrent_runs_never_drain_more_than_the_cap_in_total(cluster, tmp_path):
    assert sinfo_reasons(cluster) == {}
    lock = tmp_path / "lock" / "drain.lock"
    history = tmp_path / "log" / "drain-history.jsonl"
    lock.parent.mkdir()
    common = ["-e", "node_health_max_drain_nodes=2", "-e", "node_health_max_drain_fraction=0.5",
              "-e", "node_health_lock_file=%s" % lock, "-e", "node_health_history_log=%s" % history]
    runs = {
        "a": (["gpu001", "gpu002"], "gpu001:gpu002:gpu003:gpu004"),
        "b": (["gpu005", "gpu006"], "gpu005:gpu006:gpu007:gpu008"),
    }
    # Hold the drain lock until both runs have read sinfo (nothing drained yet) and planned: then
    # they overlap at the drain on every run of this test (without the lock both would drain).
    fd = os.open(str(lock), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    started = {}
    try:
        for name, (bad, nodes) in runs.items():
            inv = inventory(cluster, tmp_path, name, [xid(n) for n in bad])
            started[name] = Started(playbook_started(inv, tmp_path / ("artifacts-" + name),
                                                     "-e", "node_health_nodes=%s" % nodes, *common,
                                                     playbook_name="health_check.yml"))
        # Both read the same, empty drain list and planned two drains each before either drained.
        wait_for(lambda: all(PLANNED in s.text() or s.proc.poll() is not None for s in started.values()),
                 timeout=150, what="both runs to have planned their drains")
    finally:
        os.close(fd)
    rcs = {name: s.finish(timeout=150) for name, s in started.items()}
    outputs = {name: s.text() for name, s in started.items()}
    reasons = sinfo_reasons(cluster)
    ours = sorted(n for n, r in reasons.items() if r.startswith("gpucluster:"))
    assert len(ours) == 2, (reasons, outputs)
    (winner,) = [n for n, (bad, _nodes) in runs.items() if sorted(bad) == ours]
    loser = "b" if winner == "a" else "a"
    assert all(rc != 0 for rc in rcs.values()), rcs  # failing nodes fail both runs
    refusal = ("refused: draining %s would make 4 node(s) drained by us, more than node_health_max_drain_nodes 2 "
               "(already drained by us, read under the drain lock: %s)" % (
                   "gpu[005-006]" if loser == "b" else "gpu[001-002]", ", ".join(ours)))
    assert refusal in outputs[loser], outputs[loser][-4000:]
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    got = sorted((e["node"], e["action"]) for e in lines)
    want = sorted([(n, "drain") for n in runs[winner][0]] + [(n, "refused") for n in runs[loser][0]])
    assert got == want, lines
    assert all(refusal in e["evidence"]["message"] for e in lines if e["action"] == "refused")
    print("drained %s by run %s; run %s refused: %s" % (ours, winner, loser, refusal))


def render_wrapper(tmp_path, environment, fake_playbook, **extra):
    """--tags healthcheck_program with the given environment; (ansible-playbook result, wrapper path)."""
    spec_path = tmp_path / "spec.yml"
    spec_path.write_text(yaml.safe_dump(spec("hhenv", count=2)))
    inv = simcluster.write_inventory(simcluster.load_spec(spec_path), tmp_path / "inv", tmp_path / "run")
    wrapper = tmp_path / "gpucluster-healthcheck.sh"
    settings = {
        "node_health_healthcheck_path": str(wrapper),
        "node_health_healthcheck_workdir": str(tmp_path / "hc"),
        "node_health_healthcheck_ansible_playbook": str(fake_playbook),
        "node_health_healthcheck_environment": environment,
    }
    settings.update(extra)
    varsfile = tmp_path / "settings.json"
    varsfile.write_text(json.dumps(settings))
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(inv), str(REPO / "playbooks" / "health_check.yml"),
                           "--tags", "healthcheck_program", "-e", "@%s" % varsfile], cwd=str(REPO),
                          env=ansible_env(tmp_path / "artifacts"), capture_output=True, text=True, timeout=300,
                          check=False)
    return proc, wrapper


def test_environment_name_injection_is_refused_and_values_stay_data(tmp_path):
    pwned = tmp_path / "pwned"
    seen = tmp_path / "seen.json"
    fake = tmp_path / "fake-ansible-playbook"  # what the wrapper runs: records its environment
    fake.write_text("#!%s\nimport json, os, sys\njson.dump({'argv': sys.argv[1:], 'V': os.environ.get('V')}, "
                    "open(%r, 'w'))\n" % (VENV_BIN / "python", str(seen)))
    fake.chmod(0o755)
    bad = "X;touch %s" % pwned
    proc, wrapper = render_wrapper(tmp_path, {"GOOD": "1", bad: "1"}, fake)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert 'environment variable name(s) %s not allowed: a name must match ^[A-Za-z_][A-Za-z0-9_]*$' % json.dumps(bad) in output, output
    assert not wrapper.exists() and not pwned.exists()
    names = ["X\n", "1X", "A-B", "A B", "$(id)"]
    proc, wrapper = render_wrapper(tmp_path, dict((name, "1") for name in names + ["OK_1"]), fake)
    assert proc.returncode != 0 and not wrapper.exists(), proc.stdout
    assert all(json.dumps(name) in proc.stdout for name in names) and '"OK_1"' not in proc.stdout, proc.stdout

    # The cron entry's environment follows the same rule, and a cron value is one line.
    proc, wrapper = render_wrapper(tmp_path, {}, fake, node_health_cron_minute="*/5; id",
                                   node_health_cron_environment={bad: "1", "A": "x\n* * * * * root id"})
    assert proc.returncode != 0 and json.dumps(bad) in proc.stdout and not wrapper.exists(), proc.stdout
    assert "node_health_cron_environment.A must not hold a newline" in proc.stdout, proc.stdout
    assert "are cron fields" in proc.stdout, proc.stdout

    value = "$(touch %s) `touch %s` 'single' \"double\"\nsecond line; touch %s" % (pwned, pwned, pwned)
    proc, wrapper = render_wrapper(tmp_path, {"V": value}, fake)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = wrapper.read_text()
    assert str(REPO) not in text and ".build" not in text, text  # no repository path by default
    run = subprocess.run(["sh", str(wrapper)], env={"SLURMD_NODENAME": "gpu001"}, capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0, run.stdout + run.stderr + text
    got = json.loads(seen.read_text())
    assert got["V"] == value and not pwned.exists(), (got, text)
    assert "gpucluster.acceptance.health_check" in got["argv"] and "gpu001,localhost" in got["argv"], got


def test_a_timeout_is_retried_once_and_only_a_repeated_timeout_drains(cluster, tmp_path):
    """gpu003: ibstat hangs every time (the sim's hang fault): drained, the reason says it timed
    out twice. gpu004: ibstat hangs only the first time (a loaded node): retried, passes, not drained."""
    for node in sinfo_reasons(cluster):
        cluster.scontrol("update", "NodeName=%s" % node, "State=RESUME", check=False)
    wait_for(lambda: not sinfo_reasons(cluster), timeout=30, what="no drained node")
    once = tmp_path / "hung-once"
    shim = tmp_path / "ibstat-loaded"
    shim.write_text('#!/bin/sh\nif [ "$GPUCLUSTER_SIM_NODE" = gpu004 ] && mkdir %s 2>/dev/null; then exec sleep 300; fi\n'
                    'exec ibstat "$@"\n' % once)
    shim.chmod(0o755)
    inv = inventory(cluster, tmp_path, "hang", [{"kind": "hang", "node": "gpu003", "tool": "ibstat"}])
    history = tmp_path / "log" / "drain-history.jsonl"
    run = Started(playbook_started(inv, tmp_path / "artifacts", "-e", "node_health_nodes=gpu001:gpu002:gpu003:gpu004",
                                   "-e", "node_health_budget=20", "-e", "node_health_max_drain_fraction=0.5",
                                   "-e", '{"node_health_stages": ["gpu_health", "infiniband"]}',
                                   "-e", "check_infiniband_ibstat=%s" % shim,
                                   "-e", "node_health_lock_file=%s" % (tmp_path / "drain.lock"),
                                   "-e", "node_health_history_log=%s" % history, playbook_name="health_check.yml"))
    rc = run.finish(timeout=170)
    output = run.text()
    assert rc != 0, output  # gpu003 fails the run
    assert once.is_dir(), output  # gpu004's first ibstat did hang
    assert "PLAY [Node health, retry once each stage that only timed out]" in output, output
    reasons = sinfo_reasons(cluster)
    assert sorted(reasons) == ["gpu003"], (reasons, output[-5000:])
    assert reasons["gpu003"].startswith("gpucluster: infiniband: ibstat: timed out after 1 s and was killed"), reasons
    assert "timed out twice" in reasons["gpu003"], reasons
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert [(e["node"], e["action"]) for e in lines] == [("gpu003", "drain")], lines
    assert lines[0]["evidence"][0]["component"] == "ibstat"
    # The results say error, with the tool as the component, not hardware.
    run_dir = sorted(p for p in (tmp_path / "artifacts").iterdir() if p.is_dir())[-1]
    results = json.loads((run_dir / "results.json").read_text())
    timeouts = [c for c in results["checks"] if c["node"] == "gpu004" and c["status"] == "error"]
    assert timeouts and all(c["component"] == "ibstat" and "timed out" in c["message"] for c in timeouts), timeouts
