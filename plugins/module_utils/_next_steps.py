# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What to do next about a failed or errored check: the one table the console summary reads.

next_step(check) returns a short instruction for one check record ({stage, check, status,
component, message}), or None for a check that passed. next_steps(checks) groups the failed checks
by instruction: [(instruction, [nodes])], in the order of the table. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# (stage or None, check-name prefix or None, component or None, instruction). The first rule whose
# stage, prefix and component all match wins; "{stage}" is replaced by the check's stage. Errors
# (nothing measured) come first: a node that could not be measured needs no RMA.
RULES = (
    (None, "run", "transport", "check ssh to the node (host, key, user), then re-run with --tags {stage}"),
    (None, None, "transport", "fix the transport (ssh or srun cannot reach the node), then re-run with --tags {stage}"),
    (None, None, "scheduler", "fix Slurm (controller, partition, node state), then re-run with --tags {stage}"),
    (None, None, "launcher", "fix the launcher (srun/mpirun, PMIx, the program path), then re-run with --tags {stage}"),
    ("topology", "topology.nvlink", None, "reseat the GPU baseboard / NVLink bridges; RMA the baseboard if it stays"),
    ("topology", "topology.nic", None, "check the NIC placement and PCIe slots against the profile (reseat or move the NIC)"),
    ("topology", "topology.gpu_count", None, "reseat the GPUs / baseboard; RMA if a GPU stays missing"),
    ("gpu_health", "gpu.ecc", None, "RMA the GPU (uncorrectable ECC errors)"),
    ("gpu_health", "gpu.remapped_rows", None, "RMA the GPU (row remapping failed or pending: reset first if pending)"),
    ("gpu_health", "gpu.retired_pages", None, "RMA the GPU (retired pages)"),
    ("gpu_health", "gpu.reset_required", None, "reset the GPU (or reboot the node), then re-run with --tags gpu_health"),
    ("gpu_health", "gpu.xid", None, "act on the Xid class: 48/63/64/92-95 (memory) -> RMA the GPU; "
                                    "74/79 (NVLink, off the bus) -> reseat, then RMA; 13/31/43 -> re-run"),
    ("gpu_health", "gpu.lost", None, "reseat the GPU / check its power; RMA if it stays lost"),
    ("gpu_health", "gpu.temperature", None, "check the node's cooling (fans, airflow, inlet temperature)"),
    ("gpu_health", "gpu.throttle", None, "check cooling and power capping, then re-run with --tags gpu_health"),
    ("gpu_health", "gpu.driver", None, "install the profile's driver version (gpucluster.acceptance.nvidia_driver)"),
    ("dcgm", None, None, "RMA the GPU that failed the DCGM diagnostic (re-run with --tags dcgm to confirm)"),
    ("sdc", None, None, "RMA the GPU that computed wrong results (silent data corruption)"),
    ("infiniband", "ib.port_state", None, "reseat the cable / transceiver of the port that is down; replace it if it stays"),
    ("infiniband", "ib.rate", None, "reseat or replace the cable / transceiver running below its rate"),
    ("infiniband", "ib.counters", None, "replace the cable / transceiver with rising error counters"),
    ("infiniband", None, None, "check the HCA and its firmware against the profile"),
    ("nccl_single_node", None, None, "check NVLink/NVSwitch (fabric manager) on the node; reseat the baseboard if it stays slow"),
    ("fabric", None, None, "re-run the pairs with --tags fabric; replace the slow node's cables / NIC, or the node"),
    ("workload", None, None, "read the workload log in raw/; re-run with --tags workload"),
    ("uniformity", None, None, "align the versions with the rest of the cluster (driver, firmware, DCGM)"),
    ("peers", None, None, "compare the slow node with its peers: re-run its stage with --tags, replace if it stays slow"),
    (None, None, None, "read the check's message in report.html; re-run with --tags {stage}"),
)


def next_step(check):
    """The instruction for one check record, or None when it passed (or was skipped)."""
    if not isinstance(check, dict) or check.get("status") not in ("fail", "error"):
        return None
    stage = str(check.get("stage") or "")
    name = str(check.get("check") or "")
    component = check.get("component")
    for rule_stage, prefix, rule_component, text in RULES:
        if rule_stage is not None and rule_stage != stage:
            continue
        if prefix is not None and not name.startswith(prefix):
            continue
        if rule_component is not None and rule_component != component:
            continue
        if rule_component is None and component in ("transport", "scheduler", "launcher"):
            continue  # an infrastructure error matched no error rule above: the catch-all
        return text.replace("{stage}", stage or "<stage>")
    return None  # unreachable: the last rule matches everything but infrastructure errors


def next_steps(checks):
    """[(instruction, [nodes])] for the failed checks, in the table's order, nodes sorted."""
    found = {}
    for check in checks or []:
        text = next_step(check)
        if text is None and isinstance(check, dict) and check.get("status") in ("fail", "error"):
            stage = str(check.get("stage") or "<stage>")
            text = RULES[-1][3].replace("{stage}", stage)
        if text is None:
            continue
        found.setdefault(text, set()).add(str(check.get("node") or "cluster"))
    order = dict((rule[3], i) for i, rule in enumerate(RULES))

    def rank(text):
        for template, i in order.items():
            head = template.split("{stage}")[0]
            if text.startswith(head):
                return i
        return len(RULES)
    return [(text, sorted(nodes)) for text, nodes in sorted(found.items(), key=lambda kv: (rank(kv[0]), kv[0]))]
