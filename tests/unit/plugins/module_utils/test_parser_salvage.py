# -*- coding: utf-8 -*-
"""Parsers salvage: one unexpected line never loses the findings in the rest of the output.

Variants are made from the real fixtures (tests/fixtures/*): a shell prompt or command echo above
the output, launcher prefixes, a garbled row, a truncated section, an ibpanic line.
"""

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    judge_gpu_health)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_topology import (
    judge_topology)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import (
    parse_nvidia_topo)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
A100 = load_profile("a100_sxm_80gb")


def fixture(path):
    return (FIXTURES / path).read_text()


def srun_label(text, rank=0):
    return "".join("%d: %s\n" % (rank, line) for line in text.splitlines())


def mpirun_tag(text):
    return "".join("[1,0]<stdout>:%s\n" % line for line in text.splitlines())


# ----------------------------------------------------------------------------------- CSV ----

CSV = "nvidia_smi/csv_h100_8gpu_units_handmade.csv"


@pytest.mark.parametrize("noise", ["user@gpu01:~$ nvidia-smi --query-gpu=index,name --format=csv",
                                   "[root@gpu01 ~]# nvidia-smi --query-gpu=index --format=csv,noheader",
                                   "+ nvidia-smi --query-gpu=index,name --format=csv",
                                   "nvidia-smi --query-gpu=index,name --format=csv"])
def test_csv_prompt_or_echo_above_the_header_is_a_warning(noise):
    r = parse_nvidia_smi_csv(noise + "\n" + fixture(CSV))
    assert r["errors"] == [] and len(r["gpus"]) == 8
    assert r["warnings"] == ["line 1: shell prompt or command echo ignored: %s" % noise[:120]]


def test_csv_garbled_row_is_an_error_beside_the_other_rows_findings():
    lines = fixture(CSV).splitlines()
    lines[3] = lines[3][:40]  # GPU2's row cut short
    lines[6] = lines[6].replace(", 0, 16", ", 3, 16")  # GPU5: 3 volatile uncorrectable ECC errors
    r = parse_nvidia_smi_csv("\n".join(lines))
    assert len(r["gpus"]) == 7 and r["errors"][0].startswith("line 4: ")
    results = judge_gpu_health(None, r, None, H100)
    assert [x["status"] for x in results if x["check"] == "gpu.parse"] == ["error"]
    ecc = [x for x in results if x["check"] == "gpu.ecc" and x["status"] == "fail"]
    assert [x["component"] for x in ecc] == ["GPU5"]
    assert ecc[0]["evidence"][0].startswith("index, name, pci.bus_id") and ecc[0]["evidence"][1] == lines[6]


@pytest.mark.parametrize("form", [srun_label, mpirun_tag])
def test_csv_launcher_prefixes(form):
    r = parse_nvidia_smi_csv(form(fixture("nvidia_smi/csv_h100_8gpu_nounits_handmade.csv")))
    assert r["errors"] == [] and len(r["gpus"]) == 8


def test_csv_noheader_rows_before_a_header_keep_looking():
    text = "0, 81559\n1, 81559\nindex, memory.total [MiB]\n0, 81559\n"
    r = parse_nvidia_smi_csv(text)
    assert len(r["gpus"]) == 1
    assert r["errors"][0].startswith("line 1: a data row before any CSV header line")
    assert "2 lines before the header were not read" in r["errors"]


def test_csv_not_applicable_values_are_missing_not_errors():
    r = parse_nvidia_smi_csv("index, pci.bus_id, temperature.gpu, ecc.errors.uncorrected.volatile.total\n"
                             "0, 00000000:18:00.0, [N/A], [N/A]\n")
    assert r["errors"] == [] and r["gpus"][0]["temperature.gpu"] is None


# ------------------------------------------------------------------------------------ -q ----

Q = "nvidia_smi/q_h100_sxm_8gpu_565.txt"
A100_Q = "nvidia_smi/q_a100_sxm4_4gpu_pending_remap_555.txt"


