# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm accounting for a simulated cluster: a private MariaDB and a slurmdbd per run directory.

A spec with ``accounting: true`` makes ``SimCluster.start`` run, before slurmctld:

    <run>/db/my.cnf                 MariaDB's only option file ([client] and [mysqld])
    <run>/db/data/                  its datadir (fresh at every start)
    <run>/db/mariadb.sock, mariadbd.pid, mariadbd.err
    <run>/etc/slurmdbd.conf         mode 600, owned by root (slurmdbd reads it from SLURM_CONF's directory)
    <run>/pid/slurmdbd.pid, <run>/log/slurmdbd.log

MariaDB listens on 127.0.0.1 only; root logs in by unix socket (``--auth-root-authentication-
method=socket``), slurmdbd as the database user ``slurm`` over TCP with a password made at start.
MariaDB runs as user ``mysql`` when that user can reach ``<run>/db`` (pytest's 0700 temporary
directories keep it out: then as root). slurm.conf gets ``AccountingStorageType=accounting_storage/
slurmdbd`` and slurmctld registers the cluster itself.

Both daemons are found by PID (pid files, trusted only when /proc/PID says it is that daemon of
this run: mariadbd by ``--defaults-file=<run>/db/my.cnf`` in its command line, slurmdbd, whose
command line names no file, by this run's ``SLURM_CONF`` in its environment), never by process
name. Standard library only.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import sim_processes  # sim/ is on sys.path (simcluster puts it there)

MARIADBD = Path("/usr/sbin/mariadbd")
INSTALL_DB = Path("/usr/bin/mariadb-install-db")
ADMIN = Path("/usr/bin/mariadb-admin")
CLIENT = Path("/usr/bin/mariadb")
SLURMDBD = Path("/usr/sbin/slurmdbd")
SACCTMGR = "sacctmgr"
DATABASE = "slurm_acct_db"
DB_USER = "slurm"
# In the environment of the daemons started here (not simcluster's daemon mark: its stop sweeps
# what carries that with SIGKILL, and the database must outlive slurmctld).
MARK = "GPUCLUSTER_SIM_ACCOUNTING"
# Ports after the cluster's block (slurmctld, one per node): MariaDB, then slurmdbd.
EXTRA_PORTS = 2


class AccountingError(RuntimeError):
    """Starting or stopping MariaDB / slurmdbd failed; one line saying where to look."""


def ports(ctld_port, node_count):
    """(MariaDB port, slurmdbd port): the two ports after a cluster's slurmctld + slurmd block."""
    first = ctld_port + 1 + node_count
    return first, first + 1


def slurm_conf_lines(dbd_port):
    """slurm.conf lines pointing slurmctld and the clients (sacct, sacctmgr) at this slurmdbd."""
    return ["AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=127.0.0.1",
            "AccountingStoragePort=%d" % dbd_port]


# ---------------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------------
alive = sim_processes.alive
_argv = sim_processes.cmdline


def _environ(pid):
    try:
        return Path("/proc/%d/environ" % pid).read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


_read_pid = sim_processes.read_pid
_signal = sim_processes.send_signal
_wait_gone = sim_processes.wait_gone
_write = sim_processes.write_file


def _tail(path, needle="error", lines=1):
    try:
        found = [ln.strip() for ln in Path(path).read_text(errors="replace").splitlines() if needle in ln.lower()]
    except OSError:
        return str(path)
    return "%s (%s)" % (path, " / ".join(found[-lines:])) if found else str(path)


class Accounting:
    """MariaDB + slurmdbd of the simulated cluster whose slurm.conf is ``conf`` (in ``<run>/etc``)."""

    def __init__(self, run_dir, conf):
        self.run_dir = Path(run_dir).resolve()
        self.conf = Path(conf)
        self.db = self.run_dir / "db"
        self.my_cnf = self.db / "my.cnf"
        self.datadir = self.db / "data"
        self.socket = self.db / "mariadb.sock"
        self.db_pid_file = self.db / "mariadbd.pid"
        self.db_log = self.db / "mariadbd.err"
        self.dbd_conf = self.conf.parent / "slurmdbd.conf"
        self.dbd_pid_file = self.run_dir / "pid" / "slurmdbd.pid"
        self.dbd_log = self.run_dir / "log" / "slurmdbd.log"

    # -- processes ------------------------------------------------------------------------------
    def _is_mariadbd(self, pid):
        argv = _argv(pid)
        return bool(argv) and os.path.basename(argv[0]) == "mariadbd" and "--defaults-file=%s" % self.my_cnf in argv

    def _is_slurmdbd(self, pid):
        argv = _argv(pid)
        return bool(argv) and os.path.basename(argv[0]) == "slurmdbd" and "SLURM_CONF=%s" % self.conf in _environ(pid)

    def pids(self, scan=False):
        """{'mariadbd': pid|None, 'slurmdbd': pid|None}: this run's live daemons, by pid file.

        ``scan``: when a pid file is lost (a start that failed half-way), look through /proc for a
        process that is this run's daemon by the same test.
        """
        return {name: self._find(name, scan) for name in ("mariadbd", "slurmdbd")}

    def _find(self, name, scan=False):
        path, test = {"mariadbd": (self.db_pid_file, self._is_mariadbd),
                      "slurmdbd": (self.dbd_pid_file, self._is_slurmdbd)}[name]
        pid = _read_pid(path)
        if pid and alive(pid) and test(pid):
            return pid
        if scan:
            for entry in os.listdir("/proc"):
                if entry.isdigit() and alive(int(entry)) and test(int(entry)):
                    return int(entry)
        return None

    def status(self, state):
        """status()'s ``accounting`` entry: {mariadbd: {pid, alive, port}, slurmdbd: {...}}."""
        pids = self.pids()
        return {name: {"pid": pids[name], "alive": bool(pids[name]), "port": (state.get(name) or {}).get("port")}
                for name in ("mariadbd", "slurmdbd")}

    # -- start ----------------------------------------------------------------------------------
    def start(self, db_port, dbd_port, deadline, on_pid=None):
        """A fresh database and slurmdbd; returns state.json's ``accounting`` entry.

        ``on_pid(entry)`` is called with the entry each time a daemon's pid is known (the caller
        records it in state.json, so that a stop finds what a failed start left).
        """
        for tool in (MARIADBD, INSTALL_DB, ADMIN, CLIENT, SLURMDBD):
            if not tool.exists():
                raise AccountingError("%s is not installed: run tools/install-system-deps.sh" % tool)
        if len(str(self.socket)) > 107:
            raise AccountingError("run directory path too long for MariaDB's socket (%s)" % self.socket)
        shutil.rmtree(self.db, ignore_errors=True)
        self.datadir.mkdir(parents=True)
        for sub in (self.dbd_pid_file.parent, self.dbd_log.parent):
            sub.mkdir(parents=True, exist_ok=True)
        user = self._db_user()
        entry = {"database": DATABASE, "db_user": DB_USER,
                 "mariadbd": {"pid": None, "port": db_port, "user": user, "socket": str(self.socket),
                              "my_cnf": str(self.my_cnf)},
                 "slurmdbd": {"pid": None, "port": dbd_port, "conf": str(self.dbd_conf)}}
        _write(self.my_cnf, self._my_cnf(db_port, user))
        self._run([str(INSTALL_DB), "--defaults-file=%s" % self.my_cnf, "--user=%s" % user,
                   "--auth-root-authentication-method=socket", "--skip-test-db"], "mariadb-install-db", deadline)
        entry["mariadbd"]["pid"] = self._start_mariadbd(deadline)
        if on_pid:
            on_pid(entry)
        password = secrets.token_hex(16)
        sql = ("CREATE USER '{u}'@'127.0.0.1' IDENTIFIED BY '{p}';\n"
               "GRANT ALL ON `{d}`.* TO '{u}'@'127.0.0.1';\n").format(u=DB_USER, p=password, d=DATABASE)
        self._run([str(CLIENT), "--defaults-file=%s" % self.my_cnf, "--user=root"], "creating database user %s"
                  % DB_USER, deadline, input=sql)
        _write(self.dbd_conf, self._slurmdbd_conf(db_port, dbd_port, password), mode=0o600)
        os.chown(str(self.dbd_conf), 0, 0)  # slurmdbd: owned by SlurmUser (root), mode 600
        entry["slurmdbd"]["pid"] = self._start_slurmdbd(deadline)
        if on_pid:
            on_pid(entry)
        return entry

    def _db_user(self):
        """'mysql' when that user can write <run>/db (every directory above it searchable), else 'root'."""
        try:
            shutil.chown(str(self.db), "mysql", "mysql")
            shutil.chown(str(self.datadir), "mysql", "mysql")
            probe = subprocess.run(["test", "-w", str(self.datadir), "-a", "-x", str(self.datadir)], user="mysql",
                                   group="mysql", extra_groups=[], capture_output=True, timeout=10, check=False)
        except (LookupError, OSError, subprocess.SubprocessError):
            probe = None
        if probe is not None and probe.returncode == 0:
            return "mysql"
        for path in (self.db, self.datadir):
            os.chown(str(path), 0, 0)
        return "root"

    def _my_cnf(self, port, user):
        client = ["[client]", "socket=%s" % self.socket, "port=%d" % port, "host=localhost"]
        server = [
            "[mysqld]",
            "user=%s" % user,
            "datadir=%s" % self.datadir,
            "socket=%s" % self.socket,
            "port=%d" % port,
            "pid-file=%s" % self.db_pid_file,
            "log-error=%s" % self.db_log,
            "bind-address=127.0.0.1",
            "skip-name-resolve",
            # slurmdbd warns below 512M ("Database settings not recommended values"); pages are
            # only touched when used, so it costs no memory up front.
            "innodb_buffer_pool_size=512M",
            "innodb_log_file_size=64M",
            "innodb_lock_wait_timeout=900",
            # A throw-away database: no fsync per commit.
            "innodb_flush_log_at_trx_commit=0",
            "innodb_doublewrite=0",
        ]
        return "# Generated by sim/clusterctl for %s: do not edit.\n%s\n\n%s\n" % (
            self.run_dir, "\n".join(client), "\n".join(server))

    def _slurmdbd_conf(self, db_port, dbd_port, password):
        return "\n".join([
            "# Generated by sim/clusterctl for %s: do not edit (mode 600: it holds a password)." % self.run_dir,
            "AuthType=auth/munge",
            "DbdHost=localhost",
            "DbdAddr=127.0.0.1",
            "DbdPort=%d" % dbd_port,
            "SlurmUser=root",
            "DebugLevel=info",
            "LogFile=%s" % self.dbd_log,
            "PidFile=%s" % self.dbd_pid_file,
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            "StoragePort=%d" % db_port,
            "StorageUser=%s" % DB_USER,
            "StoragePass=%s" % password,
            "StorageLoc=%s" % DATABASE,
        ]) + "\n"

    def _env(self):
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LANG": "C",
               "SLURM_CONF": str(self.conf), MARK: str(self.run_dir)}
        return env

    def _run(self, argv, what, deadline, input=None):  # noqa: A002 - subprocess's name
        try:
            proc = subprocess.run(argv, input=input, capture_output=True, text=True, env=self._env(), check=False,
                                  stdin=None if input is not None else subprocess.DEVNULL,
                                  timeout=max(5.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AccountingError("%s timed out: see %s" % (what, self.db_log)) from None
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip().splitlines()
            raise AccountingError("%s failed (rc=%d): %s" % (what, proc.returncode, (text or ["?"])[-1][:300]))
        return proc

    def _start_mariadbd(self, deadline):
        # setsid --fork: mariadbd does not daemonize; this way it is PID 1's child, not ours.
        subprocess.run(["setsid", "--fork", str(MARIADBD), "--defaults-file=%s" % self.my_cnf], env=self._env(),
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=str(self.db), timeout=10, check=True)
        ping = [str(ADMIN), "--defaults-file=%s" % self.my_cnf, "--user=root", "--connect-timeout=2", "ping"]
        while True:
            pid = self._find("mariadbd")
            if pid and subprocess.run(ping, env=self._env(), capture_output=True, timeout=10,
                                      check=False).returncode == 0:
                return pid
            if time.monotonic() > deadline:
                raise AccountingError("mariadbd did not answer mariadb-admin ping: see %s"
                                      % _tail(self.db_log, "[error]"))
            if not pid and "[ERROR] Aborting" in self._read(self.db_log):
                raise AccountingError("mariadbd exited at start: see %s" % _tail(self.db_log, "[error]"))
            time.sleep(0.05)

    @staticmethod
    def _read(path):
        try:
            return Path(path).read_text(errors="replace")
        except OSError:
            return ""

    def _start_slurmdbd(self, deadline):
        # slurmdbd daemonizes itself; its parent returns once it has forked, or fails on a bad
        # slurmdbd.conf before it has a log file (the message is on stderr, rc 1).
        parent = subprocess.run([str(SLURMDBD)], env=self._env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, cwd=str(self.run_dir), timeout=30, check=False,
                                start_new_session=True)
        if parent.returncode != 0:
            lines = parent.stderr.strip().splitlines() or ["no message"]
            raise AccountingError("slurmdbd exited %d at start: %s" % (parent.returncode, " / ".join(lines[-2:])[:300]))
        probe = [SACCTMGR, "-n", "-P", "list", "cluster", "format=Cluster"]
        while True:
            pid = self._find("slurmdbd")
            if pid:
                try:
                    answer = subprocess.run(probe, env=self._env(), capture_output=True, timeout=10, check=False)
                except subprocess.TimeoutExpired:
                    answer = None
                if answer is not None and answer.returncode == 0:
                    return pid
            if time.monotonic() > deadline:
                raise AccountingError("slurmdbd did not answer `sacctmgr list cluster`%s: see %s"
                                      % ("" if pid else " (no live pid in %s)" % self.dbd_pid_file,
                                         _tail(self.dbd_log)))
            if not pid and "fatal" in self._read(self.dbd_log):
                raise AccountingError("slurmdbd exited at start: see %s" % _tail(self.dbd_log, "fatal"))
            time.sleep(0.05)

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, timeout=1.0):
        """slurmdbd, then mariadbd: SIGTERM, SIGKILL after ``timeout`` s (mariadbd: at least 3 s).

        Returns {'stopped': [pids], 'killed': [pids]}.
        """
        stopped, killed = [], []
        pids = self.pids(scan=True)
        for name, wait in (("slurmdbd", timeout), ("mariadbd", max(timeout, 3.0))):
            pid = pids[name]
            if not pid:
                continue
            _signal(pid, signal.SIGTERM)
            stopped.append(pid)
            if _wait_gone([pid], time.monotonic() + wait):
                _signal(pid, signal.SIGKILL)
                killed.append(pid)
                if _wait_gone([pid], time.monotonic() + 5):
                    raise AccountingError("could not stop %s (pid %d)" % (name, pid))
        return {"stopped": stopped, "killed": killed}
