# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: workload_consume_rates
short_description: Samples per second each node's GPUs consume, from a workload run's step times
version_added: 0.2.0
description:
  - Reads the C(workload.ranks) rows of a results.json document (an acceptance run's workload
    stage) and returns, per node, the sum over its ranks of O(samples_per_step) divided by the
    rank's median step time (C(step_p50_ms)) - the rate the data loader must deliver so the GPUs
    never wait for data. Used by the data loader stage (C(check_data_loader_workload_results)).
options:
  _input:
    description: A results.json document (parsed).
    type: dict
    required: true
  samples_per_step:
    description: Samples one rank consumes per training step (its micro-batch times gradient accumulation).
    type: float
    required: true
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: What the GPUs consumed in the acceptance run
  ansible.builtin.set_fact:
    rates: "{{ lookup('ansible.builtin.file', 'artifacts/RUN/results.json') | from_json
               | gpucluster.acceptance.workload_consume_rates(samples_per_step=32) }}"
"""

RETURN = r"""
_value:
  description: Node name to samples per second; nodes whose ranks have no step time are left out.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def workload_consume_rates(document, samples_per_step):
    if not isinstance(document, dict):
        raise AnsibleFilterError("workload_consume_rates: expected a results.json document, got %s"
                                 % type(document).__name__)
    try:
        per_step = float(samples_per_step)
    except (TypeError, ValueError):
        raise AnsibleFilterError("workload_consume_rates: samples_per_step must be a number, got %r" % (samples_per_step,))
    if per_step <= 0:
        raise AnsibleFilterError("workload_consume_rates: samples_per_step must be > 0")
    rows = ((document.get("workload") or {}).get("ranks")) or []
    if not rows:
        raise AnsibleFilterError("workload_consume_rates: the document has no workload.ranks (no workload stage ran)")
    rates = {}
    for row in rows:
        step = row.get("step_p50_ms") if isinstance(row, dict) else None
        if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0 and row.get("node"):
            rates[row["node"]] = rates.get(row["node"], 0.0) + per_step / (step / 1000.0)
    return dict((node, round(rate, 2)) for node, rate in sorted(rates.items()))


class FilterModule(object):
    def filters(self):
        return guarded_filters({"workload_consume_rates": workload_consume_rates})
