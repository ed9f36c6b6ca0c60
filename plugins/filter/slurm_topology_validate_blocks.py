# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_topology_validate_blocks filter: a provider's topology/block file against the measured NVLink domains."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: slurm_topology_validate_blocks
version_added: 0.1.0
short_description: Check a provider's topology/block file against the NVLink domains the GPUs registered in
description:
  - On rack-scale systems (GB200/GB300 NVL72) a Slurm block must hold the trays of one NVLink
    domain. The measured domains are taken from an acceptance run's results.json (C(nvlink_domains)).
    They are found from the trays' own C(nvidia-smi -q) Fabric sections (C(<ClusterUUID>.<CliqueId>)),
    never from labels.
  - Each C(BlockName=) of the file is matched with the domain most of its trays registered in. The
    filter names the trays whose domain is another one (misplaced, with the measured domains as
    evidence), domains split over blocks, measured trays in no block, the file's trays no
    domain holds, and blocks whose domain's measured multi-node NVLink run fell back or was slow.
  - The input may also be C(scontrol show topology) in its block form (what a running slurmctld
    uses), told apart by its C(BlockIndex=) fields; aggregated blocks are left out.
  - An unreadable file is reported in C(problems); a results document without C(nvlink_domains)
    fails the filter, naming what to run first.
options:
  _input:
    description: The topology.conf text to check (topology/block).
    type: string
    required: true
  results:
    description: An acceptance run's results.json document (a dict) on a rack-scale profile.
    type: dict
    required: true
  nodes:
    description: The cluster's node names (list or hostlist expression); empty for every measured tray.
    type: raw
author:
  - gpucluster.acceptance contributors
"""

EXAMPLES = r"""
- name: Check the provider's block topology against the last acceptance run
  ansible.builtin.set_fact:
    blocks_check: >-
      {{ lookup('ansible.builtin.file', '/etc/slurm/topology.conf')
         | gpucluster.acceptance.slurm_topology_validate_blocks(
             results=lookup('ansible.builtin.file', 'artifacts/latest/results.json') | from_json) }}
"""

RETURN = r"""
_value:
  description: What differs between the file's blocks and the measured NVLink domains.
  type: dict
  contains:
    ok:
      description: True when every block holds the trays of one domain and every measured tray is in a block.
      type: bool
    blocks:
      description: File block -> C({domain, nodes}), the domain it was matched with.
      type: dict
    misplaced:
      description: Trays in a block of another domain, each C({node, block, block_domain, domain, evidence}).
      type: list
      elements: dict
    split:
      description: Domains spread over several blocks, each C({domain, blocks}).
      type: list
      elements: dict
    missing:
      description: Trays of a measured domain that no block holds.
      type: list
      elements: string
    unmeasured:
      description: Trays of the file that no measured domain holds (failed registration, or not in the run).
      type: list
      elements: string
    slow:
      description:
        - Blocks whose NVLink domain did not deliver multi-node NVLink when the acceptance run measured it
          (C(nvlink_domains.mnnvl) - fell back to InfiniBand, a rack-level fault, below the floor), each
          C({block, domain, busbw, ib_busbw, message}); empty when the run measured none.
      type: list
      elements: dict
    messages:
      description: One sentence per finding.
      type: list
      elements: string
    problems:
      description: Input that could not be compared (an unreadable file, no BlockName lines).
      type: list
      elements: string
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_nvlink import validate_blocks
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def slurm_topology_validate_blocks(data, results=None, nodes=None):
    """See DOCUMENTATION."""
    if not isinstance(data, string_types):
        raise AnsibleFilterError("slurm_topology_validate_blocks: the input must be topology.conf text, got %s"
                                 % type(data).__name__)
    if not isinstance(results, dict):
        raise AnsibleFilterError("slurm_topology_validate_blocks: results must be a results.json document (a dict)")
    try:
        if isinstance(nodes, string_types):
            nodes = expand_hostlist(nodes)
        return validate_blocks(str(data), results, nodes=list(nodes) if nodes else None)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("slurm_topology_validate_blocks: %s" % exc)


class FilterModule(object):
    """Ansible filter plugin entry point."""

    def filters(self):
        return guarded_filters({"slurm_topology_validate_blocks": slurm_topology_validate_blocks})
