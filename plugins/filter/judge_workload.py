# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: judge_workload
version_added: 0.1.0
short_description: Judge a data-parallel training run rank by rank (stragglers, diverged parameters, NaN losses, cut-off logs)
description:
  - Takes the result of P(gpucluster.acceptance.from_workload_log#filter) and returns one check
    result per rank and per cluster-wide check, each C(check), C(status) (pass, fail, error, skip),
    C(message), C(metrics), C(component) (V(rank 5 \(gpu003 GPU1\)) or V(cluster)) and C(node)
    (the rank's node, null for cluster-wide results).
  - "A rank fails (C(workload.rank)) when its compute time (forward and backward, before the
    gradient all-reduce) stands out from the other ranks: median (p50) at least O(options.straggler_ratio)
    times the other ranks' median, a robust z-score (median absolute deviation) of at least
    O(options.straggler_k) and at least O(options.straggler_min_ms) more; or the same for the p95
    with O(options.tail_ratio) (intermittent stalls, once every rank has O(options.tail_min_steps)
    measured steps). Its message gives its all-reduce wait against
    the others' and, when GPU samples exist, its GPU's SM clock and temperature."
  - "C(workload.param_consistency): at every step the log holds parameter checksums for
    (C(GPUCLUSTER_PARAMS) lines), the checksum a majority of the ranks holds is the expected one;
    a rank holding another fails, named with its node, GPU (local rank, device), the first step it
    diverged at and every check it diverged in. Without a majority (two ranks that disagree) it is
    an error saying which diverged cannot be told; a log without checksum lines while they were
    asked for (O(options.param_check_every), or the workload's own header) is an error. Each node
    whose ranks all held the expected parameters gets a pass."
  - "C(workload.loss): a NaN or infinite loss fails on the rank where it appeared first (its node,
    GPU and step; ranks it spread to through the all-reduce are named in the message); every rank's
    loss turning non-finite at the same step is an error (it cannot be pinned to one rank). A loss
    above O(options.loss_spike_ratio) times the median of the rank's previous
    O(options.loss_spike_window) losses is a warning (a spike, not a failure)."
  - Missing ranks (C(workload.ranks)), ranks with too few or fewer steps than the others
    (C(workload.steps)), an unreadable or cut-off log (C(workload.parse)), a launcher that failed
    or timed out (C(workload.run)) and options that are not numbers (C(workload.options)) are errors,
    never a pass. A clean run gives a
    C(workload.distribution) pass stating how tight the ranks are.
options:
  _input:
    description: The parsed log.
    type: dict
    required: true
  expected_ranks:
    description: Ranks the run was launched with; 0 takes the world size the log reports.
    type: int
    default: 0
  options:
    description:
      - "Thresholds and context, all optional: C(warmup_steps) (3, steps numbered below this are left
        out), C(min_steps) (5), C(expected_steps) (0: not checked), C(straggler_ratio) (1.25),
        C(straggler_k) (3.5), C(straggler_min_ms) (2.0), C(tail_ratio) (2.0), C(tail_min_steps) (20,
        measured steps every rank needs before p95s are compared), C(spread_warn) (1.25),
        C(max_step_ms) (0: off), C(sm_clock_drop) (0.10), C(temp_c_high) (85),
        C(param_check_every) (0: as the log's header says; > 0: parameter checksums were asked for
        every N steps, and a log without them is an error), C(loss_spike_ratio) (2.0, 0: off),
        C(loss_spike_window) (10)."
      - "C(nodes) (the nodes in rank order) and C(ranks_per_node): where a missing rank should have
        run. C(rc), C(timed_out), C(timeout), C(stderr): the launcher's exit status, whether it was
        killed at its timeout, that timeout and its standard error."
    type: dict
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Judge the reference workload launched on 4 nodes x 8 GPUs
  ansible.builtin.set_fact:
    workload_checks: >-
      {{ run.stdout | gpucluster.acceptance.from_workload_log
         | gpucluster.acceptance.judge_workload(32, {'warmup_steps': 5, 'rc': run.rc}) }}

- name: Fail on any straggler
  ansible.builtin.assert:
    that: workload_checks | selectattr('status', 'in', ['fail', 'error']) | list | length == 0
    fail_msg: "{{ workload_checks | selectattr('status', 'in', ['fail', 'error']) | map(attribute='message') | list }}"
"""

RETURN = r"""
_value:
  description: Check results.
  type: list
  elements: dict
  contains:
    check:
      description: workload.run, workload.options, workload.parse, workload.ranks, workload.steps,
        workload.rank, workload.node, workload.distribution, workload.step_time,
        workload.param_consistency or workload.loss.
      type: str
    status:
      description: pass, fail, error or skip (a warning is a pass whose message starts with C(warning:)).
      type: str
    message:
      description: A sentence naming the rank, its node and GPU.
      type: str
    metrics:
      description: For C(workload.rank), C(compute_p50_ms), C(compute_p95_ms), C(compute_p99_ms),
        C(compute_mean_ms), the same for C(sync) and C(step), C(steps), C(compute_p50_others_ms),
        C(compute_ratio), C(compute_z), C(sync_p50_others_ms) and, with GPU samples, C(gpu_sm_mhz),
        C(gpu_temp_c), C(gpu_power_w), C(gpu_sm_max_mhz). For a diverged rank
        (C(workload.param_consistency) fail), C(rank), C(local_rank), C(device), C(first_step),
        C(steps) (the check steps it diverged at), C(checks), C(checksum), C(majority_checksum),
        C(majority_ranks), C(ranks), C(last_matched_step). For a non-finite loss, C(rank), C(step),
        C(loss) (nan, inf or -inf), C(nonfinite_steps), C(followers).
      type: dict
    component:
      description: V(rank N \(node GPU g\)) or V(cluster).
      type: str
    node:
      description: The node of the rank, null for cluster-wide results.
      type: str
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload import judge_workload
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _judge_workload(parsed, expected_ranks=0, options=None):
    if isinstance(parsed, string_types):
        raise AnsibleFilterError("judge_workload expects the parsed log; pipe the text through "
                                 "gpucluster.acceptance.from_workload_log first")
    if options is not None and not isinstance(options, dict):
        raise AnsibleFilterError("judge_workload: options must be a dict, got %s" % type(options).__name__)
    try:
        expected = int(expected_ranks or 0)
    except (TypeError, ValueError):
        raise AnsibleFilterError("judge_workload: expected_ranks must be an integer, got %r" % (expected_ranks,))
    return judge_workload(parsed, expected, options)


class FilterModule(object):
    """gpucluster.acceptance.judge_workload"""

    def filters(self):
        return guarded_filters({"judge_workload": _judge_workload})
