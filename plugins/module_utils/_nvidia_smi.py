# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``nvidia-smi --query-gpu=... --format=csv``, ``nvidia-smi -q`` and ``nvidia-smi -L``.

Private to the collection. Standard library only; nothing here raises on odd input: problems
end up in the result's ``errors`` (that part of the data cannot be trusted) or ``warnings``.

Parsers salvage: a row, line or value that cannot be read is reported in ``errors`` (with its
line number) next to what the rest of the output shows, never instead of it. A value that cannot
be real (a negative or non-finite temperature or error count, a count that is not a whole number,
a PCI bus id that is not one) is such an error: the value is dropped, and the GPU it belongs to
lists the affected area in its ``invalid`` mapping so a judge never passes it. Shell prompts and
echoed commands pasted with a capture are dropped with a warning.

This module holds the ``-q`` entry point; the parts live next to it: _nvidia_smi_csv
(--query-gpu), _nvidia_smi_list (-L), _nvidia_smi_q_tree (the -q report as a tree of sections),
_nvidia_smi_q_fields (a GPU's fields and evidence lines from its tree) and _nvidia_smi_values
(PCI bus ids, echoed commands, which values can be real).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_csv import parse_nvidia_smi_csv
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_list import parse_nvidia_smi_list
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_q_fields import _evidence, _gpu
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_q_tree import _merge_blocks, _parse_tree
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_values import (
    TEMPERATURE_RANGE,
    TLIMIT_RANGE,
    _count_problem,
    _validate,
    normalize_bus_id,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped, new_result

# The interface other modules import from here.
__all__ = ["TEMPERATURE_RANGE", "TLIMIT_RANGE", "normalize_bus_id", "parse_nvidia_smi_csv",
           "parse_nvidia_smi_list", "parse_nvidia_smi_q"]


# Lines people put where they cut a pasted report.
_ELISIONS = frozenset(("[...]", "...", "[..]", "\u2026", "[\u2026]", "<snip>", "[snip]", "(...)"))


@capped(8)
def parse_nvidia_smi_q(text):
    """Parse ``nvidia-smi -q`` text (the whole report or ``-q -d SECTION`` fragments); never raises.

    Result keys: driver_version, cuda_version, attached_gpus, timestamp, gpus (one dict per
    ``GPU <bus id>`` block, in output order; each with ``evidence``, the printed lines of each
    judged area, and ``invalid``, area -> problems for values that cannot be real), errors,
    warnings.
    """
    result = new_result(driver_version=None, cuda_version=None, attached_gpus=None,
                        timestamp=None, gpus=[])
    errors = result["errors"]
    warnings = result["warnings"]
    if not isinstance(text, str):
        errors.append("expected the text of `nvidia-smi -q`, got %s" % type(text).__name__)
        return result
    if not text.strip():
        errors.append("empty input: no `nvidia-smi -q` output")
        return result

    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip() in _ELISIONS:
            # Someone cut the report when pasting it: what is missing cannot be judged.
            errors.append("line %d: %r: part of the report was left out (elided)" % (lineno, line.strip()))
    top, blocks = _parse_tree(text, result)
    result["driver_version"] = top.text("Driver Version")
    cuda = top.text("CUDA Version")
    result["cuda_version"] = None if cuda in (None, "Not Found") else cuda
    result["attached_gpus"] = top.number("Attached GPUs")
    result["timestamp"] = top.text("Timestamp")
    attached_node = top.get("Attached GPUs")
    result["attached_line"] = attached_node.text_line if attached_node is not None else None
    if result["attached_gpus"] is not None and _count_problem(str(result["attached_gpus"])):
        errors.append("line %s: Attached GPUs %r is not a count" % (attached_node.line, attached_node.value))
        result["attached_gpus"] = None

    if not blocks:
        errors.append("no 'GPU <PCI bus id>' sections found: empty, truncated or not "
                      "`nvidia-smi -q` output")
        return result
    blocks = _merge_blocks(blocks, warnings)
    for index, (bus_id, lineno, node, header) in enumerate(blocks):
        label = bus_id or "at line %d" % lineno
        if not node.order:
            errors.append("line %d: GPU %s has no fields (output truncated?)" % (lineno, label))
            continue
        invalid = _validate(node, "GPU %s" % label, errors)
        if bus_id is None:
            # The header is garbled: the PCI section may still name the GPU.
            bus_id = normalize_bus_id(node.text("PCI", "Bus Id") or "")
            invalid.setdefault("bus_id", []).append("line %d: GPU section header %r names no PCI bus id"
                                                    % (lineno, header[:80]))
        gpu = _gpu(bus_id, index, node, warnings)
        conflict = gpu.pop("_bus_conflict", None)
        if conflict:
            errors.append(conflict)
            invalid.setdefault("bus_id", []).append(conflict)
        gpu["invalid"] = invalid
        gpu["evidence"] = _evidence(node, header)
        gpu["line"] = lineno
        result["gpus"].append(gpu)

    # A full report (Product Name printed, i.e. no -d filter) always ends each GPU with
    # "Processes"; its absence means the text was cut short.
    for bus_id, lineno, node, _header in blocks:
        if node.order and node.get("Product Name") is not None and node.get("Processes") is None:
            errors.append("GPU %s (line %d): report ends before its 'Processes' section "
                          "(output truncated?)" % (bus_id or "at line %d" % lineno, lineno))
    attached = result["attached_gpus"]
    if isinstance(attached, int) and attached != len(blocks):
        message = ("Attached GPUs is %d but the report has %d GPU section(s)"
                   % (attached, len(blocks)))
        if len(blocks) > attached:
            errors.append(message)
        else:
            warnings.append(message + " (queried with -i, or output cut short)")
    if result["driver_version"] is None:
        warnings.append("no 'Driver Version' line before the GPU sections")
    return result
