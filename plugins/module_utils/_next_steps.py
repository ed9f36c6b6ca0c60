# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What to do next about a failed or errored check: the tables the console summary reads.

Advice comes only from evidence. A check with status ``fail`` measured a fault, and only such a
check gets hardware advice (RMA, reseat, replace: RULES). A check with status ``error`` measured
nothing (the tool did not run, its output could not be read, the scheduler or transport failed):
it gets "fix <what did not work>, then re-run" naming that part (ERROR_RULES, by error_kind), never
an RMA.

next_step(check) returns a short instruction for one check record ({stage, check, status,
component, message, tool}), or None for a check that passed. next_steps(checks) groups the failed
checks by instruction: [(instruction, [nodes])], errors first, then in the order of RULES.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import BAD

# Components an infrastructure error names (the run could not reach or start the tool there).
INFRASTRUCTURE = ("transport", "scheduler", "launcher")
# A tool refused for want of rights: dmesg under kernel.dmesg_restrict, umad devices, /dev/nvidia*.
_PERMISSION = re.compile(r"permission denied|operation not permitted|insufficient permissions|must be root|"
                         r"read kernel buffer failed|not privileged", re.IGNORECASE)

# Kind of error -> instruction ("{stage}" and "{tool}" filled in); error_kind() picks the kind.
ERROR_RULES = (
    ("ssh", "check ssh to the node (host, key, user), then re-run with --tags {stage}"),
    ("transport", "fix the transport (ssh or srun cannot reach the node), then re-run with --tags {stage}"),
    ("scheduler", "fix Slurm (controller, partition, node state), then re-run with --tags {stage}"),
    ("launcher", "fix the launcher (srun/mpirun, PMIx, the program path), then re-run with --tags {stage}"),
    ("permission", "give {tool} the rights it needs (root or sudo; kernel.dmesg_restrict, umad devices), "
                   "then re-run with --tags {stage}"),
    ("probe", "the probe did not finish: fix what its last output names (Python, PyTorch, CUDA, memory), "
              "then re-run with --tags {stage}"),
    ("too_few_nodes", "fix what the per-node stages found first (too few nodes passed to test), "
                      "then re-run with --tags {stage}"),
    ("tool", "fix or install {tool} (it did not run normally or its output was unreadable: nothing was "
             "measured), then re-run with --tags {stage}"),
)

# (stage or None, check-name prefix or None, instruction) for checks that failed: a measured fault.
# The first rule whose stage and prefix match wins; "{stage}" is replaced by the check's stage.
RULES = (
    ("topology", "topology.nvlink", "reseat the GPU baseboard / NVLink bridges; RMA the baseboard if it stays"),
    ("topology", "topology.nic", "check the NIC placement and PCIe slots against the profile (reseat or move the NIC)"),
    ("topology", "topology.gpu_count", "reseat the GPUs / baseboard; RMA if a GPU stays missing"),
    ("gpu_health", "gpu.ecc", "RMA the GPU (uncorrectable ECC errors)"),
    ("gpu_health", "gpu.remapped_rows", "RMA the GPU (row remapping failed or pending: reset first if pending)"),
    ("gpu_health", "gpu.retired_pages", "RMA the GPU (retired pages)"),
    ("gpu_health", "gpu.reset_required", "reset the GPU (or reboot the node), then re-run with --tags gpu_health"),
    ("gpu_health", "gpu.xid", "act on the Xid class: 48/63/64/92-95 (memory) -> RMA the GPU; "
                              "74/79 (NVLink, off the bus) -> reseat, then RMA; 13/31/43 -> re-run"),
    ("gpu_health", "gpu.lost", "reseat the GPU / check its power; RMA if it stays lost"),
    ("gpu_health", "gpu.temperature", "check the node's cooling (fans, airflow, inlet temperature)"),
    ("gpu_health", "gpu.throttle", "check cooling and power capping, then re-run with --tags gpu_health"),
    ("gpu_health", "gpu.driver", "install the profile's driver version (gpucluster.acceptance.nvidia_driver)"),
    ("gpu_health", "gpu.fabric", "start nvidia-fabricmanager (HGX) or ticket the tray's NVLink registration "
                                 "(NVL72), then re-run with --tags gpu_health"),
    ("gpu_health", "gpu.nvlink_links", "reseat the GPU baseboard / NVLink bridges; RMA the baseboard if it stays"),
    ("nvlink_domain", "nvlink_domain.membership", "ask the provider to put the tray in its rack's NVLink partition "
                                                  "(clique), then re-run with --tags gpu_health"),
    ("nvlink_domain", "nvlink_domain.rack", "ticket the rack as one fault (NVLink switch tray, power, cooling), "
                                            "not its trays one by one"),
    ("nvlink_domain", "nvlink_domain.imex", "restart nvidia-imex on the trays it names and check nodes_config.cfg, "
                                            "then re-run with --tags gpu_health"),
    ("nvlink_domain", "nvlink_domain.tray", "ticket the tray's NVLink connection to the switch trays (cable "
                                            "cartridge, switch-tray port), re-run with --tags gpu_health,nvlink"),
    ("nvlink_domain", "nvlink_domain.mnnvl", "fix what it names (the slow trays, IMEX channels and "
                                             "NCCL_MNNVL_ENABLE, the switch trays), "
                                             "re-run: --tags gpu_health,nvlink"),
    ("nvlink_domain", "nvlink_domain.infiniband", "re-run the pairs with --tags fabric to pin the tray's NICs or "
                                                  "the leaf"),
    ("nvlink_domain", "nvlink_domain.size", "check which rack's fabric the surplus trays are cabled to (a ticket "
                                            "for the provider)"),
    ("dcgm", None, "RMA the GPU that failed the DCGM diagnostic (re-run with --tags dcgm to confirm)"),
    ("sdc", None, "RMA the GPU that computed wrong results (silent data corruption)"),
    ("infiniband", "ib.port_state", "reseat the cable / transceiver of the port that is down; replace it if it stays"),
    ("infiniband", "ib.rate", "reseat or replace the cable / transceiver running below its rate"),
    ("infiniband", "ib.counters", "replace the cable / transceiver with rising error counters"),
    ("infiniband", None, "check the HCA and its firmware against the profile"),
    ("nccl_single_node", None, "check NVLink/NVSwitch (fabric manager) on the node; reseat the baseboard if it stays slow"),
    ("fabric", None, "re-run the pairs with --tags fabric; replace the slow node's cables / NIC, or the node"),
    ("workload", None, "read the workload log in raw/; re-run with --tags workload"),
    ("uniformity", None, "align the versions with the rest of the cluster (driver, firmware, DCGM)"),
    ("peers", None, "compare the slow node with its peers: re-run its stage with --tags, replace if it stays slow"),
    (None, None, "read the check's message in report.html; re-run with --tags {stage}"),
)


