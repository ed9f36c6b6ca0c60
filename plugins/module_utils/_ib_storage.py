# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which InfiniBand HCAs of a node are not the compute fabric (storage, management), when the
profile names no compute HCAs (nic_names): those no GPU is near in ``nvidia-smi topo -m``, beyond
nics_per_node. Private to the collection; pure functions (_judge_infiniband reads them).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import is_number, profile_get


def gpu_local_hcas(topo, profile):
    """{HCA name: whether a GPU is at one of nic_gpu_relation (PIX, PXB)} from an nvidia-smi topo -m
    parse; None when the matrix cannot say (not captured, unreadable, no NIC in it, or fewer GPUs
    than gpus_per_node: the NIC of a GPU that fell off the bus is near no GPU either)."""
    relations = profile_get(profile, "nic_gpu_relation")
    gpus = profile_get(profile, "gpus_per_node")
    if not isinstance(topo, dict) or topo.get("errors") or not topo.get("nic_affinity") or not relations:
        return None
    if is_number(gpus) and len(topo.get("gpus") or []) < int(gpus):
        return None
    return dict((str(info.get("name") or nic), info.get("relation") in relations)
                for nic, info in topo["nic_affinity"].items() if isinstance(info, dict))


def storage_hcas(cas, profile, layer, local):
    """The HCAs taken for storage: of those on ``layer`` that no GPU is near, as many as there are
    HCAs beyond nics_per_node, those at another rate than the compute ports first, then the last by
    name (storage HCAs follow the compute ones: mlx5_8, mlx5_9 on a DGX)."""
    expected = profile_get(profile, "nics_per_node")
    if not local or not is_number(expected):
        return set()
    on_layer = [ca for ca in cas if ca.get("node_type") in (None, "CA") and ca.get("name") and any(
        not layer or not p.get("link_layer") or p.get("link_layer") == layer for p in ca.get("ports") or [])]
    surplus = len(on_layer) - int(expected)
    if surplus <= 0:
        return set()
    rate = profile_get(profile, "infiniband.port_rate")
    away = [ca for ca in on_layer if local.get(ca["name"]) is False]
    away.sort(key=lambda ca: (any(p.get("rate") != rate for p in ca.get("ports") or []),
                              natural_key(ca["name"])), reverse=True)
    return set(ca["name"] for ca in away[:surplus])
