# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink state per link (``nvidia-smi nvlink -s``), judged against the profile's link count and rate.

The format (one block per GPU; a down link prints ``<inactive>``)::

    GPU 0: NVIDIA GB200 (UUID: GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde)
             Link 0: 53.125 GB/s
             Link 1: <inactive>

parse_nvlink_status(text) -> {gpus: {index: {name, uuid, links: {link: GB/s or None}, lines}},
errors}. A GPU without NVLink prints its header only. Any other line is an error next to what the
rest shows (a prompt, a driver message), never instead of it.

judge_nvlink_status(parsed, profile) -> ``gpu.nvlink_links`` checks: every GPU shows
``nvlink.links_per_gpu`` links, each active at ``nvlink.link_gb_s`` (GB/s as printed; a link more
than 2 % below it is slow: a link trained at a lower width or speed). A down or slow link is a
failure naming the GPU and the link. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names, profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import capped

CHECK = "gpu.nvlink_links"
TOOL = "nvlink-status"
SLOW_FRACTION = 0.98  # nvidia-smi prints the trained rate to 3 decimals; a width or speed step is far below
_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]+)\))?\s*$")
_LINK = re.compile(r"^Link (\d+): (?:([0-9]+(?:\.[0-9]+)?) GB/s|<(inactive)>)\s*$", re.I)
_SKIPPED = re.compile(r"^(?:\$ |# |\[\.\.\.\]$)")


@capped(8)
def parse_nvlink_status(text):
    """{gpus: {index: {name, uuid, links: {link: GB/s or None (inactive)}, lines}}, errors}."""
    result = {"gpus": {}, "errors": []}
    gpu = None
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or _SKIPPED.match(line):
            continue
        match = _GPU.match(line)
        if match:
            gpu = {"name": match.group(2), "uuid": match.group(3), "links": {}, "lines": {"header": line}}
            result["gpus"][int(match.group(1))] = gpu
            continue
        match = _LINK.match(line)
        if match and gpu is not None:
            link = int(match.group(1))
            gpu["links"][link] = None if match.group(3) else float(match.group(2))
            gpu["lines"][link] = line
            continue
        result["errors"].append("line %d: not an nvidia-smi nvlink -s line: %s" % (number, line[:120]))
    if not result["gpus"] and not result["errors"]:
        result["errors"].append("no 'GPU <n>: <name>' lines: empty or not `nvidia-smi nvlink -s` output")
    return result


def _gpu_problem(index, gpu, want_links, want_rate):
    """(text, evidence) for one GPU's links, or None when every link is up at the rate."""
    links = gpu["links"]
    inactive = sorted(link for link, rate in links.items() if rate is None)
    slow = sorted(link for link, rate in links.items() if rate is not None and want_rate
                  and rate < want_rate * SLOW_FRACTION)
    active = len(links) - len(inactive)
    parts = []
    if active < want_links:
        parts.append("%d of %d NVLinks active" % (active, want_links))
    if inactive:
        parts.append("inactive: %s" % join_names(["Link %d" % n for n in inactive], limit=18))
    if slow:
        parts.append("below %s GB/s: %s" % (want_rate, join_names(
            ["Link %d at %s GB/s" % (n, links[n]) for n in slow], limit=18)))
    if not parts:
        return None
    shown = [gpu["lines"]["header"]] + [gpu["lines"][n] for n in inactive + slow]
    return "GPU%d %s" % (index, "; ".join(parts)), shown


def judge_nvlink_status(parsed, profile):
    """gpu.nvlink_links checks for one node (see the module docstring); [] when not collected."""
    if parsed is None:
        return []
    want_links, want_rate = profile_get(profile, "nvlink.links_per_gpu"), profile_get(profile, "nvlink.link_gb_s")
    if not want_links:
        return [check_result(CHECK, SKIP, "the profile sets no NVLink link count (nvlink.links_per_gpu): "
                             "the links were not judged", tool=TOOL)]
    results = []
    if parsed.get("errors"):
        results.append(check_result(CHECK, ERROR, "nvidia-smi nvlink -s: %s%s" % (
            "; ".join(parsed["errors"][:3]), " (the rest is judged)" if parsed["gpus"] else ""),
            {"tool": TOOL}, evidence=parsed["errors"][:12], tool=TOOL))
    for index in sorted(parsed["gpus"]):
        found = _gpu_problem(index, parsed["gpus"][index], want_links, want_rate)
        if found:
            results.append(check_result(CHECK, FAIL, found[0], {"expected_links": want_links,
                                                                "expected_gb_s": want_rate},
                                        "GPU%d" % index, evidence=found[1], tool=TOOL))
    if results or not parsed["gpus"]:
        return results
    first = parsed["gpus"][min(parsed["gpus"])]
    return [check_result(CHECK, PASS, "all %d GPUs: %d NVLinks each active%s" % (
        len(parsed["gpus"]), want_links, " at %s GB/s" % want_rate if want_rate else ""),
        {"expected_links": want_links, "expected_gb_s": want_rate},
        evidence=[first["lines"]["header"]] + [first["lines"][n] for n in sorted(first["links"])[:2]], tool=TOOL)]
