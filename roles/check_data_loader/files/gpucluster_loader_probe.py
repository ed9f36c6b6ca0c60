# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loader throughput of one node: WebDataset tar shards read by a PyTorch DataLoader.

Reads the shards (yours, or synthetic ones this probe writes once to --generate-dir: --samples
samples of --sample-kb each, --shard-samples per shard) with webdataset and a torch DataLoader of
--workers-per-gpu x --gpus worker processes, as the training job's loaders would, for --seconds
(at least one pass), and reports samples/s and MB/s. --decode bytes touches every byte of every
sample; none only counts them.

Output: JSON lines - {"record": "header", ...}, {"record": "error", ...}, last {"record": "done",
samples, bytes, seconds, samples_per_s, mb_per_s}. Without "done" the probe did not finish.
--sim-hook names the simulated cluster's storage model (honoured only when it says it is a
simulation): the read time is then bytes / the node's simulated read bandwidth, shared with the
--concurrent nodes reading at once; the header says "simulated": true.
"""

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import time
import warnings


def emit(record):
    sys.stdout.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
    sys.stdout.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--shards", default="", help="shard files: a glob (/data/train-*.tar); empty: synthetic")
    p.add_argument("--generate-dir", default="/tmp/gpucluster-loader", help="where synthetic shards are written")
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--sample-kb", type=int, default=512)
    p.add_argument("--shard-samples", type=int, default=256)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--workers-per-gpu", type=int, default=4)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--decode", choices=("none", "bytes"), default="bytes")
    p.add_argument("--concurrent", type=int, default=1, help="nodes reading at once (the simulated storage model)")
    p.add_argument("--sim-hook", default="")
    p.add_argument("--tool-timeout", type=float, default=30.0)
    return p.parse_args(argv)


def generate(wds, directory, samples, sample_kb, shard_samples):
    """Synthetic shards, written once (a marker file says they are complete)."""
    marker = os.path.join(directory, "COMPLETE-%d-%d-%d" % (samples, sample_kb, shard_samples))
    pattern = os.path.join(directory, "synthetic-%06d.tar")
    if not os.path.exists(marker):
        os.makedirs(directory, exist_ok=True)
        for old in glob.glob(os.path.join(directory, "synthetic-*.tar")):
            os.remove(old)
        payload = os.urandom(sample_kb * 1024)
        with wds.ShardWriter(pattern, maxcount=shard_samples, verbose=0) as sink:
            for i in range(samples):
                sink.write({"__key__": "%08d" % i, "bin": payload[i % 97:] + payload[:i % 97]})
        with open(marker, "w") as handle:
            handle.write("ok\n")
    return sorted(glob.glob(os.path.join(directory, "synthetic-*.tar")))


def load_hook(command, timeout):
    try:
        proc = subprocess.run(shlex.split(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, check=False)
        data = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return None, "simulation hook %s failed: %s" % (command, exc)
    if not isinstance(data, dict) or data.get("simulated") is not True:
        return None, "simulation hook %s did not say it is a simulation: ignored" % command
    return data, None


def count(batch, decode):
    """(samples, bytes) of one sample from the loader."""
    data = batch[0] if isinstance(batch, (list, tuple)) else batch
    size = len(data)
    if decode == "bytes":
        sum(memoryview(data)[::4096])  # touch every page of the sample
    return 1, size


def run(args):
    header = {"record": "header", "probe": "gpucluster-loader", "version": 1, "host": os.uname().nodename,
              "gpus": args.gpus, "workers_per_gpu": args.workers_per_gpu, "decode": args.decode,
              "concurrent": args.concurrent, "simulated": False, "warnings": []}
    caught = header["python_warnings"] = []

    def keep(message, category, filename, lineno, file=None, line=None):
        if len(caught) < 10:
            caught.append("%s: %s" % (category.__name__, str(message)[:200]))
    warnings.showwarning = keep
    try:
        import torch
        import webdataset as wds
    except ImportError as exc:
        emit(header)
        emit({"record": "error", "message": "cannot import PyTorch and webdataset: %s" % exc})
        return 3
    header["torch"], header["webdataset"] = torch.__version__, getattr(wds, "__version__", "?")
    if args.shards:
        shards = sorted(glob.glob(args.shards))
        header["source"] = args.shards
    else:
        shards = generate(wds, args.generate_dir, args.samples, args.sample_kb, args.shard_samples)
        header["source"] = "synthetic: %d samples of %d KB in %s" % (args.samples, args.sample_kb, args.generate_dir)
    header["shards"] = len(shards)
    hook = None
    if args.sim_hook:
        hook, why = load_hook(args.sim_hook, args.tool_timeout)
        if why:
            header["warnings"].append(why)
        header["simulated"] = hook is not None
    workers = max(1, args.gpus * args.workers_per_gpu)
    if shards and workers > len(shards):
        header["warnings"].append("%d workers for %d shards: %d workers idle" % (workers, len(shards), workers - len(shards)))
        workers = len(shards)
    header["workers"] = workers
    emit(header)
    if not shards:
        emit({"record": "error", "message": "no shards match %s" % (args.shards or args.generate_dir)})
        return 2
    dataset = wds.WebDataset(shards, shardshuffle=False, nodesplitter=None, workersplitter=wds.split_by_worker,
                             empty_check=False).to_tuple("bin")
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers)
    samples, nbytes, passes = 0, 0, 0
    started = time.monotonic()
    try:
        while True:
            for batch in loader:
                got, size = count(batch, args.decode)
                samples += got
                nbytes += size
            passes += 1
            if time.monotonic() - started >= args.seconds:
                break
    except Exception as exc:  # a corrupt shard or a dead worker is a result too
        emit({"record": "error", "message": "%s after %d samples: %s" % (type(exc).__name__, samples, exc)})
    wall = time.monotonic() - started
    seconds = wall
    if hook:
        bandwidth = float(hook.get("read_bytes_per_s") or 0)
        shared = float(hook.get("shared_bytes_per_s") or 0)
        if shared > 0:
            bandwidth = min(bandwidth, shared / max(args.concurrent, 1)) if bandwidth > 0 else shared / max(args.concurrent, 1)
        if bandwidth > 0:
            seconds = nbytes / bandwidth
    done = {"record": "done", "samples": samples, "bytes": nbytes, "passes": passes, "seconds": round(seconds, 6),
            "wall_seconds": round(wall, 3), "clock": "simulated" if hook else "wall"}
    if seconds > 0:
        done.update(samples_per_s=round(samples / seconds, 2), mb_per_s=round(nbytes / seconds / 1e6, 2))
    emit(done)
    return 0


def main(argv=None):
    try:
        return run(parse_args(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
