#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: fabric_topology
short_description: Each node's leaf switch from the fabric itself (ibnetdiscover, scontrol show topology, labels)
version_added: 0.1.0
description:
  - Places every node under its leaf switch for the localisation of the RDMA and fabric stages,
    from, in order of preference, C(ibnetdiscover) (a captured file, or run on one node through
    srun, or on the controller), slurmctld's C(scontrol show topology), and the inventory's
    C(slurm_topology_leaf) labels. Each source is tried only for the nodes still unplaced; one
    that fails is recorded with its words and the next is tried.
  - In a rail-optimised fabric a scalable unit (each node on one leaf per rail) is one leaf group.
  - Every command runs under a timeout; its output is written to O(raw_dir) as soon as it ends.
    With O(replay_dir) the captured outputs are read instead and nothing is run.
  - Runs where srun works (the login node or the Slurm controller). Reads only; in check mode the
    captured file and the labels are used and nothing is run.
options:
  nodes:
    description: Nodes to place.
    type: list
    elements: str
    required: true
  source:
    description: C(auto) (each source in order) or one source only.
    type: str
    choices: [auto, ibnetdiscover, scontrol, labels]
    default: auto
  ibnetdiscover_file:
    description: A captured C(ibnetdiscover) output on the controller; read instead of running it.
    type: path
    default: ""
  ibnetdiscover_command:
    description: C(ibnetdiscover) and its arguments (topology output, the default format).
    type: list
    elements: str
    default: [ibnetdiscover]
  ibnetdiscover_on:
    description:
      - Where C(ibnetdiscover) runs - C(srun) on the first node (one task, through O(srun_args)),
        C(controller) here (the login node has an adapter on the fabric), or C(none).
    type: str
    choices: [srun, controller, none]
    default: srun
  run_on:
    description: The node C(ibnetdiscover) runs on through srun; empty for the first of O(nodes).
    type: str
    default: ""
  srun_args:
    description: Extra srun arguments (partition, account, reservation).
    type: list
    elements: str
    default: []
  scontrol_command:
    description: The command printing Slurm's switches.
    type: list
    elements: str
    default: [scontrol, show, topology]
  labels:
    description: Leaf label per node (the hosts' C(slurm_topology_leaf)).
    type: dict
    default: {}
  host_map:
    description: Host name in an adapter's description to node name, where they differ.
    type: dict
    default: {}
  timeout:
    description: Seconds each command may run (1 to 604800, a week).
    type: int
    default: 120
  environment:
    description: Environment for the commands (for example C(SLURM_CONF)).
    type: dict
    default: {}
  replay_dir:
    description: A past run's artifact directory; its C(raw/_fabric_topology) outputs are read instead.
    type: path
    default: ""
  raw_dir:
    description: Where each output is written as it ends (usually C($GPUCLUSTER_RUN_DIR/raw/_fabric_topology)).
    type: path
    default: ""
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Place the nodes under their leaf switches
  gpucluster.acceptance.fabric_topology:
    nodes: "{{ groups['gpu_nodes'] }}"
  register: leaves
"""

RETURN = r"""
topology:
  description: Per node C({leaf}); C(unknown) where no source placed it.
  returned: always
  type: dict
stage_result:
  description: The C(fabric_topology) stage for the report - one C(leaves) check, the raw outputs, what each source gave.
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_discovery, _guard
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import run_one
from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import WEEK
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import door_problem


class _Commands(object):
    """Runs (or replays) each command once, keeping its output under its key."""

    def __init__(self, params, env, check_mode):
        self.params = params
        self.env = env
        self.check_mode = check_mode
        self.raw = {}
        self.guard = None

    def _replayed(self, key):
        """The captured output with the exit status and completeness the live run's results.json kept."""
        path = os.path.join(self.params["replay_dir"], "raw", "_" + _fabric_discovery.STAGE, key + ".txt")
        if not os.path.isfile(path):
            return {"output": "", "rc": None, "missing": True}
        with open(path, errors="replace") as handle:
            text = handle.read()
        try:
            with open(os.path.join(self.params["replay_dir"], "results.json")) as handle:
                meta = ((json.load(handle).get("raw") or {}).get("_" + _fabric_discovery.STAGE) or {}).get(key) or {}
        except (IOError, OSError, ValueError, AttributeError):
            meta = {}
        return {"output": text, "rc": meta.get("rc", 0), "timed_out": meta.get("complete", True) is False}

    def __call__(self, key, argv):
        params = self.params
        if params["replay_dir"]:
            return self._replayed(key)
        if key == _fabric_discovery.IBNETDISCOVER_KEY and params["ibnetdiscover_file"]:
            try:
                with open(params["ibnetdiscover_file"], errors="replace") as handle:
                    record = {"output": handle.read(), "rc": 0}
            except (IOError, OSError) as exc:
                record = {"output": "", "rc": None, "error": "cannot read %s: %s" % (params["ibnetdiscover_file"], exc)}
            argv = ["cat", params["ibnetdiscover_file"]]
        elif self.check_mode:
            return {"output": "", "rc": None, "missing": True, "check_mode": True}
        else:
            if self.guard is None:
                self.guard = _guard.Guard().start()
            record = run_one(argv, float(params["timeout"]), self.env, self.guard)
        text = "$ %s\n%s" % (" ".join(argv), record.get("output") or "")
        if params["raw_dir"]:
            write_atomic(os.path.join(params["raw_dir"], key + ".txt"), text)
        self.raw[key] = {"output": None if params["raw_dir"] else text, "rc": record.get("rc"),
                         "seconds": record.get("seconds"), "complete": not record.get("timed_out")}
        return record


def _ibnetdiscover_argv(params, first):
    if params["ibnetdiscover_file"]:
        return ["cat", params["ibnetdiscover_file"]], "captured file %s" % params["ibnetdiscover_file"]
    if params["ibnetdiscover_on"] == "none" or not first:
        return None, ""
    if params["ibnetdiscover_on"] == "controller":
        return list(params["ibnetdiscover_command"]), "on the controller"
    return (["srun", "--nodelist=%s" % first, "-N1", "--ntasks=1", "--kill-on-bad-exit=1"]
            + list(params["srun_args"]) + list(params["ibnetdiscover_command"])), "on %s" % first


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type="list", elements="str", required=True),
            source=dict(type="str", choices=["auto", "ibnetdiscover", "scontrol", "labels"], default="auto"),
            ibnetdiscover_file=dict(type="path", default=""),
            ibnetdiscover_command=dict(type="list", elements="str", default=["ibnetdiscover"]),
            ibnetdiscover_on=dict(type="str", choices=["srun", "controller", "none"], default="srun"),
            run_on=dict(type="str", default=""),
            srun_args=dict(type="list", elements="str", default=[]),
            scontrol_command=dict(type="list", elements="str", default=["scontrol", "show", "topology"]),
            labels=dict(type="dict", default={}),
            host_map=dict(type="dict", default={}),
            timeout=dict(type="int", default=120),
            environment=dict(type="dict", default={}),
            replay_dir=dict(type="path", default=""),
            raw_dir=dict(type="path", default=""),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = door_problem(params, {"timeout": (1, WEEK)}, module.check_mode)
    if problem:
        module.fail_json(msg="fabric_topology: %s" % problem)
    if params["replay_dir"] and not os.path.isdir(params["replay_dir"]):
        module.fail_json(msg="fabric_topology: replay directory %s does not exist" % params["replay_dir"])
    env = dict(os.environ)
    env.update(dict((str(k), str(v)) for k, v in params["environment"].items()))
    nodes = sorted(set(params["nodes"]))
    argv, where = _ibnetdiscover_argv(params, params["run_on"] or (nodes[0] if nodes else None))
    commands = _Commands(params, env, module.check_mode)
    opts = {"source": params["source"], "ibnetdiscover_argv": argv, "ibnetdiscover_where": where,
            "ibnetdiscover_file": params["ibnetdiscover_file"], "scontrol_argv": params["scontrol_command"],
            "labels": params["labels"], "host_map": params["host_map"]}
    try:
        found = _fabric_discovery.discover(nodes, opts, commands)
    except (IOError, OSError) as exc:  # raw_dir not writable (a file, a full disk, no permission)
        module.fail_json(msg="fabric_topology: cannot keep the raw outputs under %s: %s" % (params["raw_dir"], exc))
    check = dict(found["check"], stage=_fabric_discovery.STAGE, node=None, raw=sorted(commands.raw))
    check["metrics"] = dict(check.get("metrics") or {}, source=found["source"],
                            tried=[dict(t, raw=t["raw"] or "") for t in found["tried"]])
    summary = dict((k, found[k]) for k in ("source", "leaves", "unplaced", "tried", "by_source"))
    module.exit_json(changed=False, topology=found["topology"], discovery=summary,
                     stage_result={"stage": _fabric_discovery.STAGE, "checks": [check], "raw": commands.raw})


if __name__ == "__main__":
    main()
