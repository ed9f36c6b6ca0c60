# -*- coding: utf-8 -*-
"""Tests for the `nvidia-smi topo -m` parser against real and derived outputs."""

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import (
    parse_nvidia_topo,
    strip_ansi,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_topo"
ALL_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.txt"))
GPUS8 = ["GPU%d" % i for i in range(8)]


def load(name):
    return (FIXTURES / name).read_text()


def parse(name):
    return parse_nvidia_topo(load(name))


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_fixture_parses_cleanly(name):
    result = parse(name)
    assert result["errors"] == []
    assert result["gpus"]
    for device, row in result["matrix"].items():
        assert row[device] == "X"
    # The legend is never a row: no device is named after a legend entry.
    assert not set(result["matrix"]) & {"X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#", "Legend:"}


def test_dgx_a100_tabs_with_nic_legend():
    r = parse("dgx_a100_8gpu_10nic_tabs_legend.txt")
    assert r["gpus"] == GPUS8
    assert r["nics"] == ["NIC%d" % i for i in range(10)]
    assert r["matrix"]["GPU0"]["GPU1"] == "NV12"
    assert r["matrix"]["GPU7"]["GPU6"] == "NV12"
    assert r["matrix"]["GPU0"]["NIC0"] == "PXB"
    assert r["matrix"]["NIC8"]["NIC9"] == "PIX"
    assert r["matrix"]["NIC0"]["GPU0"] == "PXB"
    assert r["cpu_affinity"]["GPU0"] == "48-63,176-191"
    assert r["cpu_affinity"]["GPU4"] == "112-127,240-255"
    assert r["numa_affinity"] == {"GPU0": 3, "GPU1": 3, "GPU2": 1, "GPU3": 1,
                                  "GPU4": 7, "GPU5": 7, "GPU6": 5, "GPU7": 5}
    assert "gpu_numa_id" not in r
    assert r["nic_names"]["NIC0"] == "mlx5_0"
    assert r["nic_names"]["NIC9"] == "mlx5_9"
    assert r["nic_devices"]["NIC3"] == "mlx5_3"
    assert r["nic_affinity"]["NIC0"] == {"gpus": ["GPU0", "GPU1"], "relation": "PXB",
                                         "name": "mlx5_0"}
    assert r["nic_affinity"]["NIC6"]["gpus"] == ["GPU6", "GPU7"]
    assert r["nic_affinity"]["NIC8"]["relation"] == "SYS"
    assert len(r["nic_affinity"]["NIC8"]["gpus"]) == 8
    assert r["warnings"] == []


def test_rtx6000ada_spaces_legend_and_gpu_numa_id_na():
    r = parse("rtx6000ada_4gpu_4nic_spaces_legend.txt")
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert r["nics"] == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert r["matrix"]["GPU0"]["GPU1"] == "NODE"
    assert r["matrix"]["GPU1"]["GPU2"] == "SYS"
    assert r["cpu_affinity"] == {"GPU0": "0-31", "GPU1": "0-31", "GPU2": "32-63", "GPU3": "32-63"}
    assert r["numa_affinity"] == {"GPU0": 0, "GPU1": 0, "GPU2": 1, "GPU3": 1}
    assert r["gpu_numa_id"] == {"GPU0": None, "GPU1": None, "GPU2": None, "GPU3": None}
    assert r["nic_names"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2",
                              "NIC3": "mlx5_3"}
    assert r["nic_affinity"]["NIC2"] == {"gpus": ["GPU2", "GPU3"], "relation": "NODE",
                                         "name": "mlx5_2"}


def test_two_gpus_two_nics():
    r = parse("rtx_2gpu_2nic_spaces_legend.txt")
    assert r["matrix"]["GPU0"]["GPU1"] == "PHB"
    assert r["matrix"]["NIC0"]["NIC1"] == "PIX"
    assert r["nic_affinity"]["NIC1"]["relation"] == "NODE"


def test_old_driver_mlx5_columns_without_numa():
    r = parse("v100_4gpu_4mlx5_old_legend.txt")
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert r["nics"] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert r["nic_names"] == {}
    assert r["nic_devices"] == {"mlx5_0": "mlx5_0", "mlx5_1": "mlx5_1", "mlx5_2": "mlx5_2",
                                "mlx5_3": "mlx5_3"}
    assert r["matrix"]["GPU0"]["GPU1"] == "NV2"
    assert r["matrix"]["GPU0"]["GPU2"] == "NV1"
    assert r["matrix"]["GPU0"]["GPU3"] == "NODE"
    assert r["matrix"]["mlx5_2"]["mlx5_3"] == "PIX"
    assert r["cpu_affinity"]["GPU3"] == "14-27"
    assert r["numa_affinity"] == {"GPU0": None, "GPU1": None, "GPU2": None, "GPU3": None}
    assert r["nic_affinity"]["mlx5_0"] == {"gpus": ["GPU0", "GPU1"], "relation": "PIX",
                                           "name": "mlx5_0"}
    assert r["nic_affinity"]["mlx5_3"]["gpus"] == ["GPU2", "GPU3"]
    assert r["warnings"] == []


def test_mlx5_column_with_numa_affinity():
    r = parse("a100_pcie_2gpu_mlx5_numa.txt")
    assert r["nics"] == ["mlx5_0"]
    assert r["numa_affinity"] == {"GPU0": 1, "GPU1": 1}
    assert r["cpu_affinity"]["GPU1"] == "32-63"
    assert r["nic_affinity"]["mlx5_0"] == {"gpus": ["GPU0", "GPU1"], "relation": "NODE",
                                           "name": "mlx5_0"}


def test_tabs_nic_rows_without_legend_warn():
    r = parse("rtx4090_8gpu_2nic_tabs_no_legend.txt")
    assert r["gpus"] == GPUS8
    assert r["nics"] == ["NIC0", "NIC1"]
    assert r["matrix"]["GPU6"]["NIC0"] == "PHB"
    assert r["matrix"]["NIC1"]["NIC0"] == "PIX"
    assert r["numa_affinity"]["GPU3"] == 0
    assert r["numa_affinity"]["GPU4"] == 1
    assert r["cpu_affinity"]["GPU7"] == "56-111,168-223"
    assert r["gpu_numa_id"]["GPU0"] is None
    assert r["nic_names"] == {}
    assert r["nic_affinity"]["NIC0"] == {"gpus": ["GPU6"], "relation": "PHB", "name": "NIC0"}
    assert any("NIC Legend" in w for w in r["warnings"])


def test_single_gpu_with_doubled_tabs():
    r = parse("tesla_p4_1gpu_tabs.txt")
    assert r["gpus"] == ["GPU0"]
    assert r["nics"] == []
    assert r["matrix"] == {"GPU0": {"GPU0": "X"}}
    assert r["cpu_affinity"] == {"GPU0": "0-7"}
    assert r["numa_affinity"] == {"GPU0": None}
    assert r["gpu_numa_id"] == {"GPU0": None}
    assert r["nic_affinity"] == {}


def test_five_gpus_spaces_no_nics():
    r = parse("rtx4090_5gpu_spaces.txt")
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4"]
    assert r["matrix"]["GPU1"]["GPU2"] == "PHB"
    assert r["matrix"]["GPU3"]["GPU4"] == "PHB"
    assert r["matrix"]["GPU0"]["GPU4"] == "SYS"
    assert r["cpu_affinity"]["GPU0"] == "8-15,24-31"
    assert r["numa_affinity"]["GPU0"] == 1
    assert r["numa_affinity"]["GPU1"] == 0


def test_gh200_quad_numa_ids():
    r = parse("gh200_4gpu_alps_numa_ids.txt")
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert r["nics"] == []
    for a in r["gpus"]:
        for b in r["gpus"]:
            assert r["matrix"][a][b] == ("X" if a == b else "NV6")
    assert r["cpu_affinity"] == {"GPU0": "0-71", "GPU1": "72-143", "GPU2": "144-215",
                                 "GPU3": "216-287"}
    assert r["numa_affinity"] == {"GPU0": 0, "GPU1": 1, "GPU2": 2, "GPU3": 3}
    assert r["gpu_numa_id"] == {"GPU0": 4, "GPU1": 12, "GPU2": 20, "GPU3": 28}


@pytest.mark.parametrize("name", ["gb200_4gpu_4nic_handmade.txt",
                                  "gb200_4gpu_ansi_header_handmade.txt"])
def test_gb200_nv18_numa_ids_nics(name):
    r = parse(name)
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert r["nics"] == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert r["matrix"]["GPU0"]["GPU1"] == "NV18"
    assert r["matrix"]["GPU3"]["GPU2"] == "NV18"
    assert r["gpu_numa_id"] == {"GPU0": 2, "GPU1": 2, "GPU2": 10, "GPU3": 10}
    assert r["numa_affinity"] == {"GPU0": 0, "GPU1": 0, "GPU2": 1, "GPU3": 1}
    assert r["cpu_affinity"]["GPU2"] == "72-143"
    for i in range(4):
        assert r["nic_affinity"]["NIC%d" % i] == {"gpus": ["GPU%d" % i], "relation": "PIX",
                                                  "name": "mlx5_%d" % i}
    assert r["warnings"] == []


def test_ansi_header_is_stripped():
    text = load("gb200_4gpu_ansi_header_handmade.txt")
    assert "\x1b[4m" in text
    assert parse_nvidia_topo(text)["matrix"] == parse("gb200_4gpu_4nic_handmade.txt")["matrix"]


def test_ansi_codes_inside_rows_and_alternative_placement():
    text = load("rtx6000ada_4gpu_4nic_spaces_legend.txt").split("\n")
    text[0] = "\t\x1b[4m" + text[0].strip() + "\x1b[0m"
    text[1] = "\x1b[1m" + text[1] + "\x1b[0m"
    r = parse_nvidia_topo("\n".join(text))
    assert r["errors"] == []
    assert r["matrix"]["GPU0"]["GPU1"] == "NODE"


def test_strip_ansi():
    assert strip_ansi("\x1b[4m\tGPU0\x1b[0m\x1b(B") == "\tGPU0"


def test_seven_of_eight_gpus():
    r = parse("dgx_a100_7of8_gpus_handmade.txt")
    assert r["errors"] == []
    assert r["gpus"] == ["GPU%d" % i for i in range(7)]
    assert len(r["matrix"]) == 7 + 10
    assert r["matrix"]["GPU3"]["NIC4"] == "PXB"
    assert r["numa_affinity"]["GPU2"] == 1
    assert r["nic_affinity"]["NIC2"]["gpus"] == ["GPU2"]
    assert r["nic_affinity"]["NIC4"]["gpus"] == ["GPU3", "GPU4"]


def test_launcher_prefixes_are_removed():
    text = "\n".join("[1,0]<stdout>:" + line for line in load("rtx_2gpu_2nic_spaces_legend.txt")
                     .split("\n"))
    r = parse_nvidia_topo(text)
    assert r["errors"] == []
    assert r["matrix"]["GPU0"]["NIC1"] == "NODE"


def test_output_embedded_in_other_text():
    text = ("NVIDIA Topology: \n" + load("rtx6000ada_4gpu_4nic_spaces_legend.txt")
            + "\n\nHypervisor vendor:: KVM\nulimit soft: 1048576\n")
    r = parse_nvidia_topo(text)
    assert r["errors"] == []
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]


