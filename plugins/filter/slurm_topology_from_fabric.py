# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_topology_from_fabric filter: Slurm topology.conf from ibnetdiscover or inventory labels."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: slurm_topology_from_fabric
version_added: 0.1.0
short_description: Build a Slurm topology.conf from the Infiniband fabric or inventory labels
description:
  - Builds a Slurm topology model and renders C(topology.conf), then checks the rendered text as
    slurmctld will read it. The checks are child switches that are not defined, duplicate
    switches, unknown keys, a node under two leaf switches, a cluster node under none, and a
    topology node that is not a cluster node.
  - From C(ibnetdiscover) output (O(source=ibnetdiscover), topology/tree), leaf switches are the
    switches with host adapters. They are named from their description (C(MF0;leaf01:MQM9700/U1)
    gives C(leaf01)). Each adapter's host is the first word of its node description
    (C(gpu001 mlx5_0)).
  - Leaves that share a host become one Slurm switch named C(su-<first leaf>), so that every node
    hangs off one switch. This is the case in rail-optimized fabrics, where each node has one NIC
    on each rail leaf of its scalable unit. A node that reaches only some of its group's leaves
    gives a warning.
  - Groups of leaves that share a spine form a pod. One root switch (O(root_name)) joins the pods
    of each connected fabric.
  - From inventory labels (O(source=labels)), topology/tree puts each node under its
    C(slurm_topology_leaf) label, else its C(slurm_topology_rack) label, with one root above the
    leaves. topology/block (NVLink racks such as GB200 NVL72) makes one block per
    C(slurm_topology_block) label, else per C(slurm_topology_rack) label.
  - With O(source=nvlink) (topology/block), the input is an acceptance run's results.json document
    on a rack-scale profile. Each NVLink domain the trays' GPUs registered in (C(nvlink_domains),
    C(<ClusterUUID>.<CliqueId>)) becomes one block, C(nvl01), C(nvl02) and so on. C(BlockSizes) is
    the domain size. Trays in no domain are left out, with a warning.
  - With O(source=scontrol), the input is the output of C(scontrol show topology). The result
    then describes Slurm's view, compared with O(expected) when given.
  - With O(pair_busbw), node pairs placed on one leaf whose measured bandwidth is below
    O(cross_leaf_ratio) times the median intra-leaf pair bandwidth are named in C(bandwidth).
    Their path looks cross-spine.
  - A problem in the input (unreadable fabric output, unlabelled nodes, cluster nodes missing)
    never raises. It shows up in C(problems), C(fatal) is true, and C(text) is empty. Only input
    of the wrong type, or bad options, fail the filter.
positional: source
options:
  _input:
    description:
      - C(ibnetdiscover) output (a string), the result of the C(from_ibnetdiscover) filter (a
        dict), node labels, or C(scontrol show topology) output, according to O(source).
      - Node labels are either a list of host variable mappings, for example
        C(groups['gpu_nodes'] | map('extract', hostvars) | list), or a mapping of node name to
        C({leaf, rack, block}).
      - In a host's variables, C(slurm_topology_node) (else C(inventory_hostname)) is its Slurm
        node name, and C(slurm_topology_leaf), C(slurm_topology_rack) and
        C(slurm_topology_block) are its labels.
    type: raw
    required: true
  source:
    description:
      - What the input is. V(auto) reads a string as C(ibnetdiscover) output, a dict with
        C(switches) and C(hcas) as a parsed fabric, and anything else as labels.
    type: string
    choices: [auto, ibnetdiscover, parsed, labels, scontrol, nvlink]
    default: auto
  plugin:
    description: Topology plugin to write for, C(topology/tree) or C(topology/block) (labels and nvlink only).
    type: string
    choices: [tree, block]
    default: tree
  nodes:
    description:
      - The cluster's Slurm node names, as a list or a hostlist expression. Every one must be
        placed. Hosts that are not in the list are left out, with a warning.
      - When not given, every host found is placed and coverage is not checked.
    type: raw
  host_map:
    description: Host name from the adapter description -> Slurm node name, where they differ.
    type: dict
    default: {}
  strip_domain:
    description: Drop the domain from host names in adapter descriptions (C(gpu001.cluster) -> C(gpu001)).
    type: bool
    default: true
  root_name:
    description: Name of the switch above the leaves (and of the pods, when there are several).
    type: string
    default: root
  block_sizes:
    description: C(BlockSizes=) for topology/block; empty means Slurm's default (the first block's size).
    type: list
    elements: int
    default: []
  header:
    description: Comment put at the top of the file; the default names the generator and the source.
    type: string
  expected:
    description:
      - What was written, as topology.conf text or a model. With O(source=scontrol), the
        differences from Slurm's view are put in C(mismatches).
    type: raw
  pair_busbw:
    description:
      - "Measured bandwidth between node pairs in GB/s, as C({nodeA: {nodeB: value}}), for
        example from the fabric stage's pairwise tests. Either direction counts. When both are
        measured, the lower value counts."
    type: dict
    default: {}
  cross_leaf_ratio:
    description: A pair on one leaf measuring below this fraction of the median intra-leaf pair bandwidth looks cross-spine.
    type: float
    default: 0.8
