# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    # The nccl-tests launch and planner options of the controller stages that run nccl-tests groups
    # (fabric_burnin, nvlink_burnin); their argument spec is _fabric_runs.LAUNCH_SPEC.
    DOCUMENTATION = r"""
options:
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
  max_busbw:
    description:
      - Bus bandwidth (GB/s) above which a multi-node result is physically implausible (the
        profile's C(nccl.busbw_max_multi_node)); such a run measured nothing. 0 for no bound.
    type: float
    default: 0
  replay_dir:
    description:
      - Judge the captured outputs of a past run instead of launching anything - its artifact
        directory (C(raw/_<stage>/<key>.txt) - C(raw/_fabric), C(raw/_nvlink_domain) - and the exit codes
        in its C(results.json)). The planner asks for the same groups the live run did; a group the
        capture does not hold is reported as not replayable, never as slow.
    type: path
    default: ""
  raw_dir:
    description:
      - Write each run's output here (C(<key>.txt)) as soon as it finishes, so that a run killed
        later keeps every group that ran. Usually C($GPUCLUSTER_RUN_DIR/raw/_<stage>).
    type: path
    default: ""
"""
