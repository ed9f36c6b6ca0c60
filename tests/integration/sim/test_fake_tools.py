# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated cluster's fake tools (sim/bin/*), run as subprocesses the way a playbook runs them.

Each test checks the real tool's format markers (taken from real outputs and the tools' sources,
see docs/simulated-cluster-tools.md), the effect of an injected fault and, where the collection
has a parser for the tool, that the parser reads the fake output without errors and sees the
fault. Multi-node nccl-tests runs are emulated by setting the SLURM_* variables srun would set.
No Slurm, GPU or InfiniBand needed.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = REPO / "sim" / "bin"
FIXTURES = REPO / "tests" / "fixtures"
TOOLS = ("nvidia-smi", "dcgmi", "ibstat", "perfquery", "ibnetdiscover", "dmesg", "all_reduce_perf",
         "all_gather_perf", "reduce_scatter_perf", "alltoall_perf")

SPEC = {
    "name": "faulty",
    "profile": "hgx_h100_sxm",
    "nodes": {"prefix": "gpu", "count": 8, "width": 3, "start": 1},
    "cpus_per_node": 2,
    "fabric": {"leaves": 2, "spines": 2, "rails": 8, "oversubscription": 2.0},
    "tool_times": {"nvidia_smi": 0.0},
    "seed": 7,
    "unreachable": ["gpu008"],
    "faults": [
        {"kind": "nvlink_down", "node": "gpu001", "gpus": [2, 5]},
        {"kind": "nvlink_down", "node": "gpu001", "gpus": [0, 1], "link": "NV12"},
        {"kind": "ecc_uncorrectable", "node": "gpu001", "gpu": 1, "count": 3},
        {"kind": "row_remap_pending", "node": "gpu001", "gpu": 6},
        {"kind": "xid", "node": "gpu001", "gpu": 3, "xid": 79},
        {"kind": "xid", "node": "gpu001", "gpu": 4, "xid": 48, "count": 2},
        {"kind": "throttle", "node": "gpu001", "gpu": 0, "reason": "thermal"},
        {"kind": "throttle", "node": "gpu001", "gpu": 7, "reason": "power"},
        {"kind": "dcgm_fail", "node": "gpu001", "gpu": 2, "test": "Targeted Stress"},
        {"kind": "nic_down", "node": "gpu002", "nic": "mlx5_3", "port": 1},
        {"kind": "nic_degraded", "node": "gpu002", "nic": "mlx5_1", "rate": 200},
        {"kind": "ib_counters_rising", "node": "gpu002", "nic": "mlx5_0", "counter": "symbol_error", "per_call": 5},
        {"kind": "firmware_mismatch", "node": "gpu002", "nic": "mlx5_5", "version": "28.36.1010"},
        {"kind": "gpu_missing", "node": "gpu003", "gpu": 4},
        {"kind": "driver_mismatch", "node": "gpu003", "version": "550.54.15"},
        {"kind": "slow_node", "node": "gpu004", "factor": 0.5},
        {"kind": "wrong_results", "node": "gpu006"},
        {"kind": "no_mpi", "node": "gpu007"},
        {"kind": "degraded_uplink", "leaf": "leaf02", "factor": 0.5},
        {"kind": "hang", "node": "gpu005", "tool": "dcgmi"},
        {"kind": "hang", "node": "gpu008", "tool": "alltoall_perf"},
    ],
}
HEALTHY = "gpu005"   # no GPU/NIC fault (only a dcgmi hang)


def _parser(module, name):
    mod = __import__("ansible_collections.gpucluster.acceptance.plugins.module_utils.%s" % module, fromlist=[name])
    return getattr(mod, name)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("simcluster")
    spec = root / "faulty.yml"
    spec.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    run_dir = root / "run"
    run_dir.mkdir()
    return {"spec": spec, "run": run_dir, "root": root}


