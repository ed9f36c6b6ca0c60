"""Helpers for the Slurm operations tests (no conftest.py here: other test folders import their
``conftest`` by that name, so a second one would shadow it). Shared setup: a real slurmctld + slurmds (sim/simcluster.py),
Ansible run as a user would run it, and polling with deadlines (no fixed sleeps).

Missing prerequisites (root, the Slurm and munge packages, the project venv) fail the tests with
a message saying what to install; they are never skipped.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
VENV_BIN = REPO / ".venv" / "bin"
COLLECTIONS = REPO / ".build" / "collections"
sys.path.insert(0, str(REPO / "sim"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def missing_prerequisites():
    """What stops these tests from running here, as sentences (empty when all is there)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("they run Slurm as root (SlurmUser=root): run pytest as root")
    for path in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"):
        if not Path(path).exists():
            problems.append("%s is missing: run `bash tools/install-system-deps.sh`" % path)
    for tool in ("scontrol", "sinfo", "sbatch", "squeue", "scancel", "timeout"):
        if not shutil.which(tool):
            problems.append("%s is not on PATH: run `bash tools/install-system-deps.sh`" % tool)
    for tool in ("ansible", "ansible-playbook", "python"):
        if not (VENV_BIN / tool).exists():
            problems.append("%s is missing: create the venv with `make venv`" % (VENV_BIN / tool))
    try:
        import yaml  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        problems.append("PyYAML is missing: run the tests with the project venv (.venv/bin/python -m pytest)")
    return problems


@pytest.fixture(scope="session")
def prerequisites():
    problems = missing_prerequisites()
    if problems:
        pytest.fail("Slurm integration tests cannot run: " + "; ".join(problems), pytrace=False)
    if not (COLLECTIONS / "ansible_collections" / "gpucluster" / "acceptance").exists():
        pytest.fail("the collection is not linked under .build/collections: run `make link`", pytrace=False)


def poll(predicate, timeout=30.0, what="condition"):
    """Call predicate until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


def start_cluster(spec_data, run_dir):
    """A started SimCluster (caller stops it); run_dir short enough for slurmd's sockets."""
    from simcluster import SimCluster, validate_spec  # pylint: disable=import-outside-toplevel,import-error
    cluster = SimCluster(spec=validate_spec(spec_data), run_dir=run_dir)
    cluster.start(timeout=60)
    return cluster


class Ansible(object):
    """Runs ansible / ansible-playbook from the project venv against this cluster (local connection)."""

    def __init__(self, cluster, workdir):
        self.cluster = cluster
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = self.workdir / "ansible.cfg"
        self.config.write_text("[defaults]\ncollections_path = %s\nretry_files_enabled = false\n"
                               "host_key_checking = false\nstdout_callback = ansible.builtin.default\n"
                               "interpreter_python = %s\n" % (COLLECTIONS, VENV_BIN / "python"))
        self.inventory = self.workdir / "hosts.yml"
        self.inventory.write_text(
            "all:\n  children:\n    slurm_controller:\n      hosts:\n        localhost:\n"
            "          ansible_connection: local\n          ansible_python_interpreter: %s\n" % (VENV_BIN / "python"))

    def env(self):
        env = dict(os.environ)
        env.update(self.cluster.env())
        env.update({"ANSIBLE_CONFIG": str(self.config), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
                    "PATH": "%s:%s" % (VENV_BIN, env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")),
                    "ANSIBLE_LOCAL_TEMP": str(self.workdir / "tmp"), "ANSIBLE_HOME": str(self.workdir / "home")})
        return env

    def module(self, args, check=False, diff=False, timeout=120):
        """Run gpucluster.acceptance.slurm_node once with ``args`` in a playbook.

        Returns (status, result, output): status CHANGED / SUCCESS / FAILED as Ansible says it,
        the module's result dict, and ansible-playbook's output.
        """
        stamp = time.monotonic_ns()
        out = self.workdir / ("result-%d.json" % stamp)
        playbook = self.workdir / ("module-%d.yml" % stamp)
        # JSON is YAML: the arguments go in as they are.
        playbook.write_text(json.dumps([{
            "hosts": "localhost", "gather_facts": False,
            "tasks": [
                {"name": "slurm_node", "gpucluster.acceptance.slurm_node": args, "register": "result",
                 "ignore_errors": True},
                {"name": "save the result", "ansible.builtin.copy": {"content": "{{ result | to_json }}",
                                                                     "dest": str(out), "mode": "0600"},
                 "check_mode": False, "diff": False},
            ]}]))
        extra = (["--check"] if check else []) + (["--diff"] if diff else [])
        proc = self.playbook(playbook, args=extra, timeout=timeout)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0 and out.exists(), "ansible-playbook rc=%d:\n%s" % (proc.returncode, output)
        result = json.loads(out.read_text())
        status = "FAILED" if result.get("failed") else ("CHANGED" if result.get("changed") else "SUCCESS")
        return status, result, output

    def playbook(self, playbook, extra_vars=None, args=(), timeout=300, inventory=None):
        argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory or self.inventory), str(playbook)]
        if extra_vars is not None:
            path = self.workdir / ("vars-%d.json" % time.monotonic_ns())
            path.write_text(json.dumps(extra_vars))
            argv += ["-e", "@%s" % path]
        argv += list(args)
        return subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=timeout,
                              cwd=str(self.workdir), check=False)


def node_record(cluster, name):
    """The module_utils reading of one node (FUTURE nodes included)."""
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node import (  # noqa: E501 pylint: disable=import-outside-toplevel
        parse_scontrol_show_node)
    proc = cluster.run(["scontrol", "--future", "show", "node", "-o", name], env={"SLURM_TIME_FORMAT": "standard"},
                       timeout=30)
    return parse_scontrol_show_node(proc.stdout)["nodes"].get(name)


def sinfo_reasons(cluster):
    """{node: reason} from ``sinfo -R``."""
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (  # pylint: disable=import-outside-toplevel
        expand_hostlist)
    proc = cluster.run(["sinfo", "-R", "--noheader", "--format=%E|%N"], timeout=30)
    assert proc.returncode == 0, proc.stderr
    reasons = {}
    for line in proc.stdout.splitlines():
        if "|" in line:
            reason, nodes = line.rsplit("|", 1)
            for name in expand_hostlist(nodes.strip()):
                reasons[name] = reason.strip()
    return reasons


def cluster_fixtures(spec_data, label):
    """Module-scoped fixtures for a test module: ``cluster`` (started from spec_data, stopped after
    the module) and ``ansible`` (an Ansible runner for it). Use: ``cluster, ansible = cluster_fixtures(SPEC, "x")``."""
    @pytest.fixture(scope="module")
    def cluster(prerequisites, tmp_path_factory):  # pylint: disable=unused-argument,redefined-outer-name
        sim = start_cluster(spec_data, tmp_path_factory.mktemp(label) / "run")
        try:
            yield sim
        finally:
            sim.stop()

    @pytest.fixture(scope="module")
    def ansible(cluster, tmp_path_factory):  # pylint: disable=redefined-outer-name
        return Ansible(cluster, tmp_path_factory.mktemp(label + "-ansible"))

    return cluster, ansible