def error_kind(check):
    """What an errored check says did not work: one of ERROR_RULES' kinds."""
    component = check.get("component")
    name = str(check.get("check") or "")
    if component == "transport":
        return "ssh" if name == "run" else "transport"
    if component in INFRASTRUCTURE:
        return component
    if _PERMISSION.search(str(check.get("message") or "")):
        return "permission"
    if component in ("probe", "pytorch"):
        return "probe"
    metrics = check.get("metrics") if isinstance(check.get("metrics"), dict) else {}
    if component == "nodes" or (check.get("node") is None and metrics.get("nodes") in (0, 1)):
        return "too_few_nodes"
    return "tool"


def _tool(check):
    raw = check.get("raw") if isinstance(check.get("raw"), list) else []
    return str(check.get("tool") or (raw[0] if len(raw) == 1 else None) or "the stage's tool")


def _ranked_step(check):
    """(rank, instruction) for a failed or errored check, None otherwise: errors rank first."""
    if not isinstance(check, dict) or check.get("status") not in BAD:
        return None
    stage = str(check.get("stage") or "") or "<stage>"
    if check["status"] == "error":
        kind = error_kind(check)
        for rank, (rule_kind, text) in enumerate(ERROR_RULES):
            if rule_kind == kind:
                return rank, text.replace("{stage}", stage).replace("{tool}", _tool(check))
    name = str(check.get("check") or "")
    for rank, (rule_stage, prefix, text) in enumerate(RULES):
        if rule_stage not in (None, check.get("stage")) or (prefix is not None and not name.startswith(prefix)):
            continue
        return len(ERROR_RULES) + rank, text.replace("{stage}", stage)
    return None  # unreachable: the last rule matches every failure


def next_step(check):
    """The instruction for one check record, or None when it passed (or was skipped)."""
    found = _ranked_step(check)
    return found[1] if found else None


def next_steps(checks):
    """[(instruction, [nodes])] for the failed checks, errors first, then in RULES' order; nodes sorted."""
    found = {}
    for check in checks or []:
        step = _ranked_step(check)
        if step is not None:
            entry = found.setdefault(step[1], [step[0], set()])
            entry[1].add(str(check.get("node") or "cluster"))
    return [(text, sorted(nodes)) for text, (_rank, nodes) in sorted(found.items(), key=lambda kv: (kv[1][0], kv[0]))]
