# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the fabric stage's groups: the launcher command, each run under a timeout in a process
group of its own (killed with its group at the timeout, or by the guard when the playbook is gone),
every output kept under its key and written to the run directory as soon as it finishes; and, when
replaying, the same outputs read back from a past run's capture instead of launching anything.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import os
import signal
import subprocess
import threading
import time

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard
from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import WEEK

STAGE = "fabric"

# The argument spec of the nccl-tests launch and planner options the controller stages that run
# nccl-tests groups share (fabric_burnin, nvlink_burnin; documented in doc_fragments/nccl_launch),
# and the bounds each module checks at the door (_records.door_problem).
LAUNCH_SPEC = dict(
    binary=dict(type="str", default="all_reduce_perf"),
    args=dict(type="list", elements="str", default=["-b", "8M", "-e", "8G", "-f", "2"]),
    launcher=dict(type="str", choices=["srun", "mpirun"], default="srun"),
    launcher_args=dict(type="list", elements="str", default=[]),
    mpi=dict(type="str", default=""),
    tasks_per_node=dict(type="int", default=8),
    gpus_per_process=dict(type="int", default=1),
    gpus_per_node=dict(type="int", default=8),
    gpus_per_node_flag=dict(type="bool", default=True),
    timeout=dict(type="int", default=900),
    concurrency=dict(type="int", default=16),
    mode=dict(type="str", choices=["adaptive", "exhaustive", "halving"], default="adaptive"),
    max_rounds=dict(type="int", default=0),
    seed=dict(type="int", default=0),
    preflight=dict(type="bool", default=True),
    preflight_args=dict(type="list", elements="str",
                        default=["-b", "8", "-e", "8", "-f", "2", "-n", "1", "-w", "0", "-c", "1"]),
    preflight_timeout=dict(type="int", default=120),
    localize=dict(type="dict", default={}),
    max_busbw=dict(type="float", default=0),
    environment=dict(type="dict", default={}),
    replay_dir=dict(type="path", default=""),
    raw_dir=dict(type="path", default=""),
)
LAUNCH_BOUNDS = {"tasks_per_node": (1, 4096), "gpus_per_process": (1, 4096), "gpus_per_node": (1, 4096),
                 "timeout": (1, WEEK), "concurrency": (1, 4096), "preflight_timeout": (1, WEEK),
                 "max_rounds": (0, 10 ** 4)}


def launch_spec(**more):
    """LAUNCH_SPEC (a copy: AnsibleModule may fill it in) with a module's own options."""
    spec = copy.deepcopy(LAUNCH_SPEC)
    spec.update(more)
    return spec


def launched_ranks(group, opts):
    return len(group) * int(opts["tasks_per_node"]) * int(opts["gpus_per_process"])


def group_command(group, opts):
    """argv launching the nccl-tests binary over the group's nodes (no shell involved)."""
    binary = [opts["binary"]] + [str(a) for a in opts["args"]] + ["-g", str(opts["gpus_per_process"])]
    tasks = int(opts["tasks_per_node"])
    # Settings the ranks must see whatever the site exports (srun --export=NONE, mpirun's own
    # environment): on the launch line, not only in the launcher's environment.
    pinned = sorted((str(k), str(v)) for k, v in (opts.get("launch_env") or {}).items())
    if opts["launcher"] == "mpirun":
        hosts = ",".join("%s:%d" % (node, tasks) for node in group)
        return [opts.get("mpirun", "mpirun"), "-np", str(len(group) * tasks), "--host", hosts] \
            + [a for k, v in pinned for a in ("-x", "%s=%s" % (k, v))] \
            + [str(a) for a in opts.get("launcher_args") or []] + binary
    argv = [opts.get("srun", "srun"), "--nodelist=%s" % ",".join(group), "-N%d" % len(group),
            "--ntasks-per-node=%d" % tasks, "--kill-on-bad-exit=1"]
    if pinned:
        argv.append("--export=ALL,%s" % ",".join("%s=%s" % kv for kv in pinned))
    if opts.get("gpus_per_node_flag"):
        argv.append("--gpus-per-node=%d" % int(opts["gpus_per_node"]))
    if opts.get("mpi"):
        argv.append("--mpi=%s" % opts["mpi"])
    return argv + [str(a) for a in opts.get("launcher_args") or []] + binary


def raw_key(round_no, group, attempt=1):
    """The name a group's output is kept (and replayed) under: round<N>-<node>-<node>[...]."""
    key = "round%d-%s" % (round_no, "-".join(group))
    return key if attempt == 1 else "%s.retry%d" % (key, attempt - 1)


def run_one(argv, timeout, env=None, guard=None):
    """Run argv in its own process group; kill the group at the timeout. Returns a record.

    guard: a _guard.Guard that kills the group when the playbook that asked for it is gone.
    """
    start = time.time()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    except (OSError, ValueError) as exc:  # ValueError: an argument with a NUL byte
        return {"output": "", "rc": 127, "seconds": 0.0, "timed_out": False,
                "error": "%s: cannot start: %s" % (argv[0], exc)}
    if guard is not None:
        guard.add(proc.pid)
    try:
        return _wait(proc, timeout, start)
    finally:
        if guard is not None:
            guard.discard(proc.pid)