def test_p2p_matrix_after_legend_is_ignored():
    text = load("tesla_p4_1gpu_tabs.txt") + " \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n"
    r = parse_nvidia_topo(text)
    assert r["errors"] == []
    assert r["matrix"] == {"GPU0": {"GPU0": "X"}}


def test_glued_cells_are_separated_with_a_warning():
    text = ("        GPU0    GPU1    NIC0    NIC1    CPU Affinity    NUMA Affinity\n"
            "GPU0     X      NV18    NODENODE        0-55    0\n"
            "GPU1    NV18     X      NODE    PIX     0-55    0\n"
            "NIC0    NODE    NODE     X      PIX\n"
            "NIC1    NODE    PIX     PIX      X\n")
    r = parse_nvidia_topo(text)
    assert r["errors"] == []
    assert r["matrix"]["GPU0"]["NIC0"] == "NODE"
    assert r["matrix"]["GPU0"]["NIC1"] == "NODE"
    assert r["cpu_affinity"]["GPU0"] == "0-55"
    assert any("NODENODE" in w for w in r["warnings"])


def test_truncated_output_names_missing_rows():
    lines = load("dgx_a100_8gpu_10nic_tabs_legend.txt").split("\n")
    r = parse_nvidia_topo("\n".join(lines[:6]))
    assert r["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4"]
    assert any("GPU5" in e and "no row" in e for e in r["errors"])
    assert any("NIC9" in e for e in r["errors"])


