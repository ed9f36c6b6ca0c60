"""judge_gpu_health over real nvidia-smi -q / CSV outputs and kernel Xid lines."""
import copy

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    judge_gpu_health)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import (
    parse_xid_log)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES

# Kernel log lines in the exact form the driver prints them (examples from NVIDIA's Xid and GPU
# memory error management documentation, bus ids set to GPUs of q_h100_sxm_8gpu_565.txt).
XID_LOG = """\
[ 1021.112233] NVRM: Xid (PCI:0000:2a:00): 13, pid=7194, name=python3, Graphics Exception: ESR 0x505648=0x2000000
[ 1100.000001] NVRM: Xid (PCI:0000:3a:00): 92, pid='<unknown>', name=<unknown>, High single-bit ECC error rate
[ 1200.500000] NVRM: Xid (PCI:0000:5d:00): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No
[ 1300.000000] NVRM: Xid (PCI:0000:5d:00): 94, pid=7195, Contained: CE User Channel (0x9). RST: No, D-RST: No
"""
FALLEN_LOG = """\
[ 2000.000000] NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 2000.000000] NVRM: GPU 0000:ab:00.0: GPU has fallen off the bus.
"""


def _q(name):
    return parse_nvidia_smi_q((FIXTURES / "nvidia_smi" / name).read_text())


def _csv(name):
    return parse_nvidia_smi_csv((FIXTURES / "nvidia_smi" / name).read_text())


def _by_check(results, check):
    return [r for r in results if r["check"] == check]


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


@pytest.fixture(scope="module")
def a100():
    return load_profile("a100_sxm_80gb")


def test_healthy_h100_node(h100):
    results = judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"),
                               _csv("csv_h100_8gpu_units_handmade.csv"),
                               parse_xid_log("[    0.000000] Linux version 5.15.0-125-generic\n"), h100)
    statuses = dict((r["check"], r["status"]) for r in results)
    assert "fail" not in statuses.values() and "error" not in statuses.values()
    assert statuses["gpu.count"] == "pass"
    assert statuses["gpu.model"] == "pass"
    assert statuses["gpu.remapped_rows"] == "pass"
    assert statuses["gpu.xid"] == "pass"
    # 565 drivers print limits relative to T.Limit: 30 C + 57 C headroom - 0 = 87 C limit.
    assert statuses["gpu.temperature"] == "pass"


def test_t_limit_relative_temperature_over_limit(h100):
    smi = _q("q_h100_sxm_8gpu_565.txt")
    smi["gpus"][4]["temperature"].update({"gpu": 90, "tlimit": -3})
    results = _by_check(judge_gpu_health(smi, None, None, h100), "gpu.temperature")
    assert [r["message"] for r in results] == [
        "GPU4 (00000000:9A:00.0) GPU temperature is 90 C, above 87 C (the GPU's own limit)"]


def test_a100_pending_remap_fails_with_actionable_message(a100):
    results = judge_gpu_health(_q("q_a100_sxm4_4gpu_pending_remap_555.txt"), None, None, a100)
    remap = [r for r in _by_check(results, "gpu.remapped_rows") if r["status"] == "fail"]
    assert len(remap) == 1
    assert remap[0]["component"] == "GPU1"
    assert remap[0]["message"].startswith("GPU1 (00000000:9E:00.0) has pending row remaps")
    assert remap[0]["message"].endswith("reset the GPU to apply them")
    count = _by_check(results, "gpu.count")[0]
    assert count["status"] == "fail"
    assert count["message"].startswith("nvidia-smi -q shows 4 GPUs, expected 8; present: ")
    assert "cannot be named: the profile has no GPU bus-id layout" in count["message"]


def test_old_layout_errors_and_throttle(h100):
    results = judge_gpu_health(_q("q_p100_460_errors_throttle_handmade.txt"), None, None, h100)
    failed = dict((r["check"], r["message"]) for r in results if r["status"] == "fail")
    assert failed["gpu.throttle"] == "GPU0 (00000000:40:00.0) is throttled: HW Slowdown, HW Thermal Slowdown"
    assert failed["gpu.ecc"] == "GPU0 (00000000:40:00.0) has 1 volatile uncorrectable ECC errors (limit 0)"
    assert failed["gpu.retired_pages"] == \
        "GPU0 (00000000:40:00.0) has pages pending retirement; reset the GPU to retire them"
    assert failed["gpu.temperature"] == \
        "GPU0 (00000000:40:00.0) GPU temperature is 86 C, above 82 C (the GPU's own limit)"
    assert failed["gpu.model"].startswith("GPU0 (00000000:40:00.0) is a 'Tesla P100-PCIE-16GB'")


