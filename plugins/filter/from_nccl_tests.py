# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: from_nccl_tests
version_added: 0.1.0
short_description: Parse the output of an nccl-tests benchmark (all_reduce_perf, ...)
description:
  - Parses what C(all_reduce_perf), C(all_gather_perf), C(reduce_scatter_perf),
    C(alltoall_perf), C(broadcast_perf) and the other NVIDIA nccl-tests programs print, from the
    2017 format to the current one, into the result table, the rank list and a verdict.
  - "Tolerates the line prefixes of C(mpirun --tag-output) (V([1,0]<stdout>:)), C(srun --label)
    (V( 0: )) and C(mpirun -prepend-rank) (V([0])), shell prompts and command echoes, NCCL
    INFO/WARN lines and MPI help text anywhere (each noted in RV(warnings)), and values wider
    than their columns (cells are split on whitespace). Failure and crash lines, and table rows
    that cannot be read, are RV(errors) next to what the rest of the output shows."
  - RV(passed) is true only when the run completed and was correct; every reason it is not is
    a sentence in RV(errors). Several independent runs in one output (nccl-tests built without
    C(MPI=1) and launched with mpirun/srun) only add a warning; see RV(independent_runs) and
    RV(runs).
  - No value in the result is NaN or infinite. A cell reading C(inf), C(nan) or a number too
    large for a float (C(1e309)), a negative time, bandwidth or count, and a C(#wrong) that is
    not a whole count are errors (C(implausible value)) and are named in the row's
    C(problems).
  - Malformed, truncated or empty input never raises; it gives a result with RV(errors).
options:
  _input:
    description: The benchmark's standard output (the C(stdout) of a task result), as a string.
    type: string
    required: true
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Run all_reduce_perf across the nodes
  ansible.builtin.command: >-
    mpirun --tag-output -np 16 -N 8 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1
  register: allreduce
  changed_when: false

- name: Judge the fabric from the parsed run
  ansible.builtin.assert:
    that:
      - result.passed
      - result.independent_runs == 1
      - result.nranks == 16
      - result.large_msg_busbw >= 350
    fail_msg: "{{ result.errors + result.warnings }}"
  vars:
    result: "{{ allreduce.stdout | gpucluster.acceptance.from_nccl_tests }}"
"""

RETURN = r"""
_value:
  description: The parsed run.
  type: dict
  contains:
    rows:
      description:
        - One entry per table row, in output order. C(size) is bytes, C(count) elements,
          C(redop) is C(none) for all_gather/alltoall and null when the table has no such
          column (before 2019), C(root) is -1 for collectives without a root and null when the
          table has none.
        - C(oop) (out-of-place) and C(ip) (in-place, null when the table has none) each hold
          C(time_us), C(algbw), C(busbw) (GB/s), C(wrong) (count; null for N/A or when the
          table has the 2017-2022 float C(error)/C(res) column instead) and C(error) (that
          float, else null). Per-iteration columns add C(i_min_us), C(i_max_us), C(i_p99_us),
          C(i_cv_pct). Times printed in milliseconds before 2019 are converted. A cell that is
          not a finite number is null. C(line) is the 1-based line number, C(text) the row as
          printed (launcher prefix removed), C(problems) the implausible values of the row as
          sentences (empty when none).
      type: list
      elements: dict
    avg_busbw:
      description: >-
        The C(Avg bus bandwidth) value in GB/s; the lowest one when several runs printed one.
      type: float
    avg_busbw_status:
      description: >-
        C(OK) or C(FAILED) when nccl-tests checked the average against C(NCCL_TESTS_MIN_BW), else
        null.
      type: str
    out_of_bounds:
      description: C(Out of bounds values) count (summed over runs), null when no such line.
      type: int
    summaries:
      description: >-
        Every C(Out of bounds values) (C(kind=oob)) and C(Avg bus bandwidth) (C(kind=avg)) line
        with C(line), C(value), C(status).
      type: list
      elements: dict
    ranks:
      description: >-
        The C(Rank N Group G Pid P on HOST device D [BUS] NAME) lines as C(rank), C(group),
        C(pid), C(host), C(device), C(busid) (as printed, C(0x18) or C(0000:0f:00)), C(pci_bus)
        (bus number), C(gpu_name), C(line) and C(text) (the line as printed).
      type: list
      elements: dict
    nranks:
      description: Number of distinct rank numbers (the communicator size of one run).
      type: int
    hosts:
      description: Distinct host names from the rank lines, in order of appearance.
      type: list
      elements: str
    headers:
      description: How many C(# nThread ...) header lines were seen.
      type: int
    independent_runs:
      description: >-
        How many separate runs (headers, restarts of the rank numbering, result tables,
        summaries; without any header, how often the size sweep repeats) the output holds; more
        than 1 for one launch means nccl-tests was built without MPI=1.
      type: int
    runs:
      description: >-
        One entry per independent run: C(hosts) (from its rank lines, in order; empty when the
        output has none), C(nranks) (ranks of that run; 1 when every row has busbw 0, the mark of
        a one-rank communicator, and no rank lines say otherwise; null when unknown), C(line) and
        C(text) of its first rank line (null when none).
      type: list
      elements: dict
    header_text:
      description: The first C(# nThread ...) header line as printed (C(#) removed), or null.
      type: str
    sweep_last_bytes:
      description: >-
        The largest size the header's sweep asks for (after any C(Reducing maxBytes)), or null
        without a header.
      type: int
    version:
      description: nccl-tests version from C(# nccl-tests version X ...) (2025 on), else null.
      type: str
    nccl_tests_commit:
      description: The commit in parentheses after the version, when printed.
      type: str
    nccl_headers:
      description: NCCL version code nccl-tests was compiled against (C(nccl-headers=)).
      type: int
    nccl_library:
      description: NCCL version code of the library at run time (C(nccl-library=)).
      type: int
    nccl_version:
      description: From the C(NCCL version 2.x.y+cudaZ) line NCCL prints, when present.
      type: str
    program:
      description: Program name from C(# Collective test starting:), e.g. C(all_reduce_perf_mpi).
      type: str
    collective:
      description: >-
        The collective, e.g. C(all_reduce), C(all_gather), C(alltoall); null when the output does
        not name it (before 2025).
      type: str
    concluded:
      description: Whether a C(# Collective test concluded) line was seen.
      type: bool
    nthread:
      description: C(nThread) from the first header.
      type: int
    ngpus:
      description: C(nGpus) (GPUs per process) from the first header.
      type: int
    min_bytes:
      description: C(minBytes) from the first header.
      type: int
    max_bytes:
      description: C(maxBytes) from the first header (before any memory-limit reduction).
      type: int
    step_factor:
      description: Size multiplier (C(step N(factor))), else null.
      type: int
    step_bytes:
      description: Size increment (C(step N(bytes))), else null.
      type: int
    warmup_iters:
      description: C(warmup iters) from the first header.
      type: int
    iters:
      description: C(iters) from the first header.
      type: int
    agg_iters:
      description: C(agg iters), when printed.
      type: int
    validation:
      description: C(validation) (0 means results were not checked), when printed.
      type: int
    graph:
      description: C(graph), when printed.
      type: int
    unalign:
      description: C(unalign), when printed (2026 on).
      type: int
    max_busbw:
      description: Highest busbw of any row, out-of-place or in-place, in GB/s.
      type: float
    large_msg_busbw:
      description: >-
        Mean out-of-place busbw (GB/s) over the rows of at least 1 GiB, or, when no row reaches 1
        GiB, over the rows in the largest quarter of the distinct sizes (rounded up); rounded to 4
        decimals.
      type: float
    large_msg_min_bytes:
      description: The smallest size included in RV(large_msg_busbw).
      type: int
    passed:
      description: True only when RV(errors) is empty and there are rows.
      type: bool
    errors:
      description: >-
        Why the run is not a pass, one sentence each (missing summary, rows missing from a sweep,
        garbled rows, nonzero #wrong, out-of-bounds values, implausible values, failure and crash
        lines with their line number, ...).
      type: list
      elements: str
    warnings:
      description: >-
        Things a person should know that do not fail the run (independent runs, NCCL WARN lines,
        validation off, launcher prefixes removed, shell prompts ignored, ...).
      type: list
      elements: str
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, text_filter


class FilterModule(object):
    """gpucluster.acceptance.from_nccl_tests"""

    def filters(self):
        return guarded_filters({"from_nccl_tests": text_filter("from_nccl_tests", parse_nccl_tests)})
