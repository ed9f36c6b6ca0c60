# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulator's pcie_downtrained fault: what nvidia-smi -q, the CSV query, sysfs and the kernel's
mlx5_core probe line show, what perftest measures through the link, and the spec's refusals."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

from gpusim import model, spec  # noqa: E402  pylint: disable=wrong-import-position
from gpusim.spec import SpecError  # noqa: E402  pylint: disable=wrong-import-position

BIN = REPO / "sim" / "bin"
FAULTS = [{"kind": "pcie_downtrained", "node": "gpu002", "gpu": 5, "width": 8},
          {"kind": "pcie_downtrained", "node": "gpu002", "nic": "mlx5_2", "gen": 4}]


@pytest.fixture
def cluster(tmp_path):
    data = {"name": "pciefake", "profile": "hgx_h100_sxm", "seed": 5,
            "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1}, "faults": FAULTS}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return path, run_dir


def tool(cluster, name, *args, node="gpu002"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
    env.update(GPUCLUSTER_SIM_SPEC=str(cluster[0]), GPUCLUSTER_SIM_RUN=str(cluster[1]), GPUCLUSTER_SIM_NODE=node,
               GPUCLUSTER_SIM_PYTHON=sys.executable)
    done = subprocess.run([str(BIN / name), *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def link_block(q_text, bus):
    section = q_text.split("GPU %s" % bus, 1)[1].split("\nGPU 0000", 1)[0]
    return section.split("GPU Link Info", 1)[1].split("Bridge Chip", 1)[0]


def test_nvidia_smi_shows_the_gpu_link_trained_down_and_the_others_at_full_width(cluster):
    q_text = tool(cluster, "nvidia-smi", "-q")
    bad = link_block(q_text, "00000000:AB:00.0")
    assert re.search(r"Link Width\n +Max +: 16x\n +Current +: 8x\n", bad)
    assert re.search(r"PCIe Generation\n +Max +: 5\n +Current +: 5\n", bad)
    good = link_block(q_text, "00000000:9A:00.0")
    assert re.search(r"Link Width\n +Max +: 16x\n +Current +: 16x\n", good)
    csv = tool(cluster, "nvidia-smi", "--query-gpu=index,pcie.link.gen.current,pcie.link.width.current",
               "--format=csv,noheader")
    assert csv.splitlines()[5] == "5, 5, 8" and csv.splitlines()[4] == "4, 5, 16"


def test_sysfs_and_the_kernel_log_show_the_nic_link_limited_by_gen4(cluster):
    tool(cluster, "ibstat")  # (re)writes the node's sysfs tree, as on every ibstat call
    device = cluster[1] / "gpusim" / "sys" / "gpu002" / "class" / "infiniband" / "mlx5_2" / "device"
    assert (device / "current_link_speed").read_text() == "16.0 GT/s PCIe\n"
    assert (device / "max_link_speed").read_text() == "32.0 GT/s PCIe\n"
    assert (device / "current_link_width").read_text() == "16\n"
    other = device.parent.parent / "mlx5_1" / "device"
    assert (other / "current_link_speed").read_text() == "32.0 GT/s PCIe\n"
    log = tool(cluster, "dmesg")
    limited = [line for line in log.splitlines() if "limited by" in line]
    assert len(limited) == 1
    assert limited[0].endswith(": 252.048 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x16 link at "
                               "0000:39:00.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)")
    assert "mlx5_core 0000:39:00.0: " in limited[0]
    assert log.count("504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)") == 7


def test_what_a_link_carries_caps_the_nic_and_gpudirect_through_the_gpu():
    assert model.pcie_link_gbps(5, 16) == pytest.approx(504.112)
    assert model.pcie_link_gbps(4, 16) == pytest.approx(252.048)
    state = model.node_state(spec.validate({
        "name": "pcieslow", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1},
        "faults": FAULTS}), "gpu002")
    nics = dict((n.name, n) for n in state.nics)
    assert nics["mlx5_2"].data_factor == pytest.approx(0.9 * 252.048 / 400)
    assert nics["mlx5_1"].data_factor == 1.0
    assert model.gpu_link_factor(state.gpu_by_slot(5), 400) == pytest.approx(0.9 * 252.056 / 400)
    assert model.gpu_link_factor(state.gpu_by_slot(4), 400) == 1.0


@pytest.mark.parametrize("fault, key", [
    ({"node": "gpu001", "width": 8}, "faults[0]"),                               # neither gpu nor nic
    ({"node": "gpu001", "gpu": 1, "nic": "mlx5_1", "width": 8}, "faults[0]"),   # both
    ({"node": "gpu001", "gpu": 1}, "faults[0]"),                                 # no gen, no width
    ({"node": "gpu001", "gpu": 1, "gen": 5}, "faults[0].gen"),                   # not below the healthy Gen5
    ({"node": "gpu001", "nic": "mlx5_1", "width": 16}, "faults[0].width"),      # not below x16
])
def test_the_spec_refuses_a_fault_that_is_not_a_downtrained_link(fault, key):
    with pytest.raises(SpecError) as error:
        spec.validate({"name": "pciebad", "profile": "hgx_h100_sxm",
                       "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1},
                       "faults": [dict(fault, kind="pcie_downtrained")]})
    assert str(error.value).startswith("spec: %s: " % key)
