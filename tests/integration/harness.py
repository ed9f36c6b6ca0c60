"""Run real ansible-playbook against a simulated cluster on real Slurm, and read what it wrote."""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "sim"))

import simcluster  # noqa: E402  (sim/ is not a package)
import cluster_pool  # noqa: E402  (tests/integration/, beside this file)

VENV_BIN = Path(sys.executable).parent


sys.path.insert(0, str(REPO / ".build" / "collections"))
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results  # noqa: E402


def validated_results(path):
    """results.json read back; every one a test produces must satisfy the results contract."""
    document, problems = _results.load(str(path))
    assert not problems, "%s breaks the results contract:\n  %s" % (path, "\n  ".join(problems))
    return document


class Run(object):
    """One finished ansible-playbook run: exit code, output, and the run's artifact directory."""

    def __init__(self, proc, artifacts_root):
        self.rc = proc.returncode
        self.output = proc.stdout + proc.stderr
        runs = sorted(p for p in Path(artifacts_root).iterdir() if p.is_dir()) if Path(artifacts_root).exists() else []
        self.dir = runs[-1] if runs else None
        self.results = validated_results(self.dir / "results.json") if self.dir else None
        self.junit = ET.parse(str(self.dir / "junit.xml")).getroot() if self.dir else None
        if self.dir is not None:  # a finished run replaces its INCOMPLETE mark
            assert (self.dir / "COMPLETE").exists() and not (self.dir / "INCOMPLETE").exists(), self.dir

    def bad(self):
        """{(node, stage)} of every failed or errored check."""
        return set((c["node"], c["stage"]) for c in self.results["checks"] if c["status"] in ("fail", "error"))

    def bad_checks(self, node=None):
        return [c for c in self.results["checks"] if c["status"] in ("fail", "error") and (node is None or c["node"] == node)]

    def junit_bad(self):
        """{(node, stage)} from junit.xml: testcases with a failure or error child."""
        found = set()
        for case in self.junit.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                found.add((case.get("name").split(":", 1)[0], case.get("classname")))
        return found


def ansible_env(artifacts):
    env = dict(os.environ)
    env.update({
        "PATH": "%s:%s" % (VENV_BIN, env.get("PATH", "")),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".build" / "collections"),
        "GPUCLUSTER_ARTIFACTS_DIR": str(artifacts),
        "ANSIBLE_NOCOLOR": "1",
    })
    return env


