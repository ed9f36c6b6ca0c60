"""The fault matrix: 16 simulated nodes, one injected fault each, and what each must fail.

RUN_A is judged by tests/integration/acceptance/test_faults.py and compared across transports
(test_ssh_transport.py, test_srun_transport.py); its run over local connections is made once a
session (the ``fault_matrix_local`` fixture in tests/conftest.py). Its inventory carries HOST_VARS
on every transport.
"""
from pathlib import Path

# node -> (fault or None, {stage: component substring or None}) — what the per-node stages must find.
RUN_A = {
    # nvidia-smi nvlink -s shows the two GPUs' links inactive (gpu.nvlink_links).
    "gpu002": ({"kind": "nvlink_down", "gpus": [2, 5]},
               {"topology": "GPU2", "gpu_health": "GPU2", "nccl_single_node": None}),
    "gpu003": ({"kind": "nic_down", "nic": "mlx5_3"}, {"infiniband": "mlx5_3"}),
    "gpu004": ({"kind": "nic_degraded", "nic": "mlx5_1", "rate": 200}, {"infiniband": "mlx5_1"}),
    # dcgmi and the SDC probe test the 7 GPUs they see: the profile requires 8
    "gpu005": ({"kind": "gpu_missing", "gpu": 6},
               {"topology": None, "gpu_health": None, "dcgm": None, "nccl_single_node": None, "sdc": None}),
    "gpu006": ({"kind": "ecc_uncorrectable", "gpu": 1, "count": 2}, {"gpu_health": "GPU1", "dcgm": None}),
    "gpu007": ({"kind": "row_remap_pending", "gpu": 4}, {"gpu_health": "GPU4", "dcgm": None}),
    "gpu008": ({"kind": "xid", "gpu": 3, "xid": 79}, {"gpu_health": "GPU3"}),
    "gpu009": ({"kind": "xid", "gpu": 0, "xid": 48}, {"gpu_health": "GPU0"}),
    "gpu010": ({"kind": "xid", "gpu": 7, "xid": 94}, {"gpu_health": "GPU7"}),
    # A throttled GPU also computes below the floor and its peers (the SDC probe's compute floor).
    "gpu011": ({"kind": "throttle", "gpu": 2, "reason": "thermal"}, {"gpu_health": "GPU2", "sdc": "GPU2"}),
    "gpu012": ({"kind": "throttle", "gpu": 5, "reason": "power"}, {"gpu_health": "GPU5", "sdc": "GPU5"}),
    "gpu013": ({"kind": "dcgm_fail", "gpu": 3, "test": "Targeted Stress"}, {"dcgm": None}),
    # Its slow_node shows only in multi-node tests; its own inventory values (HOST_VARS) point its
    # topology stage at a missing tool and its SDC probe at a Python that dies of an out-of-memory
    # before the probe's first record: a per-node override must reach that node and no other, and
    # a probe that did not finish fails its stage in its own words.
    "gpu014": ({"kind": "slow_node", "factor": 0.5}, {"topology": "/nonexistent/bin/nvidia-smi", "sdc": "probe"}),
    "gpu015": ({"kind": "ib_counters_rising", "nic": "mlx5_2", "counter": "symbol_error", "per_call": 5},
               {"infiniband": "mlx5_2"}),
    "gpu016": ({"kind": "driver_mismatch", "version": "535.183.01"}, {"preflight": "gpu016"}),
}
RUN_B = {
    "gpu001": ({"kind": "firmware_mismatch", "version": "28.36.1010"}, {"preflight": "gpu001"}),
    "gpu002": ({"kind": "wrong_results"}, {"nccl_single_node": None}),
    "gpu003": ({"kind": "no_mpi"}, {}),  # a single process per node: only multi-node runs show it
    # A hung dcgmi hangs `dcgmi -v` in preflight too.
    "gpu004": ({"kind": "hang", "tool": "dcgmi"}, {"preflight": "dcgmi-version", "dcgm": "dcgmi-diag"}),
    "gpu005": (None, {"preflight": None}),  # unreachable
    # nvidia-fabricmanager down on an HGX node: every GPU's fabric State In Progress (gpu.fabric).
    "gpu006": ({"kind": "fabric", "state": "In Progress"}, {"gpu_health": "nvidia-fabricmanager"}),
}
# Host variables of RUN_A's inventory (write_host_vars), on every transport.
OVERRIDE_NODE = "gpu014"
MISSING_TOOL = "/nonexistent/bin/nvidia-smi"
CRASHING_PYTHON = str(Path(__file__).resolve().parents[1] / "fixtures" / "crashing_python" / "python-oom")
HOST_VARS = {OVERRIDE_NODE: {"check_topology_nvidia_smi": MISSING_TOOL, "check_sdc_python": CRASHING_PYTHON}}
HANG_TIMEOUT = 5
# The per-node stages: the fabric and workload stages have tests of their own.
SKIP = "fabric,workload"


def faults(table):
    return [dict(fault, node=node) for node, (fault, _stages) in table.items() if fault]


def expected(table):
    return set((node, stage) for node, (_fault, stages) in table.items() for stage in stages)


def write_host_vars(inventory, host_vars=None):
    """HOST_VARS (or host_vars) as host_vars/<node>.yml beside the inventory file."""
    import yaml  # pylint: disable=import-outside-toplevel
    folder = Path(inventory).parent / "host_vars"
    folder.mkdir(exist_ok=True)
    for node, values in (HOST_VARS if host_vars is None else host_vars).items():
        (folder / ("%s.yml" % node)).write_text(yaml.safe_dump(values))
