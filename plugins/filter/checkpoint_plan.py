# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: checkpoint_plan
short_description: Checkpoint interval, goodput and cost from measured C, and M and R from Slurm accounting
version_added: 0.3.0
description:
  - Takes what playbooks/checkpoint_plan.yml collected - sacct and sacctmgr outputs, the drain
    history, the nodes' checkpoint stage states - and returns the C(checkpoint_plan) stage result,
    its checks (C(checkpoint_plan.write_time), C(.mtbf), C(.restart), C(.availability),
    C(.interval) per job size, C(.cost), C(.providers)) and the C(checkpoint_plan) block of
    results.json that report.html and metrics.prom show. See docs/checkpoint-plan.md.
  - No accounting, no failure or too little node time give "not enough data" with the bound the
    data imply, never a made-up M.
options:
  _input:
    description:
      - "C(sacct), C(events): registered command results (stdout, rc) or {output, rc}; C(history):
        the node_health history log's text; C(window): {start, end} of the sacct window; C(states):
        node states (P(gpucluster.acceptance.node_states#filter)); C(nodes): node count;
        C(gpus_per_node); C(providers): a parsed providers file."
    type: dict
    required: true
  options:
    description:
      - "Keys: write_s, async_write_s (a given C), mtbf_node_h (a quoted M), restart_s, availability,
        job_nodes (list), confidence, min_node_hours, count_kinds, partitions, method (young, daly),
        model (first_order, exponential), price_per_gpu_hour, min_goodput."
    type: dict
    default: {}
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Plan the checkpoint cadence
  ansible.builtin.set_fact:
    gpucluster_stage_result: >-
      {{ {'sacct': sacct_out, 'events': events_out, 'states': states, 'nodes': 16, 'gpus_per_node': 8,
          'window': {'start': '2026-11-01T00:00:00', 'end': '2026-12-01T00:00:00'}}
         | gpucluster.acceptance.checkpoint_plan({'job_nodes': [16, 64], 'price_per_gpu_hour': 2.1}) }}
"""

RETURN = r"""
_value:
  description: "{stage: checkpoint_plan, checks: [...], document: {write, mtbf, restart, availability, jobs,
    sensitivity, cost, providers}, raw: {sacct, sacct-events, drain-history}, failed_nodes: []}."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_checkpoint_plan import (
    STAGE, judge_checkpoint_plan)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters

RAW_NAMES = {"sacct": "sacct", "events": "sacct-events", "history": "drain-history"}


def _command(value):
    """A registered command result or {output, rc} -> {output, rc, command, seconds}; None stays None."""
    if value is None or (isinstance(value, dict) and value.get("skipped")):
        return None
    if not isinstance(value, dict):
        raise AnsibleFilterError("checkpoint_plan: a command output must be a dict, got %s" % type(value).__name__)
    if "output" in value:
        return {"output": value.get("output"), "rc": value.get("rc"), "command": value.get("command")}
    output = value.get("stdout") or ""
    if value.get("stderr"):
        output = (output + "\n" + value["stderr"]).strip("\n")
    command = value.get("cmd")
    if isinstance(command, str):  # results.json keeps a command as its argv
        command = command.split()
    return {"output": output if ("stdout" in value or "stderr" in value) else value.get("msg"),
            "rc": value.get("rc"), "command": command}


def _checkpoint_plan(inputs, options=None):
    if not isinstance(inputs, dict):
        raise AnsibleFilterError("checkpoint_plan: expected a dict of inputs, got %s" % type(inputs).__name__)
    given = dict(inputs)
    given["sacct"] = _command(inputs.get("sacct"))
    given["events"] = _command(inputs.get("events"))
    try:
        checks, document = judge_checkpoint_plan(given, dict(options or {}))
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError("checkpoint_plan: %s" % exc)
    raw = {}
    for key, name in RAW_NAMES.items():
        value = given.get(key)
        if isinstance(value, dict) and value.get("output") is not None:
            raw[name] = {"output": value["output"], "rc": value.get("rc")}
            if isinstance(value.get("command"), list):
                raw[name]["command"] = [str(c) for c in value["command"]]
        elif key == "history" and isinstance(value, str) and value:
            raw[name] = {"output": value, "rc": 0}
    for check in checks:
        check["stage"] = STAGE
    return {"stage": STAGE, "checks": checks, "document": document, "raw": raw, "failed_nodes": []}


class FilterModule(object):
    def filters(self):
        return guarded_filters({"checkpoint_plan": _checkpoint_plan})
