# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Acceptance wall time against the critical path of its tools, on the 16-node simulated cluster.

    .venv/bin/python bench/critical_path.py                      # every scenario and mode; writes bench/results/critical_path.md/.json
    .venv/bin/python bench/critical_path.py --modes srun --scenarios uniform    # prints only

A 16-node simulated cluster on real Slurm with raised tool times (the fake tools sleep: DCGM
level 3 for 30 s, every nvidia-smi, ibstat and dmesg call 1 s, every nccl-tests run 5 s), then the
whole of ``acceptance.yml`` (every per-node stage, the fabric burn-in, the workload, the verdict)
per transport and mode, in two scenarios:

* ``uniform``: every node equally fast (the overhead Ansible and Slurm add to the tools);
* ``slow node per stage``: a different node slower in each of three stages (slow_tool faults:
  gpu003's DCGM diagnostic +20 s, gpu007's nccl-tests +15 s, gpu011's ibstat +10 s per call), where
  waiting at every stage for the slowest node costs the sum of their delays and a per-node
  pipeline (ssh, ``acceptance_pipeline``) only the largest.

From the run's own results.json (the seconds each tool took, per node):

* per-node path: the largest sum, over the nodes, of the node's tool seconds in the per-node
  stages (what a node needs if it never waits for another);
* cluster path: the workload launch (one for all nodes) plus, for the fabric, each round's longest
  group (groups of a round run at once, rounds one after the other);
* critical path = per-node path + cluster path; overhead = wall / critical path;
* the path with a barrier per stage: the sum over the per-node stages of the slowest node's time
  in each, plus the cluster path (what waiting for every node at every stage costs by itself).

The wall time is ansible-playbook's, start-up and the verdict included. The simulated nodes share
this machine's 2 cores: the SDC probe and the workload compute for real, so their seconds grow when
nodes run them at once; the critical path is measured with the same contention.
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
RESULTS = os.path.join(HERE, "results")
TOOL_TIMES = {"nvidia_smi": 1.0, "dcgmi": 1.0, "dcgmi_diag_r3": 30.0, "ibstat": 1.0, "dmesg": 1.0,
              "all_reduce_perf": 5.0}
TARGET = 1.1
CLUSTER_TOOLS = ("workload",)
# The per-node stages and their tools (plugins/module_utils/_stages.py's STAGES), for the barrier path.
STAGE_TOOLS = {"preflight": ("tools", "nvidia-smi-versions", "nvidia-smi-list", "dcgmi-version", "ibstat-versions"),
               "topology": ("nvidia-smi-topo",),
               "gpu_health": ("nvidia-smi-q", "nvidia-smi-csv", "dmesg", "node-clock", "xid-window", "nvlink-status"),
               "dcgm": ("dcgmi-diag",), "sdc": ("sdc-probe",),
               "infiniband": ("ib-counters-before", "ibstat", "ib-pcie", "ib-gpu-affinity", "ib-counters-after"),
               "nccl_single_node": ("all_reduce_perf",)}


# Each scenario's faults; the modes run in each: (label, extra vars).
SCENARIOS = {
    "uniform": [],
    "slow node per stage": [
        {"kind": "slow_tool", "node": "gpu003", "tool": "dcgmi_diag_r3", "seconds": 20},
        {"kind": "slow_tool", "node": "gpu007", "tool": "all_reduce_perf", "seconds": 15},
        {"kind": "slow_tool", "node": "gpu011", "tool": "ibstat", "seconds": 10},
    ],
}
MODES = {
    "srun": {"acceptance_transport": "srun"},
    "ssh pipelined": {"acceptance_transport": "ssh", "acceptance_pipeline": True},
    "ssh in step": {"acceptance_transport": "ssh", "acceptance_pipeline": False},
}


def spec(name, faults=()):
    return {"name": name, "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 16, "width": 3},
            "cpus_per_node": 2, "fabric": {"leaves": 2, "spines": 2, "rails": 8, "oversubscription": 1.0},
            "tool_times": TOOL_TIMES, "seed": 7, "faults": list(faults)}


def clusterctl(*args, timeout=300):
    return subprocess.run([sys.executable, os.path.join(REPO, "sim", "clusterctl")] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, check=False)


def critical_path(document):
    """(per-node path s, cluster path s, the node on the per-node path) from results.json."""
    raw = document.get("raw") or {}
    per_node, worst = 0.0, None
    cluster = 0.0
    workload = 0.0
    for node, tools in raw.items():
        if node.startswith("_") or not isinstance(tools, dict):
            continue
        total = 0.0
        for tool, meta in tools.items():
            seconds = (meta or {}).get("seconds") or 0.0
            if tool in CLUSTER_TOOLS:
                workload = max(workload, seconds)
            else:
                total += seconds
        if total > per_node:
            per_node, worst = total, node
    rounds = {}
    for key, meta in (raw.get("_fabric") or {}).items():
        seconds = (meta or {}).get("seconds") or 0.0
        label = key.split("-", 1)[0] if key.startswith("round") else key
        rounds[label] = max(rounds.get(label, 0.0), seconds)
    cluster = workload + sum(rounds.values())
    return round(per_node, 2), round(cluster, 2), worst


def barrier_path(document):
    """The per-node stages' path when every stage waits for its slowest node: the sum over the stages
    of the slowest node's time in it."""
    raw = document.get("raw") or {}
    total = 0.0
    for tools in STAGE_TOOLS.values():
        slowest = 0.0
        for node, records in raw.items():
            if node.startswith("_") or not isinstance(records, dict):
                continue
            slowest = max(slowest, sum((records.get(t) or {}).get("seconds") or 0.0 for t in tools))
        total += slowest
    return round(total, 2)


def run(scenario, mode, sim_inventory, work):
    artifacts = tempfile.mkdtemp(prefix="art-", dir=work)
    env = dict(os.environ, GPUCLUSTER_ARTIFACTS_DIR=artifacts, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".build", "collections"))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", sim_inventory,
           os.path.join(REPO, "playbooks", "acceptance.yml"), "-e", json.dumps(MODES[mode])]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    wall = time.monotonic() - start
    dirs = sorted(d for d in os.listdir(artifacts) if os.path.isdir(os.path.join(artifacts, d)))
    if not dirs:
        raise RuntimeError("%s: no run directory; rc=%d\n%s" % (mode, proc.returncode,
                                                                proc.stdout.decode("utf-8", "replace")[-3000:]))
    with open(os.path.join(artifacts, dirs[-1], "results.json")) as handle:
        document = json.load(handle)
    per_node, cluster, worst = critical_path(document)
    barrier = barrier_path(document)
    path = per_node + cluster
    return {"scenario": scenario, "mode": mode, "rc": proc.returncode, "wall_s": round(wall, 1), "per_node_path_s": per_node,
            "cluster_path_s": cluster, "critical_path_s": round(path, 1), "slowest_node": worst,
            "barrier_path_s": round(barrier + cluster, 1),
            "barrier_ratio": round((barrier + cluster) / path, 3) if path else None,
            "ratio": round(wall / path, 3) if path else None, "verdict": document["verdict"]["status"],
            "nodes_failed": document["verdict"]["nodes_failed"]}


