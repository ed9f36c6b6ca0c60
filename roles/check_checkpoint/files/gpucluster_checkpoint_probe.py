# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoint write time of one node: torch.save of a state dict shard on local NVMe and shared storage.

Builds a state dict of --shard-bytes in the mixed-precision Adam layout (bf16 weights, fp32
master weights, Adam exp_avg and exp_avg_sq: 2 + 4 + 4 + 4 bytes per parameter) and, on each of
--local-path and --shared-path that is set:

- save: torch.save into a file, flush, os.fsync of the file and of its directory (timed); the
  page cache is dropped for the file (posix_fadvise DONTNEED), then torch.load reads it back
  (timed), a sample of the tensors must be equal and the file's sha256 must be the one of the
  same state dict serialised into a hashing sink beforehand;
- async (both paths set): the training loop is released once the local save is fsync'ed
  (release_s); a background thread copies that file to the shared path and fsyncs it there;
  durable_s is the time from the start of the save until that copy is on disk (checksummed too);
- fio: one fio run per path, sequential write then read (bs=1M, direct=1, ioengine=libaio,
  --fio-iodepth, --fio-size-mb), --output-format=json, under --fio-timeout; its document is
  embedded in the record.

Every file written is removed at the end, also after an error, a timeout (--deadline) or SIGTERM.
--create-paths makes a missing path's last directory (never its parents; left in place).

