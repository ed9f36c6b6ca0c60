# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes, ports and files of the simulated cluster, read from /proc (no process names matched).

Everything here finds a process by its PID (pid files, ``/proc/PID/cmdline`` or the daemon mark in
``/proc/PID/environ``), so stopping one cluster never touches another's daemons or anything else
on the host. Standard library only.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import time
from pathlib import Path

# Set only in the environment of the daemons sim/simcluster.py starts (and so of their
# slurmstepd): finds a run's leftover step daemons without matching on process names.
DAEMON_MARK = "GPUCLUSTER_SIM_DAEMON"


class SimError(RuntimeError):
    """Running the simulated cluster failed; the message is one line saying where to look."""


def proc_state(pid):
    """The /proc state letter of ``pid`` ('R', 'S', 'Z', ...) or None when it is gone."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except (OSError, ValueError):
        return None
    return stat[stat.rfind(")") + 2:].split(" ", 1)[0]


def alive(pid):
    """True when ``pid`` runs and is not a zombie (PID 1 reaps slowly here)."""
    return bool(pid) and proc_state(pid) not in (None, "Z", "X")


def cmdline(pid):
    """argv of ``pid`` ([] when it is gone)."""
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def is_daemon(pid, conf, daemon):
    """True when ``pid`` is ``daemon`` (slurmctld / slurmd) started with this run's ``conf``."""
    argv = cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]) == daemon and str(conf) in argv


def read_pid(path):
    """The PID in a pid file, or None."""
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def marked_pids(run_dir):
    """PIDs whose environment carries this run's daemon mark (slurmstepd of this run's slurmds)."""
    mark = ("%s=%s" % (DAEMON_MARK, run_dir)).encode()
    found = []
    for pid in all_pids():
        try:
            env = Path("/proc/%d/environ" % pid).read_bytes()
        except OSError:
            continue
        if mark in env.split(b"\0") and alive(pid):
            found.append(pid)
    return found


def descendants(roots):
    """Every descendant of the PIDs ``roots`` (not the roots themselves)."""
    children = {}
    for pid in all_pids():
        try:
            stat = Path("/proc/%d/stat" % pid).read_text()
            ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    out, todo, seen = [], list(roots), set()
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            if child not in seen:
                seen.add(child)
                out.append(child)
                todo.append(child)
    return out


def send_signal(pid, sig):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def wait_gone(pids, deadline):
    """Poll until every pid is gone or a zombie, or the deadline passes; return those still alive."""
    pending = [p for p in pids if alive(p)]
    delay = 0.02
    while pending and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 1.5, 0.2)
        pending = [p for p in pending if alive(p)]
    return pending


def terminate(pids, timeout, kill_wait=5.0):
    """SIGTERM ``pids``, SIGKILL those alive after ``timeout`` s; return the ones that needed SIGKILL."""
    for pid in pids:
        send_signal(pid, signal.SIGTERM)
    left = wait_gone(pids, time.monotonic() + timeout)
    for pid in left:
        send_signal(pid, signal.SIGKILL)
    wait_gone(left, time.monotonic() + kill_wait)
    return left


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def listening_ports():
    """Every TCP port something listens on (read from /proc: no connection, no log noise)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def port_listening(port):
    """True when a TCP socket listens on ``port``."""
    return port in listening_ports()


def write_file(path, text, mode=0o644):
    """Write atomically (readers never see half a file), created with ``mode`` from the start: a
    0600 file (slurmdbd.conf holds the database password) is never readable by others, not even briefly."""
    path = Path(path)
    tmp = path.with_name(".%s.tmp" % path.name)
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(str(tmp), mode)  # the umask may have taken bits away
    tmp.replace(path)


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


def hostname():
    return socket.gethostname().split(".")[0]


def log_hint(log):
    """``log`` and its last line mentioning an error, for a one-line SimError."""
    try:
        tail = [line for line in Path(log).read_text(errors="replace").splitlines() if "error" in line.lower()]
    except OSError:
        return str(log)
    return "%s (%s)" % (log, tail[-1].strip()) if tail else str(log)


@contextlib.contextmanager
def locked(path):
    """An exclusive flock on ``path`` for the block (one start or stop at a time on this host)."""
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
