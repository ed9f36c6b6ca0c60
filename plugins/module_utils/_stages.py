# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node stages: which tools a stage collects, how they are parsed, which judge reads them.

judge_stage() is the one entry point the collect role calls (through the judge_stage filter): it
splits the collector's output, turns tool failures (timeout, not installed, cut off) into error
results that name the node, stage and tool, parses, judges, and folds the result into the node's
running state, which the report callback and the cluster-wide checks read.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._sections import (
    describe_failure, parse_sections)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, worst_status)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import parse_nvidia_topo
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import parse_dcgm_diag
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_topology import judge_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import judge_gpu_health
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_dcgm import judge_dcgm
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import judge_infiniband
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl import judge_nccl_single_node

_DCGMI_VERSION = re.compile(r"^\s*Version\s*:\s*(\S+)", re.MULTILINE)


def _preflight(out, profile, options):
    """Required tools present; versions recorded for the cluster-wide uniformity checks."""
    checks, metrics = [], {}
    found = set()
    for line in out["tools"].splitlines():
        path = line.strip()
        if path.startswith("/"):
            found.update((path, path.rsplit("/", 1)[-1]))
    for tool in options.get("required_tools") or []:
        if tool in found or tool.rsplit("/", 1)[-1] in found and "/" not in tool:
            checks.append(check_result("tool_present", PASS, "%s is installed" % tool, component=tool))
        else:
            checks.append(check_result("tool_present", FAIL, "%s is not installed (not found on PATH)"
                                       % tool, component=tool))
    csv = parse_nvidia_smi_csv(out["nvidia-smi-versions"])
    if csv["errors"] or not csv["gpus"]:
        checks.append(check_result("versions", ERROR, "nvidia-smi --query-gpu: output unreadable: %s"
                                   % "; ".join(csv["errors"] or ["no GPU rows"])))
    else:
        drivers = sorted(set(str(g.get("driver_version")) for g in csv["gpus"]))
        metrics["driver_version"] = drivers[0] if len(drivers) == 1 else ",".join(drivers)
        metrics["vbios_version"] = ",".join(sorted(set(str(g.get("vbios_version")) for g in csv["gpus"])))
        metrics["gpu_count"] = len(csv["gpus"])
        expected = options.get("expected_driver")
        if expected and metrics["driver_version"] != expected:
            checks.append(check_result("driver_version", FAIL, "driver %s is installed, expected %s"
                                       % (metrics["driver_version"], expected),
                                       {"found": metrics["driver_version"], "expected": expected}))
        else:
            checks.append(check_result("driver_version", PASS, "driver %s" % metrics["driver_version"],
                                       {"found": metrics["driver_version"]}))
    match = _DCGMI_VERSION.search(out["dcgmi-version"])
    if match:
        metrics["dcgm_version"] = match.group(1)
    else:
        checks.append(check_result("versions", ERROR, "dcgmi -v: no 'Version :' line in its output"))
    ib = parse_ibstat(out["ibstat-versions"])
    if ib["errors"]:
        checks.append(check_result("versions", ERROR, "ibstat: output unreadable: %s" % "; ".join(ib["errors"])))
    else:
        metrics["nic_firmware"] = ",".join(sorted(set(str(ca.get("firmware")) for ca in ib["cas"])))
    return checks, metrics


def _topology(out, profile, options):
    return judge_topology(parse_nvidia_topo(out["nvidia-smi-topo"]), profile), {}


def _gpu_health(out, profile, options):
    return judge_gpu_health(parse_nvidia_smi_q(out["nvidia-smi-q"]), parse_nvidia_smi_csv(out["nvidia-smi-csv"]),
                            parse_xid_log(out["dmesg"]), profile), {}


def _dcgm(out, profile, options, seconds=None):
    level = options.get("level")
    diag = parse_dcgm_diag(out["dcgmi-diag"], level=int(level) if level else None)
    if level:  # the level the stage ran is the level required, whatever the profile's default
        profile = dict(profile, dcgm=dict(profile.get("dcgm") or {}, level=int(level)))
    return judge_dcgm(diag, profile), {}


def _infiniband(out, profile, options):
    return judge_infiniband(parse_ibstat(out["ibstat"]), parse_ib_counters(out["ib-counters-before"]),
                            parse_ib_counters(out["ib-counters-after"]), profile), {}


def _nccl_single_node(out, profile, options):
    parsed = parse_nccl_tests(out["all_reduce_perf"])
    metrics = {}
    busbw = parsed.get("large_msg_busbw")
    if busbw is None:
        busbw = parsed.get("avg_busbw")
    if not parsed.get("errors") and busbw is not None:
        metrics["busbw"] = busbw
    if parsed.get("version"):
        metrics["nccl_version"] = parsed.get("nccl_library") or parsed.get("version")
    return judge_nccl_single_node(parsed, profile), metrics


