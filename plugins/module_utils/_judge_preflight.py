# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge the preflight stage: required tools present, versions recorded for uniformity.

judge_preflight_stage(outputs, profile, options) -> (checks, metrics). outputs maps the stage's
tool names to their text, or to None when a replayed set did not capture that tool.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import parse_nvidia_smi_csv
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat

_DCGMI_VERSION = re.compile(r"^\s*Version\s*:\s*(\S+)", re.MULTILINE)


def _not_captured(check, tool):
    return check_result(check, SKIP, "%s was not captured: not judged" % tool, tool=tool)


def judge_preflight_stage(outputs, profile, options):
    """Required tools present; versions recorded for the cluster-wide uniformity checks."""
    checks, metrics = [], {}
    if outputs.get("tools") is None:
        checks.append(_not_captured("tool_present", "tools"))
    else:
        found = set()
        for line in outputs["tools"].splitlines():
            path = line.strip()
            if path.startswith("/"):
                found.update((path, path.rsplit("/", 1)[-1]))
        for tool in options.get("required_tools") or []:
            if tool in found or tool.rsplit("/", 1)[-1] in found and "/" not in tool:
                checks.append(check_result("tool_present", PASS, "%s is installed" % tool, component=tool,
                                           tool="tools"))
            else:
                checks.append(check_result("tool_present", FAIL, "%s is not installed (not found on PATH)"
                                           % tool, component=tool, tool="tools"))
    if outputs.get("nvidia-smi-versions") is None:
        checks.append(_not_captured("driver_version", "nvidia-smi-versions"))
    else:
        csv = parse_nvidia_smi_csv(outputs["nvidia-smi-versions"])
        if csv["errors"] or not csv["gpus"]:
            checks.append(check_result("versions", ERROR, "nvidia-smi --query-gpu: output unreadable: %s"
                                       % "; ".join(csv["errors"] or ["no GPU rows"]), tool="nvidia-smi-versions"))
        else:
            drivers = sorted(set(str(g.get("driver_version")) for g in csv["gpus"]))
            metrics["driver_version"] = drivers[0] if len(drivers) == 1 else ",".join(drivers)
            metrics["vbios_version"] = ",".join(sorted(set(str(g.get("vbios_version")) for g in csv["gpus"])))
            metrics["gpu_count"] = len(csv["gpus"])
            expected = options.get("expected_driver")
            if expected and metrics["driver_version"] != expected:
                checks.append(check_result("driver_version", FAIL, "driver %s is installed, expected %s"
                                           % (metrics["driver_version"], expected),
                                           {"found": metrics["driver_version"], "expected": expected},
                                           tool="nvidia-smi-versions"))
            else:
                checks.append(check_result("driver_version", PASS, "driver %s" % metrics["driver_version"],
                                           {"found": metrics["driver_version"]}, tool="nvidia-smi-versions"))
    if outputs.get("dcgmi-version") is not None:
        match = _DCGMI_VERSION.search(outputs["dcgmi-version"])
        if match:
            metrics["dcgm_version"] = match.group(1)
        else:
            checks.append(check_result("versions", ERROR, "dcgmi -v: no 'Version :' line in its output",
                                       tool="dcgmi-version"))
    if outputs.get("ibstat-versions") is not None:
        ib = parse_ibstat(outputs["ibstat-versions"])
        if ib["errors"]:
            checks.append(check_result("versions", ERROR, "ibstat: output unreadable: %s" % "; ".join(ib["errors"]),
                                       tool="ibstat-versions"))
        else:
            metrics["nic_firmware"] = ",".join(sorted(set(str(ca.get("firmware")) for ca in ib["cas"])))
    return checks, metrics
