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
  environment:
    description: Environment for the launcher (for example C(SLURM_CONF)).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpucluster.acceptance.nccl_launch
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
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import LAUNCH_BOUNDS, launch_spec
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import door_problem


def main():
    module = AnsibleModule(
        argument_spec=launch_spec(
            nodes=dict(type="list", elements="str", required=True),
            topology=dict(type="dict", default={}),
            floor=dict(type="float", default=0),
            full_allocation=dict(type="bool", default=True),
            counters_root=dict(type="str", default=""),
            counter_limits=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = door_problem(params, LAUNCH_BOUNDS, module.check_mode)
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