def test_q_prompt_above_and_after_the_report_is_a_warning():
    text = "user@gpu01:~$ nvidia-smi -q\n" + fixture(Q) + "user@gpu01:~$ \n"
    r = parse_nvidia_smi_q(text)
    assert r["errors"] == [] and len(r["gpus"]) == 8
    assert len(r["warnings"]) == 2 and all("shell prompt" in w for w in r["warnings"])


def test_q_truncated_last_section_keeps_the_pending_remap_finding():
    text = fixture(A100_Q)
    cut = text[:text.rindex("    Processes")]
    cut = cut[:cut.rindex("Temperature")]  # the last GPU's report stops inside its sections
    r = parse_nvidia_smi_q(cut)
    assert r["errors"] and len(r["gpus"]) == 4
    results = judge_gpu_health(r, None, None, A100)
    remap = [x for x in results if x["check"] == "gpu.remapped_rows" and x["status"] == "fail"]
    assert [x["component"] for x in remap] == ["GPU1"]
    assert "Remapped Rows > Pending : Yes" in remap[0]["evidence"]
    assert remap[0]["evidence"][0] == "GPU 00000000:9E:00.0"
    assert [x["status"] for x in results if x["check"] == "gpu.parse"] == ["error"]


def test_q_section_fragments_of_one_gpu_are_merged():
    """`nvidia-smi -q -d ECC` then `-q -d TEMPERATURE` pasted together: one GPU, both sections."""
    ecc = ("==============NVSMI LOG==============\n\nAttached GPUs : 1\nGPU 00000000:18:00.0\n"
           "    ECC Errors\n        Volatile\n            DRAM Uncorrectable : 2\n")
    temp = ("==============NVSMI LOG==============\n\nAttached GPUs : 1\nGPU 00000000:18:00.0\n"
            "    Temperature\n        GPU Current Temp : 41 C\n")
    r = parse_nvidia_smi_q(ecc + temp)
    assert r["errors"] == [] and len(r["gpus"]) == 1
    gpu = r["gpus"][0]
    assert gpu["ecc"]["volatile"]["dram_uncorrectable"] == 2 and gpu["temperature"]["gpu"] == 41
    assert any("merged" in w for w in r["warnings"])


def test_q_garbled_gpu_header_starts_a_gpu_of_its_own():
    text = fixture(Q).replace("GPU 00000000:5D:00.0\n", "GPU 00000000:5D:0?.0\n", 1)
    r = parse_nvidia_smi_q(text)
    assert len(r["gpus"]) == 8  # never merged into GPU2's block
    assert any("unreadable PCI bus id" in e for e in r["errors"])
    gpu3 = r["gpus"][3]
    assert gpu3["bus_id"] == "00000000:5D:00.0"  # named from its PCI section
    assert gpu3["invalid"]["bus_id"]


@pytest.mark.parametrize("form", [srun_label, mpirun_tag])
def test_q_launcher_prefixes(form):
    r = parse_nvidia_smi_q(form(fixture(Q)))
    assert r["errors"] == [] and len(r["gpus"]) == 8


# ------------------------------------------------------------------------------ topo -m ----

TOPO = "nvidia_topo/dgx_a100_8gpu_10nic_tabs_legend.txt"


@pytest.mark.parametrize("form", [srun_label, mpirun_tag, lambda t: "$ nvidia-smi topo -m\n" + t + "$ \n"])
def test_topo_noise_is_dropped(form):
    r = parse_nvidia_topo(form(fixture(TOPO)))
    assert r["errors"] == [] and len(r["gpus"]) == 8