def test_row_cut_mid_line_names_the_line():
    lines = load("rtx6000ada_4gpu_4nic_spaces_legend.txt").split("\n")
    lines[3] = lines[3][:20]
    r = parse_nvidia_topo("\n".join(lines))
    assert any(e.startswith("line 4: GPU2 row has") for e in r["errors"])
    assert "GPU2" not in r["gpus"]


def test_asymmetric_matrix_and_bad_diagonal_warn():
    text = ("\tGPU0\tGPU1\n"
            "GPU0\t X \tNV4\n"
            "GPU1\tSYS\tSYS\n")
    r = parse_nvidia_topo(text)
    assert r["errors"] == []
    assert any("GPU0-GPU1 is NV4 but GPU1-GPU0 is SYS" in w for w in r["warnings"])
    assert any("diagonal" in w for w in r["warnings"])


def test_legend_only_is_an_error():
    legend = load("tesla_p4_1gpu_tabs.txt").split("Legend:")[1]
    r = parse_nvidia_topo("Legend:" + legend)
    assert r["errors"]
    assert r["gpus"] == []
    assert r["matrix"] == {}


@pytest.mark.parametrize("text", ["", "   \n\n", "\tGPU0\tGPU1\tCPU Affinity\n",
                                  "No devices were found\n",
                                  "NVIDIA-SMI has failed because it couldn't communicate with "
                                  "the NVIDIA driver.\n"])
