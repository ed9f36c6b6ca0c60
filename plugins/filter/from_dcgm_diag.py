# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_dcgm_diag
version_added: 0.1.0
short_description: Parse the output of C(dcgmi diag) (text table or C(-j) JSON)
description:
  - Parses what C(dcgmi diag -r N) prints, either the text table or the C(-j) JSON document,
    as written by DCGM 2.x, 3.x and 4.x. The format and the DCGM generation are detected from
    the text.
  - >-
    Text tables with C(|---) and C(+---) section lines, results such as C(Pass - All),
    C(Fail - GPU: 1) and C(Pass - GPUs: 0, 2, 3) (several rows when GPUs differ), warnings
    wrapped over several rows, and the DCGM 4.x layout with a Metadata section and one
    C(GPU0: Pass) row per GPU are understood.
  - JSON documents of DCGM 3.x (C(DCGM GPU Diagnostic), C(gpu_ids) or C(gpu_id) as strings or
    numbers) and DCGM 4.x (C(DCGM Diagnostic), C(entity_group)/C(entity_id) results,
    C(test_summary), C(entity_groups), C(metadata)) are understood, also with text printed
    before the document, null values, C(runtime_error) and C(--iterations) output.
  - The level and the GPUs the run covered are read from the tests in the output (RV(level_run),
    RV(gpu_ids), RV(gpu_count)), not from the command line or the configuration.
  - Shell prompts, command echoes and C(srun --label) / C(mpirun --tag-output) prefixes are
    dropped with a warning; C(Error ...) and crash lines before or after the output, results
    that disagree about the GPUs, and C(NaN)/C(Infinity) in a JSON document are C(errors).
  - Garbled, truncated or empty input never raises; it returns C(errors) and C(overall=fail).
    Only a value that is not a string (for example the whole registered task result instead
    of its C(.stdout)) raises an error.
options:
  _input:
    description: The standard output of C(dcgmi diag), as a string.
    type: string
    required: true
  level:
    description:
      - The run level that was requested with C(-r). When omitted it is taken from an echoed
        C(dcgmi diag -r N) command line in the output, if there is one.
    type: int
    required: false
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Run the level 3 diagnostic
  ansible.builtin.command: dcgmi diag -r 3 -j
  register: diag
  changed_when: false
  failed_when: false

- name: Parse it
  ansible.builtin.set_fact:
    dcgm: "{{ diag.stdout | gpucluster.acceptance.from_dcgm_diag(level=3) }}"

- name: Fail the node when a test failed or the output could not be read
  ansible.builtin.assert:
    that: dcgm.overall == 'pass'
    fail_msg: >-
      DCGM diagnostic failed on GPUs {{ dcgm.failed_gpus }}:
      {{ dcgm.tests | selectattr('status', 'eq', 'fail') | map(attribute='name') | list }}
      {{ dcgm.errors }}
"""

RETURN = r"""
_value:
  description: The parsed diagnostic.
  type: dict
  contains:
    format:
      description: C(text) or C(json), as detected; null for empty input.
      type: str
    schema:
      description: For JSON, C(3.x) or C(4.x) (which document layout was found).
      type: str
      returned: when the input is a JSON document
    dcgm_version:
      description: DCGM version printed in the output, or null.
      type: str
    driver_version:
      description: Driver version printed in the output, or null.
      type: str
    level:
      description: >-
        The run level requested (C(-r N)), from the option or an echoed command line; what was
        asked for, not proof (see RV(level_run)).
      type: int
    level_run:
      description: >-
        The level the output proves: the highest level (1-4) every test of which, and of the
        levels below, ran (passed, warned or failed). Level 1 needs a deployment test, 2 adds
        C(memory) and C(pcie), 3 C(diagnostic), C(memory_bandwidth), C(targeted_stress) and
        C(targeted_power), 4 C(memtest) and C(pulse_test) (the suites of DCGM 2.x to 4.x).
        Null when not even a deployment test ran.
      type: int
    level_listed:
      description: The highest level any listed test belongs to, whether it ran or was skipped.
      type: int
    level_evidence:
      description: The output lines (test rows, or JSON name and status lines) behind RV(level_run).
      type: list
      elements: str
    gpu_ids:
      description: >-
        Sorted ids of the GPUs the run tested, as the output shows them (per-GPU results, GPU
        Device Serials, entity groups); null when it does not name them all.
      type: list
      elements: int
    gpu_count:
      description: >-
        How many GPUs the run tested (the GPU device ids of the Metadata, or the GPUs named);
        null when the output does not show it.
      type: int
    gpu_evidence:
      description: The output lines behind RV(gpu_ids) and RV(gpu_count).
      type: list
      elements: str
    overall:
      description: >-
        C(pass) only when there are tests, none failed, not every test was skipped and there
        are no C(errors); otherwise C(fail).
      type: str
    failed_gpus:
      description: Sorted GPU ids that failed at least one test.
      type: list
      elements: int
    gpus:
      description: Sorted GPU ids the output names anywhere.
      type: list
      elements: int
    counts:
      description: Number of tests per status (C(pass), C(fail), C(warn), C(skip)).
      type: dict
    metadata:
      description: The Metadata rows (text) or the C(metadata) object (JSON) as printed.
      type: dict
    runtime_error:
      description: The C(runtime_error) dcgmi reported instead of results, or null.
      type: str
    tests:
      description: One entry per test, in the order printed.
      type: list
      elements: dict
      contains:
        name:
          description: Test name as printed (C(Denylist), C(GPU Memory), C(Targeted Power), C(pcie)...).
          type: str
        key:
          description: >-
            Version-independent identifier: the DCGM 4.x plugin name (C(memory),
            C(targeted_power), C(denylist), C(page_retirement_row_remap), ...).
          type: str
        category:
          description: C(Deployment), C(Integration), C(Hardware), C(Stress) (or null for a fragment).
          type: str
        status:
          description: C(pass), C(fail), C(warn) or C(skip); the worst over its GPUs and rows.
          type: str
        gpus:
          description: >-
            GPU ids the status applies to. For C(... - All) and tests that apply to the whole
            node, the GPU ids known from the output (possibly empty) with C(all_gpus=true);
            empty with C(all_gpus=false) when DCGM reported a test-level result not tied to
            any GPU.
          type: list
          elements: int
        all_gpus:
          description: True when the status applies to every GPU.
          type: bool
        gpu_results:
          description: Per-GPU status where the output gives it, keyed by GPU id.
          type: dict
        details:
          description: >-
            Warning, error and info texts, unwrapped (C(GPU 1 ...), C(GPU 0: ...)).
          type: list
          elements: str
        messages:
          description: The same texts with C(level) (warning/error/info), C(gpu) and C(entity).
          type: list
          elements: dict
        line:
          description: Line of the test's first row (text output), else null.
          type: int
        evidence:
          description: >-
            The output lines its verdict rests on: its row, the GPU rows that did not pass and
            the warning rows (text), or its name and status lines (JSON).
          type: list
          elements: str
    errors:
      description: What could not be parsed, or what dcgmi reported as an error.
      type: list
      elements: str
    error_lines:
      description: The output lines the C(line N:) errors point at.
      type: list
      elements: str
    warnings:
      description: Things worth a look that do not fail the parse.
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import parse_dcgm_diag
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """from_dcgm_diag filter."""

    def filters(self):
        return guarded_filters({"from_dcgm_diag": text_filter("from_dcgm_diag", parse_dcgm_diag)})
