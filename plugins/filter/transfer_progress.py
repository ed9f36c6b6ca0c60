# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: transfer_progress
short_description: A transfer's progress, rate, ETA and remaining cost as a check
version_added: 0.2.0
description:
  - Takes what M(gpucluster.acceptance.data_manifest) O(state=progress) returned and returns the
    C(data_transfer) stage result - a C(transfer.progress) check ("1,204 of 5,000 files complete,
    1.2 TB of 4.8 TB arrived (25.0 %); 310 MB/s over the last 10m 00s; ETA 3h 13m; ...") and the
    C(transfer.progress) block of results.json, which report.html and metrics.prom show.
  - No rate yet (a first observation) is a pass with a warning; no bytes arrived over the whole
    window while some remain is a failure (stalled).
options:
  _input:
    description: The data_manifest progress result.
    type: dict
    required: true
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Record the progress
  ansible.builtin.set_fact:
    gpucluster_stage_result: "{{ progress_report | gpucluster.acceptance.transfer_progress }}"
"""

RETURN = r"""
_value:
  description: "{stage: data_transfer, checks: [transfer.progress], document: {progress: ...}}."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._transfer import transfer_progress
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _transfer_progress(report):
    if not isinstance(report, dict) or "bytes_total" not in report:
        raise AnsibleFilterError("transfer_progress: expected a data_manifest progress result, got %r"
                                 % (type(report).__name__,))
    return transfer_progress(report)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"transfer_progress": _transfer_progress})
