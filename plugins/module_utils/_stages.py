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

import signal

from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import probe_records
from ansible_collections.gpucluster.acceptance.plugins.module_utils._sections import (
    NOT_FOUND_RC, TIMEOUT_RCS, describe_failure, parse_sections)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, SKIP, check_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._run_state import fold_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_preflight import judge_preflight_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_topology import judge_topology_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import judge_gpu_health_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_dcgm import judge_dcgm_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import judge_infiniband_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl import judge_nccl_single_node_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_sdc import judge_sdc_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_loader import judge_loader_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_checkpoint import judge_checkpoint_stage

# stage -> (tools it needs, function(outputs by tool, profile, options) -> (checks, metrics)).
# An output is None when a replayed set did not capture that tool; the function judges the rest
# and says what it could not judge.
STAGES = {
    "preflight": (("tools", "nvidia-smi-versions", "nvidia-smi-list", "dcgmi-version", "ibstat-versions"),
                  judge_preflight_stage),
    "topology": (("nvidia-smi-topo",), judge_topology_stage),
    # node-clock and xid-window place the kernel log's events in time: the Xid window is judged
    # from the captured outputs alone, so a replay gives the same verdict.
    # nvlink-status: nvidia-smi nvlink -s, every link up at the profile's rate (gpu.nvlink_links);
    # imex-status: nvidia-imex-ctl -N on rack-scale profiles (gpu.imex; OPTIONAL below).
    "gpu_health": (("nvidia-smi-q", "nvidia-smi-csv", "dmesg", "node-clock", "xid-window", "nvlink-status",
                    "imex-status"), judge_gpu_health_stage),
    "dcgm": (("dcgmi-diag",), judge_dcgm_stage),
    # ib-pcie: the HCAs' PCIe link speed and width from sysfs (ib.pcie_link).
    "infiniband": (("ib-counters-before", "ibstat", "ib-pcie", "ib-gpu-affinity", "ib-counters-after"),
                   judge_infiniband_stage),
    # nvlink-errors-*: nvidia-smi nvlink -e around the all-reduce (nvlink.errors under its traffic).
    # nvbandwidth (rack profiles, OPTIONAL): GPU-to-GPU copy bandwidth per pair (nvlink.bandwidth),
    # inside the counters' window.
    "nccl_single_node": (("nvlink-errors-before", "all_reduce_perf", "nvbandwidth", "nvlink-errors-after"),
                         judge_nccl_single_node_stage),
    # Known-answer probe on every GPU at once (roles/check_sdc); compared across the cluster in
    # _judge_sdc_fleet.
    "sdc": (("sdc-probe",), judge_sdc_stage),
    # Data loader throughput (roles/check_data_loader): each node on its own, then all at once.
    # (the alone stage's tool named apart: raw/<node>/<tool>.txt keeps both, a replay judges each on its own).
    "data_loader_alone": (("loader-probe-alone",), judge_loader_stage),
    "data_loader": (("loader-probe",), judge_loader_stage),
    # Checkpoint write time (roles/check_checkpoint): torch.save + fsync on the local NVMe and the
    # shared file system, the asynchronous pattern and fio; each node on its own, then all at once
    # (the tools named apart: each stage's raw output is kept and replayed on its own).
    "checkpoint_alone": (("checkpoint-probe-alone",), judge_checkpoint_stage),
    "checkpoint": (("checkpoint-probe",), judge_checkpoint_stage),
}


# This collection's own probes: they exit 0 when they ran to their end, whatever they found (the
# findings are in their records). Any other exit status is the probe's own failure (a Python
# exception, a CUDA out-of-memory, a signal): an error beside what it printed, never a pass.
PROBES = ("sdc-probe", "loader-probe-alone", "loader-probe", "checkpoint-probe-alone", "checkpoint-probe")

