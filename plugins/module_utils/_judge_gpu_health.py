# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge GPU health from nvidia-smi -q, nvidia-smi --query-gpu (CSV) and the kernel's Xid lines.

judge_gpu_health(smi_q, smi_csv, xid, profile, window=None, clock=None) takes the parse results
of parse_nvidia_smi_q, parse_nvidia_smi_csv and parse_xid_log (any may be None when it was not
collected), and optionally the Xid window (parse_xid_window) and the node's clock
(parse_node_clock). nvidia-smi -q is preferred; CSV fields fill in what -q lacks (or stand in
when -q is missing or cut short).

A parser error is a gpu.parse error reported next to the findings from the rest of the output
(a pending row remap in a -q report whose last section was cut off is still named); a value that
cannot be real (a negative temperature, a count of 1e309) makes that GPU's check an error, never
a pass. Every result carries the printed lines it rests on as evidence.

GPUs are named "GPU<index> (<PCI bus id>)": nvidia-smi renumbers the GPUs it sees, so only the
bus id names a physical GPU. A missing GPU is named by bus id and slot from the profile's
gpu_bus_ids layout when the node's GPUs fit it (otherwise the cluster-wide gpu.identity check
names it from the layout its peers show).

Xid window: events are counted from the window start (the node's last passed run, boot, or a
configured time or duration, as the stage's xid-window output says), placed in time with the
node's clock (node-clock output) for plain dmesg stamps; older events are history: a pass with a
warning naming them. An event that cannot be placed in time is counted.

Checks (component = "GPU<index>" for per-GPU findings):
- gpu.parse           a tool's output was missing, or a part of it unreadable
- gpu.count           GPUs seen vs gpus_per_node; a missing one named by bus id and slot
- gpu.model           product name vs gpu_name_pattern
- gpu.ecc             volatile/aggregate uncorrectable ECC errors; many correctable ones warn
- gpu.retired_pages   retired page count and pending retirements
- gpu.remapped_rows   pending remaps, remapping failure, uncorrectable remaps
- gpu.reset_required  the driver asks for a GPU reset (or drain and reset)
- gpu.throttle        active clock event reasons in throttle.fail (fail) or throttle.warn (warning)
- gpu.temperature     GPU and memory temperature vs the profile or the GPU's own limits
- gpu.xid             Xid events in the window by the profile's severity lists; older ones warn
- gpu.lost            a GPU has fallen off the bus
- gpu.driver          driver version on the profile's driver_branch
- gpu.fabric          NVLink fabric registration per GPU (State, Status; on rack-scale profiles the
                      clique, the cluster and the fabric Health block), _nvlink_fabric
- gpu.nvlink_links    every NVLink of every GPU up at the profile's rate (nvidia-smi nvlink -s),
                      _nvlink_status
- gpu.imex            rack-scale profiles: the tray's IMEX domain UP, every node READY and connected
                      (nvidia-imex-ctl -N, where the role collects it), _imex
- gpu.pcie_link       PCIe link width and generation vs pcie.gpu_width / pcie.gpu_gen (default: the
                      GPU's own maximum); the generation only in P0, as idle GPUs clock the link down

This module runs the checks and the stage; the parts live next to it: _judge_gpu_health_views
(one view per GPU from -q and CSV, GPU identity, the tool names), _judge_gpu_health_memory
(gpu.ecc, gpu.retired_pages, gpu.remapped_rows), _judge_gpu_health_clocks (gpu.throttle,
gpu.temperature) and _judge_gpu_health_xid (gpu.xid, gpu.lost).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names, parse_error_results, profile_get, warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_clocks import _judge_temperature, _judge_throttle
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_memory import _judge_ecc, _judge_remap, _judge_retired
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_views import (
    STAGE_CLOCK,
    STAGE_CSV,
    STAGE_Q,
    STAGE_WINDOW,
    STAGE_XID,
    TOOL_CSV,
    TOOL_Q,
    TOOL_XID,
    _ev,
    _gpu_views,
    _invalid,
    _usable,
    describe_missing,
    name_missing,
    profile_layout,
)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health_xid import XID_NAMES, _judge_xid, _window_of
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    normalize_bus_id, parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._imex import (
    TOOL as STAGE_IMEX, imex_summary, judge_imex, parse_imex_status)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_fabric import domain_of, judge_fabric, parse_fabric_blocks
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_status import (
    TOOL as STAGE_NVLINK, judge_nvlink_status, parse_nvlink_status)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._pcie_link import fold_passes, judge_link
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_window import parse_node_clock, parse_xid_window

# The interface other modules import from here.
__all__ = ["STAGE_CLOCK", "STAGE_CSV", "STAGE_Q", "STAGE_WINDOW", "STAGE_XID", "TOOL_CSV", "TOOL_Q", "TOOL_XID",
           "XID_NAMES", "describe_missing", "gpu_identity_of", "judge_gpu_health", "judge_gpu_health_stage",
           "name_missing", "profile_layout"]


def _parse_results(tool, stage_tool, parsed):
    """gpu.parse errors for a parse result: missing, unreadable or (partly) garbled."""
    failed = parse_error_results("gpu.parse", tool, parsed)
    for result in failed:
        result["tool"] = stage_tool
        if isinstance(parsed, dict) and parsed.get("errors"):
            result["evidence"] = [str(e) for e in parsed["errors"]][:12]
            if parsed.get("gpus"):
                result["message"] = result["message"].replace(
                    "output unreadable:", "part of the output is unreadable (the rest is judged):")
    return failed


def judge_gpu_health(smi_q, smi_csv, xid, profile, window=None, clock=None):
    """List of check results for one node's GPUs (see the module docstring)."""
    results = []
    if smi_q is not None:
        results.extend(_parse_results(TOOL_Q, STAGE_Q, smi_q))
    if smi_csv is not None:
        results.extend(_parse_results(TOOL_CSV, STAGE_CSV, smi_csv))
    q_ok = _usable(smi_q)
    csv_ok = _usable(smi_csv)
    if smi_q is not None and not (smi_q or {}).get("errors") and not q_ok:
        results.append(check_result("gpu.parse", ERROR, "%s: the report lists no GPUs" % TOOL_Q,
                                    {"tool": TOOL_Q}, tool=STAGE_Q))
    views = []
    if not q_ok and not csv_ok:
        if smi_q is None and smi_csv is None:
            # Neither was captured (a replayed set with the kernel log only): nothing to judge,
            # not a finding. (Live, a tool that printed nothing is an error before this.)
            results.append(check_result(
                "gpu.parse", SKIP, "%s and %s were not captured: the GPUs' state was not judged"
                % (TOOL_Q, TOOL_CSV), {"tool": TOOL_Q}))
    else:
        views = _gpu_views(smi_q if q_ok else None, smi_csv if csv_ok else None)
        results.extend(_judge_count(views, profile, smi_q if q_ok else None, smi_csv if csv_ok else None))
        results.extend(_judge_model(views, profile))
        results.extend(_judge_ecc(views, profile))
        results.extend(_judge_retired(views, profile))
        results.extend(_judge_remap(views, profile))
        results.extend(_judge_reset(views))
        results.extend(_judge_throttle(views, profile))
        results.extend(_judge_temperature(views, profile))
        results.extend(_judge_driver(smi_q if q_ok else None, smi_csv if csv_ok else None, profile))
        results.extend(_judge_pcie(views, profile))
        results.extend(judge_fabric(views, profile))
    results.extend(_judge_xid(xid, views, profile, window, clock))
    return results


def _judge_count(views, profile, smi_q, smi_csv):
    expected = profile_get(profile, "gpus_per_node")
    if expected is None:
        return []
    tool_name = TOOL_Q if smi_q else TOOL_CSV
    tool = STAGE_Q if smi_q else STAGE_CSV
    found = len(views)
    present = [v["bus_id"] for v in views if v.get("bus_id")]
    evidence = [line for v in views for line in _ev(v, "bus_id")[:1]]
    if smi_q and smi_q.get("attached_line"):
        evidence = [smi_q["attached_line"]] + evidence
    metrics = {"found": found, "expected": expected, "bus_ids": present}
    layout = profile_layout(profile)
    source = "the %s layout" % profile_get(profile, "name", "profile")
    if found == expected:
        # (the bus ids are in the metrics: the cross-check of tools and peers reads them there)
        message = "%s shows %d GPUs, as expected%s" % (tool_name, found, "" if present else ", without bus ids")
        named = name_missing(present, layout, expected) if layout else None
        if named and named["reason"]:
            return [warning_result("gpu.count", "%s; their bus ids are not %s (%s), so a missing GPU on "
                                   "this board cannot be named from the profile"
                                   % (message, source, named["reason"]), metrics, evidence=evidence, tool=tool)]
        return [check_result("gpu.count", PASS, message, metrics, evidence=evidence, tool=tool)]
    attached = (smi_q or {}).get("attached_gpus")
    extra = ""
    if isinstance(attached, int) and attached != found:
        extra = " (the driver reports %d attached)" % attached
    if smi_q and smi_q.get("errors") and isinstance(attached, int) and attached >= expected > found:
        # The driver sees every GPU; the text holds fewer sections because it was cut: the count
        # of what the text shows is not the node's.
        return [check_result("gpu.count", ERROR, "%s shows %d GPU section(s) of the %d the driver reports "
                             "attached: the output is incomplete, the GPUs cannot be counted from it"
                             % (tool_name, found, attached), metrics, evidence=evidence, tool=tool)]
    named = name_missing(present, layout, expected)
    if found < expected and (named["missing"] or named["unnamed"]) and not named["reason"]:
        what = "missing %s" % describe_missing(named, source)
        metrics["missing"] = [{"slot": slot, "bus_id": bus} for slot, bus in named["missing"]]
    elif found < expected:
        what = ("present: %s; the missing one cannot be named: %s (the cluster-wide gpu.identity check "
                "names it from the layout its peers show)"
                % (join_names(present, limit=16) or "no bus ids", named["reason"] if layout else
                   "the profile has no GPU bus-id layout (gpu_bus_ids)"))
    else:
        what = "present: %s" % join_names(present, limit=16)
    return [check_result("gpu.count", FAIL, "%s shows %d GPUs, expected %d%s; %s"
                         % (tool_name, found, expected, extra, what), metrics, evidence=evidence, tool=tool)]


def _judge_model(views, profile):
    pattern = profile_get(profile, "gpu_name_pattern")
    if not pattern:
        return []
    regex = re.compile(pattern)
    results = []
    if views and all(v.get("product_name") is None for v in views):
        # A fragment (nvidia-smi -q -d ECC, PAGE_RETIREMENT ...) carries no Product Name at all.
        return [check_result("gpu.model", SKIP, "the output shows no product name (a section of -q only): "
                             "the GPU model was not judged", {"pattern": pattern}, tool=views[0]["tool"])]
    for view in views:
        name = view.get("product_name")
        if name is None:
            results.append(check_result("gpu.model", ERROR, "%s reports no product name"
                                        % view["name"], {}, view["label"], evidence=_ev(view, "product"),
                                        tool=view["tool"]))
        elif not regex.search(name):
            results.append(check_result(
                "gpu.model", FAIL, "%s is a '%s', expected a name matching '%s'"
                % (view["name"], name, pattern), {"found": name, "pattern": pattern},
                view["label"], evidence=_ev(view, "product"), tool=view["tool"]))
    if not results:
        names = sorted(set(v.get("product_name") for v in views))
        results.append(check_result("gpu.model", PASS, "all %d GPUs are %s" % (len(views), join_names(names)),
                                    {"pattern": pattern}, evidence=_ev(views[0], "product"),
                                    tool=views[0]["tool"]))
    return results


def _judge_reset(views):
    results = []
    for view in views:
        evidence = _ev(view, "reset")
        if _invalid(view, "reset"):
            results.append(check_result("gpu.reset_required", ERROR, "%s reset status cannot be read: %s"
                                        % (view["name"], "; ".join(_invalid(view, "reset"))), {},
                                        view["label"], evidence=evidence, tool=view["tool"]))
        elif view.get("reset_required"):
            results.append(check_result("gpu.reset_required", FAIL, "%s reports that a GPU reset is "
                                        "required" % view["name"], {}, view["label"], evidence=evidence,
                                        tool=view["tool"]))
        elif view.get("drain_and_reset"):
            results.append(check_result("gpu.reset_required", FAIL, "%s recommends draining the "
                                        "node and resetting the GPU" % view["name"], {},
                                        view["label"], evidence=evidence, tool=view["tool"]))
    return results


def _judge_driver(smi_q, smi_csv, profile):
    branch = profile_get(profile, "driver_branch")
    if not branch:
        return []
    version = (smi_q or {}).get("driver_version")
    tool = STAGE_Q
    if version is None:
        tool = STAGE_CSV
        for row in (smi_csv or {}).get("gpus") or []:
            if row.get("driver_version"):
                version = row["driver_version"]
                break
    if version is None:
        return [check_result("gpu.driver", ERROR, "nvidia-smi reports no driver version", {})]
    branch = str(branch)
    evidence = ["Driver Version : %s" % version]
    if str(version) == branch or str(version).startswith(branch + "."):
        return [check_result("gpu.driver", PASS, "driver %s is on the %s branch"
                             % (version, branch), {"version": version, "branch": branch},
                             evidence=evidence, tool=tool)]
    return [check_result("gpu.driver", FAIL, "driver %s is not on the expected %s branch"
                         % (version, branch), {"version": version, "branch": branch},
                         evidence=evidence, tool=tool)]


def _judge_pcie(views, profile):
    """gpu.pcie_link: each GPU's link from -q's GPU Link Info (CSV-only views are not judged)."""
    want_gen, want_width = profile_get(profile, "pcie.gpu_gen"), profile_get(profile, "pcie.gpu_width")
    links, results = [], []
    for view in views:
        pcie = view.get("pcie") or {}
        if view.get("tool") != STAGE_Q or not any(v is not None for v in pcie.values()):
            continue
        evidence = _ev(view, "pcie")
        link = {"name": view["name"], "component": view["label"], "current_gen": pcie.get("gen_current"),
                "current_width": pcie.get("width_current"),
                "max_gen": pcie.get("gen_max") if pcie.get("gen_max") is not None else pcie.get("gen_device_max"),
                "device_max_gen": pcie.get("gen_device_max"), "max_width": pcie.get("width_max"),
                "evidence": evidence, "tool": STAGE_Q,
                # a pass shows the GPU's header and its current generation and width
                "summary": evidence[:1] + [line for line in evidence
                                           if re.search(r"(Generation|Link Width) > Current :", line)]}
        pstate = view.get("pstate")
        idle = pstate if isinstance(pstate, str) and pstate.strip() not in ("P0", "") else None
        links.append(link)
        result = judge_link("gpu.pcie_link", link, want_gen, want_width, idle=idle)
        if result is not None:
            results.append(result)
    if not links:
        return []
    return fold_passes("gpu.pcie_link", "GPU", links, results, want_gen, want_width, tool=STAGE_Q)


# --------------------------------------------------------------------------------------------
# The stage
# --------------------------------------------------------------------------------------------

def gpu_identity_of(smi_q, smi_csv):
    """{tool: {count, bus_ids, uuids}} of the stage's GPU-listing outputs that could be read."""
    identity = {}
    for tool, parsed, bus_key, uuid_key in ((STAGE_Q, smi_q, "bus_id", "uuid"),
                                            (STAGE_CSV, smi_csv, "pci.bus_id", "uuid")):
        if not _usable(parsed) or parsed.get("errors"):
            continue  # a partly unreadable output would make its count look like a disagreement
        gpus = parsed["gpus"]
        buses = [normalize_bus_id(g.get(bus_key) or "") for g in gpus]
        uuids = [g.get(uuid_key) or g.get("gpu_uuid") for g in gpus]
        identity[tool] = {"count": len(gpus), "bus_ids": [b for b in buses if b] if any(buses) else None,
                          "uuids": [u for u in uuids if u] if any(uuids) else None}
    return identity


def judge_gpu_health_stage(outputs, profile, options):
    """The gpu_health stage: (checks, metrics); an output that is None was not captured.

    metrics: gpu_count, gpu_bus_ids, gpu_uuids (from -q, else the CSV), gpu_identity (per tool),
    xid_window (kind, start, label) and xid_history (events before the window).
    """
    def parsed(tool, parser):
        text = outputs.get(tool)
        return None if text is None else parser(text)
    smi_q = parsed(STAGE_Q, parse_nvidia_smi_q)
    smi_csv = parsed(STAGE_CSV, parse_nvidia_smi_csv)
    xid = parsed(STAGE_XID, parse_xid_log)
    clock = parsed(STAGE_CLOCK, parse_node_clock)
    window = parsed(STAGE_WINDOW, parse_xid_window)
    checks = judge_gpu_health(smi_q, smi_csv, xid, profile, window=window, clock=clock)
    checks.extend(_fabric_excerpt(outputs.get(STAGE_Q), smi_q, profile))
    checks.extend(judge_nvlink_status(parsed(STAGE_NVLINK, parse_nvlink_status), profile))
    imex = parsed(STAGE_IMEX, parse_imex_status)
    checks.extend(judge_imex(imex))
    if imex is None and profile_get(profile, "nvlink.fabric") == "rack":
        checks.append(check_result("gpu.imex", SKIP, "nvidia-imex-ctl -N was not collected or is not installed: "
                                   "the IMEX domain was not judged", tool=STAGE_IMEX))
    if STAGE_NVLINK in outputs and outputs[STAGE_NVLINK] is None:
        checks.append(check_result("gpu.nvlink_links", SKIP, "%s: no output to read (not captured, or the tool "
                                   "failed): the NVLinks' state was not judged" % STAGE_NVLINK, tool=STAGE_NVLINK))
    if clock is not None and clock.get("errors"):
        checks.append(check_result("gpu.xid", ERROR, "node clock: %s" % "; ".join(clock["errors"]), {},
                                   evidence=clock.get("lines"), tool=STAGE_CLOCK))
    if xid is not None and window is None and outputs.get(STAGE_WINDOW) is None and STAGE_WINDOW in outputs:
        checks.append(check_result("gpu.xid", SKIP, "%s was not captured: Xid events were judged in the "
                                   "whole log" % STAGE_WINDOW, tool=STAGE_WINDOW))
    metrics = {}
    failed = sorted(set(c["check"] for c in checks if c["status"] in (FAIL, ERROR)))
    if failed:  # (the NVLink-domain judge tells a rack-level fault from tray faults by them)
        metrics["failed_checks"] = failed
    domain = _nvlink_domain(smi_q)
    if domain:
        metrics["nvlink_domain"] = domain
    if imex_summary(imex):  # (the nvlink_domain stage fails a degraded IMEX domain once, not each tray)
        metrics["imex"] = imex_summary(imex)
    identity = gpu_identity_of(smi_q, smi_csv)
    if identity:
        metrics["gpu_identity"] = identity
        main = identity.get(STAGE_Q) or identity.get(STAGE_CSV)
        metrics["gpu_count"] = main["count"]
        if main.get("bus_ids"):
            metrics["gpu_bus_ids"] = main["bus_ids"]
        if main.get("uuids"):
            metrics["gpu_uuids"] = main["uuids"]
    if xid is not None:
        resolved = _window_of(window, clock)
        metrics["xid_window"] = {"kind": resolved["kind"], "start": resolved.get("start"),
                                 "label": resolved["label"]}
        history = [c for c in checks if c["check"] == "gpu.xid" and c["metrics"].get("history")]
        if history:
            metrics["xid_history"] = history[0]["metrics"]["history"]
    return checks, metrics


def _fabric_excerpt(text, smi_q, profile):
    """gpu.fabric from a -q excerpt with Fabric sections and no GPU headers (``grep -A``)."""
    if text is None or _usable(smi_q):
        return []
    views = [{"name": "Fabric section %d" % n, "label": "fabric section %d" % n, "fabric": block, "ev": {}, "tool": STAGE_Q}
             for n, block in enumerate(parse_fabric_blocks(text), 1)]
    return judge_fabric(views, profile)


def _nvlink_domain(smi_q):
    """'<ClusterUUID>.<CliqueId>' when every GPU of the node shows the same one, else None."""
    if not _usable(smi_q):
        return None
    domains = set(domain_of(gpu.get("fabric")) for gpu in smi_q["gpus"])
    return domains.pop() if len(domains) == 1 else None
