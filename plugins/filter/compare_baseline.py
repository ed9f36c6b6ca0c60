# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: compare_baseline
version_added: 0.1.0
short_description: Compare an acceptance run with a recorded baseline
description:
  - Compares a run (its C(results.json) document, or the node states of a run in progress) with a
    baseline document built by P(gpucluster.acceptance.baseline_from_results#filter), and returns
    a stage result (stage V(baseline)) the C(gpucluster.acceptance.acceptance_report) callback
    records when it is published as the C(gpucluster_stage_result) fact.
  - One check per node and metric, C(baseline.<metric>) (V(single_node_busbw), V(dcgm_seconds),
    V(step_p50), and the versions V(driver_version), V(vbios_version), V(nic_firmware),
    V(dcgm_version), V(nccl_version)). A number outside its noise band in the bad direction fails
    and its message names the baseline value (V(gpu007 single-node busbw 421 GB/s is 10.4 %
    below its baseline 470 GB/s \(band ±5.0 %\))); better than the band is a warning. The band
    is max(O(options.min_band), O(options.k) x the baseline's spread of that metric).
  - A node that is not in the baseline (a replacement) is compared with the cluster baseline, the
    median of the baseline's nodes, and its message says so. Data missing on either side is a
    skip naming what is missing, never a pass. Baseline nodes absent from the run are not
    reported (a C(--limit) run compares its own nodes).
  - Fabric pairs present in both (C(baseline.pair_busbw), component V(a|b)) and the full-allocation
    busbw (C(baseline.full_allocation_busbw)) are cluster checks with C(node) null.
options:
  _input:
    description: A results.json document, or a dict of node name to node state (None for a node that never reported).
    type: dict
    required: true
  baseline:
    description: The baseline document (schema 1).
    type: dict
    required: true
  options:
    description:
      - "All optional: C(min_band) (0.05, a fraction), C(k) (3), C(min_bands) (per-metric minimum
        bands, default C({dcgm_seconds: 0.25})), C(versions) (V(warn), V(fail) or V(ignore) a version
        that changed since the baseline; default V(warn)), C(pairs) (true: compare the fabric pairs
        and the full allocation)."
    type: dict
  run_dir:
    description: The run's artifact directory, to re-parse a node's busbw from its raw output when no check carries it.
    type: path
  fabric:
    description: With node states, the fabric stage result (C(check_fabric_result)) or its document.
    type: dict
  workload:
    description: With node states, the workload section (C(ranks)).
    type: dict
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Compare this run's nodes with the cluster's baseline
  ansible.builtin.set_fact:
    gpucluster_stage_result: >-
      {{ states | gpucluster.acceptance.compare_baseline(lookup('ansible.builtin.file', 'baselines/hgx-a-baseline.json') | from_json,
                                                          {'min_band': 0.05, 'k': 3},
                                                          fabric=check_fabric_result | default(none)) }}
"""

RETURN = r"""
_value:
  description: A stage result.
  type: dict
  contains:
    stage:
      description: V(baseline).
      type: str
    checks:
      description: Check results, each C(check), C(status), C(message), C(metrics) (C(value), C(baseline), C(band),
        C(rel_diff), C(reference) V(node), V(cluster) or V(pair), C(baseline_run)), C(component), C(node) and C(stage).
      type: list
      elements: dict
    failed_nodes:
      description: Nodes with a failed (or errored) check.
      type: list
      elements: str
    failed_cluster_checks:
      description: Components (pairs V(a|b), V(full allocation)) of failed cluster checks.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._baseline_compare import compare_stage_result
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _compare_baseline(run, baseline, options=None, run_dir=None, fabric=None, workload=None):
    if not isinstance(run, dict):
        raise AnsibleFilterError("compare_baseline: expected a results.json document or a dict of node states, got %s"
                                 % type(run).__name__)
    if options is not None and not isinstance(options, dict):
        raise AnsibleFilterError("compare_baseline: options must be a dict, got %s" % type(options).__name__)
    try:
        return compare_stage_result(run, baseline, options, run_dir=run_dir, fabric=fabric, workload=workload)
    except ValueError as exc:
        raise AnsibleFilterError("compare_baseline: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"compare_baseline": _compare_baseline})
