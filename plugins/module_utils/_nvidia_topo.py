# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the connectivity matrix printed by ``nvidia-smi topo -m``.

Private to the collection. Standard library only; nothing here raises on odd input: problems
end up in the result's ``errors`` (the matrix cannot be trusted) or ``warnings`` (it can, but a
person should look).

The output varies between drivers and machines, all of which this parser reads:

* columns separated by tabs (what the tool writes) or by runs of spaces (copied from a
  terminal or a web page);
* NIC columns named after the device (``mlx5_0``, older drivers) or ``NIC0``..``NICn`` with a
  ``NIC Legend:`` block mapping them to device names (newer drivers);
* optional ``CPU Affinity``, ``NUMA Affinity`` and ``GPU NUMA ID`` columns; NIC rows stop after
  the matrix cells, sometimes with empty trailing fields;
* ANSI escape codes around the header (the driver underlines it when writing to a terminal);
* cells glued together when a column overflows its width (``NODENODE``);
* the ``Legend:`` block (old and new wordings), which is never read as matrix rows;
* shell prompts, echoed commands and launcher prefixes (srun ``-l``, mpirun ``--tag-output``)
  pasted with the capture, dropped with a warning.

A row that cannot be read (too few cells) is an error naming its line; the other rows are still
returned. ``header_line`` and ``row_lines`` keep the lines as printed, for evidence.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    is_missing,
    is_shell_echo,
    lines_of,
    new_result,
    strip_launcher_prefix,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

# CSI sequences (colours, underline: ESC [ ... m), charset selection (ESC ( B) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[()][0-9A-Za-z]|[@-Z\\-_])")

# Matrix cell values. SOC is the pre-2017 name of SYS; PSB ("single on-board PCIe switch") was
# printed by some drivers; NA is printed when the relation is unknown.
_RELATION = r"(?:X|SYS|SOC|NODE|PHB|PXB|PIX|PSB|NV\d+|NA)"
_RELATION_RE = re.compile(r"^%s$" % _RELATION)
_GLUED_RE = re.compile(r"^(?:%s){2,}$" % _RELATION)
_GLUED_PART_RE = re.compile(_RELATION)

_GPU_RE = re.compile(r"^GPU\d+$")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_CPU_LIST_RE = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")

# PCIe closeness of a NIC to a GPU, closest first (NVIDIA's legend and NCCL's path types).
RELATION_ORDER = ("PIX", "PSB", "PXB", "PHB", "NODE", "SYS", "SOC")
_RELATION_RANK = {"PIX": 0, "PSB": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}

# Trailing per-GPU columns: (words in the header, result key).
_EXTRA_COLUMNS = (
    (("CPU", "Affinity"), "cpu_affinity"),
    (("NUMA", "Affinity"), "numa_affinity"),
    (("GPU", "NUMA", "ID"), "gpu_numa_id"),
)
_EXTRA_START = ("CPU", "NUMA")


def strip_ansi(text):
    """Remove terminal escape sequences (colour, underline) from text."""
    return _ANSI.sub("", text)


def _is_relation(token):
    return bool(_RELATION_RE.match(token))


def _is_header(tokens):
    """A header lists device names: first a GPU column, then no matrix cell values."""
    if not tokens or not _GPU_RE.match(tokens[0]):
        return False
    return not any(_is_relation(tok) for tok in tokens[1:])


def _split_header(tokens, warnings, lineno):
    """Device columns and extra columns (result keys) of a header line's tokens."""
    devices = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _EXTRA_START or (tok == "GPU" and tokens[i + 1:i + 2] == ["NUMA"]):
            break
        devices.append(tok)
        i += 1
    extras = []
    while i < len(tokens):
        for words, key in _EXTRA_COLUMNS:
            if tuple(tokens[i:i + len(words)]) == words:
                extras.append(key)
                i += len(words)
                break
        else:
            # An unknown trailing column: keep its words together so values still line up.
            name_words = []
            while i < len(tokens) and not any(
                    tuple(tokens[i:i + len(w)]) == w for w, _kind in _EXTRA_COLUMNS):
                name_words.append(tokens[i])
                i += 1
            name = "_".join(w.lower() for w in name_words)
            warnings.append("line %d: unknown header column %r kept as %r"
                            % (lineno, " ".join(name_words), name))
            extras.append(name)
    return devices, extras


def _numa_value(value):
    """NUMA node as int when it is one number, the text otherwise ('0-1'), None when missing."""
    if value is None or is_missing(value):
        return None
    if is_digits(value):
        return int(value)
    return value


def _extra_value(key, value):
    if value is None or is_missing(value):
        return None
    if key in ("numa_affinity", "gpu_numa_id"):
        return _numa_value(value)
    return value


def _row_cells(tokens, ncells, warnings, lineno, label):
    """Split a row's tokens (after the label) into ncells matrix cells and the rest.

    Cells glued by an overflowing column ('NODENODE') are separated again.
    """
    cells = []
    rest = list(tokens)
    while rest and len(cells) < ncells:
        tok = rest[0]
        if not _is_relation(tok) and _GLUED_RE.match(tok):
            parts = _GLUED_PART_RE.findall(tok)
            warnings.append("line %d: %s: cell %r read as %s (columns ran together)"
                            % (lineno, label, tok, " ".join(parts)))
            rest = parts + rest[1:]
            continue
        if not _is_relation(tok):
            break
        cells.append(tok)
        rest.pop(0)
    return cells, rest