def test_topo_sgr_header_and_garbled_row_keep_the_other_findings():
    text = fixture(TOPO).replace("\tGPU0\tGPU1", "\x1b[4m\tGPU0\tGPU1", 1)
    lines = text.splitlines()
    row = [i for i, l in enumerate(lines) if l.startswith("GPU2\t")][0]
    lines[row] = "GPU2\tNV12\tNV12"  # cut off
    nv5 = [i for i, l in enumerate(lines) if l.startswith("GPU5\t")][0]
    cells = lines[nv5].split("\t")
    cells[7] = "SYS"  # GPU5-GPU6 degraded
    lines[nv5] = "\t".join(cells)
    results = judge_topology(parse_nvidia_topo("\n".join(lines)), A100)
    parse = [r for r in results if r["check"] == "topology.parse"]
    assert parse and parse[0]["status"] == "error" and "GPU2 row has" in parse[0]["message"]
    count = [r for r in results if r["check"] == "topology.gpu_count"][0]
    assert count["status"] == "pass"  # GPU2 is still a column of the matrix
    bad = [r for r in results if r["check"] == "topology.nvlink" and r["status"] == "fail"]
    assert [r["component"] for r in bad] == [u"GPU5\u2194GPU6"]
    assert bad[0]["evidence"][1].startswith("GPU5\t")


# ------------------------------------------------------------------------------ kernel log ----

@pytest.mark.parametrize("form", [srun_label, mpirun_tag])
def test_xid_launcher_prefixes(form):
    plain = parse_xid_log(fixture("xid_log/dmesg_T_xid43_31_94_akash_244.log"))
    tagged = parse_xid_log(form(fixture("xid_log/dmesg_T_xid43_31_94_akash_244.log")))
    assert tagged["by_xid"] == plain["by_xid"] and tagged["errors"] == []


def test_xid_prompt_is_a_warning_and_garbled_xid_is_an_error():
    text = "$ sudo dmesg -T | grep NVRM\n" + fixture("xid_log/dmesg_T_xid43_31_94_akash_244.log") + \
        "[Wed Jul 31 23:59:00 2024] NVRM: Xid (PCI:0000:00:05): 7x9, pid=1\n"
    r = parse_xid_log(text)
    assert r["warnings"][0].startswith("line 1: shell prompt")
    assert len(r["errors"]) == 1 and "could not parse the Xid line" in r["errors"][0]
    assert r["by_xid"] == parse_xid_log(fixture("xid_log/dmesg_T_xid43_31_94_akash_244.log"))["by_xid"]


@pytest.mark.parametrize("line, kind", [
    ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 79, pid=1, x", "iso"),
    ("<4>[ 1126.635824] NVRM: Xid (PCI:0000:38:00): 79, pid=1, x", "monotonic"),
])
def test_xid_decode_and_level_prefixes(line, kind):
    event = parse_xid_log(line + "\n")["events"][0]
    assert event["timestamp_kind"] == kind and event["xid"] == 79


# ------------------------------------------------------------------------------ IB counters ----

def test_counter_snapshot_with_an_iberror_line_still_shows_the_rise():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import (
        judge_infiniband_stage)
    before = fixture("ib_counters/gpud_h100_sysfs_grep_counters_hw_counters.txt")
    after = "$ grep -H . /sys/class/infiniband/*/ports/*/counters/*\n" + before.replace(
        "mlx5_0/ports/1/counters/symbol_error:0", "mlx5_0/ports/1/counters/symbol_error:4") + \
        "grep: iberror: failed: /sys/class/infiniband/mlx5_9/ports/1/counters/symbol_error: No such device\n"
    outputs = {"ibstat": fixture("ibstat/gpud_h100_ib_active_bond_spaces.txt"),
               "ib-counters-before": mpirun_tag(before), "ib-counters-after": srun_label(after)}
    checks, _metrics = judge_infiniband_stage(outputs, H100, {})
    parse = [c for c in checks if c["check"] == "ib.parse"]
    assert [c["status"] for c in parse] == ["error"] and "after the test" in parse[0]["message"]
    rise = [c for c in checks if c["check"] == "ib.counters" and c["status"] == "fail"]
    assert [c["component"] for c in rise] == ["mlx5_0 port 1"] and "rose by 4" in rise[0]["message"]
