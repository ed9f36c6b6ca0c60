# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: hardware_profile
author: gpucluster.acceptance maintainers (@gpucluster)
version_added: "0.1.0"
short_description: Load a hardware profile with inventory overrides merged in
description:
  - Returns the hardware profile the acceptance judges compare a cluster with (GPU count,
    NVLink, NICs, port rate, NCCL floors, ECC, Xid and throttle policy, DCGM level).
  - The profile is built from C(profiles/_common.yml), then the named profile
    C(profiles/<name>.yml) (or a YAML file given by path), then O(overrides), each layer
    deep-merged over the previous one (mappings merge key by key, lists and scalars are replaced).
  - The merged profile is validated; an unknown key (a typo in the overrides) or a value of the
    wrong type fails the task with a message naming the key.
  - Keys are described in C(docs/profiles.md) in the collection.
options:
  _terms:
    description:
      - The profile name (V(hgx_h100_sxm), V(hgx_h200), V(hgx_b200), V(a100_sxm_80gb),
        V(gb200_nvl72_tray)) or a path to a profile YAML file.
      - One profile per call.
    type: list
    elements: str
    required: true
  overrides:
    description:
      - Values deep-merged over the profile, typically the inventory variable
        C(acceptance_profile_overrides).
    type: dict
    default: {}
notes:
  - Runs on the controller; reads the profile files shipped in the collection.
"""

EXAMPLES = r"""
- name: Load the profile named in group_vars (acceptance_profile, acceptance_profile_overrides)
  ansible.builtin.set_fact:
    acceptance_hw: >-
      {{ lookup('gpucluster.acceptance.hardware_profile', acceptance_profile,
                overrides=acceptance_profile_overrides | default({})) }}

- name: H100 cluster with NVLink SHARP, so a higher single-node floor
  ansible.builtin.debug:
    msg: >-
      {{ lookup('gpucluster.acceptance.hardware_profile', 'hgx_h100_sxm',
                overrides={'nccl': {'single_node_busbw_min': 430}}).nccl }}

- name: A site's own profile file
  ansible.builtin.debug:
    msg: "{{ lookup('gpucluster.acceptance.hardware_profile', playbook_dir ~ '/profiles/my_hgx.yml') }}"
"""

RETURN = r"""
_raw:
  description:
    - The merged profile, one mapping (a one-element list when called with C(wantlist=true)).
  type: list
  elements: dict
  contains:
    name:
      description: Profile name.
      type: str
    gpus_per_node:
      description: GPUs each node must show.
      type: int
    gpu_name_pattern:
      description: Regular expression the GPU product name must match.
      type: str
    nvlink_per_pair:
      description: Expected nvidia-smi topo -m value between every GPU pair, such as V(NV18).
      type: str
    nics_per_node:
      description: Compute-fabric NICs (HCAs) each node must have.
      type: int
    nic_gpu_relation:
      description: Accepted PCIe relations between a GPU and its nearest NIC (V(PIX), V(PXB)).
      type: list
      elements: str
    infiniband:
      description: Port rate (Gb/s), link layer and error-counter limits.
      type: dict
    nccl:
      description: all_reduce_perf bus-bandwidth floors in GB/s (single node, node pair).
      type: dict
    peers:
      description: Peer-outlier settings (modified z-score cut-off, minimum relative drop).
      type: dict
    ecc:
      description: ECC error limits.
      type: dict
    retired_pages:
      description: Page-retirement limits.
      type: dict
    remapped_rows:
      description: Row-remapping limits.
      type: dict
    temperature:
      description: Temperature limits (null uses each GPU's own limits).
      type: dict
    throttle:
      description: Clock-event reasons that fail or warn.
      type: dict
    xid:
      description: Xid codes that fail, warn or are ignored, and the default for others.
      type: dict
    dcgm:
      description: Required dcgmi diag level.
      type: dict
    driver_branch:
      description: Required driver branch, or null.
      type: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        overrides = self.get_option("overrides")
        if overrides is None:
            overrides = {}
        if not terms:
            raise AnsibleLookupError(
                "hardware_profile needs a profile name or path, e.g. "
                "lookup('gpucluster.acceptance.hardware_profile', 'hgx_h100_sxm')")
        if len(terms) > 1:
            raise AnsibleLookupError(
                "hardware_profile takes one profile per call, got %d: %s"
                % (len(terms), ", ".join(str(t) for t in terms)))
        term = terms[0]
        if not isinstance(term, str):
            raise AnsibleLookupError("hardware_profile expects a profile name or path (string), "
                                     "got %s" % type(term).__name__)
        try:
            profile = load_profile(term, overrides=overrides)
        except ValueError as exc:
            raise AnsibleLookupError(str(exc))
        return [profile]
