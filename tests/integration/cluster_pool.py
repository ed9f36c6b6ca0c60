"""Simulated clusters shared by the tests of one pytest session, keyed by their shape.

Starting a cluster (munge check, slurm.conf, slurmctld, one slurmd per node, sshd per node for the
ssh transport) and stopping it again costs seconds a test; most tests only differ from each other
in what the fake tools are told (faults, seed, tool times), which the tools re-read from the spec
file on every call. So a test borrows a running cluster of its *shape* (nodes, fabric, transport,
unreachable nodes, profile: everything that went into the daemons' configuration), the pool
writes the test's spec over the cluster's spec file and throws away the fake tools' remembered
state, and takes the cluster back when the test is done: jobs cancelled, nodes resumed and idle,
nothing of the run left running. A cluster that cannot be brought back to that (a test killed
slurmctld, a node stays down, a tool still runs) is stopped, never lent again.

Not pooled (a fresh cluster each time, as before): specs with accounting (the job history of
earlier tests would be read), a health check program (it acts on the faults by itself), and
intermittent faults (drawn per Slurm job id, which a shared cluster has moved on). A test can ask
for a fresh cluster with ``SimRun(..., pool=False)``; ``GPUCLUSTER_TEST_POOL=0`` turns the pool off.
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sim"))

import simcluster  # noqa: E402  (sim/ is not a package)
import sim_config  # noqa: E402
from sim_processes import write_file  # noqa: E402  (atomic: the tools may read these now)

# What the fake tools read on every call: a borrowed cluster takes these from the test's spec.
TOOL_KEYS = ("name", "faults", "seed", "tool_times")
# Files the tools and probes leave in the run directory; a borrower starts without them.
RUN_LEFTOVERS = ("gpusim", "loader", "shared-fs")
MAX_IDLE = 6  # idle clusters kept at once (the oldest is stopped beyond this)


def poolable(data):
    """True when a spec (dict) may share a running cluster with other tests."""
    faults = data.get("faults") or []
    return not (data.get("accounting") or data.get("health_check")
                or any(isinstance(f, dict) and f.get("intermittent") for f in faults))


def shape_key(data):
    """The part of a spec that the daemons were configured from."""
    return json.dumps({k: v for k, v in data.items() if k not in TOOL_KEYS}, sort_keys=True, default=str)


def _processes_of(run_dir, keep=()):
    """pids of live processes with this cluster's run directory in their environment (tools, probes,
    collectors), other than the Slurm daemons and ``keep``."""
    marker = ("GPUCLUSTER_SIM_RUN=%s" % run_dir).encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in keep:
            continue
        try:
            environ = Path("/proc/%s/environ" % pid).read_bytes()
            state = Path("/proc/%s/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
            argv0 = Path("/proc/%s/cmdline" % pid).read_bytes().split(b"\0")[0]
        except (OSError, IndexError):
            continue
        if marker in environ.split(b"\0") and state not in ("Z", "X") \
                and not os.path.basename(argv0).startswith((b"slurm", b"sshd")):
            found.append(int(pid))
    return found


def start(cluster):
    """Start a SimCluster; a start that failed half-way leaves no daemon behind."""
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise


class Pooled(object):
    """One cluster of the pool: its directory, spec file and SimCluster."""

    def __init__(self, root, data):
        self.key = shape_key(data)
        self.dir = Path(root)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.spec_path = self.dir / "spec.yml"
        self.run_dir = self.dir / "run"
        self.spec_path.write_text(yaml.safe_dump(data, sort_keys=False))
        self.cluster = simcluster.SimCluster(str(self.spec_path), run_dir=str(self.run_dir))

    def retarget(self, data):
        """Give the running cluster the test's spec: what the fake tools read, and nothing remembered."""
        write_file(self.spec_path, yaml.safe_dump(data, sort_keys=False))  # the tools re-read it on every call
        spec = simcluster.validate_spec(data, self.spec_path)
        self.cluster.spec = spec
        for sub in RUN_LEFTOVERS:
            shutil.rmtree(self.run_dir / sub, ignore_errors=True)
        for stale in self.run_dir.glob("nvme-*"):
            shutil.rmtree(stale, ignore_errors=True)
        write_file(self.run_dir / "spec.json", json.dumps(spec.data, indent=2) + "\n")
        state = self.cluster.state()
        state["spec"] = spec.data
        write_file(self.run_dir / "state.json", json.dumps(state, indent=2) + "\n")
        sim_config.write_fake_sysfs(self.run_dir)

    def reset(self, timeout=30.0):
        """Jobs cancelled, drained or down nodes resumed and idle, no tool of a run left: True when
        the cluster is as a fresh one would be, False when it must be stopped."""
        deadline = time.monotonic() + timeout
        if not self.cluster.status().get("running"):
            return False
        self.cluster.daemons.cancel_jobs(self.cluster.run, deadline)
        spec = self.cluster.spec
        while time.monotonic() < deadline:
            try:
                states = self.cluster.sinfo(timeout=5)
            except (simcluster.SimError, subprocess.TimeoutExpired):
                return False
            busy = [n for n in spec.reachable if states.get(n) != "idle"]
            leftovers = _processes_of(self.run_dir, keep=(os.getpid(),))
            if not busy and not leftovers and not self.cluster.run(
                    ["squeue", "--noheader", "--format=%A"], timeout=5).stdout.split():
                return True
            resumable = [n for n in busy if states.get(n, "").rstrip("*~#").startswith(("drain", "drng", "down", "fail"))
                         and not states[n].endswith("*")]
            if resumable:
                self.cluster.scontrol("update", "nodename=%s" % ",".join(resumable), "state=resume", check=False)
            time.sleep(0.1)
        return False

    def stop(self):
        with contextlib.suppress(Exception):
            self.cluster.stop()


class ClusterPool(object):
    """The session's idle clusters by shape; ``root`` is set by tests/integration/conftest.py."""

    def __init__(self):
        self.root = None
        self.idle = []  # Pooled, oldest first
        self.started = 0
        self.enabled = os.environ.get("GPUCLUSTER_TEST_POOL", "1") != "0"

    def usable(self, data):
        return self.enabled and self.root is not None and poolable(data)

    def acquire(self, data):
        """A running cluster with ``data`` as its spec: an idle one of the same shape, else a new one."""
        key = shape_key(data)
        for pooled in self.idle:
            if pooled.key == key:
                self.idle.remove(pooled)
                pooled.retarget(data)
                break
        else:
            self.started += 1
            pooled = Pooled(Path(self.root) / ("c%d" % self.started), data)
            start(pooled.cluster)
        return pooled

    def release(self, pooled):
        """Take a cluster back: idle for the next test of its shape, or stopped when it cannot be reset."""
        try:
            ok = pooled.reset()
        except Exception:  # pylint: disable=broad-except
            # whatever broke, this cluster is not lent again
            ok = False
        if not ok:
            pooled.stop()
            return
        self.idle.append(pooled)
        while len(self.idle) > MAX_IDLE:
            self.idle.pop(0).stop()

    def close(self):
        """Stop every idle cluster (the session ends)."""
        while self.idle:
            self.idle.pop().stop()


POOL = ClusterPool()
