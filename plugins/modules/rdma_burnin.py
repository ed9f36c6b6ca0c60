#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: rdma_burnin
short_description: perftest between node pairs, NIC k to NIC k on every rail, until every slow NIC is pinned
version_added: 0.1.0
description:
  - Runs C(ib_write_bw) (or C(ib_read_bw)) between pairs of nodes on every rail at once, one Slurm
    step per round; each node starts its servers and clients, each under a timeout, clients trying
    again while their server is not listening yet. Every test of a round has its own TCP port.
  - Each rail is localised on its own by the fabric stage's planner. A NIC low with two partners
    that passed elsewhere is pinned and named by node, NIC, rail and the GPU it serves; its partner
    is cleared.
  - Judged on the average bandwidth (Gb/s) against O(min_fraction) of the ports' rate and against
    the other NICs of the rail. A step, task or out-of-band TCP failure is an error with that
    component, never a slow NIC.
  - Runs where srun works (the login node or the Slurm controller). In check mode nothing runs; the
    first round's tests are returned.
options:
  nodes:
    description: Nodes to test (those that passed the per-node stages).
    type: list
    elements: str
    required: true
  node_info:
    description: Per node C({nics, ports, gpus}) (the C(rdma_node_info) filter); nodes missing get the profile's NICs.
    type: dict
    default: {}
  nic_names:
    description: Compute NICs in rail order when O(node_info) has none for a node.
    type: list
    elements: str
    default: []
  nics_per_node:
    description: Compute NICs per node (C(mlx5_0..)) when neither O(node_info) nor O(nic_names) say.
    type: int
    default: 8
  topology:
    description: Per node, a dict with C(leaf) (the leaf switch).
    type: dict
    default: {}
  tool:
    description: perftest bandwidth test.
    type: str
    choices: [ib_write_bw, ib_read_bw]
    default: ib_write_bw
  size:
    description: Message size in bytes (perftest C(-s)); 0 for perftest's default (65536).
    type: int
    default: 0
  qps:
    description: Queue pairs per test (perftest C(-q)).
    type: int
    default: 1
  iterations:
    description: Iterations (perftest C(-n)); 0 for perftest's default.
    type: int
    default: 0
  rdma_cm:
    description: Connect through RDMA-CM (perftest C(-R)).
    type: bool
    default: false
  bidirectional:
    description: Both directions at once (perftest C(-b)).
    type: bool
    default: false
  use_cuda:
    description: GPUDirect RDMA, the buffer on the GPU nearest each NIC (perftest C(--use_cuda)).
    type: bool
    default: false
  extra_args:
    description: More perftest arguments (both ends).
    type: list
    elements: str
    default: []
  base_port:
    description: TCP port of a round's first test; test i of the round uses base_port + i.
    type: int
    default: 18515
  timeout:
    description: Seconds one perftest run may take once started (1 to 604800, a week).
    type: int
    default: 120
  startup:
    description: Seconds a client keeps trying to reach its server (1 to 604800).
    type: int
    default: 30
  launcher_args:
    description: Extra srun arguments (partition, account, reservation).
    type: list
    elements: str
    default: []
  mode:
    description: Planner, as the fabric stage's.
    type: str
    choices: [adaptive, exhaustive, halving]
    default: adaptive
  max_rounds:
    description: Round limit; 0 for the mode's default.
    type: int
    default: 0
  seed:
    description: Planner seed (rail k uses seed + k).
    type: int
    default: 0
  min_fraction:
    description: Share of the ports' rate below which a test is low (the profile's C(rdma.min_fraction)).
    type: float
    default: 0.9
  port_rate:
    description: Link rate in Gb/s when ibstat gave none (the profile's C(infiniband.port_rate)).
    type: float
    default: 0
  max_gbits:
    description: A test's Gb/s above this is no plausible reading (an error, never a pass; the
      profile's C(plausibility.rdma_gbits_max)).
    type: float
    default: 1600
  counters_root:
    description:
      - The sysfs directory of the HCAs (C(/sys/class/infiniband)); each node's task reads its port
        counters there before and after its perftest runs, and a counter that rose above its limit
        fails that port in this stage. C(@node@) in it becomes the node's name. Empty to read none.
    type: str
    default: ""
  counter_limits:
    description: Largest rise per counter (the profile's C(infiniband.counter_limits)); null disables one.
    type: dict
    default: {}
  localize:
    description: Planner settings (min_rel_drop, mad_z, min_peers, max_retests).
    type: dict
    default: {}
  environment:
    description: Environment for srun (for example C(SLURM_CONF), C(PATH)).
    type: dict
    default: {}
  replay_dir:
    description: Judge a past run's captured outputs (its artifact directory) instead of running anything.
    type: path
    default: ""
  raw_dir:
    description: Write each output here as it comes (usually C($GPUCLUSTER_RUN_DIR/raw/_rdma)).
    type: path
    default: ""
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: perftest on every rail of the nodes that passed
  gpucluster.acceptance.rdma_burnin:
    nodes: "{{ passed_nodes }}"
    node_info: "{{ states | gpucluster.acceptance.rdma_node_info(passed_nodes, acceptance_profile_data) }}"
    min_fraction: 0.9
  register: rdma
"""

RETURN = r"""
stage_result:
  description: The rdma stage for the report, C(checks) (one per node and NIC), C(raw) outputs, C(document) and C(failed_nodes).
  returned: always
  type: dict
plan:
  description: In check mode, the first round's tests (rail, server, client, NICs, port, command lines).
  returned: check mode
  type: list
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize, _rdma, _rdma_plan
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import WEEK
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import door_problem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type="list", elements="str", required=True),
            node_info=dict(type="dict", default={}),
            nic_names=dict(type="list", elements="str", default=[]),
            nics_per_node=dict(type="int", default=8),
            topology=dict(type="dict", default={}),
            tool=dict(type="str", choices=["ib_write_bw", "ib_read_bw"], default="ib_write_bw"),
            size=dict(type="int", default=0),
            qps=dict(type="int", default=1),
            iterations=dict(type="int", default=0),
            rdma_cm=dict(type="bool", default=False),
            bidirectional=dict(type="bool", default=False),
            use_cuda=dict(type="bool", default=False),
            extra_args=dict(type="list", elements="str", default=[]),
            base_port=dict(type="int", default=18515),
            timeout=dict(type="int", default=120),
            startup=dict(type="int", default=30),
            launcher_args=dict(type="list", elements="str", default=[]),
            mode=dict(type="str", choices=["adaptive", "exhaustive", "halving"], default="adaptive"),
            max_rounds=dict(type="int", default=0),
            seed=dict(type="int", default=0),
            min_fraction=dict(type="float", default=0.9),
            port_rate=dict(type="float", default=0),
            max_gbits=dict(type="float", default=1600),
            counters_root=dict(type="str", default=""),
            counter_limits=dict(type="dict", default={}),
            localize=dict(type="dict", default={}),
            environment=dict(type="dict", default={}),
            replay_dir=dict(type="path", default=""),
            raw_dir=dict(type="path", default=""),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = door_problem(params, {"timeout": (1, WEEK), "startup": (1, WEEK), "qps": (1, 65536),
                                    "size": (0, 2 ** 40), "iterations": (0, 10 ** 9), "max_rounds": (0, 10 ** 4)}, module.check_mode)
    if problem:
        module.fail_json(msg="rdma_burnin: %s" % problem)
    if not 0 < params["min_fraction"] <= 1:
        module.fail_json(msg="rdma_burnin: min_fraction must be in (0, 1], got %s" % params["min_fraction"])
    if not 1024 <= params["base_port"] <= 60000:
        module.fail_json(msg="rdma_burnin: base_port must be from 1024 to 60000, got %d" % params["base_port"])
    if params["replay_dir"] and not os.path.isdir(params["replay_dir"]):
        module.fail_json(msg="rdma_burnin: replay directory %s does not exist" % params["replay_dir"])
    opts = dict(params)
    opts["max_rounds"] = params["max_rounds"] or None
    profile = {"nic_names": params["nic_names"], "nics_per_node": params["nics_per_node"]}
    info = _rdma_plan.nodes_info(params["nodes"], {}, profile)
    for node, given in params["node_info"].items():
        if node in info and isinstance(given, dict) and given.get("nics"):
            info[node] = {"nics": list(given["nics"]), "ports": dict(given.get("ports") or {}),
                          "gpus": dict(given.get("gpus") or {})}
    topology = dict((n, v if isinstance(v, dict) else {"leaf": v}) for n, v in params["topology"].items())
    if module.check_mode:
        plan = []
        nodes = sorted(params["nodes"], key=natural_key)
        if len(nodes) >= 2:
            rails = max(len(info[n]["nics"]) for n in nodes)
            pairs = {}
            for rail in range(rails):
                members = [n for n in nodes if rail < len(info[n]["nics"])]
                pairs[rail] = _localize.new_state(members, topology, mode=params["mode"],
                                                  seed=params["seed"] + rail)["next_round"]
            plan = _rdma_plan.plan_tests(1, pairs, info, opts)
        module.exit_json(changed=False, plan=plan, stage_result={"stage": _rdma.STAGE, "checks": [], "raw": {},
                                                                 "document": {}, "failed_nodes": []})
    env = dict(os.environ)
    env.update(dict((str(k), str(v)) for k, v in params["environment"].items()))
    try:
        result = _rdma.rdma_stage(params["nodes"], info, topology, opts, env)
    except ValueError as exc:
        module.fail_json(msg="rdma_burnin: %s" % exc)
    except (IOError, OSError) as exc:  # raw_dir or counters_root unusable: the run's own files
        module.fail_json(msg="rdma_burnin: cannot write or read the run's files: %s" % exc)
    module.exit_json(changed=False, stage_result=result)


if __name__ == "__main__":
    main()
