# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge the preflight stage: required tools present, versions recorded for uniformity.

judge_preflight_stage(outputs, profile, options) -> (checks, metrics). outputs maps the stage's
tool names to their text, or to None when a replayed set did not capture that tool:
tools (which), nvidia-smi-versions (--query-gpu CSV), nvidia-smi-list (nvidia-smi -L),
dcgmi-version (dcgmi -v), ibstat-versions (ibstat).

Checks (each with the printed lines it rests on as evidence):
- tool_present     each required program is on PATH
- driver_version   the driver every GPU row reports (vs check_preflight_expected_driver)
- gpu_list         nvidia-smi -L lists the GPUs; a GPU it cannot reach ("Unable to determine
                   the device handle for GPU <bus id>: GPU is lost") fails
- dcgm_version     dcgmi -v: the DCGM version, and the host engine's where it shows it (dcgmi and a
                   host engine of another version do not work together: fail)
- versions         a version output that cannot be read (reported next to what could be)

Metrics: driver_version, vbios_version, nic_firmware, dcgm_version (uniformity); gpu_count and
gpu_bus_ids (the CSV), gpu_identity {tool: {count, bus_ids, uuids}} for the cluster-wide
gpu.identity check (nvidia-smi-versions and nvidia-smi-list).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    normalize_bus_id, parse_nvidia_smi_csv, parse_nvidia_smi_list)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat

_DCGMI_VERSION = re.compile(r"^\s*Version\s*:\s*(\S+)", re.MULTILINE)


def _not_captured(check, tool):
    return check_result(check, SKIP, "%s was not captured: not judged" % tool, tool=tool)


def _tools(outputs, options, checks):
    found = {}
    for line in outputs["tools"].splitlines():
        path = line.strip()
        if path.startswith("/"):
            found.setdefault(path, path)
            found.setdefault(path.rsplit("/", 1)[-1], path)
    for tool in options.get("required_tools") or []:
        path = found.get(tool) or (found.get(tool.rsplit("/", 1)[-1]) if "/" not in tool else None)
        if path:
            checks.append(check_result("tool_present", PASS, "%s is installed (%s)" % (tool, path),
                                       component=tool, evidence=[path], tool="tools"))
        else:
            # What `which` did print: the paths it found (or its "no dcgmi in (...)" line).
            printed = [l for l in outputs["tools"].splitlines() if l.strip()]
            checks.append(check_result("tool_present", FAIL, "%s is not installed (not found on PATH)"
                                       % tool, component=tool, tool="tools",
                                       evidence=printed or ["which printed no path for %s" % tool]))


def _versions_csv(text, options, checks, metrics):
    csv = parse_nvidia_smi_csv(text)
    if csv["errors"]:
        checks.append(check_result("versions", ERROR, "nvidia-smi --query-gpu: %s: %s"
                                   % ("part of the output is unreadable (the rest is judged)" if csv["gpus"]
                                      else "output unreadable", "; ".join(csv["errors"])),
                                   {"errors": list(csv["errors"])}, evidence=csv["errors"],
                                   tool="nvidia-smi-versions"))
    if not csv["gpus"]:
        return None
    clean = not csv["errors"]  # a partly unreadable output would make its count look like a disagreement
    rows = [csv["header_line"]] + list(csv["row_lines"])
    drivers = sorted(set(str(g.get("driver_version")) for g in csv["gpus"]))
    metrics["driver_version"] = drivers[0] if len(drivers) == 1 else ",".join(drivers)
    metrics["vbios_version"] = ",".join(sorted(set(str(g.get("vbios_version")) for g in csv["gpus"])))
    buses = [normalize_bus_id(g.get("pci.bus_id") or "") for g in csv["gpus"]]
    if clean:
        metrics["gpu_count"] = len(csv["gpus"])
        if any(buses):
            metrics["gpu_bus_ids"] = [b for b in buses if b]
    uuids = [g.get("uuid") for g in csv["gpus"] if g.get("uuid")]
    expected = options.get("expected_driver")
    if expected and metrics["driver_version"] != expected:
        checks.append(check_result("driver_version", FAIL, "driver %s is installed, expected %s"
                                   % (metrics["driver_version"], expected),
                                   {"found": metrics["driver_version"], "expected": expected},
                                   evidence=rows, tool="nvidia-smi-versions"))
    else:
        checks.append(check_result("driver_version", PASS, "driver %s on all %d GPUs"
                                   % (metrics["driver_version"], len(csv["gpus"])),
                                   {"found": metrics["driver_version"]}, evidence=rows,
                                   tool="nvidia-smi-versions"))
    if not clean:
        return None
    return {"count": len(csv["gpus"]), "bus_ids": metrics.get("gpu_bus_ids"), "uuids": uuids or None}


