#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: fabric_burnin
short_description: Run nccl-tests across the allocation, then pairs and groups that pin every slow node
version_added: 0.1.0
description:
  - Runs an nccl-tests binary (built with MPI=1) over all the given nodes with C(srun) or C(mpirun),
    then rounds of disjoint groups planned by the localisation planner, each round's groups
    concurrently (bounded) and each under a timeout, until every slow node or degraded leaf
    uplink is pinned or cleared, or the round limit is reached.
  - Judged on bus bandwidth at large messages against the floor and the peers, C(#wrong), the
    out-of-bounds check, and ranks reported equal to ranks launched (a build without MPI=1 shows
    as several independent tables, and the node it concerns is named with that cause).
  - A run the launcher, the scheduler or the transport broke (srun cannot reach slurmctld, PMIx or
    MPI initialisation, ssh, a program not found, the OOM killer) measured nothing. It is run once
    more, and when a whole round still fails the stage ends as an C(error) naming the component,
    and no node or uplink is blamed.
  - Runs where the launcher runs (the login node or the Slurm controller), not on the GPU nodes.
  - In check mode nothing is launched; the first round's plan is returned.
options:
  nodes:
    description: Nodes to test (those that passed the per-node stages).
    type: list
    elements: str
    required: true
  topology:
    description: Per node, a dict with C(leaf) (the leaf switch); nodes without one share a leaf.
    type: dict
    default: {}
  binary:
    description: The nccl-tests binary, for example C(/opt/nccl-tests/build/all_reduce_perf).
    type: str
    default: all_reduce_perf
  args:
    description: Arguments before C(-g).
    type: list
    elements: str
    default: [-b, 8M, -e, 8G, -f, "2"]
  launcher:
    description: How ranks are started.
    type: str
    choices: [srun, mpirun]
    default: srun
  launcher_args:
    description: Extra launcher arguments (for example C(--partition=gpu) or C(--account=x)).
    type: list
    elements: str
    default: []
  mpi:
    description: C(srun --mpi) value (for example C(pmix)); empty for Slurm's default.
    type: str
    default: ""
  tasks_per_node:
    description: Processes per node.
    type: int
    default: 8
  gpus_per_process:
    description: GPUs per process (nccl-tests C(-g)).
    type: int
    default: 1
  gpus_per_node:
    description: GPUs per node, for C(srun --gpus-per-node).
    type: int
    default: 8
  gpus_per_node_flag:
    description: Pass C(--gpus-per-node) to srun (needs GPUs configured as GRES in Slurm).
    type: bool
    default: true
  timeout:
    description: Seconds after which a group's run is killed and counted as a hang (1 to 604800, a week).
    type: int
    default: 900
  concurrency:
    description: Groups of a round running at the same time.
    type: int
    default: 16
  mode:
    description: Planner, C(adaptive) (fewest rounds), C(exhaustive) (every pair), C(halving) (bisection).
    type: str
    choices: [adaptive, exhaustive, halving]
    default: adaptive
  max_rounds:
    description: Round limit; 0 for the mode's default.
    type: int
    default: 0
  seed:
    description: Seed for the planner's random choices (runs are reproducible per seed).
    type: int
    default: 0
  floor:
    description: Bus bandwidth (GB/s) below which a multi-node run is low; 0 for peers only.
    type: float
    default: 0
  full_allocation:
    description: Run the whole allocation once before localising.
    type: bool
    default: true
  counters_root:
    description:
      - Read every node's InfiniBand port counters (C(<root>/*/ports/*/counters/*), C(@node@) replaced
        by the node's name) in one srun step before the stage's first launch and after its last
        round, and judge their rise against O(counter_limits) (a link that flaps only under the
        all-reduce's traffic). Empty, or the mpirun launcher - not read.
    type: str
    default: ""
  counter_limits:
    description: The most each counter may rise during the stage (the profile's C(infiniband.counter_limits)); null - not judged.
    type: dict
    default: {}
  preflight:
    description:
      - Prove the launcher first - C(srun --mpi=list) must offer the O(mpi) plugin, and the binary
        launched on two nodes, one rank each, must report 2 ranks. A missing plugin (PMIx) or a
        broken launch ends the stage as a launcher error before any bandwidth is judged.
    type: bool
    default: true
  preflight_args:
    description: nccl-tests arguments of the 2-rank launch (before C(-g 1)).
    type: list
    elements: str
    default: [-b, "8", -e, "8", -f, "2", -n, "1", -w, "0", -c, "1"]
  preflight_timeout:
    description: Seconds before each preflight run is killed (1 to 604800).
    type: int
    default: 120
  localize:
    description: Planner settings (min_rel_drop, mad_z, min_peers, oversubscription, cross_fraction, max_retests).
    type: dict
    default: {}
  environment:
    description: Environment for the launcher (for example C(SLURM_CONF)).
    type: dict
    default: {}
  max_busbw:
    description:
      - Bus bandwidth (GB/s) above which a multi-node result is physically implausible (the
        profile's C(nccl.busbw_max_multi_node)); such a run measured nothing. 0 for no bound.
    type: float
    default: 0
  replay_dir:
    description:
      - Judge the captured outputs of a past run instead of launching anything - its artifact
        directory (C(raw/_fabric/<key>.txt) and the exit codes in its C(results.json)). The planner
        asks for the same groups the live run did; a group the capture does not hold is reported
        as not replayable, never as slow.
    type: path
    default: ""
  raw_dir:
    description:
      - Write each run's output here (C(<key>.txt)) as soon as it finishes, so that a run killed
        later keeps every group that ran. Usually C($GPUCLUSTER_RUN_DIR/raw/_fabric).
    type: path
    default: ""
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Fabric burn-in on the nodes that passed the per-node stages
  gpucluster.acceptance.fabric_burnin:
    nodes: "{{ passed_nodes }}"
    topology: "{{ leaves }}"
    binary: /opt/nccl-tests/build/all_reduce_perf
    floor: 300
  register: fabric
"""

RETURN = r"""
stage_result:
  description:
    - The fabric stage for the report, C(checks) (one per node, plus the full allocation and any
      pinned uplink), C(raw) outputs, C(document) (pairwise matrix, rounds, verdicts) and C(failed_nodes).
  returned: always
  type: dict
plan:
  description: In check mode, the first round's groups.
  returned: check mode
  type: list
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric, _localize
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import WEEK
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import door_problem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type="list", elements="str", required=True),
            topology=dict(type="dict", default={}),
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
            floor=dict(type="float", default=0),
            full_allocation=dict(type="bool", default=True),
            counters_root=dict(type="str", default=""),
            counter_limits=dict(type="dict", default={}),
            preflight=dict(type="bool", default=True),
            preflight_args=dict(type="list", elements="str",
                                default=["-b", "8", "-e", "8", "-f", "2", "-n", "1", "-w", "0", "-c", "1"]),
            preflight_timeout=dict(type="int", default=120),
            localize=dict(type="dict", default={}),
            environment=dict(type="dict", default={}),
            max_busbw=dict(type="float", default=0),
            replay_dir=dict(type="path", default=""),
            raw_dir=dict(type="path", default=""),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = door_problem(params, {"tasks_per_node": (1, 4096), "gpus_per_process": (1, 4096),
                                    "gpus_per_node": (1, 4096), "timeout": (1, WEEK), "concurrency": (1, 4096),
                                    "preflight_timeout": (1, WEEK), "max_rounds": (0, 10 ** 4)}, module.check_mode)
    if problem:
        module.fail_json(msg="fabric_burnin: %s" % problem)
    opts = dict(params)
    opts["floor"] = params["floor"] or None
    opts["max_rounds"] = params["max_rounds"] or None
    opts["max_busbw"] = params["max_busbw"] or None
    if params["replay_dir"] and not os.path.isdir(params["replay_dir"]):
        module.fail_json(msg="fabric_burnin: replay directory %s does not exist" % params["replay_dir"])
    topology = dict((n, v if isinstance(v, dict) else {"leaf": v}) for n, v in params["topology"].items())
    if module.check_mode:
        try:
            state = _localize.new_state(params["nodes"], topology, mode=params["mode"], seed=params["seed"])
        except ValueError as exc:
            module.fail_json(msg="fabric_burnin: %s" % exc)
        module.exit_json(changed=False, plan=state["next_round"],
                         stage_result={"stage": _fabric.STAGE, "checks": [], "raw": {}, "document": {}, "failed_nodes": []})
    env = dict(os.environ)
    env.update(dict((str(k), str(v)) for k, v in params["environment"].items()))
    try:
        result = _fabric.fabric_stage(params["nodes"], topology, opts, env)
    except ValueError as exc:
        module.fail_json(msg="fabric_burnin: %s" % exc)
    except (IOError, OSError) as exc:  # raw_dir or counters_root unusable: the run's own files
        module.fail_json(msg="fabric_burnin: cannot write or read the run's files: %s" % exc)
    module.exit_json(changed=False, stage_result=result)


if __name__ == "__main__":
    main()
