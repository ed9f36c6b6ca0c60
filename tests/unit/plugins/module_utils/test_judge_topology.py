"""judge_topology over real nvidia-smi topo -m outputs (tests/fixtures/nvidia_topo)."""
import copy

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_topology import (
    judge_topology)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import (
    parse_nvidia_topo)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES


def _topo(name):
    return parse_nvidia_topo((FIXTURES / "nvidia_topo" / name).read_text())


def _statuses(results, check):
    return [r["status"] for r in results if r["check"] == check]


@pytest.fixture(scope="module")
def a100():
    return load_profile("a100_sxm_80gb")


def test_dgx_a100_passes_a100_profile(a100):
    results = judge_topology(_topo("dgx_a100_8gpu_10nic_tabs_legend.txt"), a100)
    assert set(r["status"] for r in results) == {"pass"}
    assert {"topology.gpu_count", "topology.nvlink", "topology.nic_count",
            "topology.nic_affinity"} == set(r["check"] for r in results)
    nvlink = [r for r in results if r["check"] == "topology.nvlink"][0]
    assert nvlink["message"] == "all 28 GPU pairs are NV12"


def test_dgx_a100_against_h100_profile_names_every_pair():
    results = judge_topology(_topo("dgx_a100_8gpu_10nic_tabs_legend.txt"),
                             load_profile("hgx_h100_sxm"))
    bad = [r for r in results if r["check"] == "topology.nvlink" and r["status"] == "fail"]
    assert len(bad) == 28
    assert bad[0]["message"] == u"GPU0\u2194GPU1 is NV12, expected NV18"
    assert bad[0]["component"] == u"GPU0\u2194GPU1"


def test_missing_gpu(a100):
    results = judge_topology(_topo("dgx_a100_7of8_gpus_handmade.txt"), a100)
    count = [r for r in results if r["check"] == "topology.gpu_count"][0]
    assert count["status"] == "fail"
    # topo -m renumbers the GPUs it sees: never name the renumbered index as the missing one.
    assert count["message"].startswith("nvidia-smi topo -m shows 7 GPUs (GPU0-GPU6), expected 8; ")
    assert "named by PCI bus id in gpu_health" in count["message"]
    assert "GPU7" not in count["message"].split(";")[1]
    assert count["evidence"][0].startswith("GPU0") and len(count["evidence"]) == 8


def test_degraded_link_is_named(a100):
    topo = _topo("dgx_a100_8gpu_10nic_tabs_legend.txt")
    topo["matrix"]["GPU2"]["GPU5"] = "SYS"
    topo["matrix"]["GPU5"]["GPU2"] = "SYS"
    results = judge_topology(topo, a100)
    bad = [r for r in results if r["status"] == "fail"]
    assert [r["message"] for r in bad] == [u"GPU2\u2194GPU5 is SYS, expected NV12"]


def test_gpu_far_from_every_nic(a100):
    topo = _topo("dgx_a100_8gpu_10nic_tabs_legend.txt")
    for nic in ("NIC2", "NIC3"):
        topo["matrix"]["GPU3"][nic] = "NODE"
        topo["matrix"][nic]["GPU3"] = "NODE"
    results = judge_topology(topo, a100)
    bad = [r for r in results if r["check"] == "topology.nic_affinity" and r["status"] == "fail"]
    assert [r["message"] for r in bad] == [
        "GPU3 has no NIC at PIX/PXB; the closest is mlx5_2 and mlx5_3 via NODE"]
    assert bad[0]["component"] == "GPU3"


def test_too_few_nics(a100):
    profile = copy.deepcopy(a100)
    profile["nics_per_node"] = 12
    results = judge_topology(_topo("dgx_a100_8gpu_10nic_tabs_legend.txt"), profile)
    msgs = [r["message"] for r in results if r["status"] == "fail"]
    assert "10 NICs in the topology, expected at least 12" in msgs
    assert any(m.startswith("only 8 NICs are PIX/PXB to a GPU") for m in msgs)


def test_named_nics(a100):
    profile = copy.deepcopy(a100)
    profile["nic_names"] = ["mlx5_%d" % i for i in range(9)] + ["mlx5_12"]
    results = judge_topology(_topo("dgx_a100_8gpu_10nic_tabs_legend.txt"), profile)
    msgs = sorted(r["message"] for r in results if r["status"] == "fail")
    assert msgs == ["compute NIC mlx5_12 is missing from the topology",
                    "mlx5_8 has no GPU at PIX/PXB; the closest is GPU0, GPU1, GPU2, GPU3, GPU4, "
                    "GPU5, GPU6 and GPU7 via SYS"]


def test_gb200_tray_skips_nic_relation():
    results = judge_topology(_topo("gb200_4gpu_4nic_handmade.txt"),
                             load_profile("gb200_nvl72_tray"))
    assert _statuses(results, "topology.nic_affinity") == ["skip"]
    assert _statuses(results, "topology.nvlink") == ["pass"]
    assert _statuses(results, "topology.gpu_count") == ["pass"]


def test_ansi_header_variant_parses_and_passes():
    results = judge_topology(_topo("gb200_4gpu_ansi_header_handmade.txt"),
                             load_profile("gb200_nvl72_tray"))
    assert "fail" not in [r["status"] for r in results]
    assert "error" not in [r["status"] for r in results]


@pytest.mark.parametrize("text", ["", "garbage\nmore garbage\n", "\tGPU0\tGPU1\n"])
def test_unreadable_output_is_error_never_pass(text, a100):
    results = judge_topology(parse_nvidia_topo(text), a100)
    assert len(results) == 1
    assert results[0]["status"] == "error"
    assert results[0]["check"] == "topology.parse"
    assert results[0]["message"].startswith("nvidia-smi topo -m: ")


def test_truncated_fixture_is_error_next_to_the_rows_that_were_read(a100):
    text = (FIXTURES / "nvidia_topo" / "dgx_a100_8gpu_10nic_tabs_legend.txt").read_text()
    truncated = "\n".join(text.splitlines()[:5])
    results = judge_topology(parse_nvidia_topo(truncated), a100)
    assert results[0]["check"] == "topology.parse" and results[0]["status"] == "error"
    assert "output unreadable" in results[0]["message"]
    # The four rows that were printed are still judged; the pairs with no cell are errors.
    nvlink = [r for r in results if r["check"] == "topology.nvlink"]
    assert nvlink and all(r["status"] == "error" for r in nvlink)
    assert len(nvlink) == 6  # GPU4..GPU7 among themselves: no row, no cell
    assert "pass" not in set(r["status"] for r in results if r["check"] == "topology.nvlink")


def test_missing_input_is_error(a100):
    results = judge_topology(None, a100)
    assert results[0]["status"] == "error"
    assert results[0]["message"] == "nvidia-smi topo -m: no output was collected"


def test_pcie_only_profile_skips_nvlink(a100):
    profile = copy.deepcopy(a100)
    profile["nvlink_per_pair"] = None
    results = judge_topology(_topo("dgx_a100_8gpu_10nic_tabs_legend.txt"), profile)
    assert _statuses(results, "topology.nvlink") == ["skip"]
