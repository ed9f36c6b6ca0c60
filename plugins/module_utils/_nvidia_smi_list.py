# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``nvidia-smi -L`` (``--list-gpus``) output.

Public through _nvidia_smi (parse_nvidia_smi_list). Standard library only; never raises.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_values import (
    _echo,
    normalize_bus_id,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    capped,
    lines_of,
    new_result,
    strip_launcher_prefix,
)


_MAX_REPORTED = 20


_LIST_GPU = re.compile(r"^GPU\s+(\d+)\s*:\s*(.*?)\s*\(UUID:\s*(\S+?)\s*\)\s*$")
_LIST_MIG = re.compile(r"^MIG\s+(\S+)\s+Device\s+(\d+)\s*:\s*\(UUID:\s*(\S+?)\s*\)\s*$")
_LIST_LOST = re.compile(r"^Unable to determine the device handle for\s*(?:GPU)?\s*([0-9A-Fa-f:.]+)\s*:\s*(.*)$",
                        re.IGNORECASE)
_UUID = re.compile(r"^(?:GPU|MIG)-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$")
_NO_DEVICES = re.compile(r"^No devices were found\s*$", re.IGNORECASE)


@capped(4)
def parse_nvidia_smi_list(text):
    """Parse ``nvidia-smi -L`` (``--list-gpus``) output; never raises.

    Result keys: gpus (``{index, name, uuid, line, text, mig: [{profile, device, uuid}]}`` in
    output order), unreachable (``{bus_id, reason, line, text}`` for each "Unable to determine
    the device handle for GPU <bus id>: <reason>" line, the form a GPU that fell off the bus or
    is lost takes), no_devices (the tool said "No devices were found"), errors, warnings.
    """
    result = new_result(gpus=[], unreachable=[], no_devices=False)
    errors = result["errors"]
    if not isinstance(text, str):
        errors.append("expected the text of `nvidia-smi -L`, got %s" % type(text).__name__)
        return result
    seen = set()
    unreadable = 0
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        if _echo(line):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s" % (lineno, line[:120]))
            continue
        match = _LIST_GPU.match(line)
        if match:
            index, uuid = int(match.group(1)), match.group(3)
            if not _UUID.match(uuid):
                errors.append("line %d: GPU %d: %r is not a GPU UUID" % (lineno, index, uuid[:60]))
                uuid = None
            if index in seen:
                errors.append("line %d: GPU %d is listed twice" % (lineno, index))
                continue
            seen.add(index)
            result["gpus"].append({"index": index, "name": match.group(2) or None, "uuid": uuid,
                                   "line": lineno, "text": line, "mig": []})
            continue
        match = _LIST_MIG.match(line)
        if match and result["gpus"]:
            result["gpus"][-1]["mig"].append({"profile": match.group(1), "device": int(match.group(2)),
                                              "uuid": match.group(3)})
            continue
        match = _LIST_LOST.match(line)
        if match:
            bus_id = normalize_bus_id(match.group(1).rstrip(":"))
            if bus_id is None:
                errors.append("line %d: %r is not a PCI bus id: %s" % (lineno, match.group(1)[:40], line[:160]))
            result["unreachable"].append({"bus_id": bus_id, "reason": match.group(2).strip() or None,
                                          "line": lineno, "text": line})
            continue
        if _NO_DEVICES.match(line):
            result["no_devices"] = True
            continue
        unreadable += 1
        if unreadable <= _MAX_REPORTED:
            errors.append("line %d: not an `nvidia-smi -L` line: %s" % (lineno, line[:160]))
    if unreadable > _MAX_REPORTED:
        errors.append("%d more unreadable lines" % (unreadable - _MAX_REPORTED))
    indexes = [g["index"] for g in result["gpus"]]
    if indexes and sorted(indexes) != list(range(len(indexes))):
        result["warnings"].append("GPU indexes %s are not 0..%d (queried with -i, or lines lost?)"
                                  % (",".join(str(i) for i in indexes), len(indexes) - 1))
    if not result["gpus"] and not result["unreachable"] and not result["no_devices"] and not errors:
        errors.append("empty input: no `nvidia-smi -L` output")
    return result
