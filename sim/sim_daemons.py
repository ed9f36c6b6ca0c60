# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Slurm daemons of one run directory: started, found and stopped by PID.

slurmctld and every slurmd write pid files under ``<run>/pid``; a PID counts as this run's only
while ``/proc/PID/cmdline`` names the daemon and this run's slurm.conf. Their slurmstepd rename
themselves, so they are found by the daemon mark in their environment (sim_processes.py).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from sim_config import SLURM_SBIN
from sim_processes import (DAEMON_MARK, SimError, alive, all_pids, cmdline, descendants, is_daemon, log_hint,
                           marked_pids, read_pid, send_signal, terminate, wait_gone)


class SlurmDaemons:
    """slurmctld and the slurmds run with ``conf`` from ``run_dir``."""

    def __init__(self, run_dir, conf):
        self.run_dir = Path(run_dir)
        self.conf = Path(conf)
        self.pid_dir = self.run_dir / "pid"

    def pids(self, state):
        """{'slurmctld': pid|None, 'slurmd': {node: pid|None}}: live daemons of this run, by pid file."""
        ctld = read_pid(self.pid_dir / "slurmctld.pid") or state.get("slurmctld", {}).get("pid")
        if not (ctld and alive(ctld) and is_daemon(ctld, self.conf, "slurmctld")):
            ctld = None
        slurmds = {}
        for node, info in (state.get("slurmd") or {}).items():
            pid = read_pid(self.pid_dir / ("slurmd-%s.pid" % node)) or info.get("pid")
            slurmds[node] = pid if pid and alive(pid) and is_daemon(pid, self.conf, "slurmd") else None
        return {"slurmctld": ctld, "slurmd": slurmds}

    def strays(self):
        """Live slurmctld/slurmd processes started with this run's slurm.conf (pid files lost)."""
        found = []
        for pid in all_pids():
            argv = cmdline(pid)
            if argv and os.path.basename(argv[0]) in ("slurmctld", "slurmd") and str(self.conf) in argv \
                    and alive(pid):
                found.append(pid)
        return found

    def step_pids(self):
        """This run's slurmstepd processes (they carry the daemon mark and rename themselves)."""
        return [p for p in marked_pids(self.run_dir) if (cmdline(p) or [""])[0].startswith("slurmstepd")]

    def spawn(self, argv, env, wait=True):
        """Start a self-daemonizing Slurm daemon; the parent exits at once (the daemon is PID 1's)."""
        env = dict(env)
        env[DAEMON_MARK] = str(self.run_dir)
        proc = subprocess.Popen([str(SLURM_SBIN / argv[0]), *argv[1:]], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                cwd=str(self.run_dir))
        if wait:
            proc.wait(timeout=30)
        return proc

    def wait_pidfile(self, path, daemon, deadline, node=None):
        """The live PID in pid file ``path`` once ``daemon`` wrote it; SimError after ``deadline``."""
        log = self.run_dir / "log" / ("%s.log" % daemon if node is None else "slurmd-%s.log" % node)
        while True:
            pid = read_pid(path)
            if pid and alive(pid) and is_daemon(pid, self.conf, daemon):
                return pid
            if time.monotonic() > deadline:
                raise SimError("%s%s did not start (no live pid in %s): see %s"
                               % (daemon, " " + node if node else "", path, log_hint(log)))
            time.sleep(0.01)

    def start_slurmctld(self, env, deadline):
        self.spawn(["slurmctld", "-f", str(self.conf)], env)
        return self.wait_pidfile(self.pid_dir / "slurmctld.pid", "slurmctld", deadline)

    def start_slurmds(self, nodes, env, deadline):
        """Start one slurmd per node in ``nodes`` (all at once); {node: pid} once each wrote its pid file."""
        for node in nodes:
            with contextlib.suppress(FileNotFoundError):
                (self.pid_dir / ("slurmd-%s.pid" % node)).unlink()
        parents = [self.spawn(["slurmd", "-f", str(self.conf), "-N", node], env, wait=False) for node in nodes]
        for proc in parents:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        return {node: self.wait_pidfile(self.pid_dir / ("slurmd-%s.pid" % node), "slurmd", deadline, node)
                for node in nodes}

    def kill(self, daemons, timeout):
        """SIGTERM ``daemons`` (SIGKILL after ``timeout`` s), then SIGKILL this run's leftover steps.

        Returns (daemons that needed SIGKILL, leftover step processes); SimError if any survive.
        """
        left = terminate(daemons, timeout)
        # slurmstepd of this run (and what they run) that outlived their slurmd.
        strays = marked_pids(self.run_dir)
        strays += [p for p in descendants(strays) if p not in strays]
        for pid in strays:
            send_signal(pid, signal.SIGKILL)
        still = wait_gone(left + strays, time.monotonic() + 5)
        if still:
            raise SimError("could not stop pids %s" % ", ".join(map(str, still)))
        return left, strays

    def cancel_jobs(self, run, deadline):
        """Cancel every job so Slurm ends their tasks; wait (until deadline) for the tasks to go.

        ``run``: runs a Slurm client of this cluster (SimCluster.run).
        """
        try:
            jobs = run(["squeue", "--noheader", "--format=%A"], timeout=5).stdout.split()
        except subprocess.TimeoutExpired:
            return
        if not jobs:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            run(["scancel", *jobs], timeout=5)
        # Wait for the jobs' tasks (the steps' children) to end; the step daemons are swept after.
        while descendants(self.step_pids()) and time.monotonic() < deadline:
            time.sleep(0.05)


def wait_until_ready(sinfo, spec, deadline, fresh, log_dir):
    """Poll ``sinfo()`` until every reachable node is idle (fresh) or responding, unreachable ones known."""
    want = set(spec.reachable)
    last = {}
    while True:
        try:
            last = sinfo(timeout=5)
        except (SimError, subprocess.TimeoutExpired):
            last = last or {}
        else:
            if fresh:
                # A HealthCheckProgram runs at slurmd start and may drain its node at once.
                ready = all(last.get(n) in ("idle", "drain", "drained") for n in want)
            else:
                ready = all(n in last and not last[n].endswith("*") and not last[n].startswith(("unk", "down"))
                            for n in want)
            if ready and set(spec.nodes) <= set(last):
                return last
        if time.monotonic() > deadline:
            waiting = sorted(n for n in want if last.get(n) != "idle")
            raise SimError("nodes not ready: %s (states %s): see %s"
                           % (", ".join(waiting[:8]) or "?", ", ".join(sorted({last.get(n, "?") for n in waiting})),
                              log_dir))
        time.sleep(0.05 if len(want) <= 256 else 0.25)  # sinfo over 1,024 nodes costs slurmctld CPU