def test_profile_overrides_change_verdicts(h100):
    profile = copy.deepcopy(h100)
    profile["throttle"] = {"fail": [], "warn": ["HW Slowdown", "HW Thermal Slowdown"]}
    profile["retired_pages"]["pending_fails"] = False
    results = judge_gpu_health(_q("q_p100_460_errors_throttle_handmade.txt"), None, None, profile)
    throttle = _by_check(results, "gpu.throttle")
    assert [r["status"] for r in throttle] == ["pass", "pass"]
    assert throttle[0]["message"].startswith("warning: GPU0 (00000000:40:00.0) clocks are limited by")
    assert all(r["status"] != "fail" for r in _by_check(results, "gpu.retired_pages"))


def test_retired_pages_threshold(h100):
    smi = _q("q_p100_460_errors_throttle_handmade.txt")
    smi["gpus"][0]["retired_pages"].update({"single_bit": 40, "double_bit": 20, "pending": False})
    results = _by_check(judge_gpu_health(smi, None, None, h100), "gpu.retired_pages")
    assert [r["message"] for r in results] == [
        "GPU0 (00000000:40:00.0) has 60 retired pages (40 single-bit, 20 double-bit); replace at 60"]


def test_remap_failure_and_uncorrectable_count(a100):
    smi = _q("q_a100_sxm4_4gpu_pending_remap_555.txt")
    smi["gpus"][2]["remapped_rows"].update({"failure": True, "uncorrectable": 9})
    results = [r for r in _by_check(judge_gpu_health(smi, None, None, a100), "gpu.remapped_rows")
               if r["component"] == "GPU2"]
    messages = [r["message"] for r in results]
    assert any("row remapping failed" in m and "RMA" in m for m in messages)
    assert "GPU2 (00000000:C2:00.0) has 9 rows remapped for uncorrectable errors (limit 8)" in messages


def test_xid_events_by_severity(h100):
    results = judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, parse_xid_log(XID_LOG), h100)
    xid = _by_check(results, "gpu.xid")
    failed = [r for r in xid if r["status"] == "fail"]
    assert len(failed) == 1
    assert failed[0]["component"] == "GPU3"
    assert failed[0]["message"].startswith(
        "GPU3 (00000000:5D:00.0) logged Xid 94 (contained ECC error) 2 times in the whole log: "
        "Contained: CE User")
    warned = [r for r in xid if r["status"] == "pass" and r["metrics"].get("warning")]
    assert len(warned) == 1 and "Xid 92" in warned[0]["message"]
    # Xid 13 is an application fault: ignored, never a failure.
    assert not any("Xid 13" in r["message"] for r in failed + warned)


def test_gpu_fallen_off_the_bus(h100):
    results = judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, parse_xid_log(FALLEN_LOG),
                               h100)
    lost = _by_check(results, "gpu.lost")
    assert [r["status"] for r in lost] == ["fail"]
    assert lost[0]["message"] == \
        "GPU5 (00000000:AB:00.0) has fallen off the bus; reboot or reseat before use"
    assert any(r["status"] == "fail" and "Xid 79" in r["message"]
               for r in _by_check(results, "gpu.xid"))
    # A GPU that fell off is usually gone from nvidia-smi: named by its PCI address.
    results = judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None,
                               parse_xid_log(FALLEN_LOG.replace("ab:00", "ee:00")), h100)
    assert _by_check(results, "gpu.lost")[0]["message"].startswith(
        "0000:ee:00 has fallen off the bus")


def test_unknown_xid_follows_profile_default(h100):
    log = "[ 5.0] NVRM: Xid (PCI:0000:18:00): 150, pid=1, name=x, something new\n"
    profile = copy.deepcopy(h100)
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None,
                                         parse_xid_log(log), profile), "gpu.xid")
    assert results[0]["status"] == "pass" and results[0]["message"].startswith("warning:")
    profile["xid"]["unknown"] = "fail"
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None,
                                         parse_xid_log(log), profile), "gpu.xid")
    assert results[0]["status"] == "fail"
    assert results[0]["component"] == "GPU0"


def test_csv_only(h100):
    results = judge_gpu_health(None, _csv("csv_h100_8gpu_nounits_handmade.csv"), None, h100)
    statuses = dict((r["check"], r["status"]) for r in results)
    assert statuses["gpu.count"] == "pass"
    assert statuses["gpu.ecc"] == "pass"
    assert statuses["gpu.xid"] == "skip"


