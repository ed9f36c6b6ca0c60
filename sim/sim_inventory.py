# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible inventory of a simulated cluster: its nodes and what acceptance.yml needs on them.

``inventory(spec, run_dir)`` is the inventory as a dict (the fake tools first on PATH, each node's
name, this run's spec and state, the stage settings that differ from a real cluster's defaults);
``write_inventory`` writes it as ``hosts.yml``. Neither starts anything.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

import sshnodes  # sim/ (callers put it on sys.path)
from sim_config import REPO, default_run_dir
from sim_processes import write_file


def inventory(spec, run_dir=None):
    """An Ansible YAML inventory (as a dict) for the spec's nodes.

    Besides the hosts it sets what acceptance.yml needs to find the fake tools: the profile, the
    tools' environment (fake tools first on PATH, the node's name, this run's spec and state) and
    the stage settings that differ from a real cluster's defaults.
    """
    run_dir = Path(run_dir) if run_dir else default_run_dir(spec.name)
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    hosts = {}
    for node in spec.nodes:
        host = {"gpucluster_sim_node": node}
        if spec.leaf_labels:
            host["slurm_topology_leaf"] = spec.leaf_name(spec.leaf_index(node))
        if spec.hw.get("fabric") == "rack":
            # The provider's rack label (a rack lost at once has no output to group its trays by).
            host["slurm_topology_rack"] = "rack%02d" % (spec.node_index(node) // spec.rack_trays + 1)
        if spec.transport == "ssh":
            # Its own sshd's address; an unreachable node has none listening there: refused.
            host.update(sshnodes.host_vars(run_dir, spec.nodes, node))
        elif node in spec.unreachable:
            # A closed local port: Ansible reports the host UNREACHABLE at once.
            host.update({"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                         "ansible_ssh_common_args": "-o ConnectTimeout=2 -o ConnectionAttempts=1"})
        hosts[node] = host
    environment = {
        "PATH": "%s:%s" % (REPO / "sim" / "bin", os.environ.get("PATH", "/usr/bin:/bin")),
        # @node@: the collector puts the node's name in (the same tool line for every node, which
        # the srun transport runs as one step).
        "GPUCLUSTER_SIM_NODE": "@node@",
        "GPUCLUSTER_SIM_SPEC": str(spec.path) if spec.path else str(run_dir / "spec.json"),
        "GPUCLUSTER_SIM_RUN": str(run_dir),
        "GPUCLUSTER_SIM_PYTHON": sys.executable,
        "SLURM_CONF": str(run_dir / "etc" / "slurm.conf"),
    }
    # Commands the controller runs (srun for the fabric stage): the same tools, the node comes
    # from SLURMD_NODENAME in each task.
    controller_environment = dict((k, v) for k, v in environment.items() if k != "GPUCLUSTER_SIM_NODE")
    node_vars = dict(local) if spec.transport == "local" else sshnodes.group_vars(run_dir)
    node_vars.update({
        "acceptance_environment": environment,
        "check_nccl_single_node_binary": "all_reduce_perf",
        "check_preflight_required_tools": ["nvidia-smi", "dcgmi", "ibstat", "all_reduce_perf"],
        # The fake sysfs counter tree of each node (written by the fake tools).
        "check_infiniband_sysfs_root": "%s/gpusim/sys/@node@/class/infiniband" % run_dir,
        "check_infiniband_counter_interval": 0.2,
        # The reference workload on CPU with gloo: one rank per node, timed by CPU clock because
        # the simulated nodes share this machine's cores.
        "check_workload_python": sys.executable,
        "check_workload_master_addr": "127.0.0.1",
        "check_workload_ranks_per_node": 1,
        "check_workload_compute_clock": "cpu",
        "check_workload_environment": {"OMP_NUM_THREADS": "1"},
        "check_workload_judge_options": {"straggler_ratio": 1.5, "spread_warn": 1.5},
        # The SDC probe on the CPU (one thread, bit-reproducible), small and a fixed number of
        # iterations; the hook injects the spec's sdc / slow_gpu faults and the simulated clock.
        "check_sdc_python": sys.executable,
        "check_sdc_device": "cpu",
        "check_sdc_size": 48,
        "check_sdc_seconds": 0,
        "check_sdc_min_iterations": 20,
        "check_sdc_max_iterations": 20,
        "check_sdc_sample_s": 1.0,
        "check_sdc_sim_hook": "gpusim-sdc-hook",
        "check_sdc_timeout": 300,
        # The data loader probe: small synthetic shards per node, one worker, one pass; the
        # storage hook gives the simulated read bandwidth (slow_storage faults).
        "check_data_loader_python": sys.executable,
        "check_data_loader_generate_dir": "%s/loader/@node@" % run_dir,
        "check_data_loader_samples": 256,
        "check_data_loader_sample_kb": 16,
        "check_data_loader_shard_samples": 32,
        "check_data_loader_gpus": 1,
        "check_data_loader_workers_per_gpu": 1,
        "check_data_loader_seconds": 0,
        "check_data_loader_sim_hook": "gpusim-storage-hook",
        "check_data_loader_consume_samples_per_s": 100000,
        # The checkpoint probe: an 8 MB shard and 8 MB of fio per path, a directory per node as its
        # NVMe and one shared by all as the shared file system; the storage hook gives the
        # simulated bandwidths (slow_storage faults) and splits the shared one among the writers.
        "check_checkpoint_python": sys.executable,
        "check_checkpoint_local_path": "%s/nvme-@node@" % run_dir,
        "check_checkpoint_shared_path": "%s/shared-fs" % run_dir,
        "check_checkpoint_create_paths": True,
        "check_checkpoint_shard_mb": 8,
        "check_checkpoint_fio_size_mb": 8,
        "check_checkpoint_fio_iodepth": 8,
        "check_checkpoint_fio_timeout": 60,
        "check_checkpoint_timeout": 300,
        "check_checkpoint_sim_hook": "gpusim-storage-hook",
    })
    return {
        "all": {
            "vars": {"gpucluster_sim_cluster": spec.name, "gpucluster_sim_profile": spec.profile,
                     "acceptance_profile": spec.profile,
                     "acceptance_controller_environment": controller_environment,
                     # One process per node driving all its GPUs (-g 8 on HGX, 4 on a GB200 tray)
                     # keeps the fake ranks few; the simulated Slurm has no GPU GRES for --gpus-per-node.
                     # The RDMA stage's tasks read each node's fake sysfs counter tree.
                     "check_rdma_counters_root": "%s/gpusim/sys/@node@/class/infiniband" % run_dir,
                     "check_fabric_counters_root": "%s/gpusim/sys/@node@/class/infiniband" % run_dir,
                     "check_fabric_binary": "all_reduce_perf",
                     "check_fabric_tasks_per_node": 1,
                     "check_fabric_gpus_per_process": spec.hw["gpus"],
                     "check_fabric_gpus_per_node_flag": False,
                     "check_nvlink_domain_binary": "all_reduce_perf",
                     "check_nvlink_domain_tasks_per_node": 1,
                     "check_nvlink_domain_gpus_per_process": spec.hw["gpus"],
                     "check_nvlink_domain_gpus_per_node_flag": False,
                     "check_nvlink_domain_timeout": 60,
                     "acceptance_srun_gpus_per_node": 0,
                     "check_workload_gpus_per_node_flag": False,
                     "check_fabric_timeout": 60},
            "children": {
                "slurm_controller": {"hosts": {"localhost": dict(local)}},
                "gpu_nodes": {"vars": node_vars, "hosts": hosts},
            },
        }
    }


def write_inventory(spec, out_dir, run_dir=None):
    """Write ``<out_dir>/hosts.yml``; return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "hosts.yml"
    source = spec.path.relative_to(REPO) if spec.path and spec.path.is_relative_to(REPO) else spec.path
    text = "---\n# Generated by `sim/clusterctl inventory %s`: do not edit, regenerate.\n" % (source or "SPEC")
    text += yaml.safe_dump(inventory(spec, run_dir), sort_keys=False, default_flow_style=False)
    write_file(target, text)
    return target
