# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller cost of rack-scale judging: gpu_health's fabric view per tray and the NVLink-domain stage.

    .venv/bin/python bench/nvlink_domains.py            # 2 and 8 racks; writes bench/results/nvlink_domains.md/.json
    .venv/bin/python bench/nvlink_domains.py --racks 2  # prints only

For R simulated GB200 NVL72 racks (18 trays of 4 GPUs each, sim/gpusim: the same fake nvidia-smi
the simulated cluster runs, rendered in this process), with one tray of the first rack in another
clique and an NVLink switch tray down in the last (every tray's fabric degraded):

* per tray: render ``nvidia-smi -q`` and ``nvidia-smi nvlink -s`` (the fake; not counted), then
  judge the gpu_health stage from them (parse -q, the Fabric sections, the links; counted: CPU and
  wall per tray);
* once: the NVLink-domain stage over every tray's state (judge_nvlink_domains: domains, misplaced
  trays, rack-level faults, the capacity statement; counted), and topology/block from the result.

Checks that what was judged is right (the misplaced tray and the rack fault found, every other
rack full), so a faster wrong answer cannot pass for a result.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "sim"))
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from gpusim import model, nvidia_smi, spec as simspec  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state  # noqa: E402
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (  # noqa: E402
    judge_gpu_health_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_domains import (  # noqa: E402
    judge_nvlink_domains)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_model import build_topology  # noqa: E402
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile  # noqa: E402

RESULTS = os.path.join(HERE, "results")
TRAYS = 18


def _spec(racks):
    data = {"name": "nvlbench", "profile": "gb200_nvl72_tray", "seed": 3, "rack_trays": TRAYS,
            "nodes": {"prefix": "gpu", "count": racks * TRAYS, "width": 4, "start": 1},
            "faults": [{"kind": "fabric", "node": "gpu0007", "clique_id": 32767},
                       {"kind": "fabric", "rack": racks, "health": {"Bandwidth": "Degraded"}}]}
    return simspec.validate(data)


def run(racks):
    sim = _spec(racks)
    profile = load_profile("gb200_nvl72_tray")
    states, judge_cpu, judge_wall = {}, 0.0, 0.0
    for node in sim.nodes:
        state = model.node_state(sim, node)
        state.now = time.time()
        state.boot = model.boot_epoch(sim, node, None)
        outputs = {"nvidia-smi-q": nvidia_smi.render_q(state, state.visible_gpus),
                   "nvlink-status": nvidia_smi.render_nvlink_status(state, state.visible_gpus),
                   "nvidia-smi-csv": None, "dmesg": None, "node-clock": None, "xid-window": None}
        cpu, wall = time.process_time(), time.perf_counter()
        checks, metrics = judge_gpu_health_stage(outputs, profile, {})
        states[node] = _run_state.fold_stage({}, "gpu_health", checks, metrics, node=node)
        judge_cpu += time.process_time() - cpu
        judge_wall += time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    result = judge_nvlink_domains(states, profile)
    topology = build_topology({"nvlink_domains": result["document"]}, "nvlink", plugin="block")
    domain_cpu, domain_wall = time.process_time() - cpu, time.perf_counter() - wall
    found = dict((c["check"], c) for c in result["checks"] if c["status"] == "fail")
    assert found["nvlink_domain.membership"]["node"] == "gpu0007", found
    assert len(found["nvlink_domain.rack"]["metrics"]["nodes"]) == TRAYS, found
    assert result["document"]["full_domains"] == racks - 2 + (1 if racks == 1 else 0), result["document"]
    assert not topology["fatal"], topology["problems"]
    trays = len(sim.nodes)
    return {"racks": racks, "trays": trays, "gpus": trays * 4,
            "gpu_health_cpu_ms_per_tray": round(judge_cpu / trays * 1000, 2),
            "gpu_health_wall_ms_per_tray": round(judge_wall / trays * 1000, 2),
            "domain_stage_cpu_ms": round(domain_cpu * 1000, 2), "domain_stage_wall_ms": round(domain_wall * 1000, 2),
            "domain_stage_ms_per_tray": round(domain_wall / trays * 1000, 3),
            "statement": result["document"]["statement"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--racks", type=int, nargs="*", default=None)
    args = parser.parse_args(argv)
    rows = [run(r) for r in (args.racks or (2, 8))]
    lines = ["| racks | trays | gpu_health judge per tray (CPU / wall ms) | NVLink-domain stage + topology/block (CPU / wall ms) | per tray (ms) |",
             "|---|---|---|---|---|"]
    for row in rows:
        lines.append("| %d | %d | %.2f / %.2f | %.1f / %.1f | %.3f |" % (
            row["racks"], row["trays"], row["gpu_health_cpu_ms_per_tray"], row["gpu_health_wall_ms_per_tray"],
            row["domain_stage_cpu_ms"], row["domain_stage_wall_ms"], row["domain_stage_ms_per_tray"]))
    print("\n".join(lines))
    for row in rows:
        print("%d racks: %s" % (row["racks"], row["statement"]))
    if args.racks is None:
        os.makedirs(RESULTS, exist_ok=True)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(os.path.join(RESULTS, "nvlink_domains.json"), "w", encoding="utf-8") as handle:
            json.dump({"measured": stamp, "rows": rows}, handle, indent=1)
        with open(os.path.join(RESULTS, "nvlink_domains.md"), "w", encoding="utf-8") as handle:
            handle.write("Measured %s on this machine (2 cores).\n\n%s\n" % (stamp, "\n".join(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