def test_csv_throttle_and_temperature_fields(h100):
    text = ("index, name, pci.bus_id, temperature.gpu, clocks_event_reasons.hw_thermal_slowdown, "
            "clocks_event_reasons.sw_power_cap, ecc.errors.uncorrected.volatile.total\n"
            "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 91, Active, Not Active, 0\n"
            "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 40, Not Active, Active, 3\n")
    profile = copy.deepcopy(h100)
    profile["gpus_per_node"] = 2
    profile["temperature"]["gpu_max_c"] = 85
    results = judge_gpu_health(None, parse_nvidia_smi_csv(text), None, profile)
    failed = sorted(r["message"] for r in results if r["status"] == "fail")
    assert failed == [
        "GPU0 (00000000:18:00.0) GPU temperature is 91 C, above 85 C (profile limit)",
        "GPU0 (00000000:18:00.0) is throttled: HW Thermal Slowdown",
        "GPU1 (00000000:2A:00.0) has 3 volatile uncorrectable ECC errors (limit 0)",
    ]


def test_driver_branch(h100):
    profile = copy.deepcopy(h100)
    profile["driver_branch"] = "550"
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, None, profile),
                        "gpu.driver")
    assert results[0]["status"] == "fail"
    assert results[0]["message"] == "driver 565.57.01 is not on the expected 550 branch"
    profile["driver_branch"] = "565"
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, None, profile),
                        "gpu.driver")
    assert results[0]["status"] == "pass"


# ------------------------------------------------------------------------------ error inputs

def test_nothing_captured_is_never_a_pass(h100):
    # None is "not captured" (a replayed set); live, a tool that printed nothing is an error
    # before the judge runs (_stages).
    results = judge_gpu_health(None, None, None, h100)
    assert [r["status"] for r in results if r["check"] == "gpu.parse"] == ["skip"]
    assert "not captured" in [r for r in results if r["check"] == "gpu.parse"][0]["message"]
    assert all(r["status"] in ("error", "skip") for r in results)


def test_a_section_of_q_judges_what_it_shows_and_skips_the_model(h100):
    text = (FIXTURES / "captured" / "azure_nd_8gpu_page_retirement_fragment_nhc" / "nvidia-smi-q.txt").read_text()
    results = judge_gpu_health(parse_nvidia_smi_q(text), None, None, h100)
    (model,) = _by_check(results, "gpu.model")
    assert model["status"] == "skip" and "no product name" in model["message"]
    assert [r["status"] for r in _by_check(results, "gpu.retired_pages")] == ["pass"]


def test_blackwell_repair_flags_are_flags_and_a_yes_fails(h100):
    text = (FIXTURES / "captured" / "h200_1gpu_590_idle_exporter" / "nvidia-smi-q.txt").read_text()
    parsed = parse_nvidia_smi_q(text)
    assert parsed["errors"] == []
    assert parsed["gpus"][0]["ecc"]["repair"] == {"Channel Repair Pending": False, "TPC Repair Pending": False,
                                                  "Unrepairable Memory": False}
    one_gpu = dict(h100, gpus_per_node=1, gpu_name_pattern="H200")
    assert [r["status"] for r in _by_check(judge_gpu_health(parsed, None, None, one_gpu), "gpu.ecc")] == ["pass"]
    bad = parse_nvidia_smi_q(text.replace("Unrepairable Memory                            : No",
                                          "Unrepairable Memory                            : Yes"))
    (ecc,) = _by_check(judge_gpu_health(bad, None, None, one_gpu), "gpu.ecc")
    assert ecc["status"] == "fail" and "Unrepairable Memory: Yes (replace the GPU)" in ecc["message"]