def _env(cluster, node=None, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
    env["GPUCLUSTER_SIM_SPEC"] = str(cluster["spec"])
    env["GPUCLUSTER_SIM_RUN"] = str(cluster["run"])
    env["GPUCLUSTER_SIM_PYTHON"] = sys.executable
    if node:
        env["GPUCLUSTER_SIM_NODE"] = node
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(cluster, tool, *args, node="gpu001", timeout=60, **extra):
    return subprocess.run([str(BIN / tool), *args], env=_env(cluster, node, **extra), capture_output=True,
                          text=True, timeout=timeout, check=False)


def srun(cluster, tool, args, nodes, per_node, procid, timeout=60):
    """One srun task of a step over ``nodes`` (block placement), as srun would start it."""
    node, local = nodes[procid // per_node], procid % per_node
    extra = {"SLURM_JOB_ID": 4242, "SLURM_STEP_ID": 0, "SLURM_PROCID": procid, "SLURM_NTASKS": len(nodes) * per_node,
             "SLURM_LOCALID": local, "SLURM_STEP_NODELIST": ",".join(nodes),
             "SLURM_STEP_TASKS_PER_NODE": "%d(x%d)" % (per_node, len(nodes)), "SLURMD_NODENAME": node}
    return run(cluster, tool, *args, node=None, timeout=timeout, **extra)


# -- environment, spec ---------------------------------------------------------------------------
def test_every_tool_has_an_executable_posix_sh_wrapper():
    for tool in TOOLS:
        path = BIN / tool
        assert path.is_file() and os.access(path, os.X_OK), tool
        text = path.read_text()
        assert text.startswith("#!/bin/sh\n") and 'exec "${GPUCLUSTER_SIM_PYTHON:-python3}"' in text
        assert '/gpusim" %s "$@"' % tool in text
    assert (BIN / "gpusim").read_text().startswith("#!/usr/bin/env python\n")  # ansible-test shebang rule


def test_missing_environment_fails_like_a_host_without_the_device(cluster):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
    env["GPUCLUSTER_SIM_PYTHON"] = sys.executable

    def bare(tool, *args):
        return subprocess.run([str(BIN / tool), *args], env=env, capture_output=True, text=True, timeout=30,
                              check=False)
    smi = bare("nvidia-smi")
    assert smi.returncode == 9
    assert smi.stdout.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    dcgm = bare("dcgmi", "diag", "-r", "1")
    assert dcgm.returncode != 0 and "Unable to connect to host engine" in dcgm.stdout
    ib = bare("ibstat")
    assert ib.returncode == 255 and "can't list IB device names" in ib.stderr
    nccl = bare("all_reduce_perf", "-b", "8M", "-e", "8M", "-g", "8")
    assert nccl.returncode != 0 and "no CUDA-capable device is detected" in nccl.stdout
    # a node name the spec does not know: the same
    unknown = run(cluster, "nvidia-smi", node="login01")
    assert unknown.returncode == 9


@pytest.mark.parametrize("fault, message", [
    ({"kind": "nvlink_dwn", "node": "gpu001", "gpus": [0, 1]}, "faults[0].kind: 'nvlink_dwn' is not a fault kind"),
    ({"kind": "ecc_uncorrectable", "node": "gpu001", "gpu": 8}, "faults[0].gpu: 8 is not a GPU of this profile (0..7)"),
    ({"kind": "nic_down", "node": "gpu001", "nic": "mlx5_9"}, "faults[0].nic: 'mlx5_9' is not a NIC of this profile"),
    ({"kind": "nic_degraded", "node": "gpu001", "nic": "mlx5_1", "rate": 400}, "faults[0].rate: must be an Infiniband rate below"),
    ({"kind": "xid", "node": "gpu009", "gpu": 0, "xid": 79}, "faults[0].node: 'gpu009' is not a node of this cluster"),
    ({"kind": "throttle", "node": "gpu001", "gpu": 0, "reason": "hot"}, "faults[0].reason: must be thermal or power"),
    ({"kind": "dcgm_fail", "node": "gpu001", "gpu": 0, "test": "Stress"}, "faults[0].test: 'Stress' is not a DCGM"),
    ({"kind": "degraded_uplink", "leaf": 0, "factor": 0.5}, "leaf numbers are 1-based"),
    ({"kind": "slow_node", "node": "gpu001", "factor": 2}, "faults[0].factor: must be a number > 0 and <= 1"),
    ({"kind": "hang", "node": "gpu001", "tool": "lspci"}, "faults[0].tool: 'lspci' is not a simulated tool"),
    ({"kind": "no_mpi", "node": "gpu001", "speed": 1}, "faults[0].speed: unknown key for no_mpi"),
    ({"kind": "nvlink_down", "node": "gpu001", "gpus": [0, 1], "link": "NV18"}, "faults[0].link: must be NV1..NV17"),
    ({"kind": "sdc", "node": "gpu001", "gpu": 0, "probability": 1.5}, "faults[0].probability: must be a number > 0 and <= 1"),
    ({"kind": "sdc", "node": "gpu001", "gpu": 0, "workloads": ["gemm_int8"]}, "faults[0].workloads: must be a list of SDC"),
    ({"kind": "slow_gpu", "node": "gpu001", "gpu": 9, "factor": 0.5}, "faults[0].gpu: 9 is not a GPU of this profile"),
    ({"kind": "slow_storage", "node": "gpu001", "factor": 0}, "faults[0].factor: must be a number > 0 and <= 1"),
])
def test_spec_errors_name_the_key(tmp_path, fault, message):
    bad = dict(SPEC, faults=[fault])
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(bad))
    check = subprocess.run([sys.executable, str(BIN / "gpusim"), "--check-spec", str(path)], capture_output=True,
                           text=True, timeout=30, check=False)
    assert check.returncode == 2 and message in check.stderr, check.stderr
    tool = subprocess.run([str(BIN / "ibstat")], capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": os.environ["PATH"], "GPUCLUSTER_SIM_PYTHON": sys.executable,
                               "GPUCLUSTER_SIM_SPEC": str(path), "GPUCLUSTER_SIM_NODE": "gpu001"})
    assert tool.returncode == 2 and message in tool.stderr