def _nic_affinity(gpus, nics, matrix, nic_names):
    """For each NIC, the GPU(s) with the closest PCIe relation and that relation."""
    affinity = {}
    for nic in nics:
        best_rank = None
        best = []
        relation = None
        for gpu in gpus:
            rel = matrix.get(gpu, {}).get(nic) or matrix.get(nic, {}).get(gpu)
            rank = _RELATION_RANK.get(rel)
            if rank is None:
                continue
            if best_rank is None or rank < best_rank:
                best_rank, best, relation = rank, [gpu], rel
            elif rank == best_rank:
                best.append(gpu)
        affinity[nic] = {"gpus": best, "relation": relation, "name": nic_names.get(nic, nic)}
    return affinity


@capped(4)
def parse_nvidia_topo(text):
    """Parse ``nvidia-smi topo -m`` output into a dict; never raises.

    Result keys: gpus, nics, devices, matrix, cpu_affinity, numa_affinity, gpu_numa_id (only
    when the column exists), nic_names, nic_devices, nic_affinity, errors, warnings.
    """
    result = new_result(gpus=[], nics=[], devices=[], matrix={}, cpu_affinity={},
                        numa_affinity={}, nic_names={}, nic_devices={}, nic_affinity={},
                        header_line=None, row_lines={})
    errors = result["errors"]
    warnings = result["warnings"]
    if not isinstance(text, str):
        errors.append("expected the text of `nvidia-smi topo -m`, got %s" % type(text).__name__)
        return result
    if not text.strip():
        errors.append("empty input: no `nvidia-smi topo -m` output")
        return result

    header = None
    extras = []
    rows = {}
    row_order = []
    row_extras = {}
    in_legend = False
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_ansi(strip_launcher_prefix(strip_ansi(raw)))
        stripped = line.strip()
        if not stripped:
            continue
        if is_shell_echo(stripped) or re.match(r"^\S*nvidia-smi\s", stripped):
            warnings.append("line %d: shell prompt or command echo ignored: %s" % (lineno, stripped[:120]))
            continue
        match = _NIC_LEGEND_RE.match(line)
        if match:
            result["nic_names"][match.group(1)] = match.group(2)
            continue
        if stripped.rstrip(":") in ("Legend", "NIC Legend"):
            in_legend = True
            continue
        if in_legend or "=" in stripped:
            continue
        tokens = stripped.split()
        if header is None:
            if _is_header(tokens):
                header, extras = _split_header(tokens, warnings, lineno)
                result["header_line"] = stripped
            continue
        label = tokens[0]
        if label not in header:
            if _is_header(tokens):
                warnings.append("line %d: a second header line was ignored" % lineno)
            continue
        if label in rows:
            warnings.append("line %d: second row for %s ignored" % (lineno, label))
            continue
        cells, rest = _row_cells(tokens[1:], len(header), warnings, lineno, label)
        if len(cells) < len(header):
            missing = header[len(cells)]
            errors.append("line %d: %s row has %d of %d matrix cells (no value for %s): %s"
                          % (lineno, label, len(cells), len(header), missing, stripped[:160]))
            continue
        rows[label] = dict(zip(header, cells))
        row_order.append(label)
        result["row_lines"][label] = stripped
        if _GPU_RE.match(label):
            if len(rest) > len(extras):
                warnings.append("line %d: %s row has %d values after the matrix, header names %d"
                                % (lineno, label, len(rest), len(extras)))
            row_extras[label] = dict(
                (key, rest[i] if i < len(rest) else None) for i, key in enumerate(extras))
        elif rest:
            warnings.append("line %d: %s row has unexpected trailing values %s"
                            % (lineno, label, " ".join(rest)))

    if header is None:
        errors.append("no header line with GPU columns found: not `nvidia-smi topo -m` output?")
        return result
    if not rows:
        errors.append("no matrix rows after the header line (output truncated?)")
    for device in header:
        if device not in rows:
            errors.append("%s is a column in the header but has no row (output truncated?)"
                          % device)

    gpus = [d for d in header if _GPU_RE.match(d) and d in rows]
    nics = [d for d in header if not _GPU_RE.match(d)]
    result["gpus"] = gpus
    result["nics"] = nics
    result["devices"] = [d for d in header if d in rows]
    result["columns"] = list(header)
    result["matrix"] = dict((d, rows[d]) for d in row_order)

    for gpu in gpus:
        values = row_extras.get(gpu, {})
        result["cpu_affinity"][gpu] = _extra_value("cpu_affinity", values.get("cpu_affinity"))
        result["numa_affinity"][gpu] = _extra_value("numa_affinity", values.get("numa_affinity"))
        if "gpu_numa_id" in extras:
            result.setdefault("gpu_numa_id", {})[gpu] = _extra_value(
                "gpu_numa_id", values.get("gpu_numa_id"))
        for key in extras:
            if key not in ("cpu_affinity", "numa_affinity", "gpu_numa_id"):
                result.setdefault(key, {})[gpu] = _extra_value(key, values.get(key))
        cpus = result["cpu_affinity"][gpu]
        if cpus is not None and not _CPU_LIST_RE.match(cpus):
            warnings.append("%s: CPU affinity %r is not a CPU list (columns shifted?)"
                            % (gpu, cpus))

    for device, row in result["matrix"].items():
        if row.get(device) != "X":
            warnings.append("%s: diagonal cell is %r, expected 'X'" % (device, row.get(device)))
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            ab, ba = rows[a].get(b), rows[b].get(a)
            if ab != ba:
                warnings.append("%s-%s is %s but %s-%s is %s" % (a, b, ab, b, a, ba))

    for nic in nics:
        result["nic_devices"][nic] = result["nic_names"].get(nic, nic)
    if any(n.startswith("NIC") and is_digits(n[3:]) for n in nics) and not result["nic_names"]:
        warnings.append("NIC columns are numbered but no 'NIC Legend:' block maps them to "
                        "device names")
    result["nic_affinity"] = _nic_affinity(gpus, nics, result["matrix"], result["nic_names"])
    return result
