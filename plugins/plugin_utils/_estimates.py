# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a stage is expected to take, for ``--check`` (which runs nothing).

Controller side only; pure functions. ``tools_estimate(tools)`` reads a per-node stage's tool list
(names, argv, timeouts, pauses) and gives (expected seconds, at most seconds): the expected time of
each tool from what it is asked to do (DCGM's level, the SDC probe's seconds, the counter interval),
bounded by its timeout, which is the most it may take. ``workload_estimate(argv)`` does the same for
the workload launch. The typical times are those of an 8-GPU H100/H200 node, as NVIDIA documents
them for DCGM (dcgmi diag levels) and as nccl-tests' 8 MB - 8 GB sweep takes there; other hardware
differs, the bound does not.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

# dcgmi diag -r N on an 8-GPU HGX node: r1 quick checks, r2 a few minutes, r3 the long stress tests
# (30-40 min), r4 the extended ones (1.5-2 h).
DCGM_LEVEL_S = {1: 90, 2: 300, 3: 2100, 4: 6300}
# Tools by name whose time does not follow from their arguments.
TYPICAL_S = {"all_reduce_perf": 120, "nvidia-smi-q": 5, "dcgmi-version": 2}
OTHER_S = 2  # nvidia-smi queries, ibstat, sysfs reads, the clock
PROBE_OVERHEAD_S = 60  # a probe's start: Python, PyTorch import, CUDA context, warm-up


def _number_after(argv, flag):
    for index, arg in enumerate(argv[:-1]):
        if arg == flag:
            try:
                return float(argv[index + 1])
            except (TypeError, ValueError):
                return None
    return None


def _seconds(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and 0 <= number < 1e9 else 0.0


def tool_estimate(tool):
    """(expected, at most) seconds of one collect tool ({name, argv, timeout, pause_before})."""
    argv = [str(a) for a in tool.get("argv") or []]
    name = str(tool.get("name") or "")
    pause = _seconds(tool.get("pause_before"))
    limit = _seconds(tool.get("timeout"))
    if name == "dcgmi-diag" or (argv[:2] == ["dcgmi", "diag"]):
        level = _number_after(argv, "-r")
        typical = DCGM_LEVEL_S.get(int(level) if level else 3, DCGM_LEVEL_S[3])
    elif "-probe" in name:  # sdc-probe, loader-probe(-alone), checkpoint-probe(-alone)
        typical = (_number_after(argv, "--seconds") or 0) + PROBE_OVERHEAD_S
    else:
        typical = TYPICAL_S.get(name, OTHER_S)
    typical = min(typical, limit) if limit else typical
    return pause + typical, pause + (limit or typical)


def tools_estimate(tools):
    """(expected, at most) seconds of a per-node stage: its tools one after another."""
    expected = at_most = 0.0
    for tool in tools or []:
        if isinstance(tool, dict):
            one, bound = tool_estimate(tool)
            expected, at_most = expected + one, at_most + bound
    return round(expected), round(at_most)


def workload_estimate(argv, timeout):
    """(expected, at most) seconds of the workload launch: its duration, or ~1 s a step, plus start-up."""
    argv = [str(a) for a in argv or []]
    duration = _number_after(argv, "--duration-s") or 0
    steps = _number_after(argv, "--steps") or 0
    expected = (duration if duration > 0 else steps) + PROBE_OVERHEAD_S
    limit = _seconds(timeout)
    return round(min(expected, limit) if limit else expected), round(limit or expected)


def duration_text(seconds):
    """'35m', '1h05m', '45s'."""
    seconds = int(round(seconds or 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm" % (hours, minutes)
    if minutes:
        return "%dm" % minutes if not secs or minutes >= 10 else "%dm%02ds" % (minutes, secs)
    return "%ds" % secs
