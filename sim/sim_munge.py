# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""munged, shared by every simulated cluster on this host (Slurm's AuthType=auth/munge)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from sim_processes import SimError, alive, cmdline, read_pid, send_signal, wait_gone

MUNGE_RUN = Path("/run/munge")
MUNGE_KEY = Path("/etc/munge/munge.key")
# munged's default of 2 threads cannot keep up with 1,024 slurmds (connections fail with EAGAIN
# and Slurm reports "Protocol authentication error"); 16 keep up on 2 cores.
MUNGE_THREADS = 16
# ... and under load (1,024 slurmstepd on 2 cores) its threads must get the CPU first: the socket's
# backlog fills while they wait.
MUNGE_NICE = -10


def munge_ok():
    """True when a credential round-trips through munged."""
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5, check=False)
        if cred.returncode != 0:
            return False
        return subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def munged_pid():
    """PID of the running munged (by its pid file), or None."""
    pid = read_pid(MUNGE_RUN / "munged.pid")
    argv = cmdline(pid) if pid else []
    return pid if pid and alive(pid) and argv and os.path.basename(argv[0]) == "munged" else None


def munged_threads(pid):
    """The --num-threads the munged ``pid`` was started with (2, munged's default, when not given)."""
    argv = cmdline(pid)
    for i, arg in enumerate(argv):
        if arg.startswith("--num-threads="):
            return int(arg.split("=", 1)[1])
        if arg == "--num-threads" and i + 1 < len(argv):
            return int(argv[i + 1])
    return 2


def prioritize(pid, nice=MUNGE_NICE):
    """Give every thread of ``pid`` the nice value ``nice`` (lower: scheduled first)."""
    if not pid:
        return
    try:
        tasks = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return
    for task in tasks:
        try:
            if os.getpriority(os.PRIO_PROCESS, task) > nice:
                os.setpriority(os.PRIO_PROCESS, task, nice)
        except OSError:
            pass


def ensure_munge(timeout=10.0, threads=None):
    """Start munged (as user munge) unless it already answers; True when it was started.

    ``threads``: restart a munged running with fewer threads (a large cluster needs them; a
    restart takes a fraction of a second and munge clients retry their connection).
    """
    pid = munged_pid()
    if threads and pid and munged_threads(pid) < threads:
        stop_munge(timeout)
    elif munge_ok():
        return False
    elif pid:
        # A live munged that does not answer is busy (a large cluster's slurmds): wait for it. A
        # second munged --force would take its socket and leave it running orphaned.
        deadline = time.monotonic() + timeout
        while not munge_ok():
            if time.monotonic() > deadline or not alive(pid):
                raise SimError("munged (pid %d) does not answer `munge -n | unmunge`: see /var/log/munge/munged.log"
                               % pid)
            time.sleep(0.2)
        return False
    if not Path("/usr/sbin/munged").exists():
        raise SimError("munged is not installed: run tools/install-system-deps.sh")
    if not MUNGE_KEY.exists():
        subprocess.run(["mungekey", "--create", "--keyfile", str(MUNGE_KEY)], check=True, capture_output=True)
        subprocess.run(["chown", "munge:munge", str(MUNGE_KEY)], check=True)
        MUNGE_KEY.chmod(0o400)
    subprocess.run(["install", "-d", "-o", "munge", "-g", "munge", "-m", "0755", str(MUNGE_RUN)], check=True)
    # --force: a socket or pid file left by a munged that died (e.g. a container restart).
    proc = subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force",
                           "--num-threads=%d" % max(threads or 0, MUNGE_THREADS)],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    deadline = time.monotonic() + timeout
    while not munge_ok():
        if time.monotonic() > deadline:
            raise SimError("munged did not start (rc=%d): %s" % (proc.returncode, proc.stderr.strip()[:200]))
        time.sleep(0.05)
    return True


def stop_munge(timeout=10.0):
    """Stop munged by its pid file; True when one was stopped."""
    pid = munged_pid()
    if not pid:
        return False
    send_signal(pid, signal.SIGTERM)
    if wait_gone([pid], time.monotonic() + timeout):
        send_signal(pid, signal.SIGKILL)
        wait_gone([pid], time.monotonic() + 5)
    return True