# stage -> (tools it needs, function(outputs by tool, profile, options) -> (checks, metrics))
STAGES = {
    "preflight": (("tools", "nvidia-smi-versions", "dcgmi-version", "ibstat-versions"), _preflight),
    "topology": (("nvidia-smi-topo",), _topology),
    "gpu_health": (("nvidia-smi-q", "nvidia-smi-csv", "dmesg"), _gpu_health),
    "dcgm": (("dcgmi-diag",), _dcgm),
    "infiniband": (("ib-counters-before", "ibstat", "ib-counters-after"), _infiniband),
    "nccl_single_node": (("all_reduce_perf",), _nccl_single_node),
}


def _collection_errors(sections, tools):
    """Error results for tools that did not run normally; [] when every tool's output is usable."""
    problems = []
    for tool in tools:
        record = sections["tools"].get(tool)
        reason = describe_failure(tool, record)
        if reason is None and tool != "tools" and record["rc"] not in (0, None) and not record["output"].strip():
            reason = "%s: exited with status %s and printed nothing" % (tool, record["rc"])
        if reason and record is None and sections["errors"]:
            reason += " (%s)" % "; ".join(sections["errors"])  # why: the collector or replay said so
        if reason:
            problems.append(check_result("collect", ERROR, reason,
                                         {"tool": tool, "rc": record and record.get("rc")}, component=tool))
    if not problems and sections["errors"]:
        problems.append(check_result("collect", ERROR, "; ".join(sections["errors"])))
    return problems


def node_state_of(variables):
    """A host's collect_node_state from its variables (task vars or hostvars), wherever it is.

    A set_fact (the workload stage) puts it at the top level; the collect_stage action returns it
    as a fact, which is at the top level too unless inject_facts_as_vars is off, and always under
    ansible_facts. The top level wins: it is the newest where both exist.
    """
    try:
        state = variables.get("collect_node_state")
        if not isinstance(state, dict):
            state = (variables.get("ansible_facts") or {}).get("collect_node_state")
    except AttributeError:
        return None
    return state if isinstance(state, dict) else None


def state_of_run(state, run_id):
    """The node's state if it belongs to this run, else an empty one.

    A state left by an earlier run (a persistent fact cache, AWX fact storage) must never count:
    its stages passed or failed on another day. Without a run_id every state counts.
    """
    if not isinstance(state, dict):
        return {}
    if run_id and state.get("run_id") != run_id:
        return {}
    return state


def judge_stage(state, stage, collected, profile, options=None, node="node", run_id=None):
    """Fold one stage's result for one node into that node's state and return the new state.

    state: {run_id, failed_stages, stages: {stage: {status, metrics}}, last: {stage, node, checks, raw}}
    collected: the collector's stdout (str) or an already split {'tools': ..., 'errors': ...}.
    run_id: this run's id; a state from another run is dropped (see state_of_run).
    """
    if stage not in STAGES:
        raise ValueError("unknown stage %r (known: %s)" % (stage, ", ".join(sorted(STAGES))))
    tools, judge = STAGES[stage]
    sections = collected if isinstance(collected, dict) else parse_sections(collected or "")
    sections.setdefault("errors", [])
    sections.setdefault("tools", {})
    checks = _collection_errors(sections, tools)
    metrics = {}
    if not checks:
        outputs = dict((tool, sections["tools"][tool]["output"]) for tool in tools)
        try:
            checks, metrics = judge(outputs, profile or {}, options or {})
        except Exception as exc:  # a judge bug must become a visible error, not a lost node
            checks = [check_result("judge", ERROR, "judging the %s outputs failed: %s: %s"
                                   % (stage, type(exc).__name__, exc))]
        if not checks:
            checks = [check_result("judge", ERROR, "the %s judge returned no results" % stage)]
    status = worst_status(checks)
    # Copy only what carries over: 'last' (the previous stage's raw outputs) is replaced anyway,
    # and deep-copying it was most of this filter's cost per host.
    state = state_of_run(state, run_id)
    new = dict(state)
    if run_id:
        new["run_id"] = run_id
    new["failed_stages"] = list(state.get("failed_stages") or [])
    new["stages"] = dict(state.get("stages") or {})
    if status in (FAIL, ERROR) and stage not in new["failed_stages"]:
        new["failed_stages"].append(stage)
    new["stages"][stage] = {"status": status, "metrics": metrics}
    new["last"] = {"stage": stage, "node": node, "checks": checks, "raw": sections["tools"]}
    return new