def _wait(proc, timeout, start):
    try:
        out, _err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        out = b""
        for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except OSError:
                pass
            try:
                out, _err = proc.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                out = b""
    text = (out or b"").decode("utf-8", "replace")
    return {"output": text, "rc": proc.returncode, "seconds": round(time.time() - start, 3),
            "timed_out": timed_out, "error": None}


class Runner(object):
    """Runs (or, replaying, reads) groups, and keeps every output under its key, on disk at once."""

    def __init__(self, opts, env=None):
        self.opts = opts
        self.env = env
        self.raw = {}
        self.replay_dir = opts.get("replay_dir") or ""
        self.raw_dir = opts.get("raw_dir") or ""
        # The controller stage whose raw outputs these are (raw/_<stage>/, results.json raw[_<stage>]),
        # and a prefix that keeps one stage's several runners apart (an NVLink domain's runs).
        self.stage = opts.get("stage") or STAGE
        self.prefix = opts.get("key_prefix") or ""
        self._index = None
        self._lock = threading.Lock()
        self.guard = None if self.replay_dir else _guard.Guard().start()

    # -- replay -------------------------------------------------------------------------
    def _replay_index(self):
        if self._index is None:
            self._index = {}
            try:
                with open(os.path.join(self.replay_dir, "results.json")) as handle:
                    self._index = (json.load(handle).get("raw") or {}).get("_" + self.stage) or {}
            except (IOError, OSError, ValueError, AttributeError):
                self._index = {}
        return self._index

    def _replayed(self, key, group):
        folder = os.path.join(self.replay_dir, "raw", "_" + self.stage)
        if not os.path.isdir(folder):
            folder = os.path.join(self.replay_dir, "_" + self.stage)
        path = os.path.join(folder, key + ".txt")
        if not os.path.isfile(path):
            return {"output": "", "rc": None, "seconds": None, "timed_out": False, "error": None, "missing": True}
        with open(path, errors="replace") as handle:
            text = handle.read()
        command = None
        if text.startswith("$ "):  # the launcher's command line the live run kept on top
            first, _sep, text = text.partition("\n")
            command = first[2:].split(" ")
            ran = [a.split("=", 1)[1].split(",") for a in command if a.startswith("--nodelist=")]
            if group and ran and sorted(ran[0]) != sorted(group):
                # the capture's run of this key was over other nodes (another run's domains): not this group's
                return {"output": "", "rc": None, "seconds": None, "timed_out": False, "error": None, "missing": True}
        meta = self._replay_index().get(key) or {}
        complete = meta.get("complete", True)
        return {"output": text, "rc": meta.get("rc", 0), "seconds": meta.get("seconds"),
                "timed_out": complete is False, "error": None, "replayed_command": command}

    # -- live -------------------------------------------------------------------------------
    def _keep(self, key, record):
        kept = {"output": "$ %s\n%s" % (" ".join(record.get("command") or []), record.get("output") or ""),
                "rc": record.get("rc"), "seconds": record.get("seconds"),
                "complete": not record.get("timed_out")}
        if record.get("missing"):
            return
        if self.raw_dir:
            # On disk as soon as it finished: a run killed later keeps every group that ran.
            try:
                write_atomic(os.path.join(self.raw_dir, key + ".txt"), kept["output"])
                kept["output"] = None  # the callback indexes the file instead of writing it again
            except (IOError, OSError):
                pass  # a full disk: the output stays in the result, for the callback to write
        with self._lock:
            self.raw[key] = kept

    def run(self, groups_with_keys):
        """Run [(key, group)] concurrently (bounded); records in order, each kept under its key.

        An item may be (key, group, argv[, timeout]): that command instead of the group's
        nccl-tests launch (the launcher preflight's ``srun --mpi=list``, the counter snapshots).
        """
        records = [None] * len(groups_with_keys)
        slots = threading.Semaphore(max(1, int(self.opts.get("concurrency") or 1)))

        def worker(i, key, group, argv=None, timeout=None):
            key = self.prefix + key
            with slots:
                argv = argv or group_command(group, self.opts)
                try:
                    if self.replay_dir:
                        record = self._replayed(key, group)
                    else:
                        record = run_one(argv, float(timeout or self.opts["timeout"]), self.env, self.guard)
                except Exception as exc:  # pylint: disable=broad-except  # a hole in records would be a traceback later
                    record = {"output": "", "rc": None, "seconds": None, "timed_out": False,
                              "error": "%s: %s: %s" % (argv[0], type(exc).__name__, exc)}
                record["command"] = argv
                record["nodes"] = list(group)
                record["key"] = key
                self._keep(key, record)
                records[i] = record

        threads = [threading.Thread(target=worker, args=(i,) + tuple(item))
                   for i, item in enumerate(groups_with_keys)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return records


def raw_key_retry(key):
    return key + ".retry1"
