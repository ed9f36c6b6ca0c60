# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller cost of a per-node stage, ssh transport against srun transport, at 256 and 1,024 nodes.

    .venv/bin/python bench/transport_bench.py                 # N = 256, 1024; writes bench/results/transport.md/.json
    .venv/bin/python bench/transport_bench.py --sizes 16      # prints only

For each N, in one run: a simulated cluster of N nodes on real Slurm (``clusterctl start``; one
slurmd per node; ``slurm_auth: none`` above 256 nodes, see docs/simulated-cluster.md) and an
inventory of the same N host names with the stub tools of ``bench/controller_cost.py`` first on
the collector's PATH (outputs captured once from the fake tools and printed instantly, so tool time
is ~0 and the controller's own cost is what is measured). Then, interleaved:

* ``fixed``: ``acceptance.yml --tags none`` (only the ``always`` tasks: inventory checks, start of
  the run, the cluster play and the verdict), ssh transport;
* ``ssh``: ``acceptance.yml --tags topology`` over Ansible's connection (local connections, forks
  16: one collect_stage task per node);
* ``srun``: the same with ``-e acceptance_transport=srun`` (one task for the play: one srun step
  over the N nodes, every node judged in that task).

Controller CPU is user + system time of ansible-playbook and all its children (forked workers,
the local collectors over the local connection, srun and sinfo under srun), from getrusage; the
simulated nodes' slurmd/slurmstepd are daemons, not children, so the srun column does not carry the
nodes' side, while the ssh column carries the collector script (which on a real cluster runs on
the node: the ssh column is, if anything, flattered by it being cheap). Per node: (run - fixed) / N.
The 4,096-node figures extrapolate a line through the two sizes (cost = a + b N), per transport.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import controller_cost  # noqa: E402  pylint: disable=wrong-import-position,import-error

RESULTS = os.path.join(HERE, "results")
SIZES = (256, 1024)
TARGET_N, TARGET_RATIO, EXTRAPOLATE_N = 1024, 0.2, 4096
MODES = ("fixed", "ssh", "srun")


def start_cluster(count, work, log=print):
    """Start an N-node simulated cluster named for this bench; returns (run_dir, SLURM_CONF)."""
    width = max(3, len(str(count)))
    spec = {"name": "tbench%d" % count, "profile": controller_cost.PROFILE, "topology": False,
            "nodes": {"prefix": "gpu", "count": count, "width": width},
            "slurm_auth": "none" if count > 256 else "munge"}
    path = os.path.join(work, "spec-%d.json" % count)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle)
    run_dir = "/tmp/tbench-%d" % count  # short: slurmd's socket paths must fit 107 bytes
    start = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(REPO, "sim", "clusterctl"), "start", path, "--run-dir",
                           run_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900, check=False)
    if proc.returncode != 0:
        raise RuntimeError("clusterctl start: %s" % proc.stdout.decode("utf-8", "replace")[-2000:])
    log("N=%d: cluster up in %.1f s" % (count, time.monotonic() - start))
    return run_dir, os.path.join(run_dir, "etc", "slurm.conf")


def stop_cluster(run_dir):
    subprocess.run([sys.executable, os.path.join(REPO, "sim", "clusterctl"), "stop", "--run-dir", run_dir],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=False)


def command(mode, inventory, slurm_conf):
    playbook = os.path.join(REPO, "playbooks", "acceptance.yml")
    cmd = [controller_cost._bin("ansible-playbook"), playbook, "-i", inventory]  # pylint: disable=protected-access
    if mode == "fixed":
        return cmd + ["--tags", "none"]
    cmd += ["--tags", "topology"]
    if mode == "srun":
        cmd += ["-e", json.dumps({"acceptance_transport": "srun", "acceptance_srun_gpus_per_node": 0,
                                  "acceptance_controller_environment": {"SLURM_CONF": slurm_conf}})]
    return cmd


def checked(output, mode, count):
    """True when the run judged every node's topology (the verdict line counts the checks)."""
    if mode == "fixed":
        return True
    return ("%d of %d node(s)" % (0, count)) in output or ("all %d node(s) passed" % count) in output


def measure(count, repeat, work, stubs, sysfs, env, log=print):
    inventory = controller_cost.write_inventory(os.path.join(work, "inv-%d.yml" % count), count, stubs, sysfs)
    run_dir, slurm_conf = start_cluster(count, work, log)
    samples = dict((m, {"wall": [], "cpu": [], "ok": []}) for m in MODES)
    try:
        for rep in range(repeat):
            for mode in MODES:
                artifacts = tempfile.mkdtemp(prefix="art-", dir=work)
                run_env = dict(env, GPUCLUSTER_ARTIFACTS_DIR=artifacts)
                wall, cpu, rc, tail = controller_cost.timed(command(mode, inventory, slurm_conf), run_env, REPO)
                ok = mode == "fixed" or (rc == 0 and checked(tail, mode, count))
                samples[mode]["wall"].append(wall)
                samples[mode]["cpu"].append(cpu)
                samples[mode]["ok"].append(ok)
                shutil.rmtree(artifacts, ignore_errors=True)
                detail = "" if ok else "\n" + tail[-1500:]
                log("N=%d %s #%d: wall %.1f s, CPU %.1f s, rc %d%s" % (count, mode, rep + 1, wall, cpu, rc, detail))
    finally:
        stop_cluster(run_dir)
    return cell(count, samples)


