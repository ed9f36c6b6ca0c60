"""sim/clusterctl and sim/simcluster.py: a real Slurm (slurmctld + one slurmd per node) on this host.

Needs root and the packages from tools/install-system-deps.sh (make test installs them).
Synchronisation is by polling with deadlines, never by fixed sleeps.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness import clusterctl, poll

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from simcluster import SimCluster, SimError, SpecError  # noqa: E402  pylint: disable=wrong-import-position,import-error

pytestmark = pytest.mark.integration  # tests/integration/conftest.py fails fast without root or Slurm

FOUR = {"name": "four", "profile": "hgx_h100_sxm", "nodes": {"prefix": "n", "count": 4, "width": 2, "start": 1},
        "cpus_per_node": 2, "fabric": {"leaves": 2, "spines": 1, "rails": 8, "oversubscription": 1.0}, "seed": 1}
NODES = ["n01", "n02", "n03", "n04"]


def write_spec(path, **changes):
    data = json.loads(json.dumps(FOUR))
    data.update(changes)
    path.write_text(yaml.safe_dump(data))
    return path


def run_pids(run_dir):
    state = json.loads((Path(run_dir) / "state.json").read_text())
    pids = [state["slurmctld"]["pid"]] + [i["pid"] for i in state["slurmd"].values() if i["pid"]]
    return state, pids


def processes_with(text, skip_srun=False):
    """Live (not zombie) pids whose command line contains ``text`` (srun's own excluded on request)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc/%s/cmdline" % entry).read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if skip_srun and cmdline.startswith("srun "):
            continue
        if text in cmdline and simcluster.alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """A running 4-node cluster (all reachable), started by the CLI; stopped at the end."""
    base = tmp_path_factory.mktemp("four")
    spec = write_spec(base / "four.yml")
    run_dir = base / "run"
    proc = clusterctl("start", spec, "--run-dir", run_dir)
    yield {"spec": spec, "run": run_dir, "start": proc}
    clusterctl("stop", "--run-dir", run_dir, check=False)


def env_of(run_dir):
    env = dict(os.environ)
    env.update(SimCluster.from_run_dir(run_dir).env())
    return env


def test_start_gives_idle_nodes_env_and_state(four):
    run = four["run"]
    out = four["start"].stdout
    assert "export SLURM_CONF=%s" % (run / "etc" / "slurm.conf") in out
    assert (run / "env.sh").read_text().count("export ") >= 3
    cluster = SimCluster.from_run_dir(run)
    assert cluster.sinfo() == {n: "idle" for n in NODES}
    state, pids = run_pids(run)
    assert sorted(state["slurmd"]) == NODES and len(pids) == 5
    assert all(simcluster.alive(p) for p in pids)
    ports = [state["slurmctld"]["port"]] + [state["slurmd"][n]["port"] for n in NODES]
    assert ports == list(range(ports[0], ports[0] + 5))
    assert json.loads((run / "spec.json").read_text())["nodes"]["count"] == 4


def test_srun_runs_on_every_node(four):
    proc = subprocess.run(["srun", "-N4", "printenv", "SLURMD_NODENAME"], env=env_of(four["run"]),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == NODES


def test_topology_follows_fabric(four):
    text = SimCluster.from_run_dir(four["run"]).scontrol("show", "topology").stdout
    assert "SwitchName=leaf01" in text and "Nodes=n[01-02]" in text
    assert "SwitchName=leaf02" in text and "Nodes=n[03-04]" in text
    assert "SwitchName=spine" in text and "Switches=leaf01,leaf02" in text


def test_start_twice_is_idempotent(four):
    before, pids = run_pids(four["run"])
    proc = clusterctl("start", four["spec"], "--run-dir", four["run"])
    assert "already running" in proc.stderr
    after, same = run_pids(four["run"])
    assert same == pids and after["slurmctld"]["port"] == before["slurmctld"]["port"]


def test_start_restarts_only_a_dead_slurmd(four):
    state = run_pids(four["run"])[0]
    victim = state["slurmd"]["n02"]["pid"]
    others = {n: state["slurmd"][n]["pid"] for n in NODES if n != "n02"}
    os.kill(victim, signal.SIGKILL)
    poll(lambda: not simcluster.alive(victim), 10, "slurmd n02 to die")
    proc = clusterctl("start", four["spec"], "--run-dir", four["run"])
    assert "restarted slurmd on n02" in proc.stderr
    state = run_pids(four["run"])[0]
    assert state["slurmd"]["n02"]["pid"] != victim and simcluster.alive(state["slurmd"]["n02"]["pid"])
    assert {n: state["slurmd"][n]["pid"] for n in others} == others
    poll(lambda: SimCluster.from_run_dir(four["run"]).sinfo().get("n02") == "idle", 30, "n02 idle again")


def test_status_and_env_commands(four):
    proc = clusterctl("status", "--run-dir", four["run"])
    status = json.loads(proc.stdout)
    assert status["running"] is True and status["cluster"] == "four" and status["munge"] is True
    assert status["slurmctld"]["alive"] and all(status["slurmd"][n]["alive"] for n in NODES)
    assert set(status["nodes"]) == set(NODES)
    env = clusterctl("env", "--run-dir", four["run"]).stdout
    assert env == (four["run"] / "env.sh").read_text().split("\n", 1)[1]


def test_unreachable_node_is_not_responding_and_clusters_do_not_collide(four, tmp_path):
    spec = write_spec(tmp_path / "four.yml", name="fourdead", unreachable=["n03"])
    run_dir = tmp_path / "run"
    try:
        proc = clusterctl("start", spec, "--run-dir", run_dir)
        assert "3/4 slurmd up" in proc.stderr
        state = run_pids(run_dir)[0]
        assert state["slurmd"]["n03"] == {"pid": None, "port": state["slurmd"]["n03"]["port"], "reachable": False}
        mine, theirs = state["slurmctld"]["port"], run_pids(four["run"])[0]["slurmctld"]["port"]
        assert abs(mine - theirs) > 4, "two running clusters share ports"
        nodes = SimCluster.from_run_dir(run_dir).sinfo()
        assert {n: nodes[n] for n in ("n01", "n02", "n04")} == {"n01": "idle", "n02": "idle", "n04": "idle"}
        dead = nodes["n03"]
        assert dead.endswith("*") or dead.startswith(("unk", "down")), dead
        shown = SimCluster.from_run_dir(run_dir).scontrol("show", "node", "n03").stdout
        assert "State=UNKNOWN" in shown or "NOT_RESPONDING" in shown or "State=DOWN" in shown
        status = json.loads(clusterctl("status", "--run-dir", run_dir).stdout)
        assert status["running"] is True and status["slurmd"]["n03"]["alive"] is False
        # the other cluster is untouched
        assert SimCluster.from_run_dir(four["run"]).sinfo() == {n: "idle" for n in NODES}
    finally:
        clusterctl("stop", "--run-dir", run_dir, check=False)


def test_stop_leaves_no_daemons_even_with_a_running_job(tmp_path):
    spec = write_spec(tmp_path / "four.yml", name="stopper")
    run_dir = tmp_path / "run"
    clusterctl("start", spec, "--run-dir", run_dir)
    pids = run_pids(run_dir)[1]
    token = "sleep 987%d" % os.getpid()  # a command line unique to this test
    job = subprocess.Popen(["srun", "-N2", "sh", "-c", token], env=env_of(run_dir), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        poll(lambda: len(processes_with(token, skip_srun=True)) >= 2, 30, "the job's tasks")
        proc = clusterctl("stop", "--run-dir", run_dir)
        assert "stopped 5 daemon(s)" in proc.stderr
        assert not [p for p in pids if simcluster.alive(p)]
        assert not processes_with(str(run_dir / "etc" / "slurm.conf"))
        assert not processes_with(token, skip_srun=True), "the job's tasks outlived stop"
        status = clusterctl("status", "--run-dir", run_dir, check=False)
        assert status.returncode == 1 and json.loads(status.stdout)["running"] is False
        again = clusterctl("stop", "--run-dir", run_dir)
        assert "nothing running" in again.stderr
    finally:
        job.kill()
        job.wait(timeout=10)
        clusterctl("stop", "--run-dir", run_dir, check=False)


def test_python_api_context_manager_always_stops(tmp_path):
    spec = write_spec(tmp_path / "four.yml", name="api")
    pids = []
    with pytest.raises(RuntimeError, match="boom"):
        with SimCluster(spec, tmp_path / "run") as cluster:
            assert cluster.sinfo() == {n: "idle" for n in NODES}
            assert cluster.env()["SLURM_CONF"] == str(tmp_path / "run" / "etc" / "slurm.conf")
            assert "NodeName=n01" in cluster.scontrol("show", "node", "n01").stdout
            assert cluster.scontrol("show", "node", "nosuch", check=False).returncode != 0
            with pytest.raises(SimError, match="scontrol"):
                cluster.scontrol("show", "node", "nosuch")
            pids = run_pids(tmp_path / "run")[1]
            raise RuntimeError("boom")
    assert pids and not [p for p in pids if simcluster.alive(p)]


def test_health_check_program_gets_slurm_conf(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    program = tmp_path / "hc.sh"
    program.write_text('#!/bin/sh\necho "$SLURM_CONF" > %s/"$SLURMD_NODENAME"\n' % marks)
    program.chmod(0o755)
    spec = write_spec(tmp_path / "four.yml", name="hc", health_check={"program": "hc.sh", "interval": 30})
    with SimCluster(spec, tmp_path / "run") as cluster:
        conf = cluster.run(["scontrol", "show", "config"]).stdout
        assert "HealthCheckProgram" in conf and str(tmp_path / "run" / "healthcheck.sh") in conf
        poll(lambda: sorted(p.name for p in marks.iterdir()) == NODES, 30, "a health check on every node")
        assert (marks / "n01").read_text().strip() == str(cluster.conf)


def test_run_dir_of_another_running_cluster_is_refused(four, tmp_path):
    spec = write_spec(tmp_path / "other.yml", name="other")
    proc = clusterctl("start", spec, "--run-dir", four["run"], check=False)
    assert proc.returncode == 1 and "holds running cluster 'four'" in proc.stderr
    assert SimCluster.from_run_dir(four["run"]).sinfo() == {n: "idle" for n in NODES}


@pytest.mark.parametrize("change, key", [
    ({"nodes": {"prefix": "n", "count": 0}}, "nodes.count"),
    ({"nodes": {"prefix": "n", "count": 4, "widht": 2}}, "nodes.widht"),
    ({"nodes": {"prefix": "n1", "count": 4}}, "nodes.prefix"),
    ({"nodes": {"prefix": "n", "count": 200, "width": 2}}, "nodes.width"),
    ({"unreachable": ["n09"]}, "unreachable[0]"),
    ({"faults": [{"kind": "nvlink_down", "node": "n01", "gpus": [0, 1]}, {"kind": "nvlink_down", "gpus": [0, 1]}]},
     "faults[1].node"),
    # One validator (sim/gpusim/spec.py) for clusterctl and the fake tools: a fault the tools
    # would reject stops the start too.
    ({"faults": [{"kind": "nvlink_down", "node": "n01"}]}, "faults[0].gpus"),
    ({"tool_times": {"nvidia-smi": 1}}, "tool_times.nvidia-smi"),
    ({"unreachable": ["n01", "n01"]}, "unreachable"),
    ({"faults": [{"node": "n01"}]}, "faults[0].kind"),
    ({"fabric": {"leaves": 9}}, "fabric.leaves"),
    ({"fabric": {"oversubscription": "high"}}, "fabric.oversubscription"),
    ({"tool_times": {"nvidia_smi": -1}}, "tool_times.nvidia_smi"),
    ({"cpus_per_node": "two"}, "cpus_per_node"),
    ({"health_check": {"interval": 5}}, "health_check.program"),
    ({"name": "Has Space"}, "name"),
    ({"colour": "red"}, "colour"),
    ({"profile": None}, "profile"),
])
def test_bad_spec_is_one_line_naming_the_key(tmp_path, change, key):
    spec = write_spec(tmp_path / "bad.yml", **change)
    proc = clusterctl("start", spec, "--run-dir", tmp_path / "run", check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("clusterctl: error: %s: %s: " % (spec, key)), proc.stderr
    with pytest.raises(SpecError, match=r"^%s: %s: " % (spec, key.replace("[", r"\[").replace("]", r"\]"))):
        simcluster.load_spec(spec)
    assert not (tmp_path / "run").exists(), "a bad spec must not start anything"


def test_missing_key_and_bad_yaml(tmp_path):
    missing = tmp_path / "missing.yml"
    missing.write_text("name: x\nprofile: p\n")
    proc = clusterctl("start", missing, check=False)
    assert proc.returncode == 2 and proc.stderr == "clusterctl: error: %s: nodes: missing (required: name, profile, nodes)\n" % missing
    broken = tmp_path / "broken.yml"
    broken.write_text("name: x\nnodes: {prefix: n\n")
    proc = clusterctl("inventory", broken, check=False)
    assert proc.returncode == 2 and "not valid YAML (line" in proc.stderr and "Traceback" not in proc.stderr


def test_shipped_specs_are_valid():
    demo = simcluster.load_spec(REPO / "sim" / "clusters" / "demo.yml")
    assert demo.nodes[0] == "gpu001" and demo.nodes[-1] == "gpu016" and demo.hostlist() == "gpu[001-016]"
    assert [(name, len(nodes)) for name, nodes in demo.leaves()] == [("leaf01", 8), ("leaf02", 8)]
    clean = simcluster.load_spec(REPO / "sim" / "clusters" / "clean16.yml")
    assert clean.faults == [] and clean.unreachable == [] and len(clean.nodes) == 16


def test_inventory_makes_unreachable_nodes_fail_fast(tmp_path):
    spec = write_spec(tmp_path / "four.yml", unreachable=["n03"])
    out = tmp_path / "inv"
    proc = clusterctl("inventory", spec, "--out", out)
    assert proc.stdout.strip() == str(out / "hosts.yml")
    inv = yaml.safe_load((out / "hosts.yml").read_text())["all"]["children"]
    assert inv["slurm_controller"]["hosts"]["localhost"]["ansible_connection"] == "local"
    nodes = inv["gpu_nodes"]
    assert nodes["vars"]["ansible_connection"] == "local"
    assert nodes["vars"]["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"
    environment = nodes["vars"]["acceptance_environment"]
    assert environment["PATH"].startswith(str(REPO / "sim" / "bin") + ":")
    # the collector puts the node in (its inventory name over ssh, its Slurm name under srun)
    assert environment["GPUCLUSTER_SIM_NODE"] == "@node@"
    assert sorted(nodes["hosts"]) == NODES
    assert nodes["hosts"]["n01"] == {"gpucluster_sim_node": "n01", "slurm_topology_leaf": "leaf01"}
    assert nodes["hosts"]["n03"]["ansible_connection"] == "ssh" and nodes["hosts"]["n03"]["ansible_port"] == 1
    ansible = Path(sys.executable).parent / "ansible"
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_DEPRECATION_WARNINGS="false")
    t0 = time.monotonic()
    ping = subprocess.run([str(ansible), "-i", str(out / "hosts.yml"), "all", "-m", "ansible.builtin.ping"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert time.monotonic() - t0 < 30
    assert ping.returncode == 4, ping.stdout + ping.stderr  # 4: some hosts unreachable
    assert "n03 | UNREACHABLE!" in ping.stdout
    for host in ("n01", "n02", "n04", "localhost"):
        assert "%s | SUCCESS" % host in ping.stdout