# Tools that read something next to a stage's main tool (counters around it, a link's training): one
# that fails is an error beside the main tool's results, never instead of them.
AUXILIARY = ("nvlink-errors-before", "nvlink-errors-after", "ib-pcie", "ib-gpu-affinity", "nvlink-status", "imex-status",
             "nvbandwidth")
# Tools a stage collects only where they apply (the role leaves them out elsewhere): one not
# collected, or not installed on the node, is judged as not captured (None), never an error.
OPTIONAL = ("imex-status", "nvbandwidth")


def _not_installed(tool, record):
    """An OPTIONAL tool the node does not have (the shell's 'not found'): not captured, not a failure."""
    return tool in OPTIONAL and isinstance(record, dict) and record.get("rc") == NOT_FOUND_RC


def _tool_failure(tool, record, errors):
    """An error result for a tool that did not run normally, or None when its output is usable."""
    reason = describe_failure(tool, record)
    if reason is None and tool != "tools" and record["rc"] not in (0, None) and not record["output"].strip():
        reason = "%s: %s and printed nothing" % (tool, exit_status_text(record["rc"]))
    if reason is None:
        return None
    if record is None and errors:
        reason += " (%s)" % "; ".join(errors)  # why: the collector or replay said so
    component = tool
    found = classify_failure(record.get("output"), record.get("rc")) if record else None
    if found:  # the tool could not be started: the launcher's fault, in the tool's own words
        component = found["component"]
        reason = "%s (%s: %s)" % (reason, found["cause"], found["message"])
    return check_result("collect", ERROR, reason, {"tool": tool, "rc": record and record.get("rc")},
                        component=component, tool=tool)


def exit_status_text(rc):
    """'exited with status 1', or 'was killed by signal 11 (SIGSEGV)' for a shell's 128+N or a -N."""
    number = rc - 128 if 128 < rc < 160 else (-rc if rc < 0 else None)
    if number is None:
        return "exited with status %s" % rc
    try:
        name = " (%s)" % signal.Signals(number).name
    except ValueError:
        name = ""
    return "was killed by signal %d%s" % (number, name)


def _probe_exit(tool, record):
    """An error for a probe that exited other than 0 after printing something; None otherwise.

    Timeouts, a missing program and a silent non-zero exit are _tool_failure's (the judge never
    runs); this is the probe that printed records, a traceback or a warning and then died."""
    rc = record.get("rc") if record else None
    if tool not in PROBES or rc in (0, None) or rc in TIMEOUT_RCS or rc == NOT_FOUND_RC:
        return None
    seen = {"other": [], "errors": []}
    for _item in probe_records(record.get("output"), seen):
        pass
    last = seen.get("last_other")
    return check_result("collect", ERROR, "%s %s: the probe did not finish, nothing it printed counts as a pass%s" % (
        tool, exit_status_text(rc), "; its last output: %s" % last if last else ""),
        {"tool": tool, "rc": rc}, component="probe", evidence=[last] if last else None, tool=tool)


def _collection_errors(sections, tools):
    """Error results for tools that did not run normally; [] when every tool's output is usable.

    In a replay (sections['replay']) a tool absent from the captured set is not an error: the
    stage judges what was captured and says what it could not judge.
    """
    problems = []
    replay = sections.get("replay")
    if sections.get("component") and sections["errors"]:
        # The transport (srun, a connection) never ran the collector there: one error naming it,
        # not one per tool (no tool failed; none ran).
        return [check_result("collect", ERROR, "; ".join(sections["errors"]), component=sections["component"])]
    for tool in tools:
        record = sections["tools"].get(tool)
        if record is None and (replay or tool in OPTIONAL) or _not_installed(tool, record):
            continue
        problem = _tool_failure(tool, record, sections["errors"])
        if problem:
            problems.append(problem)
    if not problems and sections["errors"] and not replay:
        problems.append(check_result("collect", ERROR, "; ".join(sections["errors"])))
    return problems