def render(result):
    lines = ["# Acceptance wall time against the critical path of its tools", "",
             "Generated by `bench/critical_path.py` on %s (%s CPUs, load average at the end %s): the 16-node "
             "simulated cluster, tool times %s, the whole of acceptance.yml per mode; scenario `slow node per "
             "stage`: %s." % (
                 result["date"], result["cpus"], result["load"],
                 ", ".join("%s %.0f s" % kv for kv in sorted(TOOL_TIMES.items())),
                 ", ".join("%s %s +%.0f s" % (f["node"], f["tool"], f["seconds"]) for f in SCENARIOS["slow node per stage"])),
             "",
             "| scenario | mode | wall s | per-node path s (slowest node) | cluster path s | critical path s | wall / path "
             "| path with a barrier per stage s (/ path) | verdict |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for row in result["runs"]:
        lines.append("| %s | %s | %.1f | %.1f (%s) | %.1f | %.1f | %.3f | %.1f (%.3f) | %s, %d failed |" % (
            row["scenario"], row["mode"], row["wall_s"], row["per_node_path_s"], row["slowest_node"],
            row["cluster_path_s"], row["critical_path_s"], row["ratio"], row["barrier_path_s"], row["barrier_ratio"],
            row["verdict"], row["nodes_failed"]))
    lines += ["", "Target: wall <= %.1fx the critical path. %s" % (TARGET, "; ".join(
        "%s, %s %.3fx (%s)" % (r["scenario"], r["mode"], r["ratio"], "met" if r["ratio"] <= TARGET else "not met")
        for r in result["runs"]))]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    scenarios = [name for name in args.scenarios.split(",") if name]
    modes = [name for name in args.modes.split(",") if name]
    unknown = sorted(set(scenarios) - set(SCENARIOS)) + sorted(set(modes) - set(MODES))
    if unknown:
        parser.error("unknown scenario or mode: %s" % ", ".join(unknown))
    whole = set(scenarios) == set(SCENARIOS) and set(modes) == set(MODES)
    out = args.out or (os.path.join(RESULTS, "critical_path") if whole else None)
    run_dir = "/tmp/cpath-run"
    runs = []
    for scenario in scenarios:
        work = tempfile.mkdtemp(prefix="cpath-")
        try:
            path = os.path.join(work, "spec.json")
            with open(path, "w") as handle:
                json.dump(spec("cpath", SCENARIOS[scenario]), handle)
            started = clusterctl("start", path, "--run-dir", run_dir)
            if started.returncode != 0:
                raise RuntimeError(started.stdout.decode("utf-8", "replace"))
            inventory = os.path.join(work, "inventory")
            made = clusterctl("inventory", path, "--run-dir", run_dir, "--out", inventory)
            if made.returncode != 0:
                raise RuntimeError(made.stdout.decode("utf-8", "replace"))
            # the uniform scenario shows the overhead; in step over ssh adds nothing to it
            for mode in modes if scenario != "uniform" else [m for m in modes if m != "ssh in step"]:
                runs.append(run(scenario, mode, os.path.join(inventory, "hosts.yml"), work))
                print(json.dumps(runs[-1]), file=sys.stderr)
        finally:
            clusterctl("stop", "--run-dir", run_dir)
            shutil.rmtree(work, ignore_errors=True)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "python": platform.python_version(), "cpus": os.cpu_count(),
              "load": ", ".join("%.1f" % v for v in os.getloadavg()), "runs": runs}
    text = render(result)
    print(text)
    if out:
        with open(out + ".json", "w") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
            handle.write("\n")
        with open(out + ".md", "w") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
