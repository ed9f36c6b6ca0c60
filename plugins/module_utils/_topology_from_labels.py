# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Slurm topology model from inventory labels, for what the fabric does not show.

Private to the collection. Standard library only; pure functions.

``model_from_labels(hosts, ...)``: topology/tree from ``slurm_topology_leaf`` (else
``slurm_topology_rack``) host labels, one root over the leaves; or topology/block from
``slurm_topology_block`` (else ``slurm_topology_rack``): one block per NVLink domain (rack).

It is apart from the model from the fabric (_topology_from_fabric) because it reads a different
source; build_topology (_topology_model) picks one, renders and checks it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import MAX_SWITCH_NAME
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import new_result
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_common import (
    DEFAULT_ROOT, _NAME_OK, _expand_nodes, _problem, _short, _sorted)

LABEL_KEYS = ("leaf", "rack", "block")


def _label_rows(hosts):
    """Accept {node: {leaf|slurm_topology_leaf: ...}} or [hostvars-like dicts]; -> [(node, labels)]."""
    rows = []
    if isinstance(hosts, Mapping):
        items = sorted(hosts.items(), key=lambda kv: natural_key(kv[0]))
        for name, values in items:
            values = values if isinstance(values, Mapping) else {}
            rows.append((values.get("slurm_topology_node") or values.get("node") or name, values))
    elif isinstance(hosts, (list, tuple)):
        for values in hosts:  # hostvars entries are Mappings, not dicts
            if not isinstance(values, Mapping):
                raise TypeError("each host must be a mapping of its variables, got %s" % type(values).__name__)
            name = values.get("slurm_topology_node") or values.get("node") or values.get("inventory_hostname")
            if not name:
                raise ValueError("a host has neither slurm_topology_node nor inventory_hostname")
            rows.append((name, values))
    else:
        raise TypeError("labels must be a mapping of node -> labels or a list of host variables, got %s"
                        % type(hosts).__name__)
    out = []
    for name, values in rows:
        labels = {}
        for key in LABEL_KEYS:
            value = values.get("slurm_topology_%s" % key, values.get(key))
            labels[key] = None if value in (None, "") else str(value)
        out.append((str(name), labels))
    return out


def _clean_name(kind, value, problems):
    name = _NAME_OK.sub("_", value.strip()).strip("_")[:MAX_SWITCH_NAME]
    if not name:
        problems.append(_problem("fatal", "bad_label", "%s label %r cannot be a Slurm name" % (kind, value)))
    return name


def model_from_labels(hosts, nodes=None, plugin="tree", root_name=DEFAULT_ROOT, block_sizes=None):
    """topology/tree (leaf, else rack label) or topology/block (block, else rack label) model."""
    result = new_result(model={}, leaves={}, node_leaf={}, blocks={}, problems=[])
    rows = _label_rows(hosts)
    known = None if nodes is None else set(_expand_nodes(nodes))
    key, fallback = ("leaf", "rack") if plugin == "tree" else ("block", "rack")
    groups = {}
    unlabelled = []
    left_out = []
    seen = set()
    for name, labels in rows:
        if known is not None and name not in known:
            left_out.append(name)
            continue
        if name in seen:
            result["problems"].append(_problem("fatal", "duplicate_host", "node %s is listed twice" % name))
            continue
        seen.add(name)
        label = labels[key] or labels[fallback]
        if label is None:
            unlabelled.append(name)
            continue
        group = _clean_name(key, label, result["problems"])
        if group:
            groups.setdefault(group, []).append(name)
    if left_out:
        result["warnings"].append("hosts that are not cluster nodes, left out: %s" % _short(left_out))
    if unlabelled:
        result["problems"].append(_problem(
            "fatal", "missing_label", "node%s %s %s no slurm_topology_%s (or slurm_topology_%s) label"
            % ("s" if len(unlabelled) > 1 else "", _short(unlabelled), "have" if len(unlabelled) > 1 else "has",
               key, fallback)))
    names = _sorted(groups)
    if plugin == "tree":
        switches = [{"name": leaf, "nodes": _sorted(groups[leaf])} for leaf in names]
        if root_name in groups:
            result["problems"].append(_problem("fatal", "root_name_clash",
                                               "leaf label %s is also the root switch name; set another root name"
                                               % root_name))
        elif len(names) > 1:
            switches.append({"name": root_name, "switches": names})
        result["model"] = {"switches": switches}
        result["leaves"] = dict((leaf, _sorted(groups[leaf])) for leaf in names)
        for leaf in names:
            for node in groups[leaf]:
                result["node_leaf"][node] = leaf
    else:
        result["model"] = {"blocks": [{"name": block, "nodes": _sorted(groups[block])} for block in names],
                           "block_sizes": list(block_sizes or [])}
        result["blocks"] = dict((block, _sorted(groups[block])) for block in names)
        for block in names:
            for node in groups[block]:
                result["node_leaf"][node] = block
        result["leaves"] = result["blocks"]
    return result