def test_empty_header_only_or_failure_text(text):
    r = parse_nvidia_topo(text)
    assert r["errors"]
    assert r["gpus"] == []


def test_non_string_input_is_an_error_not_an_exception():
    r = parse_nvidia_topo(None)
    assert r["errors"] and r["gpus"] == []


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400)


@given(st.sampled_from(ALL_FIXTURES), st.integers(min_value=0, max_value=5000))
def test_truncation_never_raises(name, cut):
    text = load(name)
    r = parse_nvidia_topo(text[:cut % (len(text) + 1)])
    assert isinstance(r["errors"], list) and isinstance(r["warnings"], list)
    if not r["gpus"]:
        assert r["errors"]


@given(st.sampled_from(ALL_FIXTURES), st.sets(st.integers(min_value=0, max_value=60)))
def test_dropped_lines_never_raise(name, dropped):
    lines = load(name).split("\n")
    text = "\n".join(line for i, line in enumerate(lines) if i not in dropped)
    r = parse_nvidia_topo(text)
    for gpu in r["gpus"]:
        assert r["matrix"][gpu]
    if not r["gpus"]:
        assert r["errors"]


@given(_TEXT)
def test_garbage_never_raises(text):
    r = parse_nvidia_topo(text)
    assert isinstance(r, dict)
    if not r["gpus"]:
        assert r["errors"]


@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data):
    r = parse_nvidia_topo(data.decode("utf-8", errors="replace"))
    if not r["gpus"]:
        assert r["errors"]


@given(st.sampled_from(ALL_FIXTURES), _TEXT, st.integers(min_value=0, max_value=40))
def test_garbage_inserted_into_real_output_never_raises(name, garbage, at):
    lines = load(name).split("\n")
    lines.insert(at % (len(lines) + 1), garbage)
    parse_nvidia_topo("\n".join(lines))
