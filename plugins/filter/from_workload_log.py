# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_workload_log
version_added: 0.1.0
short_description: Parse the per-rank step timings of a data-parallel training run
description:
  - Reads the log of the collection's reference workload (C(gpucluster_ddp_train.py), see
    C(docs/workload.md)) into per-rank series of compute and all-reduce times, plus the GPU
    clock and temperature samples it logs.
  - "Step lines look like
    V(GPUCLUSTER_STEP rank=3 local_rank=3 node=gpu002 gpu=3 step=17 compute_ms=83.2 sync_ms=12.9 step_ms=96.1).
    Other lines: C(GPUCLUSTER_WORKLOAD) (one per rank at start), C(GPUCLUSTER_PARAMS) (a rank's
    bitwise checksum of its parameters after a step), C(GPUCLUSTER_GPU) (GPU samples),
    C(GPUCLUSTER_ERROR) (a rank failed), C(GPUCLUSTER_DONE) (a rank finished, ends with C(status=ok))."
  - "Tolerates the line prefixes of C(srun --label) and C(mpirun --tag-output) and any other
    output between the lines."
  - With O(regex), step records of your own training script are read instead, from every line
    the pattern matches.
  - Malformed, truncated or empty input never raises; it gives a result with RV(errors). A
    reference-format log in which a rank has no C(GPUCLUSTER_DONE) line is an error (cut off,
    crashed or killed).
options:
  _input:
    description: The launcher's standard output (the C(stdout) of a task result), as a string.
    type: string
    required: true
  regex:
    description:
      - Python regular expression with the named groups C(rank), C(compute_ms) and C(sync_ms)
        (milliseconds), optionally C(node), C(gpu), C(step), C(step_ms), C(local_rank) and C(loss)
        (the step's loss; C(nan) or C(inf) are read as non-finite losses).
      - Searched in every line (after stripping launcher prefixes).
    type: string
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Per-rank compute times of the reference workload
  ansible.builtin.debug:
    msg: "{{ (workload.stdout | gpucluster.acceptance.from_workload_log).ranks }}"

- name: Read your own training script's log, which prints 'rank 3 step 17 fwd_bwd 83.2ms allreduce 12.9ms'
  ansible.builtin.set_fact:
    parsed: >-
      {{ train.stdout | gpucluster.acceptance.from_workload_log(
           regex='rank (?P<rank>\d+) step (?P<step>\d+) fwd_bwd (?P<compute_ms>[\d.]+)ms allreduce (?P<sync_ms>[\d.]+)ms') }}
"""

RETURN = r"""
_value:
  description: The parsed log.
  type: dict
  contains:
    ranks:
      description:
        - Per rank number, C(node), C(gpu), C(local_rank) (as logged, null when not), C(steps)
          (number of step records), C(step_numbers), C(compute_ms), C(sync_ms) and C(step_ms)
          (one value per step, in log order; C(step_ms) may be empty), C(loss) (per step, a finite
          number or null), C(nonfinite_loss) (C(step), C(loss) V(nan)/V(inf)/V(-inf), C(line)),
          C(param_checks) (per GPUCLUSTER_PARAMS line C(step), C(checksum), C(device), C(tensors),
          C(line)), C(param_errors) (unreadable GPUCLUSTER_PARAMS lines of this rank, also in
          RV(errors)), C(log_format), C(done) (true after
          C(GPUCLUSTER_DONE), false after C(GPUCLUSTER_ERROR), null when neither), C(done_steps)
          and C(errors) (this rank's problems, also in RV(errors)).
      type: dict
    gpu_samples:
      description: Each C(GPUCLUSTER_GPU) line as C(node), C(gpu), C(t) (s since start), C(sm_mhz),
        C(sm_max_mhz), C(temp_c), C(power_w) (null when not supported).
      type: list
      elements: dict
    world:
      description: The world size the ranks reported, null when none did.
      type: int
    backend:
      description: Process group backend (nccl, gloo), null when not logged.
      type: str
    device:
      description: cuda or cpu, null when not logged.
      type: str
    model:
      description: Model size preset of the reference workload, null when not logged.
      type: str
    compute_clock:
      description: C(wall) or C(cpu) (how the reference workload measured C(compute_ms)), null when not logged.
      type: str
    param_check_every:
      description: How often the workload logged parameter checksums, as its C(GPUCLUSTER_WORKLOAD)
        lines say (0 for off); null when they do not say.
      type: int
    format:
      description: C(reference) or C(regex).
      type: str
    errors:
      description: What is missing, garbled or cut off, with line numbers; empty when the log is complete.
      type: list
      elements: str
    warnings:
      description: Things to know that do not make the log unusable.
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._workload import parse_workload_log
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """gpucluster.acceptance.from_workload_log"""

    def filters(self):
        return guarded_filters({"from_workload_log": text_filter("from_workload_log", parse_workload_log)})