Output: JSON lines - {"record": "header", ...}; {"record": "measurement", "kind": "save" |
"async" | "fio", ...}; {"record": "error", "path_kind", "path", "phase", "tool", "message"};
last {"record": "done", "seconds"}. Without "done" the probe did not finish.
--sim-hook names the simulated cluster's storage model (honoured only when it says it is a
simulation): save, read and copy times are then the bytes over the simulated bandwidths, the
shared path's aggregate split among the nodes writing to it at the same time (counted from the
files they leave in the hook's writers directory, --group), fio gets --rate; "simulated": true.
"""

import argparse
import errno
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

KINDS = ("local", "shared")
CHUNK = 8 * 1024 * 1024
# Bytes per parameter of the mixed-precision Adam layout and the parts of each.
LAYOUT = (("model", "bfloat16", 2), ("optimizer.master", "float32", 4), ("optimizer.exp_avg", "float32", 4),
          ("optimizer.exp_avg_sq", "float32", 4))
TENSOR_BYTES = 64 * 1024 * 1024


class Stopped(Exception):
    """SIGTERM or the --deadline alarm: stop, clean up, say where."""


# Why the probe is stopping (set by the signal handler): torch.save turns an exception raised in
# its write callback into a RuntimeError, so the handlers below look here before they go on.
STOPPING = []


def still_running():
    if STOPPING:
        raise Stopped(STOPPING[0])


class PathError(Exception):
    """One path cannot be measured; the message says why (the run goes on with the other)."""

    def __init__(self, phase, tool, message):
        Exception.__init__(self, message)
        self.phase, self.tool, self.message = phase, tool, message


def emit(record):
    sys.stdout.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
    sys.stdout.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--node", default=os.uname().nodename, help="this node's name in the records")
    p.add_argument("--local-path", default="", help="a directory on the node-local NVMe; empty: not measured")
    p.add_argument("--shared-path", default="", help="a directory on the shared file system; empty: not measured")
    p.add_argument("--create-paths", action="store_true", help="create a missing path's last directory")
    p.add_argument("--shard-bytes", type=int, required=True, help="bytes of tensors in this node's shard")
    p.add_argument("--shard-source", default="", help="how the shard size was chosen (for the header)")
    p.add_argument("--fio", default="fio", help="fio binary; empty: fio is not run")
    p.add_argument("--fio-size-mb", type=int, default=1024)
    p.add_argument("--fio-iodepth", type=int, default=16)
    p.add_argument("--fio-timeout", type=float, default=300.0)
    p.add_argument("--deadline", type=float, default=0.0, help="seconds before the probe stops itself (0: none)")
    p.add_argument("--concurrent", type=int, default=1, help="nodes running the probe at once")
    p.add_argument("--group", default="", help="nodes writing at once share this token (simulation)")
    p.add_argument("--sim-hook", default="")
    p.add_argument("--tool-timeout", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=20240601)
    return p.parse_args(argv)


def load_hook(command, timeout):
    try:
        proc = subprocess.run(shlex.split(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, check=False)
        data = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return None, "simulation hook %s failed: %s" % (command, exc)
    if not isinstance(data, dict) or data.get("simulated") is not True:
        return None, "simulation hook %s did not say it is a simulation: ignored" % command
    if not isinstance(data.get("checkpoint"), dict):
        return None, "simulation hook %s has no checkpoint storage model: ignored" % command
    return data, None


def mem_available():
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class HashSink(object):
    """A write-only file for torch.save: counts and hashes what it is given."""

    def __init__(self):
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data):
        self.digest.update(data)
        self.size += len(data)
        return len(data)

    def flush(self):
        pass


def build_state(torch, shard_bytes, seed):
    """{'model': {...bf16}, 'optimizer': {'master': ..., 'exp_avg': ..., 'exp_avg_sq': ...}}, tensor bytes."""
    generator = torch.Generator().manual_seed(seed)
    total_parts = sum(size for _name, _dtype, size in LAYOUT)
    state, nbytes = {"model": {}, "optimizer": {}}, 0
    for name, dtype_name, size in LAYOUT:
        dtype = getattr(torch, dtype_name)
        part = shard_bytes * size // total_parts
        group = state["model"] if name == "model" else state["optimizer"].setdefault(name.split(".")[1], {})
        index = 0
        while part > 0:
            count = min(part, TENSOR_BYTES) // size
            if count == 0:
                break
            tensor = torch.empty(count, dtype=torch.float32).uniform_(-1, 1, generator=generator).to(dtype)
            group["layer%04d" % index] = tensor
            nbytes += count * size
            part -= count * size
            index += 1
    return state, nbytes


def samples(state):
    """(key path, tensor) of the first and last tensor of every group: compared after torch.load."""
    out = []
    for top in ("model", "optimizer"):
        groups = [("", state[top])] if top == "model" else sorted(state[top].items())
        for sub, group in groups:
            keys = sorted(group)
            for key in sorted(set([keys[0], keys[-1]])) if keys else []:
                out.append(((top, sub, key), group[key]))
    return out


def lookup(state, path):
    top, sub, key = path
    return state[top][key] if top == "model" else state[top][sub][key]


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_cache(path):
    """Ask the kernel to forget the file's clean pages, so the read comes from the device."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except (OSError, AttributeError):
        pass
    finally:
        os.close(fd)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(CHUNK)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def io_problem(exc, path):
    """What went wrong, in the OS's words: torch.save reports a failed write as a RuntimeError
    ("unexpected pos 704 vs 598") whose context is the OSError the file raised."""
    seen = exc
    while seen is not None and not isinstance(seen, OSError):
        seen = seen.__cause__ or seen.__context__
    exc = seen if seen is not None else exc
    if getattr(exc, "errno", None) == errno.ENOSPC:
        free = free_bytes(path)
        return "disk full: %s%s" % (exc, "" if free is None else " (%d MB free)" % (free // 1000000))
    return "%s: %s" % (type(exc).__name__, exc)


def free_bytes(path):
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


class Probe(object):
    def __init__(self, args):
        self.args = args
        self.written = []      # files to remove at the end
        self.phase = "start"
        self.hook = None
        self.writers = None    # simulated: nodes writing the shared path at once
        self.started = time.monotonic()

    # ------------------------------------------------------------------ setup
    def check_path(self, path, need):
        """Raise PathError when ``path`` cannot take ``need`` bytes of checkpoint and fio files."""
        if not os.path.isdir(path):
            parent = os.path.dirname(os.path.abspath(path))
            if os.path.exists(path):
                raise PathError("setup", "checkpoint-probe", "%s is not a directory" % path)
            if not (self.args.create_paths and os.path.isdir(parent)):
                raise PathError("setup", "checkpoint-probe", "%s does not exist%s" % (
                    path, "" if os.path.isdir(parent) else " (nor its parent %s)" % parent))
            try:
                os.mkdir(path)
            except OSError as exc:
                raise PathError("setup", "checkpoint-probe", "cannot create %s: %s" % (path, exc))
        probe_file = os.path.join(path, ".gpucluster-checkpoint-%s-%d.probe" % (self.args.node, os.getpid()))
        try:
            with open(probe_file, "wb") as handle:
                handle.write(b"ok\n")
            os.remove(probe_file)
        except OSError as exc:
            raise PathError("setup", "checkpoint-probe", "%s is not writable: %s" % (path, exc))
        free = free_bytes(path)
        if free is not None and free < need:
            raise PathError("setup", "checkpoint-probe", "disk full: %s has %d MB free, the checkpoint and fio files "
                            "need %d MB" % (path, free // 1000000, need // 1000000))

    def target(self, kind, suffix):
        base = self.args.local_path if kind == "local" else self.args.shared_path
        path = os.path.join(base, "gpucluster-checkpoint-%s-%d%s" % (self.args.node, os.getpid(), suffix))
        self.written.append(path)
        return path

    def cleanup(self):
        left = []
        for path in self.written:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                left.append("%s: %s" % (path, exc))
        self.written = []
        return left

    # ------------------------------------------------------------------ simulation
    def sim(self, key):
        return float((self.hook or {}).get("checkpoint", {}).get(key) or 0) or None

    def register_writer(self, writing):
        """Simulation: say whether this node writes the shared path now; count the group's writers."""
        model = self.hook["checkpoint"]
        folder = model.get("writers_dir")
        if not folder:
            self.writers = max(1, self.args.concurrent)
            return
        group = os.path.join(folder, self.args.group or "default")
        os.makedirs(group, exist_ok=True)
        with open(os.path.join(group, self.args.node), "w") as handle:
            handle.write("writing\n" if writing else "absent\n")
        deadline = time.monotonic() + float(model.get("barrier_s") or 30)
        while True:
            names = os.listdir(group)
            if len(names) >= self.args.concurrent or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        count = 0
        for name in names:
            try:
                with open(os.path.join(group, name)) as handle:
                    count += handle.read().strip() == "writing"
            except OSError:
                continue
        self.writers = max(1, count)

    def bandwidth(self, kind, rw):
        """Simulated bytes/s of this node on the path, or None outside a simulation."""
        if not self.hook:
            return None
        if kind == "local":
            return self.sim("local_%s_bytes_per_s" % rw)
        aggregate = self.sim("shared_%s_bytes_per_s" % rw)
        client = self.sim("shared_client_bytes_per_s")
        factor = self.sim("shared_factor") or 1.0
        if not aggregate:
            return None
        share = aggregate / max(self.writers or 1, 1)
        return (min(share, client) if client else share) * factor

    def clock(self, kind, rw, nbytes, wall):
        bandwidth = self.bandwidth(kind, rw)
        return nbytes / bandwidth if bandwidth else wall

    # ------------------------------------------------------------------ measurements
    def save(self, torch, state, kind, expected, checks):
        """torch.save + fsync, read back, verify; the measurement record."""
        path = self.target(kind, ".pt")
        folder = os.path.dirname(path)
        self.phase = "%s write" % kind
        start = time.monotonic()
        try:
            with open(path, "wb") as handle:
                torch.save(state, handle)
                handle.flush()
                os.fsync(handle.fileno())
            fsync_dir(folder)
        except (OSError, RuntimeError) as exc:
            still_running()
            raise PathError("write", "torch.save", "torch.save to %s: %s" % (path, io_problem(exc, folder)))
        wall_write = time.monotonic() - start
        size = os.path.getsize(path)
        self.phase = "%s read" % kind
        drop_cache(path)
        start = time.monotonic()
        try:
            loaded = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # a truncated or corrupt file: torch says how
            still_running()
            raise PathError("read", "torch.load", "torch.load of %s: %s: %s" % (path, type(exc).__name__, exc))
        wall_read = time.monotonic() - start
        self.phase = "%s verify" % kind
        mismatched = []
        for key, tensor in checks:
            try:
                same = bool(torch.equal(lookup(loaded, key), tensor))
            except (KeyError, TypeError, RuntimeError):
                same = False
            if not same:
                mismatched.append("/".join(k for k in key if k))
        del loaded
        digest = sha256_file(path)
        write_s = self.clock(kind, "write", size, wall_write)
        read_s = self.clock(kind, "read", size, wall_read)
        record = {"record": "measurement", "kind": "save", "path_kind": kind, "path": path, "file_bytes": size,
                  "write_s": round(write_s, 6), "read_s": round(read_s, 6),
                  "write_mb_s": round(size / write_s / 1e6, 2) if write_s > 0 else None,
                  "read_mb_s": round(size / read_s / 1e6, 2) if read_s > 0 else None,
                  "wall_write_s": round(wall_write, 4), "wall_read_s": round(wall_read, 4),
                  "sha256": digest, "sha256_ok": digest == expected["sha256"] and size == expected["size"],
                  "expected_sha256": expected["sha256"], "samples_checked": len(checks), "samples_mismatched": mismatched,
                  "clock": "simulated" if self.bandwidth(kind, "write") else "wall"}
        if kind == "shared" and self.hook:
            record["writers"] = self.writers
        os.remove(path)
        self.written.remove(path)
        return record

    def async_copy(self, torch, state, expected):
        """Save locally (the loop is released), copy to the shared path in the background (durable)."""
        local = self.target("local", "-async.pt")
        remote = self.target("shared", "-async.pt")
        self.phase = "async local write"
        start = time.monotonic()
        try:
            with open(local, "wb") as handle:
                torch.save(state, handle)
                handle.flush()
                os.fsync(handle.fileno())
            fsync_dir(os.path.dirname(local))
        except (OSError, RuntimeError) as exc:
            still_running()
            raise PathError("async", "torch.save", "torch.save to %s: %s" % (local, io_problem(exc, local)))
        released = time.monotonic() - start
        outcome = {}

        def copy():
            try:
                with open(local, "rb") as source, open(remote, "wb") as sink:
                    shutil.copyfileobj(source, sink, CHUNK)
                    sink.flush()
                    os.fsync(sink.fileno())
                fsync_dir(os.path.dirname(remote))
                outcome["done"] = time.monotonic() - start
            except OSError as exc:
                outcome["error"] = "copy %s to %s: %s" % (local, remote, io_problem(exc, os.path.dirname(remote)))

        self.phase = "async background copy"
        worker = threading.Thread(target=copy, name="checkpoint-copy")
        worker.daemon = True
        worker.start()
        while worker.is_alive():  # the training loop would run here; the main thread stays interruptible
            worker.join(0.05)
        if "error" in outcome:
            raise PathError("async", "copy", outcome["error"])
        size = os.path.getsize(local)
        self.phase = "async verify"
        drop_cache(remote)
        digest = sha256_file(remote)
        copy_wall = outcome["done"] - released
        if self.hook:
            release_s = self.clock("local", "write", size, released)
            rates = [b for b in (self.bandwidth("local", "read"), self.bandwidth("shared", "write")) if b]
            copy_s = size / min(rates) if rates else copy_wall
        else:
            release_s, copy_s = released, copy_wall
        for path in (local, remote):
            os.remove(path)
            self.written.remove(path)
        return {"record": "measurement", "kind": "async", "file_bytes": size, "release_s": round(release_s, 6),
                "copy_s": round(copy_s, 6), "durable_s": round(release_s + copy_s, 6),
                "wall_release_s": round(released, 4), "wall_durable_s": round(outcome["done"], 4),
                "sha256_ok": digest == expected["sha256"], "clock": "simulated" if self.hook else "wall"}

    def fio(self, kind):
        args = self.args
        binary = shutil.which(args.fio)
        if not binary:
            raise PathError("fio", "fio", "fio is not installed (%s not found on PATH)" % args.fio)
        path = self.target(kind, ".fio")
        settings = {"bs": "1M", "direct": 1, "ioengine": "libaio", "iodepth": args.fio_iodepth,
                    "size_mb": args.fio_size_mb}
        argv = [binary, "--output-format=json", "--bs=1M", "--direct=1", "--ioengine=libaio",
                "--iodepth=%d" % args.fio_iodepth, "--size=%dM" % args.fio_size_mb, "--filename=%s" % path,
                "--name=write", "--rw=write", "--end_fsync=1"]
        rate = self.bandwidth(kind, "write")
        if rate:
            argv.append("--rate=%d" % int(rate))
        argv += ["--name=read", "--stonewall", "--rw=read"]
        rate_read = self.bandwidth(kind, "read")
        if rate_read:
            argv.append("--rate=%d" % int(rate_read))
        if rate or rate_read:
            settings["rate_bytes_per_s"] = {"write": int(rate or 0), "read": int(rate_read or 0)}
        timeout = args.fio_timeout
        if args.deadline > 0:
            timeout = max(1.0, min(timeout, args.deadline - (time.monotonic() - self.started) - 5))
        self.phase = "%s fio" % kind
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                                  universal_newlines=True, check=False)
        except subprocess.TimeoutExpired:
            raise PathError("fio", "fio", "fio on %s did not finish within %d s (killed)" % (path, timeout))
        except OSError as exc:
            raise PathError("fio", "fio", "fio could not be started: %s" % exc)
        start = proc.stdout.find("{")
        try:
            document = json.JSONDecoder().raw_decode(proc.stdout[start:])[0] if start >= 0 else None
        except ValueError:
            document = None
        stderr = [line for line in proc.stderr.splitlines() if line.strip()][:6]
        before = [line for line in proc.stdout[:max(start, 0)].splitlines() if line.strip()][:6]
        if not isinstance(document, dict):
            raise PathError("fio", "fio", "fio exited with status %d and printed no JSON: %s" % (
                proc.returncode, "; ".join(stderr + before) or "no output"))
        return {"record": "measurement", "kind": "fio", "path_kind": kind, "path": path, "rc": proc.returncode,
                "settings": settings, "messages": before + stderr, "fio": document}

    # ------------------------------------------------------------------ run
    def run(self):
        args = self.args
        header = {"record": "header", "probe": "gpucluster-checkpoint", "version": 1, "node": args.node,
                  "host": os.uname().nodename, "shard_bytes": args.shard_bytes, "shard_source": args.shard_source,
                  "paths": {"local": args.local_path, "shared": args.shared_path}, "simulated": False,
                  "fio": {"binary": args.fio, "bs": "1M", "direct": 1, "ioengine": "libaio",
                          "iodepth": args.fio_iodepth, "size_mb": args.fio_size_mb},
                  "concurrent": args.concurrent, "warnings": []}
        self.phase = "import torch"
        try:
            import torch
        except ImportError as exc:
            emit(header)
            emit({"record": "error", "phase": "setup", "tool": "torch", "path_kind": None, "path": None,
                  "message": "cannot import PyTorch: %s" % exc})
            emit({"record": "done", "seconds": round(time.monotonic() - self.started, 3)})
            return 3
        header["torch"] = torch.__version__
        if args.sim_hook:
            self.hook, why = load_hook(args.sim_hook, args.tool_timeout)
            if why:
                header["warnings"].append(why)
            header["simulated"] = self.hook is not None
            if self.hook:
                header["sim"] = self.hook["checkpoint"]
        emit(header)
        usable = {}
        fio_need = args.fio_size_mb * 1000000 if args.fio else 0
        for kind in KINDS:
            path = args.local_path if kind == "local" else args.shared_path
            if not path:
                continue
            try:
                # one checkpoint file at a time (removed before the next), then fio's; 64 MB to spare
                self.check_path(path, max(int(args.shard_bytes * 1.1), fio_need) + 64000000)
                usable[kind] = path
            except PathError as exc:
                self.error(kind, path, exc)
        if not args.local_path and not args.shared_path:
            emit({"record": "error", "phase": "setup", "tool": "checkpoint-probe", "path_kind": None, "path": None,
                  "message": "neither a local nor a shared path to measure"})
        memory = mem_available()
        if usable and memory is not None and memory < 2.2 * args.shard_bytes:
            emit({"record": "error", "phase": "setup", "tool": "checkpoint-probe", "path_kind": None, "path": None,
                  "message": "not enough memory for a %d MB shard (the state dict and its read-back copy): "
                  "MemAvailable %d MB" % (args.shard_bytes // 1000000, memory // 1000000)})
            usable = {}
        if usable:
            self.phase = "build state dict"
            state, tensor_bytes = build_state(torch, args.shard_bytes, args.seed)
            sink = HashSink()
            torch.save(state, sink)
            expected = {"sha256": sink.digest.hexdigest(), "size": sink.size}
            tensors = len(state["model"]) + sum(len(group) for group in state["optimizer"].values())
            emit({"record": "measurement", "kind": "state", "tensor_bytes": tensor_bytes, "file_bytes": sink.size,
                  "sha256": expected["sha256"], "tensors": tensors})
            checks = samples(state)
            if "local" in usable:
                self.measure("local", lambda: self.save(torch, state, "local", expected, checks))
            if self.hook and args.shared_path:
                self.phase = "waiting for the other writers"
                self.register_writer("shared" in usable)
            if "local" in usable and "shared" in usable:
                self.measure("shared", lambda: self.async_copy(torch, state, expected), kind_label="async")
            if "shared" in usable:
                self.measure("shared", lambda: self.save(torch, state, "shared", expected, checks))
            del state
            if args.fio:
                for kind in KINDS:
                    if kind in usable:
                        self.measure(kind, lambda k=kind: self.fio(k))
        elif self.hook and args.shared_path:
            self.register_writer(False)
        emit({"record": "done", "seconds": round(time.monotonic() - self.started, 3),
              "writers": self.writers})
        return 0

    def measure(self, kind, work, kind_label=None):
        path = self.args.local_path if kind == "local" else self.args.shared_path
        try:
            emit(work())
        except PathError as exc:
            self.error(kind, path, exc, kind_label)
        finally:
            left = self.cleanup()
            for problem in left:
                emit({"record": "error", "phase": "cleanup", "tool": "checkpoint-probe", "path_kind": kind,
                      "path": path, "message": "could not remove %s" % problem})

    def error(self, kind, path, exc, kind_label=None):
        emit({"record": "error", "phase": exc.phase if kind_label is None else kind_label, "tool": exc.tool,
              "path_kind": kind, "path": path, "message": exc.message})


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    probe = Probe(args)

    def stop(signum, frame):
        STOPPING.append("SIGTERM" if signum == signal.SIGTERM else "the %d s deadline" % args.deadline)
        raise Stopped(STOPPING[0])
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGALRM, stop)
    if args.deadline > 0:
        signal.alarm(max(1, int(args.deadline)))
    try:
        return probe.run()
    except (Stopped, KeyboardInterrupt) as exc:
        emit({"record": "error", "phase": probe.phase, "tool": "checkpoint-probe", "path_kind": None, "path": None,
              "message": "stopped by %s during %s" % (exc or "Ctrl-C", probe.phase)})
        return 124 if "deadline" in str(exc) else 143
    except Exception as exc:  # a bug or an unforeseen library error: a result, never a traceback
        if STOPPING:  # the stop came through a library that wrapped it
            emit({"record": "error", "phase": probe.phase, "tool": "checkpoint-probe", "path_kind": None,
                  "path": None, "message": "stopped by %s during %s" % (STOPPING[0], probe.phase)})
            return 124 if "deadline" in STOPPING[0] else 143
        emit({"record": "error", "phase": probe.phase, "tool": "checkpoint-probe", "path_kind": None, "path": None,
              "message": "%s during %s: %s" % (type(exc).__name__, probe.phase, exc)})
        return 1
    finally:
        signal.alarm(0)
        for problem in probe.cleanup():
            emit({"record": "error", "phase": "cleanup", "tool": "checkpoint-probe", "path_kind": None,
                  "path": None, "message": "could not remove %s" % problem})


if __name__ == "__main__":
    sys.exit(main())