author:
  - gpucluster.acceptance contributors
"""

EXAMPLES = r"""
- name: Read the fabric
  ansible.builtin.command: ibnetdiscover
  register: fabric
  changed_when: false

- name: Build topology.conf for the cluster's nodes
  ansible.builtin.set_fact:
    topology: >-
      {{ fabric.stdout | gpucluster.acceptance.slurm_topology_from_fabric(
           nodes=groups['gpu_nodes'], root_name='spine') }}

- name: Stop on what slurmctld would refuse
  ansible.builtin.assert:
    that: not topology.fatal
    fail_msg: "{{ topology.problems | selectattr('severity', 'equalto', 'fatal') | map(attribute='message') | list }}"

- name: topology/block from rack labels (GB200 NVL72), 18-node blocks
  ansible.builtin.set_fact:
    topology: >-
      {{ groups['gpu_nodes'] | map('extract', hostvars) | list
         | gpucluster.acceptance.slurm_topology_from_fabric('labels', plugin='block', block_sizes=[18]) }}

- name: Compare Slurm's view with what was written and with measured pair bandwidth
  ansible.builtin.set_fact:
    slurm_view: >-
      {{ shown.stdout | gpucluster.acceptance.slurm_topology_from_fabric('scontrol',
           expected=topology.text, pair_busbw=fabric_pair_busbw, cross_leaf_ratio=0.75) }}
"""

RETURN = r"""
_value:
  description: The model, the rendered file and what is wrong with it.
  type: dict
  contains:
    source:
      description: What the input was read as (C(ibnetdiscover), C(parsed), C(labels), C(scontrol)).
      type: string
    plugin:
      description: C(topology/tree) or C(topology/block).
      type: string
    model:
      description: "C({switches} | {blocks, block_sizes}) as C(render_slurm_topology) takes it;
        for C(scontrol), the switches Slurm shows."
      type: dict
    text:
      description: The topology.conf to write; empty when C(fatal).
      type: string
    fatal:
      description: True when any problem is fatal; write nothing then.
      type: bool
    problems:
      description: Everything found, each C({severity, code, message}); C(fatal) ones mean slurmctld
        would refuse the file or the file misdescribes the cluster.
      type: list
      elements: dict
    leaves:
      description: Leaf switch (or block) -> its nodes.
      type: dict
    node_leaf:
      description: Node -> its leaf switch (or block).
      type: dict
    leaf_groups:
      description: For the fabric, each Slurm leaf switch -> the fabric leaf switches it stands for
        (more than one in rail-optimized fabrics).
      type: dict
    mismatches:
      description: With O(source=scontrol) and O(expected), how Slurm's view differs from the file.
      type: list
      elements: string
    bandwidth:
      description: The pair bandwidth check (empty lists without O(pair_busbw)).
      type: dict
      contains:
        median:
          description: Median measured intra-leaf pair bandwidth, GB/s.
          type: float
        threshold:
          description: O(cross_leaf_ratio) x the median.
          type: float
        pairs_checked:
          description: Measured pairs that share a leaf.
          type: int
        low_pairs:
          description: Pairs below the threshold, each C({leaf, nodes, busbw}).
          type: list
          elements: dict
        suspects:
          description: Nodes slow to most of their leaf peers, probably on another leaf than Slurm thinks.
          type: list
          elements: string
        warnings:
          description: One sentence per low pair, naming the nodes, and one naming the suspects.
          type: list
          elements: string
    errors:
      description: Input that could not be read.
      type: list
      elements: string
    warnings:
      description: What was left out or looks wrong but does not stop the file being written.
      type: list
      elements: string
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_render import render_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import validate_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_common import DEFAULT_ROOT
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_model import build_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    DEFAULT_CROSS_LEAF_RATIO, check_pair_bandwidth, compare_topology, leaves_of, parse_scontrol_show_topology,
    tree_errors)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters

_SOURCES = ("auto", "ibnetdiscover", "parsed", "labels", "scontrol", "nvlink")


def _from_scontrol(text, nodes, expected):
    shown = parse_scontrol_show_topology(text)
    model = {"switches": [{"name": s["name"], "switches": s["switches"]} if s["switches"]
                          else {"name": s["name"], "nodes": s["nodes"]} for s in shown["switches"]]}
    result = {"source": "scontrol", "plugin": "topology/tree", "model": model, "text": "",
              "problems": [], "fatal": False, "leaves": leaves_of(shown), "node_leaf": {}, "leaf_groups": {},
              "blocks": {}, "errors": tree_errors(shown), "warnings": list(shown["warnings"])}
    for leaf, members in result["leaves"].items():
        for node in members:
            result["node_leaf"].setdefault(node, leaf)
    if shown["switches"]:
        try:
            result["text"] = render_slurm_topology(model, header="scontrol show topology")
            result["problems"] = validate_slurm_topology(parse_slurm_topology(result["text"]), nodes)
        except (TypeError, ValueError) as exc:
            result["errors"].append(str(exc))
    for message in shown["errors"]:
        result["problems"].append({"severity": "fatal", "code": "parse_error", "message": message})
    if expected is not None:
        result["mismatches"] = compare_topology(shown, expected)
    result["fatal"] = any(p["severity"] == "fatal" for p in result["problems"])
    return result


def slurm_topology_from_fabric(data, source="auto", plugin="tree", nodes=None, host_map=None, strip_domain=True,
                               root_name=DEFAULT_ROOT, block_sizes=None, header=None, expected=None,
                               pair_busbw=None, cross_leaf_ratio=DEFAULT_CROSS_LEAF_RATIO):
    """See DOCUMENTATION."""
    if source not in _SOURCES:
        raise AnsibleFilterError("slurm_topology_from_fabric: source must be one of %s, got %r"
                                 % (", ".join(_SOURCES), source))
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if source == "auto":
        if isinstance(data, string_types):
            source = "ibnetdiscover"
        elif isinstance(data, dict) and "switches" in data and "hcas" in data:
            source = "parsed"
        else:
            source = "labels"
    if source in ("ibnetdiscover", "scontrol") and not isinstance(data, string_types):
        raise AnsibleFilterError("slurm_topology_from_fabric: %s input must be the command's output as a string, "
                                 "got %s; pass the task result's .stdout" % (source, type(data).__name__))
    if source == "nvlink" and not isinstance(data, dict):
        raise AnsibleFilterError("slurm_topology_from_fabric: nvlink input must be a results.json document (a dict)")
    if source == "parsed" and not isinstance(data, dict):
        raise AnsibleFilterError("slurm_topology_from_fabric: parsed input must be from_ibnetdiscover's result")
    if host_map is not None and not isinstance(host_map, dict):
        raise AnsibleFilterError("slurm_topology_from_fabric: host_map must be a mapping")
    try:
        if source == "scontrol":
            result = _from_scontrol(str(data), nodes, expected)
        else:
            result = build_topology(str(data) if source == "ibnetdiscover" else data, source, plugin=plugin,
                                    nodes=nodes, host_map=host_map, strip_domain=bool(strip_domain),
                                    root_name=str(root_name), block_sizes=list(block_sizes or []), header=header)
            if expected is not None:
                result["mismatches"] = compare_topology(
                    {"switches": [dict(s, nodes=s.get("nodes") or [], switches=s.get("switches") or [])
                                  for s in result["model"].get("switches") or []]}, expected)
        result.setdefault("mismatches", [])
        result["bandwidth"] = check_pair_bandwidth(result["leaves"], pair_busbw or {}, cross_leaf_ratio)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("slurm_topology_from_fabric: %s" % exc)
    return result


class FilterModule(object):
    """Ansible filter plugin entry point."""

    def filters(self):
        return guarded_filters({"slurm_topology_from_fabric": slurm_topology_from_fabric})