def playbook(inventory, artifacts, *args, timeout=900, playbook_name="acceptance.yml", extra_env=None):
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / playbook_name)]
    env = ansible_env(artifacts)
    env.update(extra_env or {})
    proc = subprocess.run(cmd + list(args), cwd=str(REPO), env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    return Run(proc, artifacts)


class SimRun(object):
    """A simulated cluster from a spec dict, its inventory, and a place for artifacts.

    The cluster is borrowed from the session's pool (tests/integration/cluster_pool.py) when its
    spec allows it, else started for this test alone (``pool=False`` asks for that).
    """

    def __init__(self, spec, workdir, pool=True):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data = spec
        self.spec_path = self.workdir / "spec.yml"
        self.spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
        self.pooled = None
        self.use_pool = pool and cluster_pool.POOL.usable(spec)
        self.run_dir = self.workdir / "run"
        self.cluster = None if self.use_pool else simcluster.SimCluster(str(self.spec_path), run_dir=str(self.run_dir))
        self.inventory = None
        self.artifacts = self.workdir / "artifacts"

    def __enter__(self):
        if self.use_pool:
            self.pooled = cluster_pool.POOL.acquire(self.data)
            self.cluster, self.run_dir = self.pooled.cluster, self.pooled.run_dir
        else:
            cluster_pool.start(self.cluster)
        self.inventory = simcluster.write_inventory(self.cluster.spec, self.workdir / "inventory", self.run_dir)
        return self

    def __exit__(self, *exc):
        if self.pooled is not None:
            cluster_pool.POOL.release(self.pooled)
        else:
            self.cluster.stop()

    def acceptance(self, *args, **kwargs):
        return playbook(self.inventory, self.artifacts, *args, **kwargs)


def spec(name, faults=(), unreachable=(), count=16, seed=7, **extra):
    """A cluster spec like sim/clusters/demo.yml with the given faults."""
    data = {
        "name": name,
        "profile": "hgx_h100_sxm",
        "nodes": {"prefix": "gpu", "count": count, "width": 3, "start": 1},
        "cpus_per_node": 2,
        "fabric": {"leaves": 2, "spines": 2, "rails": 8, "oversubscription": 1.0},
        "tool_times": {"nvidia_smi": 0.02, "dcgmi_diag_r1": 0.05, "dcgmi_diag_r2": 0.1,
                       "dcgmi_diag_r3": 0.2, "ibstat": 0.01, "all_reduce_perf": 0.1},
        "seed": seed,
        "unreachable": list(unreachable),
        "faults": list(faults),
    }
    data.update(extra)
    return data


def playbook_started(inventory, artifacts, *args, playbook_name="acceptance.yml", extra_env=None):
    """Start ansible-playbook without waiting (to act on the run while it goes on): a Popen."""
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / playbook_name)]
    env = ansible_env(artifacts)
    env.update(extra_env or {})
    return subprocess.Popen(cmd + list(args), cwd=str(REPO), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def clusterctl(*args, check=True, timeout=120):
    """sim/clusterctl ARGS with this Python; raises AssertionError naming the command when it fails."""
    proc = subprocess.run([sys.executable, str(REPO / "sim" / "clusterctl"), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        command = " ".join(map(str, args))
        raise AssertionError("clusterctl %s: rc=%d\n%s%s" % (command, proc.returncode, proc.stdout, proc.stderr))
    return proc


def poll(predicate, timeout=30.0, what="condition"):
    """Call predicate until it returns a truthy value (backing off to 0.25 s); fail after timeout seconds."""
    import time  # pylint: disable=import-outside-toplevel
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


def wait_for(condition, timeout, what, interval=0.2):
    """Poll condition() until it returns something true; fail naming what was awaited."""
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def run_dirs(artifacts):
    return sorted(p for p in Path(artifacts).iterdir() if p.is_dir()) if Path(artifacts).exists() else []


def demo(work):
    """tools/demo.sh (what `make demo` runs) with its cluster, inventory, log and artifacts under
    work: (work, the run's artifact directory, the playbook's log, the playbook's exit status).
    The demo must have stopped its cluster on the way out."""
    env = ansible_env(work / "artifacts")
    env.update(DEMO_RUN_DIR=str(work / "run"), DEMO_INVENTORY=str(work / "inventory"), DEMO_LOG=str(work / "demo.log"))
    proc = subprocess.run([str(REPO / "tools" / "demo.sh")], cwd=str(REPO), env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = run_dirs(work / "artifacts")
    status = subprocess.run([str(VENV_BIN / "python"), str(REPO / "sim" / "clusterctl"), "status",
                             "--run-dir", str(work / "run")], capture_output=True, text=True, check=False)
    assert status.returncode == 1 and json.loads(status.stdout)["running"] is False, status.stdout
    rc = re.search(r"\(playbook exit (\d+) after", proc.stdout)
    assert rc, proc.stdout[-3000:]
    return work, run, (work / "demo.log").read_text(), int(rc.group(1))


def ssh_nodes(sim):
    """The nodes' sshd of a SimRun started with ``transport: ssh`` (sim/sshnodes.py)."""
    import sshnodes  # noqa: E402  (sim/ is on sys.path, above)
    state = sim.cluster.state()
    assert state.get("ssh"), "%s was not started with transport: ssh" % sim.run_dir
    return sshnodes.SSHNodes.from_state(sim.run_dir, state["ssh"])


def without_node_python(inventory, interpreter="/nonexistent/python3"):
    """Point the GPU nodes' ansible_python_interpreter at nothing (the controller keeps its own).

    A module task on a node then fails ("not found"); tasks that run like raw do not notice.
    """
    data = yaml.safe_load(Path(inventory).read_text())
    data["all"]["children"]["gpu_nodes"]["vars"]["ansible_python_interpreter"] = interpreter
    Path(inventory).write_text(yaml.safe_dump(data, sort_keys=False))
    return inventory


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now (a rendezvous port for the workload)."""
    import socket  # pylint: disable=import-outside-toplevel
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torch_sim(tmp_path_factory, name, seed, count=4):
    """A running SimRun for the workload tests; no torch is a failed prerequisite, never a skip."""
    import importlib.util  # pylint: disable=import-outside-toplevel
    import pytest  # pylint: disable=import-outside-toplevel
    if importlib.util.find_spec("torch") is None:
        pytest.fail("torch is not installed in %s: pip install torch==2.13.0 (requirements.txt)" % sys.prefix,
                    pytrace=False)
    return SimRun(spec(name, count=count, seed=seed), tmp_path_factory.mktemp(name))