def _launcher_words(checks, records, tools):
    """Replace a tool's unreadable-output errors with the launcher's own words when it never ran.

    A tool whose every check is an error (nothing was read from it) and whose output says the
    launcher, scheduler or transport failed measured nothing: one error naming that component.
    """
    kept = []
    replaced = set()
    for tool in tools:
        record = records.get(tool)
        if not record or not (record.get("output") or "").strip():
            continue
        mine = [c for c in checks if c.get("tool", tool) == tool or (len(tools) == 1 and not c.get("tool"))]
        if not mine or any(c["status"] != ERROR for c in mine):
            continue
        found = classify_failure(record["output"], record.get("rc"))
        if found:
            replaced.add(tool)
            kept.append(check_result("collect", ERROR, "%s could not run: %s (%s): %s" % (
                tool, found["cause"], found["component"], found["message"]),
                {"tool": tool, "rc": record.get("rc")}, component=found["component"],
                evidence=[found["message"]], tool=tool))
    if not replaced:
        return checks
    for check in checks:
        tool = check.get("tool") or (tools[0] if len(tools) == 1 else None)
        if tool not in replaced:
            kept.append(check)
    return kept


def _annotate(checks, stage, node, records, tools):
    """Give every check its stage, node, the raw outputs it rests on and the time they took."""
    present = [t for t in tools if t in records]
    for check in checks:
        check["stage"] = stage
        check["node"] = node
        used = [check["tool"]] if check.get("tool") in records else present
        check["raw"] = list(used)
        seconds = [records[t].get("seconds") for t in used]
        seconds = [s for s in seconds if isinstance(s, (int, float)) and not isinstance(s, bool)]
        check["seconds"] = round(sum(seconds), 3) if seconds else None
    return checks


def judge_stage(state, stage, collected, profile, options=None, node="node", run_id=None):
    """Fold one stage's result for one node into that node's state and return the new state.

    state: {run_id, failed_stages, stages: {stage: {status, metrics}}, last: {stage, node, checks, raw}}
    collected: the collector's stdout (str) or an already split {'tools': ..., 'errors': ...,
    'replay': bool}.
    run_id: this run's id; a state from another run is dropped (see state_of_run).
    """
    if stage not in STAGES:
        raise ValueError("unknown stage %r (known: %s)" % (stage, ", ".join(sorted(STAGES))))
    tools, judge = STAGES[stage]
    sections = collected if isinstance(collected, dict) else parse_sections(collected or "")
    sections.setdefault("errors", [])
    sections.setdefault("tools", {})
    records = sections["tools"]
    problems = _collection_errors(sections, tools)
    beside = [p for p in problems if p.get("tool") in AUXILIARY]
    checks = [p for p in problems if p.get("tool") not in AUXILIARY]
    broken = set(p.get("tool") for p in beside)
    metrics = {}
    if sections.get("replay") and not any(t in records for t in tools):
        checks = [check_result("replay", SKIP, "%s: not in the replayed set (none of %s captured)"
                               % (stage, ", ".join(tools)))]
    elif not checks:
        outputs = dict((tool, records[tool]["output"] if tool in records and tool not in broken
                        and not _not_installed(tool, records[tool]) else None) for tool in tools)
        try:
            checks, metrics = judge(outputs, profile or {}, options or {})
        except Exception as exc:  # a judge bug must become a visible error, not a lost node
            checks = [check_result("judge", ERROR, "judging the %s outputs failed: %s: %s"
                                   % (stage, type(exc).__name__, exc))]
        if not checks:
            checks = [check_result("judge", ERROR, "the %s judge returned no results" % stage)]
        checks.extend(filter(None, (_probe_exit(tool, records.get(tool)) for tool in tools)))
        checks = _launcher_words(checks, records, tools) + beside
    _annotate(checks, stage, node, records, tools)
    return fold_stage(state, stage, checks, metrics, records, node=node, run_id=run_id)
