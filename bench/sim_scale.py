# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How large a simulated cluster this host runs: start, all idle, one step over every node, stop.

    .venv/bin/python bench/sim_scale.py                  # N = 256, 1024; writes bench/results/sim_scale.md/.json
    .venv/bin/python bench/sim_scale.py --sizes 16       # prints only (no --out)

For each N a spec (prefix ``gpu``, width 4, one leaf per 32 nodes, topology on) is written to a
temp dir and, through ``sim/clusterctl`` as a user would run it:

* ``start``: ``clusterctl start SPEC --run-dir DIR`` until every node is idle (wall time);
* ``idle``: nodes ``sinfo`` shows idle, of N;
* ``RSS``: resident memory of slurmctld plus every slurmd once idle (MiB), and per slurmd;
* ``srun``: wall time of ``srun -N N --ntasks-per-node=1 hostname`` (one task per node), and
  whether every node answered once;
* ``stop``: ``clusterctl stop --run-dir DIR`` (wall time), then a check that no process of the run
  is left (pid files, the run's slurm.conf in a command line, the daemon mark in an environment).

Needs root, Slurm and munge (tools/install-system-deps.sh). 1,024 nodes take about 30 s to start
and 8 GiB of memory on the 2-core development machine. Run directories are short
(``/tmp/sfscale-N``): slurmd's unix socket paths must fit 107 bytes.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sim"))

import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from sim_processes import all_pids, cmdline, marked_pids  # noqa: E402  pylint: disable=wrong-import-position,import-error

CLUSTERCTL = REPO / "sim" / "clusterctl"


def rss_mib(pid):
    try:
        for line in Path("/proc/%d/status" % pid).read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def clusterctl(*args, timeout=900):
    return subprocess.run([sys.executable, str(CLUSTERCTL), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, check=False)


def leftovers(run_dir, conf):
    """PIDs of the run still alive after stop (should be none)."""
    left = [p for p in all_pids() if str(conf) in cmdline(p)]
    return sorted(set(left + marked_pids(run_dir)))


def measure(count, workdir, slurm_auth="munge"):
    name = "sfscale%d" % count
    spec_path = Path(workdir) / ("%s.json" % name)
    spec_path.write_text(json.dumps({"name": name, "profile": "hgx_h100_sxm", "topology": True,
                                     "nodes": {"prefix": "gpu", "count": count, "width": 4},
                                     "fabric": {"leaves": max(1, count // 32)},
                                     "slurm_auth": slurm_auth}))
    run_dir = Path("/tmp/sfscale-%d" % count)
    row = {"nodes": count, "slurm_auth": slurm_auth}
    t0 = time.monotonic()
    proc = clusterctl("start", spec_path, "--run-dir", run_dir)
    row["start_s"] = round(time.monotonic() - t0, 2)
    cluster = simcluster.SimCluster.from_run_dir(run_dir)
    try:
        if proc.returncode != 0:
            raise RuntimeError("clusterctl start: %s" % proc.stderr.strip())
        states = cluster.sinfo(timeout=60)
        row["idle"] = sum(1 for state in states.values() if state == "idle")
        state = cluster.state()
        pids = [state["slurmctld"]["pid"]] + [i["pid"] for i in state["slurmd"].values() if i["pid"]]
        slurmd = [rss_mib(p) for p in pids[1:]]
        row["rss_mib"] = round(rss_mib(pids[0]) + sum(slurmd), 1)
        row["rss_per_slurmd_mib"] = round(sum(slurmd) / max(1, len(slurmd)), 2)
        t1 = time.monotonic()
        step = cluster.run(["srun", "-N", str(count), "--ntasks-per-node=1", "hostname"], timeout=600)
        row["srun_s"] = round(time.monotonic() - t1, 2)
        lines = step.stdout.splitlines()
        row["srun_ok"] = step.returncode == 0 and len(lines) == count
        if not row["srun_ok"]:
            row["srun_error"] = "rc=%d, %d lines: %s" % (step.returncode, len(lines), step.stderr.strip()[-300:])
    finally:
        t2 = time.monotonic()
        stop = clusterctl("stop", "--run-dir", run_dir)
        row["stop_s"] = round(time.monotonic() - t2, 2)
        row["left_after_stop"] = len(leftovers(run_dir, cluster.conf))
        if stop.returncode != 0:
            row["stop_error"] = stop.stderr.strip()
    return row


COLUMNS = [("nodes", "nodes"), ("slurm_auth", "auth"), ("start_s", "start s"), ("idle", "idle"), ("rss_mib", "RSS MiB"),
           ("rss_per_slurmd_mib", "MiB/slurmd"), ("srun_s", "srun -N s"), ("srun_ok", "srun ok"),
           ("stop_s", "stop s"), ("left_after_stop", "left")]


def table(rows):
    out = ["| %s |" % " | ".join(title for key, title in COLUMNS),
           "|%s|" % "|".join("---:" for column in COLUMNS)]
    for row in rows:
        out.append("| %s |" % " | ".join(str(row.get(key, "-")) for key, title in COLUMNS))
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="256,1024", help="node counts, comma-separated (default 256,1024)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write OUT.md and OUT.json (default with the default sizes: bench/results/sim_scale)")
    parser.add_argument("--slurm-auth", default="munge", choices=("munge", "none"),
                        help="the simulated Slurm's AuthType/CredType plugins (spec key slurm_auth; default munge)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    out = args.out or (REPO / "bench" / "results" / "sim_scale" if args.sizes == "256,1024" else None)
    if out and args.slurm_auth != "munge":
        out = out.with_name(out.name + "_auth_" + args.slurm_auth)
    rows = []
    with tempfile.TemporaryDirectory(prefix="sf-scale-") as workdir:
        for count in sizes:
            rows.append(measure(count, workdir, args.slurm_auth))
            print(json.dumps(rows[-1]), file=sys.stderr)
    text = table(rows)
    print(text)
    if out:
        meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": platform.node(), "cpus": os.cpu_count(),
                "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1)}
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
        out.with_suffix(".md").write_text("# Simulated cluster scale (bench/sim_scale.py)\n\n%s, %s CPUs, %s GiB\n\n%s\n"
                                          % (meta["date"], meta["cpus"], meta["mem_gib"], text))
    bad = [r for r in rows if r.get("idle") != r["nodes"] or not r.get("srun_ok") or r.get("left_after_stop")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
