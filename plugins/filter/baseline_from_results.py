# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_from_results
version_added: 0.1.0
short_description: Build a versioned baseline document from an acceptance run
description:
  - Takes an acceptance run's C(results.json) document (or the per-node states of a run in
    progress, as built by P(gpucluster.acceptance.node_states#filter)) and returns a baseline
    document, schema 1, to keep as JSON and compare later runs with
    (P(gpucluster.acceptance.compare_baseline#filter)).
  - Per node it records the single-node all_reduce busbw, the DCGM diag time, the driver, VBIOS,
    NIC firmware, DCGM and NCCL versions and, when the run had a workload stage, each rank's
    compute (or step) p50 and their median per node. Cluster-wide it records the fabric pair
    matrix (C(pairs), V(a|b) to busbw), the full-allocation busbw, the majority version of each
    field, the medians, and each number's spread across the nodes (robust coefficient of
    variation, 1.4826 x MAD / median), from which the compare derives its noise bands.
  - Only nodes that passed the run are recorded; the others are listed under C(excluded) with the
    reason (unless O(include_failed)).
options:
  _input:
    description: A results.json document, or a dict of node name to node state (None for a node that never reported).
    type: dict
    required: true
  run_dir:
    description: The run's artifact directory; a node's busbw is re-parsed from C(raw/<node>/all_reduce_perf.txt) when no check carries it.
    type: path
  cluster:
    description: The cluster's name, recorded in the document.
    type: str
  created:
    description: The creation time to record (default now, UTC, ISO 8601).
    type: str
  fabric:
    description: With node states, the fabric stage result (or its document with C(matrix)) to take the pairs from.
    type: dict
  workload:
    description: With node states, the workload section (C(ranks)) to take the step times from.
    type: dict
  include_failed:
    description: Record the nodes that failed the run too.
    type: bool
    default: false
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Record a baseline from a finished run
  ansible.builtin.copy:
    content: >-
      {{ lookup('ansible.builtin.file', 'artifacts/' ~ run_id ~ '/results.json') | from_json
         | gpucluster.acceptance.baseline_from_results(run_dir='artifacts/' ~ run_id, cluster='hgx-a')
         | to_nice_json }}
    dest: baselines/hgx-a-baseline.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The baseline document.
  type: dict
  contains:
    schema:
      description: The document schema version, V(1).
      type: int
    created:
      description: When it was built (UTC, ISO 8601).
      type: str
    source_run:
      description: The run it was built from (C(id), C(started), C(finished), C(playbook), C(verdict)).
      type: dict
    cluster:
      description: C(name), C(versions) (field to majority value), C(medians) (metric to median) and C(node_count).
      type: dict
    nodes:
      description: Node to its numbers and versions (C(single_node_busbw), C(dcgm_seconds), C(step_p50), C(step_p50_ranks), C(driver_version), ...).
      type: dict
    excluded:
      description: Node to why it is not in the baseline.
      type: dict
    pairs:
      description: V(a|b) (names sorted) to the pair's busbw from the fabric matrix.
      type: dict
    full_allocation_busbw:
      description: The fabric stage's full-allocation busbw, or None.
      type: float
    full_allocation_nodes:
      description: How many nodes the full allocation spanned, or None.
      type: int
    spread:
      description: Metric to its robust coefficient of variation across the nodes (or pairs).
      type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline import baseline_from_results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _baseline_from_results(run, run_dir=None, cluster=None, created=None, fabric=None, workload=None, include_failed=False):
    if not isinstance(run, dict):
        raise AnsibleFilterError("baseline_from_results: expected a results.json document or a dict of node states, got %s"
                                 % type(run).__name__)
    try:
        return baseline_from_results(run, run_dir=run_dir, cluster=cluster, created=created, fabric=fabric,
                                     workload=workload, include_failed=bool(include_failed))
    except ValueError as exc:
        raise AnsibleFilterError("baseline_from_results: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"baseline_from_results": _baseline_from_results})