def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def cell(count, samples):
    fixed_wall, fixed_cpu = _median(samples["fixed"]["wall"]), _median(samples["fixed"]["cpu"])
    out = {"n": count, "fixed": {"wall_s": round(fixed_wall, 2), "cpu_s": round(fixed_cpu, 2)}}
    for mode in ("ssh", "srun"):
        wall, cpu = _median(samples[mode]["wall"]), _median(samples[mode]["cpu"])
        out[mode] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                     "wall_ms_per_node": round(1000.0 * max(0.0, wall - fixed_wall) / count, 2),
                     "cpu_ms_per_node": round(1000.0 * max(0.0, cpu - fixed_cpu) / count, 2),
                     "runs": len(samples[mode]["wall"]), "all_ok": all(samples[mode]["ok"])}
    out["cpu_ratio"] = round(out["srun"]["cpu_ms_per_node"] / out["ssh"]["cpu_ms_per_node"], 3) \
        if out["ssh"]["cpu_ms_per_node"] else None
    out["wall_ratio"] = round(out["srun"]["wall_ms_per_node"] / out["ssh"]["wall_ms_per_node"], 3) \
        if out["ssh"]["wall_ms_per_node"] else None
    return out


def extrapolate(cells, n=EXTRAPOLATE_N):
    """{transport: {cpu_s, wall_s}} at n from a line through the smallest and largest size."""
    if len(cells) < 2:
        return {}
    low, high = cells[0], cells[-1]
    out = {}
    for mode in ("ssh", "srun"):
        out[mode] = {}
        for key in ("cpu_s", "wall_s"):
            slope = (high[mode][key] - low[mode][key]) / float(high["n"] - low["n"])
            out[mode][key] = round(high[mode][key] + slope * (n - high["n"]), 1)
    return out


def render(result):
    lines = ["# Controller cost of a per-node stage: ssh transport vs srun transport", "",
             "Generated by `bench/transport_bench.py` on %s (ansible-core %s, Python %s, %s CPUs; load average "
             "at the end %s). `--tags topology`, forks 16, tool time ~0 (stub tools), %d run(s) per cell, medians; "
             "per node = (run - fixed) / N, fixed = the `always` tasks alone." % (
                 result["date"], result["ansible_core"], result["python"], result["cpus"], result["load"],
                 result["repeat"]), "",
             "| N | fixed wall s / CPU s | ssh wall s / CPU s | srun wall s / CPU s | ssh ms/node wall / CPU "
             "| srun ms/node wall / CPU | srun/ssh CPU | srun/ssh wall |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in result["cells"]:
        lines.append("| %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %s | %s |" % (
            c["n"], c["fixed"]["wall_s"], c["fixed"]["cpu_s"], c["ssh"]["wall_s"], c["ssh"]["cpu_s"],
            c["srun"]["wall_s"], c["srun"]["cpu_s"], c["ssh"]["wall_ms_per_node"], c["ssh"]["cpu_ms_per_node"],
            c["srun"]["wall_ms_per_node"], c["srun"]["cpu_ms_per_node"], c["cpu_ratio"], c["wall_ratio"]))
    ext = result.get("extrapolated") or {}
    if ext:
        lines += ["", "Extrapolated to %d nodes (a line through the sizes above): ssh %.0f s wall, %.0f s CPU; "
                  "srun %.0f s wall, %.0f s CPU, per per-node stage." % (
                      EXTRAPOLATE_N, ext["ssh"]["wall_s"], ext["ssh"]["cpu_s"], ext["srun"]["wall_s"],
                      ext["srun"]["cpu_s"])]
    target = [c for c in result["cells"] if c["n"] == TARGET_N]
    if target:
        met = target[0]["cpu_ratio"] is not None and target[0]["cpu_ratio"] <= TARGET_RATIO
        lines += ["", "Target: srun <= %.1fx ssh controller CPU per node at N = %d: %sx -> %s." % (
            TARGET_RATIO, TARGET_N, target[0]["cpu_ratio"], "met" if met else "NOT met")]
    bad = [(c["n"], m) for c in result["cells"] for m in ("ssh", "srun") if not c[m]["all_ok"]]
    if bad:
        lines += ["", "Runs that did not judge every node: %s." % ", ".join("N=%d %s" % b for b in bad)]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", default=None, help="write OUT.md/.json (default with the default sizes: "
                                                    "bench/results/transport)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    out = args.out or (os.path.join(RESULTS, "transport") if sizes == list(SIZES) else None)
    env = dict(os.environ)
    env.setdefault("ANSIBLE_CONFIG", os.path.join(REPO, "ansible.cfg"))
    work = tempfile.mkdtemp(prefix="tbench-")
    cells = []
    try:
        env["ANSIBLE_COLLECTIONS_PATH"] = controller_cost._collections_path(work, REPO)  # pylint: disable=protected-access
        stubs, sysfs = controller_cost.make_stubs(work)
        for count in sizes:
            cells.append(measure(count, args.repeat, work, stubs, sysfs, env))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "ansible_core": controller_cost._ansible_version(),  # pylint: disable=protected-access
              "python": platform.python_version(), "cpus": os.cpu_count(),
              "load": ", ".join("%.1f" % v for v in os.getloadavg()), "repeat": args.repeat,
              "cells": cells, "extrapolated": extrapolate(cells)}
    text = render(result)
    print(text)
    if out:
        with open(out + ".json", "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
            handle.write("\n")
        with open(out + ".md", "w", encoding="utf-8") as handle:
            handle.write(text)
    return 0 if all(c[m]["all_ok"] for c in cells for m in ("ssh", "srun")) else 1


if __name__ == "__main__":
    sys.exit(main())
