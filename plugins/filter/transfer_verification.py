# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: transfer_verification
short_description: Merge the nodes' verification shards of a transfer manifest into checks
version_added: 0.2.0
description:
  - Takes what M(gpucluster.acceptance.data_manifest) O(state=verified) returned on each node (one
    shard each) and returns the C(data_transfer) stage result the results callback records - one
    check per file that is missing (C(transfer.missing)), of another size (C(transfer.size)), of
    another checksum (C(transfer.checksum)), still being written (C(transfer.in_progress)) or
    extra (C(transfer.extra)), named by its path; a C(transfer.verified) check per shard; and an
    C(error) for each shard that did not report, whose files were therefore not verified.
  - Checks about files have no node (they are cluster checks), as a file is no node's hardware.
options:
  _input:
    description: Per node, its data_manifest verify result (a failed or skipped task result is an unreported shard).
    type: dict
    required: true
  shards:
    description: How many shards the verification was split into (default from the results).
    type: int
  extra:
    description: C(fail) or C(warn) for files that are not in the manifest.
    type: str
    default: fail
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Merge the shards
  ansible.builtin.set_fact:
    gpucluster_stage_result: >-
      {{ dict(nodes | zip(nodes | map('extract', hostvars, 'verification'))) | gpucluster.acceptance.transfer_verification }}
"""

RETURN = r"""
_value:
  description: "{stage: data_transfer, checks, document: {verification: counts}}."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._transfer import transfer_verification
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _transfer_verification(results, shards=None, extra="fail"):
    if not isinstance(results, dict):
        raise AnsibleFilterError("transfer_verification: expected {node: result}, got %s" % type(results).__name__)
    if extra not in ("fail", "warn"):
        raise AnsibleFilterError("transfer_verification: extra must be fail or warn, got %r" % (extra,))
    return transfer_verification(results, shards or None, extra)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"transfer_verification": _transfer_verification})
