# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifest creation throughput: MB/s per core for each checksum algorithm, and with more threads.

    .venv/bin/python bench/manifest_bench.py                  # 512 MB tree; writes bench/results/manifest.md/.json
    .venv/bin/python bench/manifest_bench.py --mb 64 --no-write

Times _manifest.create_manifest (walk, hash, journal, write the manifest: exactly what the
data_manifest module does) over a tree of 64 MB files of random bytes in the page cache (the first
pass reads them once; the timed passes measure hashing, not the disk). workers=1 is one core;
the threaded runs show how far the hashing scales (hashlib and xxhash release the GIL).
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (  # noqa: E402
    create_manifest)  # pylint: disable=wrong-import-position

ALGORITHMS = ("xxh3", "xxh64", "md5", "sha256", "blake2b", "sha512")


def make_tree(root, megabytes, file_mb=64):
    os.makedirs(root)
    left = megabytes
    index = 0
    while left > 0:
        size = min(file_mb, left)
        with open(os.path.join(root, "shard-%04d.tar" % index), "wb") as handle:
            for _block in range(size):
                handle.write(os.urandom(1024 * 1024))
        left -= size
        index += 1


def best_of(root, algorithm, workers, repeats):
    times = []
    for _repeat in range(repeats):
        out = tempfile.mkdtemp(prefix="manifest-bench-")
        started = time.perf_counter()
        create_manifest(root, out, algorithm=algorithm, workers=workers)
        times.append(time.perf_counter() - started)
        shutil.rmtree(out)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="manifest-bench-tree-")
    root = os.path.join(work, "tree")
    try:
        make_tree(root, args.mb)
        best_of(root, "md5", 1, 1)  # into the page cache
        cores = os.cpu_count() or 1
        rows = []
        for algorithm in ALGORITHMS:
            row = {"algorithm": algorithm}
            for workers in sorted({1, cores}):
                seconds = best_of(root, algorithm, workers, args.repeats)
                row["workers_%d" % workers] = round(args.mb / seconds, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work)
    result = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%d"), "mb": args.mb, "cores": cores,
              "machine": "%s, %s, Python %s" % (platform.machine(), platform.processor() or "cpu", platform.python_version()),
              "rows": rows}
    if not args.no_write:
        out = os.path.join(REPO, "bench", "results")
        with open(os.path.join(out, "manifest.json"), "w") as handle:
            json.dump(result, handle, indent=2)
        lines = ["# Manifest creation throughput (bench/manifest_bench.py)", "",
                 "%s, %d cores, %d MB tree of 64 MB files in the page cache, best of %d, %s." % (
                     result["machine"], cores, args.mb, args.repeats, result["date"]), "",
                 "| algorithm | MB/s, 1 thread (per core) | MB/s, %d threads |" % cores, "|---|---|---|"]
        for row in rows:
            lines.append("| %s | %s | %s |" % (row["algorithm"], row["workers_1"], row.get("workers_%d" % cores)))
        with open(os.path.join(out, "manifest.md"), "w") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
