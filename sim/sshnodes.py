# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SSH to the simulated nodes: one real sshd per node, an unprivileged login user, sudo.

A spec with ``transport: ssh`` makes the cluster reachable the way a real one is: Ansible connects
over SSH as an unprivileged user and becomes root with sudo. Per cluster (per run directory):

    <run>/ssh/id_ed25519[.pub]           the login user's key (the controller's side)
    <run>/ssh/known_hosts                every node's host key, at its address and port
    <run>/ssh/nodes/<node>/sshd_config   that node's sshd: its own address, host key, pid file
    <run>/ssh/nodes/<node>/ssh_host_ed25519_key[.pub]
    <run>/pid/sshd-<node>.pid, <run>/log/sshd-<node>.log
    /home/<user>/                        the login user's home: .ssh/authorized_keys, bin/ (its PATH)
    /etc/sudoers.d/gpucluster-sim-<user> passwordless sudo for that user (removed by stop)

Each node's sshd listens on an address of its own in 127.0.0.0/8 (Linux routes all of it to lo),
so ``ansible_host`` tells the nodes apart as on a real cluster. The addresses and the user name
follow from the run directory alone, so an inventory can be written before the cluster starts.
The login shell's PATH (sshd's SetEnv) is one directory of links to the system's commands, Python
left out: no Python for the login user, as on a node without it (Ansible still needs mkdir and the
like as the login user, for a module's temporary directory). sudo's own secure_path applies under
become, as on a Debian node.

Processes are found without matching on names other than sshd's own titles: listeners by the
config path in their title, session processes by the login user's name in theirs ("sshd: USER
[priv]"), the user's shells and sudo by the SetEnv mark below, and what runs as root under sudo by
the GPUCLUSTER_SIM_RUN/GPUCLUSTER_SIM_NODE pair the collector passes with ``env K=V``.
Standard library only; needs root, sshd (openssh-server), sudo and useradd.
"""
from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
SUDO = Path("/usr/bin/sudo")
SUDOERS_D = Path("/etc/sudoers.d")
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without its privilege-separation directory
HOME_ROOT = Path("/home")
# One port on every node address, as port 22 on a real cluster. Not 22 (a system sshd listening
# on 0.0.0.0:22 would block every address) and outside Slurm's block (24000-31999) and the
# ephemeral range.
PORT = 16022
# Node addresses: one 512-address block of 127.1.0.0-127.254.255.255 per run directory (a node
# count up to 256 fits), node i at block + 1 + i.
BLOCK_SIZE = 512
BLOCK_FIRST = int(ipaddress.IPv4Address("127.1.0.0"))
BLOCKS = (int(ipaddress.IPv4Address("127.255.0.0")) - BLOCK_FIRST) // BLOCK_SIZE
# Set by each node's sshd in its login sessions (SetEnv): the node's directory. sudo's env_reset
# drops it for what runs as root; the collector passes GPUCLUSTER_SIM_NODE/RUN there instead.
SESSION_MARK = "GPUCLUSTER_SIM_SSHD"
GECOS = "gpucluster-sim login user"
# The login PATH: links to the commands of these directories, except Python's.
SYSTEM_BIN = ("/usr/local/bin", "/usr/bin", "/usr/local/sbin", "/usr/sbin")
NO_PYTHON = re.compile(r"^(python|pydoc|pip|idle|2to3|pyvenv|py3compile|pyclean|pycompile)")
NODE_ENV, RUN_ENV = "GPUCLUSTER_SIM_NODE", "GPUCLUSTER_SIM_RUN"


class SSHNodeError(RuntimeError):
    """Starting or stopping the nodes' sshd failed; one line saying where to look."""


def _digest(run_dir):
    return hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()


def login_user(run_dir):
    """The login user of the cluster in ``run_dir``: ``gsim`` + 8 hex digits of the path's hash."""
    return "gsim" + _digest(run_dir)[:8]


def addresses(run_dir, nodes):
    """{node: loopback address}: the run directory's block, in node order."""
    block = int(_digest(run_dir)[8:16], 16) % BLOCKS
    base = BLOCK_FIRST + block * BLOCK_SIZE
    if len(nodes) > BLOCK_SIZE - 2:
        raise SSHNodeError("at most %d SSH nodes per cluster" % (BLOCK_SIZE - 2))
    return {node: str(ipaddress.IPv4Address(base + 1 + i)) for i, node in enumerate(nodes)}


def ssh_dir(run_dir):
    return Path(run_dir).resolve() / "ssh"


def group_vars(run_dir, python=None):
    """Inventory variables every SSH node shares (as in inventory/example: a user and become)."""
    base = ssh_dir(run_dir)
    return {
        "ansible_connection": "ssh",
        "ansible_port": PORT,
        "ansible_user": login_user(run_dir),
        "ansible_become": True,
        "ansible_ssh_private_key_file": str(base / "id_ed25519"),
        # ansible.cfg turns host key checking off (StrictHostKeyChecking=no comes first, and the
        # first value wins in ssh): on here, against this cluster's known_hosts only.
        "ansible_host_key_checking": True,
        "ansible_ssh_common_args": " ".join([
            "-o", "UserKnownHostsFile=%s" % shlex.quote(str(base / "known_hosts")),
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "ConnectTimeout=5", "-o", "ConnectionAttempts=1"]),
        # Module tasks (only the workload stage's copy) use the controller's Python by path; the
        # per-node stages need none (collect_stage runs the collector like raw).
        "ansible_python_interpreter": python or sys.executable,
    }


def host_vars(run_dir, nodes, node):
    return {"ansible_host": addresses(run_dir, nodes)[node]}


# ---------------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------------
def _all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _stat(pid):
    """(state letter, ppid) or (None, None) when gone."""
    try:
        text = Path("/proc/%d/stat" % pid).read_text()
        fields = text[text.rfind(")") + 2:].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return None, None


def alive(pid):
    return bool(pid) and _stat(pid)[0] not in (None, "Z", "X")


def _cmdline(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().decode(errors="replace").replace("\0", " ").strip()
    except OSError:
        return ""


def _environ(pid):
    try:
        raw = Path("/proc/%d/environ" % pid).read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


def _uid(pid):
    try:
        return os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return None


def _children_map():
    children = {}
    for pid in _all_pids():
        ppid = _stat(pid)[1]
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    return children


def descendants(roots, children=None):
    children = _children_map() if children is None else children
    out, todo = [], list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.append(child)
                todo.append(child)
    return out


def _self_and_ancestors():
    pids, pid = set(), os.getpid()
    while pid and pid > 1 and pid not in pids:
        pids.add(pid)
        pid = _stat(pid)[1]
    return pids


def listening(address, port):
    """True when a TCP socket listens on address:port (from /proc/net/tcp: no connection made)."""
    packed = ipaddress.IPv4Address(address).packed
    local = "%s:%04X" % ("".join("%02X" % b for b in reversed(packed)), port)
    try:
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(len(f) > 3 and f[1] == local and f[3] == "0A" for f in (r.split() for r in rows))


def _wait_gone(pids, deadline):
    pending = [p for p in pids if alive(p)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        pending = [p for p in pending if alive(p)]
    return pending


def _signal(pid, sig):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _write(path, text, mode=0o644):
    path = Path(path)
    tmp = path.with_name(".%s.tmp" % path.name)  # a dot: sudo skips such names in sudoers.d
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)


def _run(argv, what, **kwargs):
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
                          timeout=30, **kwargs)
    if proc.returncode != 0:
        raise SSHNodeError("%s failed (rc=%d): %s" % (what, proc.returncode,
                                                      (proc.stderr or proc.stdout).strip()[:300]))
    return proc


# ---------------------------------------------------------------------------------------------
# The nodes' sshd
# ---------------------------------------------------------------------------------------------
class SSHNodes:
    """One sshd per reachable node of the cluster in ``run_dir``; ``nodes`` in order (all of them)."""

    def __init__(self, run_dir, nodes, unreachable=()):
        self.run_dir = Path(run_dir).resolve()
        self.nodes = list(nodes)
        self.unreachable = [n for n in nodes if n in set(unreachable)]
        self.reachable = [n for n in nodes if n not in set(unreachable)]
        self.dir = ssh_dir(self.run_dir)
        self.user = login_user(self.run_dir)
        self.home = HOME_ROOT / self.user
        self.key = self.dir / "id_ed25519"
        self.known_hosts = self.dir / "known_hosts"
        self.sudoers = SUDOERS_D / ("gpucluster-sim-%s" % self.user)
        self.address = addresses(self.run_dir, self.nodes)

    @classmethod
    def from_state(cls, run_dir, state):
        """The nodes recorded in state.json's ``ssh`` entry (for stop/status without a spec)."""
        nodes = state.get("nodes") or {}
        return cls(run_dir, list(nodes), [n for n, i in nodes.items() if not i.get("reachable", True)])

    def node_dir(self, node):
        return self.dir / "nodes" / node

    def conf(self, node):
        return self.node_dir(node) / "sshd_config"

    def pid_file(self, node):
        return self.run_dir / "pid" / ("sshd-%s.pid" % node)

    def log(self, node):
        return self.run_dir / "log" / ("sshd-%s.log" % node)

    # -- start ----------------------------------------------------------------------------------
    def start(self, deadline=None):
        """Fresh keys, user, sudo drop-in and one sshd per reachable node; returns the state entry."""
        deadline = deadline or time.monotonic() + 30
        for tool in (SSHD, SUDO):
            if not tool.exists():
                raise SSHNodeError("%s is not installed: run tools/install-system-deps.sh" % tool)
        busy = [n for n in self.reachable if listening(self.address[n], PORT)]
        if busy:
            raise SSHNodeError("%s:%d (node %s) is already in use: another cluster in this run directory?"
                               % (self.address[busy[0]], PORT, busy[0]))
        shutil.rmtree(self.dir, ignore_errors=True)
        for sub in (self.dir / "nodes", self.run_dir / "pid", self.run_dir / "log"):
            sub.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        self._keygen(self.key, "%s@controller" % self.user)
        known = []
        for node in self.nodes:
            self.node_dir(node).mkdir(parents=True)
            hostkey = self.node_dir(node) / "ssh_host_ed25519_key"
            self._keygen(hostkey, node)
            algo, blob = Path(str(hostkey) + ".pub").read_text().split()[:2]
            known.append("[%s]:%d %s %s\n" % (self.address[node], PORT, algo, blob))
            _write(self.conf(node), self._sshd_config(node, hostkey))
        _write(self.known_hosts, "".join(known), mode=0o600)
        self._ensure_user()
        self._ensure_sudo()
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        pids = self._start_sshd(self.reachable, deadline)
        return self.state(pids)

    def start_missing(self, deadline=None):
        """Start the sshd of reachable nodes whose sshd is gone (the rest keep their pids)."""
        missing = [n for n, pid in self.pids().items() if pid is None and n in self.reachable]
        if missing:
            self._start_sshd(missing, deadline or time.monotonic() + 15)
        return missing

    def state(self, pids=None):
        pids = self.pids() if pids is None else pids
        return {"user": self.user, "port": PORT, "key": str(self.key), "known_hosts": str(self.known_hosts),
                "nodes": {n: {"address": self.address[n], "pid": pids.get(n), "reachable": n in self.reachable}
                          for n in self.nodes}}

    def _keygen(self, path, comment):
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], "ssh-keygen")

    def _sshd_config(self, node, hostkey):
        for value in (str(self.node_dir(node)), str(self.home)):
            if any(c in value for c in "\"' \t\n"):
                raise SSHNodeError("path %r has quotes or blanks: sshd_config cannot hold it" % value)
        return "\n".join([
            "# Generated by sim/clusterctl for node %s of %s: do not edit." % (node, self.run_dir),
            "ListenAddress %s:%d" % (self.address[node], PORT),
            "HostKey %s" % hostkey,
            "PidFile %s" % self.pid_file(node),
            "AllowUsers %s" % self.user,
            "AuthorizedKeysFile .ssh/authorized_keys",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin no",
            # No PAM stack is needed for a key login; the account's password field is '*' (not
            # '!', which sshd without PAM takes for a locked account).
            "UsePAM no",
            "StrictModes yes",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "AllowAgentForwarding no",
            "PermitUserEnvironment no",
            "MaxStartups 64:30:256",
            "MaxSessions 64",
            "LogLevel VERBOSE",
            # The login shell's PATH: the system's commands without Python; the node's mark.
            "SetEnv PATH=%s %s=%s" % (self.home / "bin", SESSION_MARK, self.node_dir(node)),
            "Subsystem sftp internal-sftp",
        ]) + "\n"

    def _ensure_user(self):
        try:
            entry = pwd.getpwnam(self.user)
        except KeyError:
            entry = None
        if entry is not None and entry.pw_gecos != GECOS:
            raise SSHNodeError("user %s exists and is not a simulated cluster's login user" % self.user)
        if entry is None:
            # '*': no password can log in, and unlike '!' sshd (without PAM) does not see a locked account.
            self._retry(["useradd", "--no-create-home", "--home-dir", str(self.home), "--shell", "/bin/bash",
                         "--comment", GECOS, "--user-group", "--password", "*", self.user], "useradd")
            entry = pwd.getpwnam(self.user)
        uid, gid = entry.pw_uid, entry.pw_gid
        shutil.rmtree(self.home, ignore_errors=True)
        (self.home / ".ssh").mkdir(parents=True)
        self._login_bin(self.home / "bin")
        self.home.chmod(0o755)
        (self.home / ".ssh").chmod(0o700)
        _write(self.home / ".ssh" / "authorized_keys", Path(str(self.key) + ".pub").read_text(), mode=0o600)
        for path in (self.home, self.home / ".ssh", self.home / ".ssh" / "authorized_keys"):
            os.chown(path, uid, gid)

    @staticmethod
    def _login_bin(path):
        """The login PATH's one directory: a link per system command, none to a Python."""
        path.mkdir()
        for folder in SYSTEM_BIN:
            with contextlib.suppress(FileNotFoundError):
                for name in sorted(os.listdir(folder)):
                    target = os.path.join(folder, name)
                    link = path / name
                    if NO_PYTHON.match(name) or link.exists() or not os.access(target, os.X_OK) \
                            or os.path.isdir(target):
                        continue
                    link.symlink_to(target)

    def _retry(self, argv, what, tries=20):
        """useradd/userdel: another cluster may hold the passwd lock for a moment."""
        for attempt in range(tries):
            proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
                                  timeout=30)
            if proc.returncode == 0 or "lock" not in (proc.stderr + proc.stdout).lower() or attempt == tries - 1:
                break
            time.sleep(0.1)
        if proc.returncode != 0:
            raise SSHNodeError("%s %s failed (rc=%d): %s" % (what, self.user, proc.returncode, proc.stderr.strip()))
        return proc

    def _ensure_sudo(self):
        text = ("# Generated by sim/clusterctl for the simulated cluster in %s: removed by its stop.\n"
                "%s ALL=(ALL:ALL) NOPASSWD: ALL\n" % (self.run_dir, self.user))
        tmp = SUDOERS_D / (".gpucluster-sim-%s.new" % self.user)  # sudo ignores names with a dot
        _write(tmp, text, mode=0o440)
        try:
            _run(["visudo", "-c", "-q", "-f", str(tmp)], "visudo -c of the sudoers drop-in")
        except SSHNodeError:
            tmp.unlink()
            raise
        tmp.replace(self.sudoers)

    def _start_sshd(self, nodes, deadline):
        for node in nodes:
            with contextlib.suppress(FileNotFoundError):
                self.pid_file(node).unlink()
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
        # sshd daemonizes (its parent returns at once): all start together.
        procs = [subprocess.Popen([str(SSHD), "-f", str(self.conf(n)), "-E", str(self.log(n))], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  start_new_session=True) for n in nodes]
        for node, proc in zip(nodes, procs):
            err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[1].decode(errors="replace")
            if proc.returncode != 0:
                raise SSHNodeError("sshd of %s exited %d: %s (see %s)"
                                   % (node, proc.returncode, err.strip()[:200], self.log(node)))
        pids = {}
        for node in nodes:
            while True:
                pid = self._listener(node)
                if pid and listening(self.address[node], PORT):
                    pids[node] = pid
                    break
                if time.monotonic() > deadline:
                    raise SSHNodeError("sshd of %s not listening on %s:%d: see %s"
                                       % (node, self.address[node], PORT, self.log(node)))
                time.sleep(0.01)
        return pids

    # -- processes ------------------------------------------------------------------------------
    def _listener(self, node):
        """The live sshd listener of ``node`` by its pid file, trusted only with this config in its title."""
        try:
            pid = int(self.pid_file(node).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if alive(pid) and str(self.conf(node)) in _cmdline(pid).split() else None

    def pids(self):
        """{node: listener pid or None} for every node."""
        return {n: (self._listener(n) if n in self.reachable else None) for n in self.nodes}

    def status(self):
        pids = self.pids()
        return {n: {"pid": pids[n], "alive": bool(pids[n]), "address": self.address[n], "port": PORT,
                    "reachable": n in self.reachable} for n in self.nodes}

    def _scan(self, node=None):
        """Live pids of the cluster's (or one node's) SSH side, excluding this process and its ancestors.

        Listeners and their descendants (sessions, shells, sudo, the collector, tools), the login
        user's processes and sshd session processes (by its name in their titles), processes with
        the node's SetEnv mark, and root's processes that carry this run and a node of it in
        their environment (the collector passes them: a tool whose parent is gone still has them).
        """
        nodes = [node] if node else self.nodes
        node_dirs = {str(self.node_dir(n)) for n in nodes}
        prefix = str(self.dir / "nodes") + "/"
        run = str(self.run_dir)
        children = _children_map()
        uid = None
        with contextlib.suppress(KeyError):
            uid = pwd.getpwnam(self.user).pw_uid
        found = set()
        for pid in _all_pids():
            title = _cmdline(pid)
            if title.startswith("sshd:"):
                if any(" -f %s/sshd_config" % d in title for d in node_dirs):
                    found.add(pid)  # a listener (pid file lost, or not yet written)
                elif node is None and title.split()[1:2] == [self.user]:
                    found.add(pid)  # "sshd: USER [priv]": whose node only its socket tells
                continue
            if node is None and uid is not None and _uid(pid) == uid:
                found.add(pid)
                continue
            env = _environ(pid)
            mark = env.get(SESSION_MARK, "")
            if mark in node_dirs or (node is None and mark.startswith(prefix)):
                found.add(pid)
            elif env.get(RUN_ENV) == run and env.get(NODE_ENV) in nodes:
                found.add(pid)
        roots = set(found) | {p for p in (self._listener(n) for n in nodes) if p}
        found |= roots | set(descendants(roots, children))
        return sorted(p for p in found - _self_and_ancestors() if alive(p))

    def node_processes(self, node, sessions=True):
        """Live processes on ``node``: under its sshd or marked as its. ``sessions=False`` leaves out
        the listener and sshd's own session processes (a kept ControlPersist connection)."""
        found = self._scan(node)
        if not sessions:
            found = [p for p in found if not _cmdline(p).startswith("sshd:")]
        return found

    def processes(self):
        """Every live process of the cluster's SSH side (empty after stop)."""
        return self._scan()

    def session_process(self, pid):
        """The sshd session process ('sshd: USER@pts/N' or '@notty') above ``pid``, or None."""
        seen = set()
        while pid and pid > 1 and pid not in seen:
            seen.add(pid)
            title = _cmdline(pid)
            if title.startswith("sshd: %s@" % self.user):
                return pid
            pid = _stat(pid)[1]
        return None

    def stop_node(self, node, timeout=1.0):
        """Stop one node's sshd and end its sessions and what they run (the node goes away)."""
        return self._kill(lambda: self._scan(node), timeout)

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, timeout=1.0):
        """End every sshd, session, sudo and tool of the cluster; remove the sudo drop-in and the user.

        Returns {'stopped': [pids], 'killed': [pids]}.
        """
        result = self._kill(self._scan, timeout)
        with contextlib.suppress(FileNotFoundError):
            self.sudoers.unlink()
        with contextlib.suppress(FileNotFoundError):
            (SUDOERS_D / (".gpucluster-sim-%s.new" % self.user)).unlink()
        try:
            entry = pwd.getpwnam(self.user)
        except KeyError:
            entry = None
        if entry is not None and entry.pw_gecos == GECOS:
            self._retry(["userdel", self.user], "userdel")
        shutil.rmtree(self.home, ignore_errors=True)
        return result

    def _kill(self, scan, timeout):
        """SIGTERM what scan() finds, SIGKILL what is left after ``timeout``; scan again until none."""
        stopped, killed = [], []
        deadline = time.monotonic() + timeout + 10
        sig, wait = signal.SIGTERM, timeout
        while True:
            pids = scan()
            if not pids:
                return {"stopped": stopped, "killed": killed}
            if time.monotonic() > deadline:
                raise SSHNodeError("could not stop pids %s" % ", ".join(map(str, pids)))
            for pid in pids:
                _signal(pid, sig)
            (stopped if sig == signal.SIGTERM else killed).extend(p for p in pids if p not in stopped + killed)
            _wait_gone(pids, time.monotonic() + wait)
            # What outlived SIGTERM (or appeared meanwhile) gets SIGKILL from now on.
            sig, wait = signal.SIGKILL, 2.0
