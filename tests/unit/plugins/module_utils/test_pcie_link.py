"""PCIe link training: the sysfs parser, the kernel's arithmetic, gpu.pcie_link on real nvidia-smi -q
reports (and the same reports with one link trained down) and ib.pcie_link in the infiniband stage."""
import re

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import judge_gpu_health
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import judge_infiniband_stage
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import parse_nvidia_smi_q
from ansible_collections.gpucluster.acceptance.plugins.module_utils._pcie_link import (
    available_gbps, gen_of_speed, parse_pcie_sysfs)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

H100_Q = (FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text()
IBSTAT = (FIXTURES / "ibstat" / "gpud_h100_ib_active_bond_spaces.txt").read_text()
COMPUTE = ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


def pcie(results):
    return [r for r in results if r["check"] in ("gpu.pcie_link", "ib.pcie_link")]


def sysfs(cas=COMPUTE, current=None, root="/sys/class/infiniband"):
    """What `grep -H . <root>/*/device/*_link_speed <root>/*/device/*_link_width` prints (the files
    hold one value each, e.g. "32.0 GT/s PCIe" and "16", as drivers/pci/pci-sysfs.c writes them)."""
    current = current or {}
    lines = []
    for kind in ("speed", "width"):
        for ca in cas:
            speed, width = current.get(ca, ("32.0 GT/s PCIe", "16"))
            lines.append("%s/%s/device/current_link_%s:%s" % (root, ca, kind, speed if kind == "speed" else width))
            lines.append("%s/%s/device/max_link_%s:%s" % (root, ca, kind, "32.0 GT/s PCIe" if kind == "speed" else "16"))
    return "\n".join(sorted(lines)) + "\n"


def downtrain(text, gpu, gen=None, width=None):
    """The -q report with GPU number ``gpu``'s link Current (and Device Current) generation / width set."""
    sections = re.split(r"(?m)^(?=GPU 0000)", text)
    head, gpus = sections[0], sections[1:]
    section = gpus[gpu]
    if gen is not None:
        section = re.sub(r"(?m)^(\s+(?:Device )?Current\s+: )5$", lambda m: m.group(1) + str(gen), section)
    if width is not None:
        section = re.sub(r"(?m)^(\s+Current\s+: )16x$", lambda m: "%s%dx" % (m.group(1), width), section)
    gpus[gpu] = section
    return head + "".join(gpus)


def test_the_kernel_figures_and_the_speeds_sysfs_prints():
    assert available_gbps(5, 16) == pytest.approx(504.112)   # "504.112 Gb/s available PCIe bandwidth"
    assert available_gbps(4, 16) == pytest.approx(252.048)   # "(capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)"
    assert available_gbps(3, 1) == pytest.approx(7.876)      # "(capable of 7.876 Gb/s with 8.0 GT/s PCIe x1 link)"
    assert [gen_of_speed(s) for s in ("2.5 GT/s PCIe", "8 GT/s", "16.0 GT/s PCIe", "32.0 GT/s PCIe", "Unknown")] \
        == [1, 3, 4, 5, None]


def test_the_sysfs_parser_salvages_around_an_unreadable_value_and_a_stray_line():
    text = "root@gpu001:~# grep -H . /sys/class/infiniband/*/device/*_link_*\n" + sysfs(
        cas=("mlx5_0", "mlx5_1"), current={"mlx5_1": ("Unknown", "16")})
    parsed = parse_pcie_sysfs(text)
    assert parsed["devices"]["mlx5_0"]["current_gen"] == 5 and parsed["devices"]["mlx5_0"]["max_width"] == 16
    assert parsed["devices"]["mlx5_1"]["current_gen"] is None and parsed["devices"]["mlx5_1"]["current_width"] == 16
    assert any("mlx5_1 current link speed is 'Unknown'" in e for e in parsed["errors"])
    assert parsed["warnings"] and "not a PCIe link attribute" in parsed["warnings"][0]
    assert parse_pcie_sysfs("")["errors"] == ["no PCIe link attribute in the output"]


def test_every_gpu_of_a_real_dgx_h100_report_passes_and_the_pass_says_what_it_proved(h100):
    results = pcie(judge_gpu_health(parse_nvidia_smi_q(H100_Q), None, None, h100))
    assert [r["status"] for r in results] == ["pass"]
    assert results[0]["message"] == "8 GPUs at PCIe Gen5 x16 (504 Gb/s), as expected (Gen5 x16)"
    assert any("GPU Link Info > Link Width > Current : 16x" in line for line in results[0]["evidence"])


def test_a_gpu_trained_at_x8_or_gen4_fails_by_name_under_load(h100):
    text = downtrain(downtrain(H100_Q, 3, width=8), 6, gen=4)
    results = pcie(judge_gpu_health(parse_nvidia_smi_q(text), None, None, h100))
    failed = dict((r["component"], r) for r in results if r["status"] == "fail")
    assert sorted(failed) == ["GPU3", "GPU6"]
    assert failed["GPU3"]["message"] == ("GPU3 (00000000:5D:00.0) PCIe link trained at x8, expected x16: "
                                         "Gen5 x8 (252 Gb/s) instead of Gen5 x16 (504 Gb/s)")
    assert failed["GPU6"]["message"].startswith("GPU6 (00000000:BA:00.0) PCIe link runs at Gen4, expected Gen5")
    assert "Link Width > Current : 8x" in " ".join(failed["GPU3"]["evidence"])
    passed = [r for r in results if r["status"] == "pass"]
    assert len(passed) == 1 and passed[0]["message"].startswith("6 GPUs at PCIe Gen5 x16")
    assert "GPU3 and GPU6 judged above" in passed[0]["message"]


def test_an_idle_gpus_lower_generation_is_not_judged_and_not_a_pass():
    # Real RTX 4090 report: P8, "Current : 1" while "Max : 4", width 16x.
    text = (FIXTURES / "captured" / "rtx4090_8gpu_sw_power_cap_gpud" / "nvidia-smi-q.txt").read_text()
    results = pcie(judge_gpu_health(parse_nvidia_smi_q(text), None, None, {}))
    skipped = [r for r in results if r["status"] == "skip"]
    assert skipped and all("in P8" in r["message"] and "judged only under load (P0)" in r["message"]
                           for r in skipped)
    assert not any(r["status"] == "fail" for r in results)
    # the width of an idle GPU is still judged
    idle_x8 = re.sub(r"(?m)^(\s+Current\s+: )16x$", r"\g<1>8x", text, count=1)
    failed = [r for r in pcie(judge_gpu_health(parse_nvidia_smi_q(idle_x8), None, None, {})) if r["status"] == "fail"]
    assert len(failed) == 1 and "trained at x8, expected x16" in failed[0]["message"]


def test_a_slot_whose_maximum_is_below_the_profile_fails_even_when_current_equals_max(h100):
    text = re.sub(r"(?m)^(\s+(?:Max|Current|Device Current|Host Max)\s+: )5$", r"\g<1>4", H100_Q)
    results = pcie(judge_gpu_health(parse_nvidia_smi_q(text), None, None, h100))
    assert {r["status"] for r in results} == {"fail"} and len(results) == 8
    assert "its link's maximum is Gen4" in results[0]["message"]
    # without a platform figure the GPU's own maximum (5) is the bar: Gen4 current still fails
    results = pcie(judge_gpu_health(parse_nvidia_smi_q(text), None, None, {}))
    assert {r["status"] for r in results} == {"fail"}


def test_the_infiniband_stage_names_a_downtrained_hca_and_what_it_costs(h100):
    outputs = {"ibstat": IBSTAT, "ib-counters-before": None, "ib-counters-after": None,
               "ib-pcie": sysfs(current={"mlx5_5": ("16.0 GT/s PCIe", "16"), "mlx5_8": ("32.0 GT/s PCIe", "4")})}
    checks, _metrics = judge_infiniband_stage(outputs, h100, {})
    results = pcie(checks)
    failed = dict((r["component"], r["message"]) for r in results if r["status"] == "fail")
    assert failed == {
        "mlx5_5": "mlx5_5 PCIe link runs at Gen4, expected Gen5: Gen4 x16 (252 Gb/s) instead of Gen5 x16 "
                  "(504 Gb/s): 252 Gb/s, less than the port's 400 Gb/s",
        "mlx5_8": "mlx5_8 PCIe link trained at x4, expected x16: Gen5 x4 (126 Gb/s) instead of Gen5 x16 "
                  "(504 Gb/s): 126 Gb/s, less than the port's 400 Gb/s"}
    passed = [r for r in results if r["status"] == "pass"]
    assert passed and passed[0]["message"].startswith("6 compute HCAs at PCIe Gen5 x16")
    assert all(r.get("tool") == "ib-pcie" for r in results)
    # the bond (Ethernet, not the compute fabric) is not judged, even when sysfs lists it
    outputs["ib-pcie"] = sysfs(cas=COMPUTE + ("mlx5_bond_0",), current={"mlx5_bond_0": ("8.0 GT/s PCIe", "8")})
    assert {r["status"] for r in pcie(judge_infiniband_stage(outputs, h100, {})[0])} == {"pass"}


def test_a_compute_hca_sysfs_does_not_show_is_an_error_and_an_uncaptured_tool_a_skip(h100):
    outputs = {"ibstat": IBSTAT, "ib-counters-before": None, "ib-counters-after": None,
               "ib-pcie": sysfs(cas=COMPUTE[:-1])}
    results = pcie(judge_infiniband_stage(outputs, h100, {})[0])
    errors = [r for r in results if r["status"] == "error"]
    assert [r["component"] for r in errors] == ["mlx5_9"]
    outputs["ib-pcie"] = None
    results = pcie(judge_infiniband_stage(outputs, h100, {})[0])
    assert [(r["status"], r["message"]) for r in results] == [
        ("skip", "ib-pcie was not captured: the HCAs' PCIe links were not judged")]