def _gpu_list(text, checks):
    listed = parse_nvidia_smi_list(text)
    if listed["errors"]:
        checks.append(check_result("gpu_list", ERROR, "nvidia-smi -L: %s"
                                   % "; ".join(listed["errors"]), {"errors": list(listed["errors"])},
                                   evidence=listed["errors"], tool="nvidia-smi-list"))
    lines = [g["text"] for g in listed["gpus"]]
    for lost in listed["unreachable"]:
        checks.append(check_result(
            "gpu_list", FAIL, "nvidia-smi -L cannot reach the GPU at %s: %s; reboot or reseat before use"
            % (lost["bus_id"] or "an unreadable bus id", lost["reason"] or "no reason given"),
            {"bus_id": lost["bus_id"], "reason": lost["reason"]}, lost["bus_id"],
            evidence=[lost["text"]], tool="nvidia-smi-list"))
    if listed["no_devices"] and not listed["gpus"]:
        checks.append(check_result("gpu_list", FAIL, "nvidia-smi -L: No devices were found",
                                   evidence=["No devices were found"], tool="nvidia-smi-list"))
    elif not listed["unreachable"] and not listed["errors"] and listed["gpus"]:
        checks.append(check_result("gpu_list", PASS, "nvidia-smi -L lists %d GPUs (%s)"
                                   % (len(listed["gpus"]), join_names(sorted(set(
                                       g["name"] or "?" for g in listed["gpus"])))),
                                   {"count": len(listed["gpus"])}, evidence=lines, tool="nvidia-smi-list"))
    if listed["errors"] or not listed["gpus"] and not listed["no_devices"] and not listed["unreachable"]:
        return None
    uuids = [g["uuid"] for g in listed["gpus"] if g["uuid"]]
    unreachable = [u["bus_id"] for u in listed["unreachable"] if u["bus_id"]]
    return {"count": len(listed["gpus"]), "bus_ids": None, "uuids": uuids or None,
            "unreachable": unreachable or None}


def judge_preflight_stage(outputs, profile, options):
    """Required tools present; versions recorded for the cluster-wide uniformity checks."""
    checks, metrics = [], {}
    identity = {}
    if outputs.get("tools") is None:
        checks.append(_not_captured("tool_present", "tools"))
    else:
        _tools(outputs, options, checks)
    if outputs.get("nvidia-smi-versions") is None:
        checks.append(_not_captured("driver_version", "nvidia-smi-versions"))
    else:
        seen = _versions_csv(outputs["nvidia-smi-versions"], options, checks, metrics)
        if seen:
            identity["nvidia-smi-versions"] = seen
    if outputs.get("nvidia-smi-list") is None:
        if "nvidia-smi-list" in outputs:
            checks.append(_not_captured("gpu_list", "nvidia-smi-list"))
    else:
        seen = _gpu_list(outputs["nvidia-smi-list"], checks)
        if seen:
            identity["nvidia-smi-list"] = seen
    if identity:
        metrics["gpu_identity"] = identity
        if "gpu_count" not in metrics and "nvidia-smi-list" in identity:
            metrics["gpu_count"] = identity["nvidia-smi-list"]["count"]
    if outputs.get("dcgmi-version") is not None:
        _dcgm_versions(outputs["dcgmi-version"], checks, metrics)
    if outputs.get("ibstat-versions") is not None:
        ib = parse_ibstat(outputs["ibstat-versions"])
        if ib["errors"]:
            checks.append(check_result("versions", ERROR, "ibstat: %s: %s"
                                       % ("part of the output is unreadable (the rest is judged)" if ib["cas"]
                                          else "output unreadable", "; ".join(ib["errors"])),
                                       evidence=ib["errors"], tool="ibstat-versions"))
        if ib["cas"]:
            metrics["nic_firmware"] = ",".join(sorted(set(str(ca.get("firmware")) for ca in ib["cas"])))
    return checks, metrics


def _dcgm_versions(text, checks, metrics):
    """dcgmi -v prints its own build ("Local build info:" in 3.x/4.x) and the host engine's."""
    found, section = {}, "local"
    lines = text.splitlines()
    evidence = []
    for line in lines:
        if line.strip().lower().startswith("hostengine build info"):
            section = "hostengine"
        match = _DCGMI_VERSION.match(line)
        if match and section not in found:
            found[section] = match.group(1)
            evidence.append(line.strip())
    if not found:
        checks.append(check_result("versions", ERROR, "dcgmi -v: no 'Version :' line in its output",
                                   evidence=lines[:6], tool="dcgmi-version"))
        return
    local = found.get("local") or found.get("hostengine")
    metrics["dcgm_version"] = local
    engine = found.get("hostengine")
    if engine and engine != local:
        checks.append(check_result("dcgm_version", FAIL, "dcgmi %s talks to a DCGM host engine %s: the versions must "
                                   "match (restart nv-hostengine from the installed DCGM)" % (local, engine),
                                   {"found": local, "hostengine": engine}, component="dcgm", evidence=evidence,
                                   tool="dcgmi-version"))
    else:
        checks.append(check_result("dcgm_version", PASS, "DCGM %s%s" % (
            local, " (host engine %s)" % engine if engine else ""), {"found": local, "hostengine": engine},
            component="dcgm", evidence=evidence, tool="dcgmi-version"))
