# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: slurm
author: gpucluster.acceptance maintainers (@gpucluster)
version_added: "0.1.0"
short_description: The GPU nodes of a Slurm cluster, as Slurm knows them
description:
  - Builds the inventory from the Slurm controller, run on the login node as any user who can
    run C(scontrol) and C(sinfo); every node with its partitions, features, state and leaf switch
    (topology/tree) or block (topology/block). No hand-typed host list.
  - Reads C(scontrol --json show nodes) where Slurm has it (23.02 and later), else C(sinfo --json)
    (21.08, 22.05), else C(scontrol -o show nodes); leaves and blocks from C(scontrol show topology).
  - Every node goes into O(nodes_group) (the group C(acceptance.yml) runs on), and into
    C(slurm_partition_<name>), C(slurm_feature_<name>), C(slurm_state_<state or flag>),
    C(slurm_leaf_<switch>) and C(slurm_block_<block>) groups.
  - Host vars C(slurm_node_name), C(slurm_node_addr), C(slurm_node_hostname), C(slurm_partitions),
    C(slurm_features), C(slurm_active_features), C(slurm_state), C(slurm_state_flags),
    C(slurm_reason), C(slurm_gres), C(slurm_gres_gpus) (GPUs its GRES declares), and
    C(slurm_topology_leaf) / C(slurm_topology_block) (the labels the fabric and NVLink stages read).
  - The launch settings C(acceptance_slurm_partition) and C(acceptance_slurm_reservation) are set
    on the C(all) group from O(launch_partition) / O(launch_reservation) (default the partitions
    of O(partitions), and O(reservation)); every srun launch of the collection uses them.
  - Slurm that cannot be reached, or output that cannot be read, fails the inventory with Slurm's
    own message. Filters that leave no node fail too; an empty inventory never passes acceptance.
