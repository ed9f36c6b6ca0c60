# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe link training of GPUs and NICs: the sysfs parser, the link arithmetic and the judgement.

A GPU or HCA whose link trained below its slot (x8 instead of x16, Gen4 instead of Gen5: a bad
riser, a dirty connector, a mis-set BIOS option) still works; it moves data at a fraction of the
rate, which the fabric sees as a slow rail and a GPUDirect RDMA test as a slow NIC.

Sources:

* GPUs: ``nvidia-smi -q`` "GPU Link Info" (parsed in _nvidia_smi_q_fields: PCIe Generation Max /
  Current / Device Max / Host Max, Link Width Max / Current) and "Performance State". The driver
  lowers the link generation of an idle GPU to save power (Current 1 at P8 while Max is 4 in real
  reports), so a GPU's generation is judged only in P0; the width does not change with the power
  state and is always judged.
* NICs: sysfs of the HCA's PCI function, as printed by
  ``grep -H . /sys/class/infiniband/*/device/*_link_*``::

      /sys/class/infiniband/mlx5_0/device/current_link_speed:32.0 GT/s PCIe
      /sys/class/infiniband/mlx5_0/device/current_link_width:16
      /sys/class/infiniband/mlx5_0/device/max_link_speed:32.0 GT/s PCIe
      /sys/class/infiniband/mlx5_0/device/max_link_width:16

  (older kernels print "8 GT/s" without the "PCIe" suffix; "Unknown" when the link is not up).

available_gbps(gen, width) is the kernel's figure (pcie_bandwidth_available: the transfer rate
less the line encoding, 8b/10b to Gen2 and 128b/130b from Gen3, in whole Mb/s per lane): 504.112
Gb/s for Gen5 x16, 252.048 for Gen4 x16, as mlx5_core prints it at probe time.

judge_link(...) is the one verdict both stages use (gpu.pcie_link in gpu_health, ib.pcie_link in
infiniband). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, join_names)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import lines_of, new_result
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

# Generation -> transfer rate (GT/s) per lane, PCI Express Base Specification.
GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
# Usable Mb/s per lane as the kernel computes it (PCIE_SPEED2MBS_ENC, drivers/pci/pci.h);
# Gen6 is flit mode, counted at the full rate.
_MBS_PER_LANE = {1: 2000, 2: 4000, 3: 7876, 4: 15753, 5: 31507, 6: 64000}
WIDTHS = (1, 2, 4, 8, 12, 16, 32)

_SYSFS_LINE = re.compile(r"^(?P<path>\S*?/(?P<ca>[^/\s]+)/device/(?P<file>(?:current|max)_link_(?:speed|width))):"
                         r"(?P<value>.*)$")
_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s(?:\s+PCIe)?\s*$")


def gen_of_speed(text):
    """The generation of a speed as sysfs prints it ('32.0 GT/s PCIe' -> 5), else None."""
    match = _SPEED.match(text or "")
    if not match:
        return None
    rate = float(match.group(1))
    for gen, gts in GEN_GTS.items():
        if abs(gts - rate) < 0.01:
            return gen
    return None


def available_gbps(gen, width):
    """Gb/s a link of this generation and width carries (the kernel's figure), None if unknown."""
    if gen not in _MBS_PER_LANE or not isinstance(width, int) or width <= 0:
        return None
    return _MBS_PER_LANE[gen] * width / 1000.0


def describe(gen, width):
    """'Gen5 x16 (504 Gb/s)'; parts that are unknown are left out."""
    parts = []
    if gen is not None:
        parts.append("Gen%s" % gen)
    if width is not None:
        parts.append("x%s" % width)
    gbps = available_gbps(gen, width)
    text = " ".join(parts) or "unknown"
    return "%s (%s Gb/s)" % (text, fmt_num(round(gbps))) if gbps else text


def parse_pcie_sysfs(text):
    """{devices: {ca: {current_gen, current_width, max_gen, max_width, lines}}, errors, warnings}.

    A value that cannot be read ("Unknown", a garbled line) is an error naming the line; the
    device's other values and the other devices are still returned.
    """
    result = new_result(devices={})
    if text is None:
        result["errors"].append("no output")
        return result
    for number, line in enumerate(lines_of(text), 1):
        if not line.strip():
            continue
        match = _SYSFS_LINE.match(line.strip())
        if not match:
            result["warnings"].append("line %d: not a PCIe link attribute: %s" % (number, line.strip()[:120]))
            continue
        device = result["devices"].setdefault(match.group("ca"), {
            "current_gen": None, "current_width": None, "max_gen": None, "max_width": None, "lines": []})
        device["lines"].append(line.strip())
        kind, what = match.group("file").split("_link_")
        value = match.group("value").strip()
        if what == "speed":
            gen = gen_of_speed(value)
            if gen is None:
                result["errors"].append("line %d: %s %s link speed is %r, not a PCIe speed"
                                        % (number, match.group("ca"), kind, value))
            device["%s_gen" % kind] = gen
        else:
            width = int(value) if is_digits(value) and int(value) in WIDTHS else None
            if width is None:
                result["errors"].append("line %d: %s %s link width is %r, not a PCIe width"
                                        % (number, match.group("ca"), kind, value))
            device["%s_width" % kind] = width
    if not result["devices"] and not result["errors"]:
        result["errors"].append("no PCIe link attribute in the output")
    return result


def judge_link(check, link, expected_gen, expected_width, idle=None):
    """One device's result, or None when it is a pass (the caller folds passes into one).

    link: {name, component, current_gen, current_width, max_gen (the link's: the lower of the
    device's and the slot's, when the tool shows both), device_max_gen, max_width, evidence,
    summary (the lines a pass shows), tool}; the expected values default to the device's own
    maximum. idle: the power state ('P8') when the link may have clocked down to save power (its
    current generation is then not judged; the width and the link's maximum still are).
    """
    name, component = link["name"], link.get("component")
    evidence, tool = link.get("evidence"), link.get("tool")
    gen, width = link.get("current_gen"), link.get("current_width")
    own_max = link.get("device_max_gen") if link.get("device_max_gen") is not None else link.get("max_gen")
    want_gen = expected_gen if expected_gen is not None else own_max
    want_width = expected_width if expected_width is not None else link.get("max_width")
    metrics = {"gen": gen, "width": width, "max_gen": link.get("max_gen"), "max_width": link.get("max_width"),
               "expected_gen": want_gen, "expected_width": want_width, "gbps": available_gbps(gen, width)}
    if gen is None or width is None:
        return check_result(check, ERROR, "%s PCIe link cannot be read (generation %s, width %s)"
                            % (name, gen if gen is not None else "unknown",
                               "x%s" % width if width is not None else "unknown"),
                            metrics, component, evidence=evidence, tool=tool)
    problems = []
    if want_width is not None and width < want_width:
        problems.append("trained at x%d, expected x%d" % (width, want_width))
    gen_low = want_gen is not None and gen < want_gen
    if gen_low and not idle:
        problems.append("runs at Gen%d, expected Gen%d" % (gen, want_gen))
    max_gen = link.get("max_gen")
    if want_gen is not None and max_gen is not None and max_gen < want_gen:
        problems.append("its link's maximum is Gen%d (the slot or the device cannot reach Gen%d)"
                        % (max_gen, want_gen))
    if problems:
        return check_result(check, FAIL, "%s PCIe link %s: %s instead of %s"
                            % (name, "; ".join(problems), describe(gen, width), describe(want_gen, want_width)),
                            metrics, component, evidence=evidence, tool=tool)
    if gen_low:
        return check_result(check, SKIP, "%s PCIe link at Gen%d x%d in %s: the driver lowers an idle GPU's "
                            "link generation, so it is judged only under load (P0); the width x%d is as "
                            "expected" % (name, gen, width, idle, width), metrics, component,
                            evidence=evidence, tool=tool)
    return None


def fold_passes(check, kind, links, results, expected_gen, expected_width, tool=None):
    """The results plus one pass naming the devices whose links are as expected (if any)."""
    bad = set(r.get("component") for r in results)
    good = [link for link in links if link.get("component") not in bad]
    if not good:
        return results
    shapes = sorted(set(describe(link.get("current_gen"), link.get("current_width")) for link in good))
    want = " ".join(part for part in ("Gen%s" % expected_gen if expected_gen else "",
                                      "x%s" % expected_width if expected_width else "") if part)
    evidence = []
    for link in good[:4]:
        evidence.extend(link.get("summary") or (link.get("evidence") or [])[:3])
    others = sorted(c for c in bad if c)
    return results + [check_result(
        check, PASS, "%d %s%s at PCIe %s, as expected (%s)%s" % (
            len(good), kind, "" if len(good) == 1 else "s", join_names(shapes),
            want or "each device's own maximum", "; %s judged above" % join_names(others) if others else ""),
        {"devices": [link["name"] for link in good]}, evidence=evidence, tool=tool)]
