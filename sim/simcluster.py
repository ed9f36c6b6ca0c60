# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated cluster: a real Slurm for a spec (YAML) on this one host.

A spec names the cluster, its nodes and fabric; ``load_spec`` validates it with sim/gpusim/spec.py,
the one validator the fake tools use too (errors name the file and the key). ``SimCluster`` runs
slurmctld plus one slurmd per reachable node, all on 127.0.0.1 with their own ports, with every
file under one run directory (default ``<repo>/.build/sim/<name>/``):

    etc/slurm.conf, etc/topology.conf   generated configuration (SLURM_CONF points here)
    env.sh                              export lines for SLURM_CONF and GPUCLUSTER_SIM_*
    state.json                          pids, ports, nodes of the running cluster
    spec.json                           the validated spec, defaults filled in (for the fake tools)
    healthcheck.sh                      wrapper for HealthCheckProgram (slurmd gives it no PATH)
    pid/ log/ spool/<node>/ state/      daemon pid files, logs, slurmd spools, slurmctld state

The parts: sim_processes.py (PIDs, ports, files: daemons are found and stopped by PID, checked
against /proc/PID/cmdline holding this run's slurm.conf, never by process name), sim_config.py
(paths, ports, slurm.conf / topology.conf), sim_inventory.py (the Ansible inventory), sim_munge.py
(munged) and this module (the cluster). Callers import everything from here. Standard library
plus PyYAML.
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

try:
    import sshnodes  # sim/ is this module's directory (callers put it on sys.path)
except ImportError:  # pragma: no cover - imported by file path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sshnodes
# pylint: disable=wrong-import-position
import accounting  # noqa: E402  (sim/, as above)
import sim_config  # noqa: E402
from gpusim import spec as spec_schema  # noqa: E402
from gpusim.spec import DEFAULT_HEALTH_INTERVAL, MAX_NODES, TRANSPORTS, Spec, SpecError  # noqa: E402
from sim_config import (  # noqa: E402
    CLUSTER_ENV, DEFAULT_RUN_ROOT, LOCK_FILE, REPO, RUN_ENV, SLURM_SBIN, SPEC_ENV, default_run_dir)
from sim_daemons import SlurmDaemons, wait_until_ready  # noqa: E402
from sim_inventory import inventory, write_inventory  # noqa: E402
from sim_munge import MUNGE_THREADS, ensure_munge, munge_ok, munged_pid, prioritize, stop_munge  # noqa: E402
from sim_processes import (  # noqa: E402
    DAEMON_MARK, SimError, alive, all_pids, cmdline, hostname, locked, port_listening, remove_tree, write_file)
# pylint: enable=wrong-import-position

# What callers (clusterctl, tests/integration/harness.py, bench/) use from here.
__all__ = [
    "CLUSTER_ENV", "DAEMON_MARK", "DEFAULT_HEALTH_INTERVAL", "DEFAULT_RUN_ROOT", "MAX_NODES", "REPO", "RUN_ENV",
    "SPEC_ENV", "TRANSPORTS", "SimCluster", "SimError", "Spec", "SpecError", "alive", "default_run_dir",
    "ensure_munge", "inventory", "load_spec", "munge_ok", "start_timeout", "stop_munge", "validate_spec",
    "write_inventory",
]
# The names these had when they lived here (tests use them).
_cmdline, _all_pids = cmdline, all_pids


def load_spec(path):
    """Read and validate a spec file (gpusim/spec.py); SpecError (one line, file and key) when unusable."""
    return spec_schema.load(str(path))


def validate_spec(data, path=None):
    """Validate a spec mapping (gpusim/spec.py); a Spec with defaults filled in, or SpecError."""
    return spec_schema.validate(data, path)


def start_timeout(count):
    """Default seconds for ``count`` nodes to come up idle: 30, plus 60 ms a node beyond 64.

    1,024 nodes start in about 35 s on 2 cores (README, Benchmarks).
    """
    return 30.0 + 0.06 * max(0, count - 64)


class SimCluster:
    """A simulated cluster's Slurm daemons. A context manager: leaving the block always stops them.

    >>> with SimCluster("sim/clusters/demo.yml") as cluster:
    ...     cluster.sinfo()          # {'gpu001': 'idle', ...}
    """

    def __init__(self, spec_path=None, run_dir=None, *, spec=None):
        if spec is None and spec_path is not None:
            spec = load_spec(spec_path)
        self.spec = spec
        if run_dir is None:
            if spec is None:
                raise SimError("SimCluster needs a spec or a run directory")
            run_dir = default_run_dir(spec.name)
        self.run_dir = Path(run_dir).resolve()
        self.etc = self.run_dir / "etc"
        self.conf = self.etc / "slurm.conf"
        self.state_file = self.run_dir / "state.json"
        self.env_file = self.run_dir / "env.sh"
        self.daemons = SlurmDaemons(self.run_dir, self.conf)

    @classmethod
    def from_run_dir(cls, run_dir):
        """The cluster whose files are in ``run_dir`` (for stop / status / env without a spec)."""
        cluster = cls(run_dir=run_dir)
        state = cluster.state()
        if state and state.get("spec"):
            with contextlib.suppress(OSError, SpecError):
                cluster.spec = validate_spec(state["spec"], state.get("spec_path"))
        return cluster

    # -- context manager ------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- state ----------------------------------------------------------------------------------
    def state(self):
        """state.json as a dict, or {} when there is none."""
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def env(self):
        """Environment variables for Slurm clients and the fake tools of this cluster."""
        env = {"SLURM_CONF": str(self.conf), RUN_ENV: str(self.run_dir)}
        state = self.state()
        if state.get("spec_path"):
            env[SPEC_ENV] = state["spec_path"]
        elif self.spec is not None and self.spec.path:
            env[SPEC_ENV] = str(self.spec.path)
        name = state.get("name") or (self.spec.name if self.spec else None)
        if name:
            env[CLUSTER_ENV] = name
        return env

    def env_lines(self):
        return "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in self.env().items())

    def _client_env(self):
        env = dict(os.environ)
        env.pop(DAEMON_MARK, None)
        env.update(self.env())
        return env

    def run(self, args, check=False, timeout=60, **kwargs):
        """Run a command (srun, sbatch, ...) with SLURM_CONF of this cluster; text output."""
        env = self._client_env()
        env.update(kwargs.pop("env", {}) or {})
        return subprocess.run(args, env=env, capture_output=True, text=True, check=check, timeout=timeout, **kwargs)

    def scontrol(self, *args, check=True, timeout=30):
        """``scontrol ARGS``; returns the CompletedProcess, raises SimError on failure when ``check``."""
        proc = self.run(["scontrol", *args], timeout=timeout)
        if check and proc.returncode != 0:
            raise SimError("scontrol %s: rc=%d: %s" % (" ".join(args), proc.returncode, proc.stderr.strip()))
        return proc

    def sinfo(self, timeout=10):
        """{node: compact sinfo state} ('idle', 'unk*', 'down*', 'drain', 'alloc', ...)."""
        proc = self.run(["sinfo", "--noheader", "--Node", "--format=%N %t"], timeout=timeout)
        if proc.returncode != 0:
            raise SimError("sinfo: rc=%d: %s" % (proc.returncode, proc.stderr.strip()))
        states = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def _daemon_pids(self):
        """{'slurmctld': pid|None, 'slurmd': {node: pid|None}}: live daemons of this run, by pid file."""
        return self.daemons.pids(self.state())

    def _stray_daemons(self):
        """Live slurmctld/slurmd processes started with this run's slurm.conf (pid files lost)."""
        return self.daemons.strays()

    def status(self):
        """Daemons alive and node states, as a JSON-able dict (``running``: all expected daemons up)."""
        state = self.state()
        pids = self._daemon_pids()
        out = {
            "cluster": state.get("name") or (self.spec.name if self.spec else None),
            "run_dir": str(self.run_dir),
            "slurm_conf": str(self.conf),
            "munge": munge_ok(),
            "slurmctld": {"pid": pids["slurmctld"], "alive": bool(pids["slurmctld"]),
                          "port": state.get("slurmctld", {}).get("port")},
            "slurmd": {},
            "nodes": {},
        }
        for node, info in (state.get("slurmd") or {}).items():
            out["slurmd"][node] = {"pid": pids["slurmd"].get(node), "alive": bool(pids["slurmd"].get(node)),
                                   "port": info.get("port"), "reachable": info.get("reachable", True)}
        expected = [n for n, i in out["slurmd"].items() if i["reachable"]]
        out["running"] = bool(state) and out["slurmctld"]["alive"] and all(out["slurmd"][n]["alive"] for n in expected)
        if state.get("accounting"):
            out["accounting"] = self._accounting().status(state["accounting"])
            out["running"] = out["running"] and all(i["alive"] for i in out["accounting"].values())
        ssh = self._ssh()
        if ssh:
            out["sshd"] = ssh.status()
            out["running"] = out["running"] and all(i["alive"] for i in out["sshd"].values() if i["reachable"])
        if out["slurmctld"]["alive"]:
            try:
                out["nodes"] = self.sinfo(timeout=5)
            except (SimError, subprocess.TimeoutExpired) as exc:
                out["sinfo_error"] = str(exc)
        return out

    # -- start ----------------------------------------------------------------------------------
    def start(self, health_check=None, topology=None, timeout=None, transport=None):
        """Start (or keep) the cluster; return state.json's dict. Idempotent.

        ``timeout``: seconds until every node is idle (default: ``start_timeout`` of its size);
        ``health_check``: {program, interval} overriding the spec's; ``topology``: bool overriding it;
        ``transport``: 'local' or 'ssh' overriding it (ssh: one sshd per node, sim/sshnodes.py).
        Running with the same configuration: starts only missing slurmds. Otherwise: stop, fresh start.
        """
        if self.spec is None:
            raise SimError("start needs a spec")
        if os.geteuid() != 0:
            raise SimError("the simulated cluster runs Slurm as root: run as root")
        for tool in ("slurmctld", "slurmd"):
            if not (SLURM_SBIN / tool).exists():
                raise SimError("%s is not installed: run tools/install-system-deps.sh" % (SLURM_SBIN / tool))
        spec = self.spec
        if health_check is not None or topology is not None or transport is not None:
            data = json.loads(json.dumps(spec.data))
            if health_check is not None:
                data["health_check"] = health_check or None
            if topology is not None:
                data["topology"] = bool(topology)
            if transport is not None:
                data["transport"] = transport
            spec = self.spec = validate_spec(data, spec.path)
        sim_config.check_socket_paths(spec, self.run_dir)
        t0 = time.monotonic()
        deadline = t0 + (start_timeout(len(spec.nodes)) if timeout is None else timeout)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with locked(LOCK_FILE):
            large = len(spec.nodes) > 256
            ensure_munge(threads=MUNGE_THREADS if large else None)
            if large:
                prioritize(munged_pid())
            state = self.state()
            if state and state.get("name") not in (None, spec.name):
                pids = self._daemon_pids()
                if pids["slurmctld"] or any(pids["slurmd"].values()):
                    raise SimError("%s holds running cluster %r: stop it first or use another run directory"
                                   % (self.run_dir, state.get("name")))
            # A database or slurmdbd that died: start afresh (slurmctld keeps records it could not send).
            acct_up = not spec.accounting or all(self._accounting().pids().values())
            if state and state.get("digest") == spec.digest() and self._daemon_pids()["slurmctld"] and acct_up:
                restarted = self._start_missing(state)
                wait_until_ready(self.sinfo, spec, deadline, fresh=False, log_dir=self.run_dir / "log")
                state["restarted"] = restarted
            else:
                if state or self._stray_daemons():
                    self.stop()
                try:
                    state = self._fresh_start(spec, deadline)
                except BaseException:
                    with contextlib.suppress(Exception):
                        self.stop()  # a failed start leaves nothing running
                    raise
            state["start_seconds"] = round(time.monotonic() - t0, 3)
            return state

    def _fresh_start(self, spec, deadline):
        run = self.run_dir
        for sub in ("state", "spool", "pid", "log", "gpusim", "db"):  # a fresh start: nothing from the last run
            remove_tree(run / sub)
        for sub in ("etc", "state", "log", "pid"):
            (run / sub).mkdir(parents=True, exist_ok=True)
        for node in spec.nodes:
            (run / "spool" / node).mkdir(parents=True, exist_ok=True)
        ctld_port = sim_config.pick_ports(spec, run, self.state().get("slurmctld", {}).get("port"))
        node_ports = {node: ctld_port + 1 + i for i, node in enumerate(spec.nodes)}
        sim_config.write_slurm_conf(spec, run, ctld_port, self.env())
        state = {
            "name": spec.name,
            "spec_path": str(spec.path) if spec.path else None,
            "spec": spec.data,
            "digest": spec.digest(),
            "run_dir": str(run),
            "slurm_conf": str(self.conf),
            "hostname": hostname(),
            "slurmctld": {"pid": None, "port": ctld_port},
            "slurmd": {node: {"pid": None, "port": node_ports[node], "reachable": node not in spec.unreachable}
                       for node in spec.nodes},
        }
        write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        write_file(run / "spec.json", json.dumps(spec.data, indent=2) + "\n")
        sim_config.write_fake_sysfs(run)
        write_file(self.env_file, "# Source me: Slurm and fake-tool settings of simulated cluster %s\n%s"
                   % (spec.name, self.env_lines()))
        if spec.accounting:  # the database and slurmdbd first: slurmctld registers the cluster at start
            self._start_accounting(state, accounting.ports(ctld_port, len(spec.nodes)), deadline)

        pid = self.daemons.start_slurmctld(self._client_env(), deadline)
        state["slurmctld"]["pid"] = pid
        while not port_listening(ctld_port):
            if not alive(pid):
                raise SimError("slurmctld exited at start: see %s" % (run / "log" / "slurmctld.log"))
            if time.monotonic() > deadline:
                raise SimError("slurmctld not listening on port %d: see %s" % (ctld_port, run / "log" / "slurmctld.log"))
            time.sleep(0.02)
        self._start_slurmds(state, spec.reachable, deadline)
        write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        if spec.transport == "ssh":
            ssh = sshnodes.SSHNodes(run, spec.nodes, spec.unreachable)
            state["ssh"] = ssh.state()  # in state.json first: stop finds what a failed start left
            write_file(self.state_file, json.dumps(state, indent=2) + "\n")
            try:
                state["ssh"] = ssh.start(deadline)
            except sshnodes.SSHNodeError as exc:
                raise SimError("sshd: %s" % exc) from None
            write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        wait_until_ready(self.sinfo, spec, deadline, fresh=True, log_dir=self.run_dir / "log")
        return state

    def _start_accounting(self, state, db_ports, deadline):
        def record(entry):
            state["accounting"] = entry
            write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        try:
            self._accounting().start(*db_ports, deadline, on_pid=record)
        except accounting.AccountingError as exc:
            raise SimError("accounting: %s" % exc) from None

    def _start_missing(self, state):
        pids = self._daemon_pids()["slurmd"]
        missing = [n for n, info in state["slurmd"].items() if info.get("reachable", True) and not pids.get(n)]
        if missing:
            self._start_slurmds(state, missing, time.monotonic() + 15)
            write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        ssh = self._ssh()
        if ssh:
            try:
                state["restarted_sshd"] = ssh.start_missing()
            except sshnodes.SSHNodeError as exc:
                raise SimError("sshd: %s" % exc) from None
            state["ssh"] = ssh.state()
            write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        return missing

    def _ssh(self):
        """The nodes' sshd (sim/sshnodes.py) when this run has them, else None."""
        state = self.state().get("ssh")
        return sshnodes.SSHNodes.from_state(self.run_dir, state) if state else None

    def _start_slurmds(self, state, nodes, deadline):
        for node, pid in self.daemons.start_slurmds(nodes, self._client_env(), deadline).items():
            state["slurmd"][node]["pid"] = pid

    def _accounting(self):
        return accounting.Accounting(self.run_dir, self.conf)

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, all=False, timeout=1.0):  # noqa: A002 - mirrors the CLI flag
        """Stop this run's daemons by PID: SIGTERM, SIGKILL after ``timeout`` s. ``all`` also stops munge.

        Running jobs are cancelled first (up to 3 s for their steps to end). The short default
        timeout is deliberate: slurmctld lingers ~3 s on shutdown when a node is unreachable, and
        a fresh start throws its saved state away anyway.

        Returns {'stopped': [pids], 'killed': [pids], 'munge_stopped': bool, 'seconds': float}.
        """
        t0 = time.monotonic()
        ssh = self._ssh()
        # First the nodes' sshd, their sessions and what runs under them (collectors, tools).
        try:
            ssh_result = ssh.stop(timeout) if ssh else {"stopped": [], "killed": []}
        except sshnodes.SSHNodeError as exc:
            raise SimError("stopping the nodes' sshd: %s" % exc) from None
        pids = self._daemon_pids()
        daemons = [p for p in [pids["slurmctld"], *pids["slurmd"].values()] if p]
        daemons += [p for p in self._stray_daemons() if p not in daemons]
        if pids["slurmctld"]:
            self.daemons.cancel_jobs(self.run, t0 + 3.0)
        left, strays = self.daemons.kill(daemons, timeout)
        # After slurmctld (it sends its last records to slurmdbd): slurmdbd, then the database.
        state = self.state()
        if state.get("accounting") or (self.run_dir / "db").exists():
            try:
                acct = self._accounting().stop(timeout)
            except accounting.AccountingError as exc:
                raise SimError("accounting: %s" % exc) from None
            daemons += acct["stopped"]
            left += acct["killed"]
        if state:
            for info in (state.get("accounting") or {}).values():
                if isinstance(info, dict) and "pid" in info:
                    info["pid"] = None
            state["slurmctld"]["pid"] = None
            for info in state.get("slurmd", {}).values():
                info["pid"] = None
            for info in state.get("ssh", {}).get("nodes", {}).values():
                info["pid"] = None
            state["stopped"] = True
            write_file(self.state_file, json.dumps(state, indent=2) + "\n")
        munge_stopped = stop_munge() if all else False
        return {"stopped": ssh_result["stopped"] + daemons, "killed": ssh_result["killed"] + left + strays,
                "munge_stopped": munge_stopped,
                "seconds": round(time.monotonic() - t0, 3)}