def test_check_spec_lists_nodes_and_faults(cluster):
    out = subprocess.run([sys.executable, str(BIN / "gpusim"), "--check-spec", str(cluster["spec"])],
                         capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 0
    assert "gpu002 hgx_h100_sxm leaf=leaf01 nic_down(" in out.stdout
    assert "gpu005 hgx_h100_sxm leaf=leaf02 hang(tool=dcgmi)" in out.stdout
    assert "fabric degraded_uplink(leaf=leaf02, factor=0.5)" in out.stdout


def test_json_spec_needs_no_yaml(cluster, tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    out = subprocess.run([str(BIN / "ibstat"), "-l"], capture_output=True, text=True, timeout=30, check=False,
                         env=dict(_env(cluster, "gpu001"), GPUCLUSTER_SIM_SPEC=str(path)))
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "mlx5_0"


# -- nvidia-smi ----------------------------------------------------------------------------------
REAL_TABLE_HEAD = (  # driver 565.57.01 on 8x H100 (tests/fixtures/nvidia_smi/SOURCES.md, gls/H100SXMx8_smi.py)
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 565.57.01              Driver Version: 565.57.01      CUDA Version: 12.7     |\n"
    "|-----------------------------------------+------------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                        |               MIG M. |\n"
    "|=========================================+========================+======================|\n")
REAL_TABLE_ROW = ("|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n"
                  "| N/A   30C    P0            100W /  700W |       1MiB /  81559MiB |      0%      Default |\n"
                  "|                                         |                        |             Disabled |\n")


def test_nvidia_smi_table_is_the_real_layout(cluster):
    out = run(cluster, "nvidia-smi", node=HEALTHY)
    assert out.returncode == 0
    lines = out.stdout.splitlines(True)
    assert re.match(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} {7}\n$", lines[0])
    assert "".join(lines[1:8]) == REAL_TABLE_HEAD
    row = "".join(lines[8:11])

    def norm(text):  # temperature and power draw vary
        return re.sub(r" *\d+C| *\d+W /", "#", text)
    assert norm(row) == norm(REAL_TABLE_ROW)
    assert all(len(line) == 92 for line in lines[1:-1] if line.startswith(("|", "+")))
    assert sum(1 for line in lines if "NVIDIA H100 80GB HBM3" in line) == 8
    assert "|  No running processes found" in out.stdout


def test_nvidia_smi_table_shows_faults(cluster):
    out = run(cluster, "nvidia-smi", node="gpu001").stdout
    rows = [line for line in out.splitlines() if line.startswith("|   1  ")]
    assert rows[0].endswith("|                    3 |")              # 3 volatile uncorrectable ECC errors
    missing = run(cluster, "nvidia-smi", node="gpu003").stdout
    assert missing.count("NVIDIA H100 80GB HBM3") == 7 and "00000000:9A:00.0" not in missing
    assert "Driver Version: 550.54.15" in missing and "CUDA Version: 12.4" in missing


def test_nvidia_smi_list(cluster):
    out = run(cluster, "nvidia-smi", "-L", node="gpu003").stdout.splitlines()
    assert len(out) == 7
    for i, line in enumerate(out):
        assert re.match(r"^GPU %d: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\)$" % i, line)


def _keys(text):
    return [re.sub(r"\s*:.*$", "", line) for line in text.splitlines()]


def test_nvidia_smi_q_has_every_line_of_the_real_h100_output(cluster):
    real = (FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text()
    out = run(cluster, "nvidia-smi", "-q", node=HEALTHY).stdout
    assert out.startswith("\n==============NVSMI LOG==============\n\nTimestamp  ")
    assert _keys(out.strip("\n")) == _keys(real.strip("\n"))
    sample = [line for line in out.splitlines() if line.startswith("            DRAM Uncorrectable ")][0]
    assert sample == "            DRAM Uncorrectable            : 0"
    assert "    GPU Memory Power Readings \n" in out
    parsed = _parser("_nvidia_smi", "parse_nvidia_smi_q")(out)
    assert parsed["errors"] == [] and len(parsed["gpus"]) == 8 and parsed["driver_version"] == "565.57.01"


def test_nvidia_smi_q_shows_ecc_remap_and_throttle(cluster):
    out = run(cluster, "nvidia-smi", "-q", node="gpu001").stdout
    parsed = _parser("_nvidia_smi", "parse_nvidia_smi_q")(out)
    assert parsed["errors"] == []
    gpus = parsed["gpus"]
    assert gpus[1]["ecc"]["volatile"]["dram_uncorrectable"] == 3
    assert gpus[1]["remapped_rows"]["uncorrectable"] == 3
    assert gpus[6]["remapped_rows"]["pending"] is True
    thermal = gpus[0]["clocks_event_reasons"]
    assert thermal["hw_thermal_slowdown"] and thermal["hw_slowdown"] and thermal["sw_thermal_slowdown"]
    assert not thermal["idle"]
    power = gpus[7]["clocks_event_reasons"]
    assert power["hw_power_brake_slowdown"] and power["hw_slowdown"] and not power["hw_thermal_slowdown"]
    assert gpus[3]["clocks_event_reasons"]["idle"]
    block0 = out.split("GPU 00000000:2A:00.0")[0]
    temp = int(re.search(r"GPU Current Temp\s+: (\d+) C", block0).group(1))
    tlimit = int(re.search(r"GPU T.Limit Temp\s+: (-?\d+) C", block0).group(1))
    assert temp >= 85 and tlimit <= -2


def test_nvidia_smi_q_display_filter(cluster):
    out = run(cluster, "nvidia-smi", "-q", "-d", "PERFORMANCE", "-i", "7").stdout
    assert "Attached GPUs                             : 8\nGPU 00000000:DB:00.0\n    Performance State" in out
    assert re.search(r"\n {12}HW Power Brake Slowdown\s+: Active\n", out) and "Temperature" not in out


QUERY = ("index,name,pci.bus_id,driver_version,vbios_version,serial,uuid,temperature.gpu,temperature.memory,"
         "power.draw,power.limit,clocks.sm,clocks.max.sm,clocks.mem,ecc.errors.uncorrected.volatile.total,"
         "ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.aggregate.total,retired_pages.pending,"
         "remapped_rows.pending,remapped_rows.failure,remapped_rows.uncorrectable,clocks_event_reasons.active,"
         "clocks_throttle_reasons.active,memory.total,persistence_mode,pstate,utilization.gpu")


def test_nvidia_smi_query_gpu_csv(cluster):
    out = run(cluster, "nvidia-smi", "--query-gpu=" + QUERY, "--format=csv", node="gpu001")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert lines[0] == (
        "index, name, pci.bus_id, driver_version, vbios_version, serial, uuid, temperature.gpu, temperature.memory, "
        "power.draw [W], power.limit [W], clocks.current.sm [MHz], clocks.max.sm [MHz], clocks.current.memory [MHz], "
        "ecc.errors.uncorrected.volatile.total, ecc.errors.corrected.volatile.total, "
        "ecc.errors.uncorrected.aggregate.total, retired_pages.pending, remapped_rows.pending, remapped_rows.failure, "
        "remapped_rows.uncorrectable, clocks_event_reasons.active, clocks_event_reasons.active, memory.total [MiB], "
        "persistence_mode, pstate, utilization.gpu [%]")
    rows = [line.split(", ") for line in lines[1:]]
    assert len(rows) == 8
    assert rows[0][:5] == ["0", "NVIDIA H100 80GB HBM3", "00000000:18:00.0", "565.57.01", "96.00.74.00.01"]
    assert re.match(r"^\d+\.\d\d W$", rows[0][9]) and rows[0][10] == "700.00 W" and rows[0][12] == "1980 MHz"
    assert rows[0][21] == "0x0000000000000068"           # HW slowdown + HW thermal + SW thermal
    assert rows[7][21] == "0x0000000000000088"           # HW slowdown + HW power brake
    assert rows[3][21] == "0x0000000000000001"           # idle
    assert rows[1][14] == "3" and rows[1][20] == "3" and rows[6][18] == "Yes" and rows[0][17] == "[N/A]"
    parsed = _parser("_nvidia_smi", "parse_nvidia_smi_csv")(out.stdout)
    assert parsed["errors"] == [] and len(parsed["gpus"]) == 8


def test_nvidia_smi_query_gpu_noheader_nounits_and_id(cluster):
    out = run(cluster, "nvidia-smi", "--query-gpu=index,power.limit,memory.total,clocks.max.sm,utilization.gpu",
              "--format=csv,noheader,nounits", "-i", "0,7", node=HEALTHY).stdout
    assert out == "0, 700.00, 81559, 1980, 0\n7, 700.00, 81559, 1980, 0\n"


def test_nvidia_smi_unknown_field_is_the_real_error(cluster):
    out = run(cluster, "nvidia-smi", "--query-gpu=index,gpu_temp", "--format=csv")
    assert out.returncode == 2
    assert out.stdout == 'Field "gpu_temp" is not a valid field to query.\n\n'


def test_nvidia_smi_topo_matrix(cluster):
    out = run(cluster, "nvidia-smi", "topo", "-m", node="gpu001").stdout
    lines = out.splitlines()
    assert lines[0] == ("\t\x1b[4m" + "\t".join(["GPU%d" % i for i in range(8)] + ["NIC%d" % i for i in range(8)])
                        + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m")
    gpu0 = lines[1].split("\t")
    assert gpu0[:3] == ["GPU0", " X ", "NV12"] and gpu0[9:11] == ["PIX", "NODE"]
    assert gpu0[-4:] == ["0-55,112-167", "0", "", "N/A"]
    assert lines[3].split("\t")[6] == "SYS"                       # GPU2 <-> GPU5 lost NVLink
    assert lines[9].endswith("\t\t\t\t") and lines[9].startswith("NIC0\tPIX\tNODE")
    assert "\nNIC Legend:\n\n  NIC0: mlx5_0\n" in out and out.endswith("  NIC7: mlx5_7\n\n")
    assert "  NV#  = Connection traversing a bonded set of # NVLinks\n" in out
    parsed = _parser("_nvidia_topo", "parse_nvidia_topo")(out)
    assert parsed["errors"] == []
    assert parsed["matrix"]["GPU2"]["GPU5"] == "SYS" and parsed["matrix"]["GPU0"]["GPU1"] == "NV12"
    assert parsed["matrix"]["GPU3"]["GPU4"] == "NV18"
    seven = _parser("_nvidia_topo", "parse_nvidia_topo")(run(cluster, "nvidia-smi", "topo", "-m", node="gpu003").stdout)
    assert seven["errors"] == [] and len(seven["gpus"]) == 7


def test_nvidia_smi_nvlink_status(cluster):
    out = run(cluster, "nvidia-smi", "nvlink", "-s", "-i", "2", node="gpu001").stdout.splitlines()
    assert out[0].startswith("GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert out[1:] == ["\t Link %d: <inactive>" % i for i in range(18)]
    healthy = run(cluster, "nvidia-smi", "nvlink", "-s", node=HEALTHY).stdout
    assert healthy.count("\t Link 17: 26.562 GB/s\n") == 8


# -- dcgmi ---------------------------------------------------------------------------------------
def test_dcgmi_diag_r1_table(cluster):
    out = run(cluster, "dcgmi", "diag", "-r", "1", node="gpu002")
    assert out.returncode == 0
    assert out.stdout == (
        "Successfully ran diagnostic for group.\n"
        "+---------------------------+------------------------------------------------+\n"
        "| Diagnostic                | Result                                         |\n"
        "+===========================+================================================+\n"
        "|-----  Metadata  ----------+------------------------------------------------|\n"
        "| DCGM Version              | 3.3.9                                          |\n"
        "| Driver Version Detected   | 565.57.01                                      |\n"
        "| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |\n"
        "|-----  Deployment  --------+------------------------------------------------|\n"
        "| Denylist                  | Pass                                           |\n"
        "| NVML Library              | Pass                                           |\n"
        "| CUDA Main Library         | Pass                                           |\n"
        "| Permissions and OS Blocks | Pass                                           |\n"
        "| Persistence Mode          | Pass                                           |\n"
        "| Environment Variables     | Pass                                           |\n"
        "| Page Retirement/Row Remap | Pass                                           |\n"
        "| Graphics Processes        | Pass                                           |\n"
        "| Inforom                   | Pass                                           |\n"
        "+---------------------------+------------------------------------------------+\n")


def test_dcgmi_diag_r3_shows_the_faults(cluster):
    out = run(cluster, "dcgmi", "diag", "-r", "3", node="gpu001")
    assert out.returncode == 205                                # an isolate-severity error (volatile DBE)
    text = out.stdout
    for border in ("+-----  Integration  -------+", "+-----  Hardware  ----------+", "+-----  Stress  ------------+"):
        assert border in text
    assert "| Page Retirement/Row Remap | Fail                                           |\n" \
           "| Error                     | GPU 6 had memory errors and row remappings ar  |\n" in text
    assert "| Targeted Stress           | Pass - GPUs: 0, 1, 3, 4, 5, 6, 7               |\n" \
           "|                           | Fail - GPU: 2                                  |\n" \
           "| Warning                   | GPU 2 Max stress level of " in text
    assert "| GPU Memory                | Pass - GPUs: 0, 2, 3, 4, 5, 6, 7               |\n" in text
    assert "| EUD Test                  | Skip - All                                     |\n" in text
    assert all(len(line) == 78 for line in text.splitlines()[1:])
    parsed = _parser("_dcgm_diag", "parse_dcgm_diag")(text)
    assert parsed["errors"] == [] and parsed["overall"] == "fail"
    assert parsed["failed_gpus"] == [1, 2, 6]


def test_dcgmi_diag_json(cluster):
    out = run(cluster, "dcgmi", "diag", "-r", "2", "-j", node="gpu001")
    assert out.returncode == 205
    assert out.stdout.startswith('{\n\t"DCGM GPU Diagnostic" : \n\t{\n\t\t"test_categories" : \n\t\t[\n\t\t\t{\n')
    doc = json.loads(out.stdout)
    assert doc["version"] == "3.3.9" and doc["Driver Version Detected"] == "565.57.01"
    assert doc["GPU Device IDs"] == ["2330"] * 8
    cats = {c["category"]: c for c in doc["DCGM GPU Diagnostic"]["test_categories"]}
    assert list(cats) == ["Deployment", "Integration", "Hardware"]
    memory = [t for t in cats["Hardware"]["tests"] if t["name"] == "GPU Memory"][0]
    bad = [r for r in memory["results"] if r["status"] == "Fail"]
    assert [r["gpu_id"] for r in bad] == ["1"] and bad[0]["warnings"][0]["error_id"] == 4
    parsed = _parser("_dcgm_diag", "parse_dcgm_diag")(out.stdout)
    assert parsed["errors"] == [] and parsed["overall"] == "fail" and 1 in parsed["failed_gpus"]


def test_dcgmi_healthy_node_passes_and_lists_gpus(cluster):
    out = run(cluster, "dcgmi", "diag", "-r", "3", node="gpu004")
    assert out.returncode == 0 and "Fail" not in out.stdout
    parsed = _parser("_dcgm_diag", "parse_dcgm_diag")(out.stdout)
    assert parsed["errors"] == [] and parsed["overall"] == "pass"
    disc = run(cluster, "dcgmi", "discovery", "-l", node="gpu003").stdout
    assert disc.startswith("7 GPUs found.\n+--------+-------")
    assert "| 0      | Name: NVIDIA H100 80GB HBM3                                          |\n" in disc
    assert "4 NvSwitches found.\n+-----------+\n| Switch ID |\n+-----------+\n| 11        |\n" in disc
    assert run(cluster, "dcgmi", "-v").stdout.startswith("Version : 3.3.9\nBuild ID : ")


# -- InfiniBand ----------------------------------------------------------------------------------
def test_ibstat_all_cas_and_faults(cluster):
    out = run(cluster, "ibstat", node="gpu002")
    assert out.returncode == 0
    text = out.stdout
    assert text.startswith("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.2048\n"
                           "\tHardware version: 0\n\tNode GUID: 0x")
    block3 = text.split("CA 'mlx5_3'\n")[1].split("CA '")[0]
    assert "\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n" in block3
    assert "\t\tRate: 200\n" in text.split("CA 'mlx5_1'\n")[1].split("CA '")[0]
    assert "\tFirmware version: 28.36.1010\n" in text.split("CA 'mlx5_5'\n")[1].split("CA '")[0]
    assert text.count("\t\tLink layer: InfiniBand\n") == 8
    parsed = _parser("_ibstat", "parse_ibstat")(text)
    assert parsed["errors"] == [] and len(parsed["cas"]) == 8
    cas = {ca["name"]: ca for ca in parsed["cas"]}
    assert cas["mlx5_3"]["ports"][0]["state"] == "Down" and cas["mlx5_3"]["ports"][0]["physical_state"] == "Polling"
    assert cas["mlx5_1"]["ports"][0]["rate"] == 200 and cas["mlx5_5"]["firmware"] == "28.36.1010"


def test_ibstat_forms(cluster):
    assert run(cluster, "ibstat", "-l").stdout == "".join("mlx5_%d\n" % i for i in range(8))
    one = run(cluster, "ibstat", "mlx5_2").stdout
    assert one.startswith("CA 'mlx5_2'\n") and one.count("CA '") == 1
    port = run(cluster, "ibstat", "mlx5_3", "1", node="gpu002").stdout
    assert port.startswith("CA: 'mlx5_3'\nPort 1:\nState: Down\nPhysical state: Polling\nRate: 10\nBase lid: ")
    missing = run(cluster, "ibstat", "mlx5_12")
    assert missing.returncode == 255 and "'mlx5_12' IB device can't be found" in missing.stderr


def _counter(text, name):
    return int(re.search(r"^%s:\.+(\d+)$" % name, text, re.M).group(1))


def test_perfquery_extended_counters_rise_per_call(cluster):
    first = run(cluster, "perfquery", "-x", node="gpu002").stdout
    assert re.match(r"^# Port extended counters: Lid \d+ port 1 \(CapMask: 0x5A00 CapMask2: 0x0000002\)\n"
                    r"PortSelect:\.{22}1\nCounterSelect:\.{19}0x0000\nPortXmitData:\.{20}\d+\n", first)
    second = run(cluster, "perfquery", "-x", "-C", "mlx5_0", "-P", "1", node="gpu002").stdout
    assert _counter(second, "SymbolErrorCounter") == _counter(first, "SymbolErrorCounter") + 5
    assert _counter(second, "PortXmitData") > _counter(first, "PortXmitData")
    assert _counter(second, "LinkDownedCounter") == 0
    other = run(cluster, "perfquery", "-x", "-C", "mlx5_2", "-P", "1", node="gpu002").stdout
    assert _counter(other, "SymbolErrorCounter") == 0
    parsed = _parser("_ib_counters", "parse_ib_counters")(second, ca="mlx5_0")
    assert parsed["errors"] == [] and parsed["counters"]["mlx5_0"]["1"]["symbol_error"] == _counter(second, "SymbolErrorCounter")


def test_perfquery_counters_are_safe_under_concurrent_calls(cluster):
    before = _counter(run(cluster, "perfquery", "-x", node="gpu002").stdout, "SymbolErrorCounter")
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda _: run(cluster, "perfquery", "-x", node="gpu002"), range(12)))
    after = _counter(run(cluster, "perfquery", "-x", node="gpu002").stdout, "SymbolErrorCounter")
    assert after == before + 13 * 5
    leftovers = [p.name for p in (cluster["run"] / "gpusim").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_perfquery_basic_counters_and_down_port(cluster):
    basic = run(cluster, "perfquery", "-C", "mlx5_4", "-P", "1", node=HEALTHY).stdout
    assert basic.startswith("# Port counters: Lid ") and "CounterSelect2:..................0x00\n" in basic
    assert "PortXmitData:....................4294967295\n" in basic      # 32-bit counters saturate
    down = run(cluster, "perfquery", "-x", "-C", "mlx5_3", "-P", "1", node="gpu002")
    assert down.returncode == 255 and "perfquery: iberror: failed: classportinfo query" in down.stderr


def test_ibnetdiscover_whole_fabric(cluster):
    out = run(cluster, "ibnetdiscover", node="gpu001")
    assert out.returncode == 0
    text = out.stdout
    assert re.match(r"^#\n# Topology file: generated on \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\n#\n"
                    r"# Initiated from node [0-9a-f]{16} port [0-9a-f]{16}\n\nvendid=0x2c9\ndevid=0xd2f2\n", text)
    assert re.search(r'^Switch\t65 "S-[0-9a-f]{16}"\t\t# "MF0;leaf01-r1:MQM9700/U1" enhanced port 0 lid \d+ lmc 0$',
                     text, re.M)
    assert re.search(r'^\[1\]\t"H-[0-9a-f]{16}"\[1\]\([0-9a-f]{16}\) \t\t# "gpu001 mlx5_0" lid \d+ 4xNDR$', text, re.M)
    assert re.search(r'^Ca\t1 "H-[0-9a-f]{16}"\t\t# "gpu008 mlx5_7"$', text, re.M)
    assert '"gpu002 mlx5_3"' not in text                            # a Down HCA is not discovered
    assert re.search(r'# "gpu002 mlx5_1" lid \d+ 4xHDR$', text, re.M)
    assert text.count("\nCa\t1 ") == 8 * 8 - 1
    parsed = _parser("_ibnetdiscover", "parse_ibnetdiscover")(text)
    assert parsed["errors"] == []
    assert len(parsed["hcas"]) == 63 and len(parsed["spine_switches"]) == 2 and len(parsed["leaf_switches"]) == 16
    # leaf02 (gpu005..gpu008) lost half its uplinks: 2:1 oversubscribed, 4 nodes -> 2 uplinks, 1 left
    uplinks = {}
    for sw in re.split(r"\n\n", text):
        m = re.search(r'# "MF0;(leaf0\d-r\d):MQM9700/U1" enhanced', sw)
        if m:
            uplinks[m.group(1)] = len(re.findall(r'spine0\d:MQM9700/U1" lid', sw))
    assert uplinks["leaf01-r1"] == 2 and uplinks["leaf02-r1"] == 1


def test_ibnetdiscover_from_a_down_port_fails(cluster):
    out = run(cluster, "ibnetdiscover", "-C", "mlx5_3", node="gpu002")
    assert out.returncode == 255 and "ibnetdiscover: iberror: failed: discover failed" in out.stderr


# -- dmesg ---------------------------------------------------------------------------------------
def test_dmesg_xid_lines(cluster):
    raw = run(cluster, "dmesg", node="gpu001").stdout
    assert re.search(r"^\[    0\.000000\] Linux version ", raw, re.M)
    assert re.search(r"^\[ +\d+\.\d{6}\] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  565\.57\.01  ", raw, re.M)
    assert re.search(r"^\[\d{6}\.\d{6}\] NVRM: Xid \(PCI:0000:5d:00\): 79, pid='<unknown>', name=<unknown>, "
                     r"GPU has fallen off the bus\.$", raw, re.M)
    assert len(re.findall(r"NVRM: Xid \(PCI:0000:9a:00\): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
                          r"double bit error \(DBE\)", raw)) == 2
    assert re.search(r"NVRM: GPU at PCI:0000:5d:00: GPU-[0-9a-f-]{36}\n.*NVRM: GPU Board Serial Number: \d+\n", raw)
    ctime = run(cluster, "dmesg", "-T", node="gpu001").stdout
    assert re.search(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] NVRM: Xid \(PCI:0000:5d:00\): 79, ", ctime, re.M)
    assert run(cluster, "dmesg", "--ctime", node="gpu001").stdout == ctime
    parsed = _parser("_xid_log", "parse_xid_log")(ctime)
    assert parsed["errors"] == [] and parsed["by_xid"] == {79: 1, 48: 2} and parsed["gpu_lost"] == ["0000:5d:00"]
    assert "NVRM: Xid" not in run(cluster, "dmesg", node=HEALTHY).stdout
    missing = run(cluster, "dmesg", node="gpu003").stdout
    assert "NVRM: GPU 0000:9a:00.0: RmInitAdapter failed!" in missing
    down = run(cluster, "dmesg", node="gpu002").stdout
    assert re.search(r"mlx5_core 0000:5c:00\.0 mlx5_3: Port: 1 Link DOWN$", down, re.M)


# -- nccl-tests ----------------------------------------------------------------------------------
NCCL_HEAD = re.compile(
    r"^# nccl-tests version 2\.17\.10 nccl-headers=22304 nccl-library=22304\n"
    r"# Collective test starting: (\w+)\n"
    r"# nThread 1 nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: 2\(factor\) warmup iters: 1 iters: 20 agg iters: 1 "
    r"validation: 1 graph: 0\n#\n# Using devices\n")
TABLE_HEAD = (
    "#\n"
    "#                                                              out-of-place                       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n")


def _rows(text):
    rows = []
    for line in text.splitlines():
        if re.match(r"^ +\d+ +\d+ ", line):
            f = line.split()
            rows.append({"size": int(f[0]), "count": int(f[1]), "algbw": float(f[6]), "busbw": float(f[7]),
                         "wrong": f[8], "busbw_ip": float(f[11])})
    return rows


def test_all_reduce_single_node_layout_and_nvlink_curve(cluster):
    out = run(cluster, "all_reduce_perf", "-b", "8M", "-e", "8G", "-f", "2", "-g", "8", node=HEALTHY)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    m = NCCL_HEAD.match(text)
    assert m and m.groups() == ("all_reduce_perf", "8", "8388608", "8589934592")
    devices = re.findall(r"^#  Rank +(\d+) Group  0 Pid +(\d+) on +(\S+) device +(\d+) \[(0000:[0-9a-f]{2}:00)\] "
                         r"NVIDIA H100 80GB HBM3$", text, re.M)
    assert [d[0] for d in devices] == [str(i) for i in range(8)] and {d[2] for d in devices} == {HEALTHY}
    assert devices[0][4] == "0000:18:00" and len({d[1] for d in devices}) == 1
    assert TABLE_HEAD in text
    assert "     8388608       2097152     float     sum      -1 " in text
    rows = _rows(text)
    assert [r["size"] for r in rows] == [8 << 20 << i for i in range(11)]
    assert rows[0]["busbw"] < rows[5]["busbw"] < rows[-1]["busbw"]
    assert 440 < rows[-1]["busbw"] < 500
    for r in rows:
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * 7 / 8, abs=0.02)
    assert re.search(r"^# Out of bounds values : 0 OK\n# Avg bus bandwidth    : \d+\.?\d* \n#\n"
                     r"# Collective test concluded: all_reduce_perf\n#\n\n\Z", text, re.M)
    parsed = _parser("_nccl_tests", "parse_nccl_tests")(text)
    assert parsed["errors"] == [] and parsed["nranks"] == 8 and parsed["passed"] is True
    assert parsed["rows"][-1]["oop"]["busbw"] == rows[-1]["busbw"]


@pytest.mark.parametrize("tool, coll", [
    ("all_gather_perf", "all_gather"), ("reduce_scatter_perf", "reduce_scatter"), ("alltoall_perf", "alltoall")])
def test_other_collectives_use_their_bus_factor(cluster, tool, coll):
    out = run(cluster, tool, "-b", "1M", "-e", "1G", "-f", "4", "-g", "8", node=HEALTHY)
    assert out.returncode == 0
    assert "# Collective test starting: %s\n" % tool in out.stdout
    redop = "none" if coll in ("all_gather", "alltoall") else "sum"
    assert "     1048576         32768     float  %6s      -1 " % redop in out.stdout
    for r in _rows(out.stdout):
        assert r["busbw"] == pytest.approx(r["algbw"] * 7 / 8, abs=0.02)
    parsed = _parser("_nccl_tests", "parse_nccl_tests")(out.stdout)
    assert parsed["errors"] == [] and parsed["collective"] in (coll, tool)


def test_nccl_single_node_faults(cluster):
    degraded = _rows(run(cluster, "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "8", node="gpu001").stdout)
    assert degraded[0]["busbw"] < 30                                # GPU2<->GPU5 over PCIe
    four = _rows(run(cluster, "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "4", node="gpu004").stdout)
    assert four[0]["busbw"] > 400                                   # slow_node is invisible on one node
    missing = run(cluster, "all_reduce_perf", "-b", "8M", "-e", "8M", "-g", "8", node="gpu003")
    assert missing.returncode == 5
    assert "Invalid number of GPUs: 8 requested but only 7 were found." in missing.stderr
    assert re.search(r"^ \.\. gpu003 pid \d+: Test failure common\.cu:\d+$", missing.stdout, re.M)


def _step(cluster, tool, nodes, per_node, args=("-b", "256M", "-e", "1G", "-f", "2", "-g", "1")):
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda p: srun(cluster, tool, list(args), nodes, per_node, p),
                             range(len(nodes) * per_node)))


def test_multi_node_only_rank0_prints_every_rank(cluster):
    procs = _step(cluster, "all_reduce_perf", ["gpu004", "gpu005"], 4)
    assert [p.returncode for p in procs] == [0] * 8
    assert all(p.stdout == "" for p in procs[1:])
    text = procs[0].stdout
    ranks = re.findall(r"^#  Rank +(\d+) Group  0 Pid +\d+ on +(\S+) device +(\d+) ", text, re.M)
    assert ranks == [(str(r), "gpu004" if r < 4 else "gpu005", str(r % 4)) for r in range(8)]
    parsed = _parser("_nccl_tests", "parse_nccl_tests")(text)
    assert parsed["errors"] == [] and parsed["nranks"] == 8 and sorted(parsed["hosts"]) == ["gpu004", "gpu005"]


def test_multi_node_bandwidth_follows_the_fabric(cluster):
    def busbw(nodes):
        text = srun(cluster, "all_reduce_perf", ["-b", "1G", "-e", "1G", "-g", "4"], nodes, 1, 0).stdout
        return _rows(text)[0]["busbw"]
    healthy_pair = busbw(["gpu005", "gpu008"])       # leaf02, not crossing: 8 x 400 Gb/s x 0.92
    assert 300 < healthy_pair < 370
    nic_faults = busbw(["gpu002", "gpu003"])         # gpu002: 7 Active NICs, the slowest at 200
    assert 140 < nic_faults < 175
    slow = busbw(["gpu004", "gpu003"])               # slow_node 0.5 on gpu004
    assert 140 < slow < 185
    cross = busbw(["gpu003", "gpu005"])              # 2:1 oversubscribed and leaf02 uplink at 0.5
    assert 70 < cross < 95
    assert busbw(["gpu005", "gpu008"]) == healthy_pair    # deterministic for a seed


def test_multi_node_wrong_results(cluster):
    procs = _step(cluster, "all_reduce_perf", ["gpu005", "gpu006"], 2)
    assert [p.returncode for p in procs] == [7] * 4
    text = procs[0].stdout
    assert all(int(float(r["wrong"])) > 0 for r in _rows(text))
    assert re.search(r"^# Out of bounds values : \d+ FAILED$", text, re.M)
    assert all(re.search(r"^ \.\. gpu00[56] pid \d+: Test failure common\.cu:\d+$", p.stdout, re.M) for p in procs)
    parsed = _parser("_nccl_tests", "parse_nccl_tests")(text)
    assert parsed["passed"] is False and parsed["out_of_bounds"]
    assert any(r["oop"]["wrong"] for r in parsed["rows"])


def test_multi_node_no_mpi_every_process_prints_a_single_rank_run(cluster):
    procs = _step(cluster, "all_reduce_perf", ["gpu004", "gpu007"], 2)
    assert all(p.returncode == 0 for p in procs)
    for p, host in zip(procs, ["gpu004", "gpu004", "gpu007", "gpu007"]):
        assert NCCL_HEAD.match(p.stdout)
        ranks = re.findall(r"^#  Rank +(\d+) Group  0 Pid +\d+ on +(\S+) device +(\d+) ", p.stdout, re.M)
        assert ranks == [("0", host, "0")]
        assert all(r["busbw"] == 0.0 for r in _rows(p.stdout))
    combined = "".join(p.stdout for p in procs)
    parsed = _parser("_nccl_tests", "parse_nccl_tests")(combined)
    assert parsed["errors"] == [] or parsed["independent_runs"]
    assert parsed.get("independent_runs")


# -- timing --------------------------------------------------------------------------------------
def test_tool_times_and_hang(cluster, tmp_path):
    slow = dict(SPEC, tool_times={"ibstat": 0.6, "dcgmi_diag_r1": 0.3})
    path = tmp_path / "slow.yml"
    path.write_text(yaml.safe_dump(slow))
    env = dict(_env(cluster, "gpu004"), GPUCLUSTER_SIM_SPEC=str(path))
    start = time.monotonic()
    subprocess.run([str(BIN / "ibstat"), "-l"], env=env, capture_output=True, timeout=30, check=True)
    assert time.monotonic() - start >= 0.6
    # the hang fault: dcgmi on gpu005 never returns; a timeout (SIGKILL) and SIGTERM both end it
    with pytest.raises(subprocess.TimeoutExpired):
        run(cluster, "dcgmi", "diag", "-r", "1", node="gpu005", timeout=1.5)
    proc = subprocess.Popen([str(BIN / "dcgmi"), "diag", "-r", "3"], env=_env(cluster, "gpu005"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.8)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == -signal.SIGTERM
    assert run(cluster, "nvidia-smi", "-L", node="gpu005").returncode == 0   # other tools answer


def test_a_hung_peer_blocks_the_whole_nccl_step(cluster):
    args = ["-b", "8M", "-e", "16M", "-f", "2", "-g", "8"]
    with pytest.raises(subprocess.TimeoutExpired) as rank0:
        srun(cluster, "alltoall_perf", args, ["gpu004", "gpu008"], 1, 0, timeout=2)
    partial = rank0.value.output.decode() if isinstance(rank0.value.output, bytes) else rank0.value.output
    assert partial.startswith("# nccl-tests version ") and partial.endswith("(GB/s)         \n")
    assert re.search(r"^#  Rank 15 Group  0 Pid +\d+ on +gpu008 device  7 ", partial, re.M)
    assert srun(cluster, "all_reduce_perf", args, ["gpu004", "gpu008"], 1, 0).returncode == 0


def test_sdc_hook_names_the_faulty_gpus_by_bus_id(tmp_path):
    data = dict(SPEC, faults=[{"kind": "sdc", "node": "gpu001", "gpu": 5, "probability": 0.1, "workloads": ["gemm_bf16"]},
                              {"kind": "slow_gpu", "node": "gpu001", "gpu": 2, "factor": 0.75},
                              {"kind": "throttle", "node": "gpu001", "gpu": 3, "reason": "thermal"}])
    path = tmp_path / "sdc.yml"
    path.write_text(yaml.safe_dump(data))
    env = {"PATH": os.environ["PATH"], "GPUCLUSTER_SIM_PYTHON": sys.executable, "GPUCLUSTER_SIM_SPEC": str(path)}
    out = subprocess.run([str(BIN / "gpusim-sdc-hook")], capture_output=True, text=True, timeout=30, check=False,
                         env=dict(env, GPUCLUSTER_SIM_NODE="gpu001"))
    hook = json.loads(out.stdout)
    assert hook["simulated"] is True and hook["peak_tflops"]["bf16"] == 989.5
    assert hook["gpus"]["00000000:AB:00.0"] == {"sdc_probability": 0.1, "sdc_workloads": ["gemm_bf16"]}
    assert hook["gpus"]["00000000:3A:00.0"] == {"throughput_factor": 0.75}
    # A throttled GPU computes at its forced-down clock.
    assert 0.5 < hook["gpus"]["00000000:5D:00.0"]["throughput_factor"] < 0.7
    other = subprocess.run([str(BIN / "gpusim-sdc-hook")], capture_output=True, text=True, timeout=30, check=False,
                           env=dict(env, GPUCLUSTER_SIM_NODE="gpu002"))
    assert json.loads(other.stdout)["gpus"] == {}


def test_storage_hook_gives_the_slow_nodes_bandwidth(tmp_path):
    data = dict(SPEC, faults=[{"kind": "slow_storage", "node": "gpu001", "factor": 0.25}])
    path = tmp_path / "storage.yml"
    path.write_text(yaml.safe_dump(data))
    env = {"PATH": os.environ["PATH"], "GPUCLUSTER_SIM_PYTHON": sys.executable, "GPUCLUSTER_SIM_SPEC": str(path)}
    rates = {}
    for node in ("gpu001", "gpu002"):
        out = subprocess.run([str(BIN / "gpusim-storage-hook")], capture_output=True, text=True, timeout=30,
                             check=False, env=dict(env, GPUCLUSTER_SIM_NODE=node))
        hook = json.loads(out.stdout)
        assert hook["simulated"] is True
        rates[node] = hook["read_bytes_per_s"]
    assert rates == {"gpu001": 0.5e9, "gpu002": 2.0e9}
