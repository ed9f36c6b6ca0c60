# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulator's fabric fault and NVLink fabric: what nvidia-smi -q, the CSV query and nvlink -s
print, judged by gpu_health end to end (fake tool -> parser -> judge), and the spec's refusals."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import judge_gpu_health_stage
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

from gpusim import spec  # noqa: E402  pylint: disable=wrong-import-position
from gpusim.spec import SpecError  # noqa: E402  pylint: disable=wrong-import-position

BIN = REPO / "sim" / "bin"
ZERO = "00000000-0000-0000-0000-000000000000"


def cluster(tmp_path, profile, faults, count=2):
    data = {"name": "fabfake", "profile": profile, "seed": 5,
            "nodes": {"prefix": "gpu", "count": count, "width": 3, "start": 1}, "faults": faults}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    return path, run_dir


def tool(where, *args, node="gpu002"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
    env.update(GPUCLUSTER_SIM_SPEC=str(where[0]), GPUCLUSTER_SIM_RUN=str(where[1]), GPUCLUSTER_SIM_NODE=node,
               GPUCLUSTER_SIM_PYTHON=sys.executable)
    done = subprocess.run([str(BIN / "nvidia-smi"), *args], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def judged(where, profile, node):
    outputs = {"nvidia-smi-q": tool(where, "-q", node=node), "nvidia-smi-csv": None, "dmesg": None,
               "node-clock": None, "xid-window": None, "nvlink-status": tool(where, "nvlink", "-s", node=node)}
    checks, metrics = judge_gpu_health_stage(outputs, load_profile(profile), {})
    return [c for c in checks if c["check"] in ("gpu.fabric", "gpu.nvlink_links")], metrics


def test_an_nvl72_tray_whose_registration_failed_is_named_and_its_rack_peer_passes(tmp_path):
    where = cluster(tmp_path, "gb200_nvl72_tray", [{"kind": "fabric", "node": "gpu002", "gpu": 1,
                                                    "status": "Insufficient Resources", "clique_id": 0,
                                                    "cluster_uuid": ZERO}])
    good, metrics = judged(where, "gb200_nvl72_tray", "gpu001")
    assert [c["status"] for c in good] == ["pass", "pass"]
    domain = metrics["nvlink_domain"]
    assert domain.endswith(".32766") and domain in good[0]["message"]
    bad, metrics = judged(where, "gb200_nvl72_tray", "gpu002")
    (fabric,) = [c for c in bad if c["check"] == "gpu.fabric"]
    assert fabric["status"] == "fail" and fabric["component"] == "GPU1"
    assert "Status Insufficient Resources: NVLink registration failed" in fabric["message"]
    assert "nvlink_domain" not in metrics  # one GPU outside: the tray is not wholly in the domain
    csv = tool(where, "--query-gpu=index,fabric.state,fabric.status,fabric.cliqueId,fabric.clusterUuid",
               "--format=csv,noheader")
    assert csv.splitlines()[1] == "1, Completed, Insufficient Resources, 0, %s" % ZERO
    assert csv.splitlines()[0] == "0, Completed, Success, 32766, %s" % domain.split(".")[0]


def test_fabric_manager_down_on_an_hgx_node_fails_every_gpu_there(tmp_path):
    where = cluster(tmp_path, "hgx_h100_sxm", [{"kind": "fabric", "node": "gpu002", "state": "In Progress"}])
    checks, _metrics = judged(where, "hgx_h100_sxm", "gpu002")
    fabric = [c for c in checks if c["check"] == "gpu.fabric"]
    assert [c["component"] for c in fabric] == ["GPU%d" % i for i in range(8)]
    assert all("fabric State is In Progress (Status N/A): nvidia-fabricmanager is not running" in c["message"]
               for c in fabric)
    good, _metrics = judged(where, "hgx_h100_sxm", "gpu001")
    assert [c["status"] for c in good] == ["pass", "pass"]
    assert good[1]["message"] == "all 8 GPUs: 18 NVLinks each active at 26.562 GB/s"


def test_degraded_fabric_health_and_fewer_nvlinks_are_named(tmp_path):
    where = cluster(tmp_path, "gb200_nvl72_tray", [
        {"kind": "fabric", "node": "gpu002", "gpu": 2, "health": {"Summary": "Limited Capacity", "Bandwidth": "Degraded"}},
        {"kind": "nvlink_down", "node": "gpu002", "gpus": [0, 3], "link": "NV16"}])
    checks, _metrics = judged(where, "gb200_nvl72_tray", "gpu002")
    (fabric,) = [c for c in checks if c["check"] == "gpu.fabric"]
    assert fabric["component"] == "GPU2"
    assert fabric["message"].endswith("fabric health: health summary: Limited Capacity; NVLink bandwidth: Degraded")
    links = sorted(c["component"] for c in checks if c["check"] == "gpu.nvlink_links" and c["status"] == "fail")
    assert links == ["GPU0", "GPU3"]


def test_an_ampere_gpu_prints_no_fabric(tmp_path):
    where = cluster(tmp_path, "a100_sxm_80gb", [])
    text = tool(where, "-q", node="gpu001")
    assert "    Fabric\n        State                             : N/A\n" in text
    checks, _metrics = judged(where, "a100_sxm_80gb", "gpu001")
    assert [(c["check"], c["status"]) for c in checks] == [("gpu.nvlink_links", "pass")]


@pytest.mark.parametrize("fault, key", [
    ({"state": "Registered"}, "state"),
    ({"clique_id": -1}, "clique_id"),
    ({"health": {"Bandwith": "Degraded"}}, "health"),
    ({"gpu": 4}, "gpu"),
])
def test_the_spec_refuses_a_fabric_fault_it_cannot_show(fault, key):
    data = {"name": "fabfake", "profile": "gb200_nvl72_tray", "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1},
            "faults": [dict({"kind": "fabric", "node": "gpu001"}, **fault)]}
    with pytest.raises(SpecError, match=r"faults\[0\]\.%s" % key):
        spec.validate(data)


def test_a_stopped_imex_daemon_is_unavailable_to_its_rack_and_silent_on_its_tray(tmp_path):
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._imex import judge_imex, parse_imex_status
    data = {"name": "imexfake", "profile": "gb200_nvl72_tray", "seed": 5, "rack_trays": 4,
            "nodes": {"prefix": "gpu", "count": 8, "width": 3, "start": 1},
            "faults": [{"kind": "imex_down", "node": "gpu006"}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    (tmp_path / "run").mkdir()
    where = (path, tmp_path / "run")

    def imex(node):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
        env.update(GPUCLUSTER_SIM_SPEC=str(where[0]), GPUCLUSTER_SIM_RUN=str(where[1]), GPUCLUSTER_SIM_NODE=node,
                   GPUCLUSTER_SIM_PYTHON=sys.executable)
        return subprocess.run([str(BIN / "nvidia-imex-ctl"), "-N"], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    rack1, peer, silent = imex("gpu001"), imex("gpu005"), imex("gpu006")
    assert rack1.returncode == 0 and "Domain State: UP" in rack1.stdout and rack1.stdout.count(" - READY ") == 4
    assert [c["status"] for c in judge_imex(parse_imex_status(rack1.stdout))] == ["pass"]
    assert "Node #1   - 172.31.49.11    - UNAVAILABLE          - Version: 570.133" in peer.stdout
    (warned,) = judge_imex(parse_imex_status(peer.stdout))
    assert warned["metrics"]["warning"] and "#1 172.31.49.11 UNAVAILABLE" in warned["message"]
    assert silent.returncode == 1 and silent.stdout == ""
    assert [c["status"] for c in judge_imex(parse_imex_status(silent.stderr))] == ["error"]


def test_nvbandwidth_reads_what_the_links_carry_and_a_pair_with_links_down_is_named(tmp_path):
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvbandwidth import (
        judge_nvbandwidth, parse_nvbandwidth)
    where = cluster(tmp_path, "gb200_nvl72_tray", [{"kind": "nvlink_down", "node": "gpu002", "gpus": [0, 3], "link": "NV8"}])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
    outputs = {}
    for node in ("gpu001", "gpu002"):
        env.update(GPUCLUSTER_SIM_SPEC=str(where[0]), GPUCLUSTER_SIM_RUN=str(where[1]), GPUCLUSTER_SIM_NODE=node,
                   GPUCLUSTER_SIM_PYTHON=sys.executable)
        done = subprocess.run([str(BIN / "nvbandwidth"), "-t", "device_to_device_memcpy_read_ce"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        outputs[node] = parse_nvbandwidth(done.stdout)
    profile = load_profile("gb200_nvl72_tray")
    (good,) = judge_nvbandwidth(outputs["gpu001"], profile)
    assert good["status"] == "pass" and good["metrics"]["pairs"] == 12 and 755 < good["metrics"]["median"] < 775
    bad = judge_nvbandwidth(outputs["gpu002"], profile)
    named = sorted(c["message"].split(" device")[0] for c in bad if c["status"] == "fail")
    # GPU0 and GPU3 have 8 of 18 links up: every pair with either of them reads at 8/18
    assert named == ["GPU0 -> GPU1", "GPU0 -> GPU2", "GPU0 -> GPU3", "GPU1 -> GPU0", "GPU1 -> GPU3",
                     "GPU2 -> GPU0", "GPU2 -> GPU3", "GPU3 -> GPU0", "GPU3 -> GPU1", "GPU3 -> GPU2"], named