options:
  plugin:
    description: The name of this plugin; the file name must end in C(slurm.yml) or C(slurm.yaml).
    required: true
    choices: [gpucluster.acceptance.slurm]
  partitions:
    description: Only nodes in at least one of these partitions (empty for every partition).
    type: list
    elements: str
    default: []
  states:
    description:
      - Only nodes whose base state (V(idle), V(mixed), V(allocated), V(down), ...) or one of whose
        flags (V(drain), V(not_responding), ...) is one of these, in lower case. Empty for all.
    type: list
    elements: str
    default: []
  features:
    description: Only nodes that have every one of these features (AvailableFeatures).
    type: list
    elements: str
    default: []
  reservation:
    description: Only the nodes of this Slurm reservation (C(scontrol show reservation)).
    type: str
    default: ""
  within_job:
    description:
      - Only the nodes of the Slurm job this runs in (C(SLURM_JOB_NODELIST)), for acceptance run as
        an C(sbatch) job whose srun steps land in its own allocation; outside a job the inventory fails.
      - The launch settings are then left empty (the steps inherit the job's partition and reservation).
    type: bool
    default: false
  exclude_states:
    description:
      - Leave out nodes whose base state or one of whose flags is one of these, e.g.
        V([drain, not_responding, powered_down]) (a drained or silent node in an srun node list holds
        the whole step until its launch timeout). Empty keeps them (a replaced node is still drained
        when it is re-accepted).
    type: list
    elements: str
    default: []
  launch_partition:
    description:
      - The partition every srun launch of the run uses (C(acceptance_slurm_partition)); empty for
        the partitions of O(partitions) (a comma list), else Slurm's default.
    type: str
    default: ""
  launch_reservation:
    description: The reservation every srun launch uses (C(acceptance_slurm_reservation)); empty for O(reservation).
    type: str
    default: ""
  nodes_group:
    description: The group every node is put in (C(acceptance.yml) runs on V(gpu_nodes)).
    type: str
    default: gpu_nodes
  group_prefix:
    description: Prefix of the partition, feature, state, leaf and block groups.
    type: str
    default: slurm_
  slurm_conf:
    description: C(SLURM_CONF) for the commands (empty for Slurm's own default or the environment's).
    type: path
    default: ""
  timeout:
    description: Seconds each Slurm command may take before the inventory fails.
    type: int
    default: 60
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
notes:
  - Runs on the controller (the login node); needs only read access to Slurm, no root and no SSH.
  - GPUs come from GRES (C(Gres=gpu:8)); a node that declares none has C(slurm_gres_gpus=None).
"""

EXAMPLES = r"""
# slurm.yml: every node of the gpu partition that is idle or mixed, grouped by leaf switch.
plugin: gpucluster.acceptance.slurm
partitions: [gpu]
states: [idle, mixed]

# A reservation the provider made for the burn-in; srun launches use it too.
# plugin: gpucluster.acceptance.slurm
# reservation: acceptance
# keyed_groups:
#   - key: slurm_gres_gpus
#     prefix: gpus
# compose:
#   ansible_host: slurm_node_addr

# ansible-inventory -i slurm.yml --graph
"""

import os
import subprocess

from ansible.errors import AnsibleParserError
from ansible.inventory.group import to_safe_group_name
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _slurm_inventory as slurm


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "gpucluster.acceptance.slurm"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(("slurm.yml", "slurm.yaml"))

    def _run(self, argv):
        """(rc, stdout, stderr) of one Slurm command under the timeout; rc None when it could not start."""
        env = dict(os.environ)
        if self.get_option("slurm_conf"):
            env["SLURM_CONF"] = self.get_option("slurm_conf")
        try:
            # Node reasons and comments are whatever an admin typed: undecodable bytes are replaced.
            proc = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8", errors="replace", env=env,
                                  check=False, timeout=self.get_option("timeout"))
        except FileNotFoundError:
            return None, "", "%s: not found on PATH (is this a Slurm login node?)" % argv[0]
        except subprocess.TimeoutExpired:
            return None, "", "%s did not answer within %d s" % (" ".join(argv), self.get_option("timeout"))
        except OSError as exc:
            return None, "", "%s could not be run: %s" % (argv[0], exc)
        return proc.returncode, proc.stdout, proc.stderr

    def _fail(self, argv, rc, err, out=""):
        # Slurm prints some refusals on stdout ("Reservation nope not found").
        message = ((err or "").strip() or (out or "").strip()).splitlines()
        raise AnsibleParserError("slurm inventory: %s failed%s: %s" % (
            " ".join(argv), "" if rc is None else " (exit %d)" % rc,
            " / ".join(message[-3:]) if message else "no message"))

    def _nodes(self):
        """Every node, from the newest form this Slurm has (see _slurm_inventory). A JSON form that
        reports an error falls through to the text form, whose failure carries Slurm's own message
        (22.05's sinfo --json says only "Unspecified error", exit 0, when slurmctld is unreachable)."""
        reported = []
        for argv, parse in ((["scontrol", "--json", "show", "nodes"], slurm.parse_nodes_json),
                            (["sinfo", "--json"], lambda text: slurm.parse_nodes_json(text, "sinfo --json"))):
            rc, out, err = self._run(argv)
            if rc != 0 and rc is not None and _no_such_option(err):
                continue  # an older Slurm: its next form
            if rc == 0:
                nodes, problems = parse(out)
                if not problems:
                    return nodes
                reported.extend(problems)
            else:
                reported.append("%s: %s" % (" ".join(argv), (err or out or "no message").strip()[:300]))
            break
        argv = ["scontrol", "-o", "show", "nodes"]
        rc, out, err = self._run(argv)
        if rc != 0:
            self._fail(argv, rc, err, out)
        nodes, problems = slurm.parse_nodes_oneline(out)
        if problems:
            raise AnsibleParserError("slurm inventory: %s: %s" % (" ".join(argv), "; ".join((reported + problems)[:5])))
        for problem in reported:
            self.display.warning("slurm inventory: %s; read %s instead" % (problem, " ".join(argv)))
        return nodes

    def _topology(self):
        argv = ["scontrol", "show", "topology"]
        rc, out, err = self._run(argv)
        if rc != 0:
            self.display.warning("slurm inventory: %s failed: %s; no leaf or block groups"
                                 % (" ".join(argv), (err or "").strip()[:300]))
            return {}, {}
        leaves, blocks, problems = slurm.leaves_and_blocks(out)
        for problem in problems:
            self.display.warning("slurm inventory: %s" % problem)
        return leaves, blocks

    def _reservation(self, name):
        argv = ["scontrol", "-o", "show", "reservation", name]
        rc, out, err = self._run(argv)
        if rc != 0:
            self._fail(argv, rc, err, out)
        nodes, problem = slurm.reservation_nodes(out, name)
        if problem:
            raise AnsibleParserError("slurm inventory: %s" % problem)
        return sorted(nodes)

    def _read_slurm(self):
        reservation = self.get_option("reservation")
        leaves, blocks = self._topology()
        return {"nodes": self._nodes(), "leaves": leaves, "blocks": blocks,
                "reservation": self._reservation(reservation) if reservation else None}

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        # The options that change what is read, in the key: another reservation or slurm.conf is another inventory.
        key = "%s_%s" % (self.get_cache_key(path), "_".join(
            str(self.get_option(k)) for k in ("reservation", "slurm_conf")).replace("/", "-"))
        use_cache = self.get_option("cache") and cache
        data = None
        if use_cache:
            try:
                data = self._cache[key]
            except KeyError:
                data = None
        if data is None:
            data = self._read_slurm()
        if self.get_option("cache"):
            self._cache[key] = data
        self._populate(data)

    def _job_nodes(self):
        """The nodes of the job this runs in (within_job), or None."""
        if not self.get_option("within_job"):
            return None
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        if not nodelist:
            raise AnsibleParserError("slurm inventory: within_job is set but SLURM_JOB_NODELIST is not: "
                                     "not inside a Slurm job (run it from the sbatch script)")
        try:
            return set(expand_hostlist(nodelist))
        except ValueError as exc:
            raise AnsibleParserError("slurm inventory: SLURM_JOB_NODELIST=%s: %s" % (nodelist[:200], exc))

    def _populate(self, data):
        reservation = set(data["reservation"]) if data["reservation"] is not None else None
        job = self._job_nodes()
        partitions, states, features = (self.get_option(k) for k in ("partitions", "states", "features"))
        excluded = set(s.lower() for s in self.get_option("exclude_states"))
        kept = [n for n in data["nodes"] if slurm.keep(n, partitions, states, features, reservation)
                and (job is None or n["name"] in job) and not excluded & set([n["state"]] + n["state_flags"])]
        if not kept:
            raise AnsibleParserError(
                "slurm inventory: no node left of %d after the filters (partitions %s, states %s, features %s%s)"
                % (len(data["nodes"]), partitions or "any", states or "any", features or "any",
                   (", reservation %s" % self.get_option("reservation") if reservation is not None else "")
                   + (", this job's nodes" if job is not None else "")))
        group = self.inventory.add_group(self.get_option("nodes_group"))
        self._launch_settings(partitions if job is None else None)
        strict = self.get_option("strict")
        for node in kept:
            name = node["name"]
            self.inventory.add_host(name, group=group)
            for var, value in _host_vars(node, data["leaves"].get(name), data["blocks"].get(name)).items():
                self.inventory.set_variable(name, var, value)
            for kind, values in _memberships(node, data["leaves"].get(name), data["blocks"].get(name)):
                for value in values:
                    child = self.inventory.add_group(to_safe_group_name("%s%s_%s" % (
                        self.get_option("group_prefix"), kind, value), force=True, silent=True))
                    self.inventory.add_child(child, name)
            host_vars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option("compose"), host_vars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), host_vars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), host_vars, name, strict=strict)

    def _launch_settings(self, partitions):
        if partitions is None:  # inside a job: its steps inherit the job's partition and reservation
            self.inventory.set_variable("all", "acceptance_slurm_partition", "")
            self.inventory.set_variable("all", "acceptance_slurm_reservation", "")
            return
        # The partitions the nodes came from: srun takes a comma list (the job lands in one of them).
        partition = self.get_option("launch_partition") or ",".join(partitions)
        reservation = self.get_option("launch_reservation") or self.get_option("reservation")
        self.inventory.set_variable("all", "acceptance_slurm_partition", partition)
        self.inventory.set_variable("all", "acceptance_slurm_reservation", reservation)


def _no_such_option(err):
    text = (err or "").lower()
    return "unrecognized option" in text or "invalid option" in text or "unknown option" in text


def _host_vars(node, leaf, block):
    out = {"slurm_node_name": node["name"], "slurm_node_addr": node["address"],
           "slurm_node_hostname": node["hostname"], "slurm_partitions": node["partitions"],
           "slurm_features": node["features"], "slurm_active_features": node["active_features"],
           "slurm_state": node["state"], "slurm_state_flags": node["state_flags"],
           "slurm_reason": node["reason"], "slurm_gres": node["gres"], "slurm_gres_gpus": node["gres_gpus"]}
    if leaf:
        out["slurm_topology_leaf"] = leaf
    if block:
        out["slurm_topology_block"] = block
    return out


def _memberships(node, leaf, block):
    return (("partition", node["partitions"]), ("feature", node["features"]),
            ("state", [node["state"]] + node["state_flags"]),
            ("leaf", [leaf] if leaf else []), ("block", [block] if block else []))