def test_unreadable_smi_is_error_never_pass(h100):
    text = (FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text()
    truncated = parse_nvidia_smi_q(text[:len(text) // 3])
    assert truncated["errors"]
    results = judge_gpu_health(truncated, None, None, h100)
    parse = _by_check(results, "gpu.parse")
    assert parse and parse[0]["status"] == "error"
    assert parse[0]["message"].startswith(
        "nvidia-smi -q: part of the output is unreadable (the rest is judged):")
    # The GPUs that were read are still judged; the count is not: the driver reports 8 attached,
    # the cut text shows 3 sections. An error (what is missing cannot be judged), never a pass.
    (count,) = _by_check(results, "gpu.count")
    assert count["status"] == "error" and "the output is incomplete" in count["message"]


def test_an_elided_paste_is_an_error_not_missing_gpus(h100):
    text = (FIXTURES / "captured" / "a100_8gpu_remap_pending_q_elided_mlengineering" / "nvidia-smi-q.txt").read_text()
    parsed = parse_nvidia_smi_q(text)
    assert any("part of the report was left out (elided)" in e for e in parsed["errors"])
    results = judge_gpu_health(parsed, None, None, h100)
    assert [r["status"] for r in _by_check(results, "gpu.count")] == ["error"]
    # what the text does show is still judged: GPU 00000000:10:1C.0 has a row remap pending
    remap = [r for r in _by_check(results, "gpu.remapped_rows") if r["status"] == "fail"]
    assert remap and "00000000:10:1C.0" in remap[0]["message"]


def test_unreadable_q_falls_back_to_csv_but_keeps_error(h100):
    results = judge_gpu_health(parse_nvidia_smi_q("garbage"),
                               _csv("csv_h100_8gpu_units_handmade.csv"), None, h100)
    assert _by_check(results, "gpu.parse")[0]["status"] == "error"
    assert _by_check(results, "gpu.count")[0]["status"] == "pass"


def test_unreadable_xid_log_is_error(h100):
    xid = {"events": [], "gpu_lost": [], "errors": ["internal parser error (X: y)"]}
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, xid, h100),
                        "gpu.xid")
    assert [r["status"] for r in results] == ["error"]
    assert results[0]["message"].startswith("kernel log (Xid): output unreadable:")


def test_a_csv_with_driver_590_field_names_is_read_whole():
    # camel-case field names and the Yes/No ...thresholdExceeded flag (a real exporter's query)
    text = (FIXTURES / "captured" / "h200_1gpu_590_idle_exporter" / "nvidia-smi-csv.txt").read_text()
    parsed = parse_nvidia_smi_csv(text)
    assert parsed["errors"] == [] and len(parsed["gpus"]) == 1
    assert parsed["gpus"][0]["ecc.errors.uncorrected.aggregate.sram.thresholdExceeded"] == "No"


# What util-linux dmesg and journalctl print to a user who may not read the kernel log
# (kernel.dmesg_restrict=1, not in adm/systemd-journal): util-linux sys-utils/dmesg.c and
# systemd's journalctl (its hint and its "insufficient permissions" line).
REFUSED_DMESG = "dmesg: read kernel buffer failed: Operation not permitted\n"
REFUSED_JOURNAL = ("Hint: You are currently not seeing messages from other users and the system.\n"
                   "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"
                   "      Pass -q to turn off this notice.\n")


def test_a_refused_kernel_log_is_a_skip_with_its_reason_never_an_error(h100):
    for text in (REFUSED_DMESG, REFUSED_DMESG + REFUSED_JOURNAL):
        xid = parse_xid_log(text)
        assert not xid["errors"] and xid["refused"][0]["kind"] == "permission"
        results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, xid, h100), "gpu.xid")
        assert [(r["status"], r["component"]) for r in results] == [("skip", "permission")], results
        assert "refused to this user (dmesg: read kernel buffer failed: Operation not permitted)" in results[0]["message"]
        assert "adm/systemd-journal" in results[0]["message"]


def test_a_journal_read_after_a_refused_dmesg_is_judged(h100):
    """The default kernel log falls back to journalctl -k: its Xid lines count, the refusal is no skip."""
    journal = "2026-01-05T10:00:00+0000 gpu001 kernel: NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', " \
              "name=<unknown>, GPU has fallen off the bus.\n"
    xid = parse_xid_log(REFUSED_DMESG + journal)
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, xid, h100), "gpu.xid")
    assert "fail" in [r["status"] for r in results] and "skip" not in [r["status"] for r in results]


@pytest.mark.parametrize("notice", [
    # RHEL/Fedora's wording, and older systemd's (one group, the notice over two lines)
    ("Hint: You are currently not seeing messages from other users and the system.\n"
     "      Users in groups 'adm', 'systemd-journal', 'wheel' can see all messages.\n"
     "      Pass -q to turn off this notice.\n"),
    ("Hint: You are currently not seeing messages from other users and the system.\n"
     "      Users in the 'systemd-journal' group can see all messages. Pass -q to\n"
     "      turn off this notice.\n")])
def test_every_wording_of_the_journal_notice_is_a_refusal_never_a_pass(h100, notice):
    xid = parse_xid_log(REFUSED_DMESG + notice + "-- No entries --\n")
    assert xid["first_line"] is None and not xid["errors"], xid
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, xid, h100), "gpu.xid")
    assert [r["status"] for r in results] == ["skip"]


def test_a_journal_without_files_is_an_error_not_a_pass(h100):
    xid = parse_xid_log("No journal files were found.\n-- No entries --\n")
    results = _by_check(judge_gpu_health(_q("q_h100_sxm_8gpu_565.txt"), None, xid, h100), "gpu.xid")
    assert [r["status"] for r in results] == ["error"], results
