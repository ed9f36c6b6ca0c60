"""parse_xid_log over real kernel-log excerpts (tests/fixtures/xid_log) and hand-made edge cases."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import (
    normalize_pci, parse_xid_log)

from conftest import FIXTURES


def _parse(name):
    return parse_xid_log((FIXTURES / "xid_log" / name).read_text(encoding="utf-8"))


def _fields(event, *names):
    return tuple(event[name] for name in names)


def test_dmesg_T_xid119_with_continuation_gpud():
    result = _parse("dmesg_T_xid119_gsp_gpud.log")
    assert result["errors"] == []
    assert result["by_xid"] == {119: 5}
    assert result["by_pci"] == {"0000:9b:00": [119]}
    assert result["gpu_lost"] == []
    first = result["events"][0]
    assert _fields(first, "xid", "pci", "pid", "process", "timestamp", "timestamp_kind", "line") == (
        119, "0000:9b:00", 2024380, "nvidia-smi", "[Sun Feb 23 16:24:18 2025]", "ctime", 3)
    assert first["message"] == ("Timeout after 6s of waiting for RPC response from GPU4 GSP! "
                                "Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).")
    assert first["uuid"] == "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    # The RPC history printed right after the Xid belongs to it; the kernel stack does not.
    assert len(first["continuation"]) == 21
    assert first["continuation"][0] == ("NVRM: GPU4 GSP RPC buffer contains function 103 "
                                        "(GSP_RM_ALLOC) and data 0x0000000000002081 "
                                        "0x0000000000000004.")
    assert first["continuation"][-1].startswith("NVRM:     -7    4108 UCODE_LIBOS_PRINT")
    assert [e["line"] for e in result["events"]] == [3, 38, 40, 42, 43]
    assert [e["process"] for e in result["events"]] == [
        "nvidia-smi", "nvidia-smi", "nvidia-smi", "cache_mgr_main", "gpud"]
    assert all(e["continuation"] == [] for e in result["events"][1:])
    assert result["devices"] == {"0000:9b:00": {
        "uuid": "GPU-509665ad-b600-ac93-3616-d754b23d636d", "serial": "1650124014249"}}
    assert result["rate_limited"] == ["0000:9b:00"]
    assert result["warnings"] == ["line 41: the driver rate-limited error prints for 0000:9b:00; "
                                  "Xid counts for it are lower bounds"]


def test_syslog_xid48_64_unknown_pid_gpu_operator_1146():
    result = _parse("syslog_xid48_64_gpu_operator_1146.log")
    assert result["errors"] == [] and result["warnings"] == []
    assert [(e["xid"], e["line"]) for e in result["events"]] == [(48, 4), (64, 5)]
    dbe = result["events"][0]
    assert _fields(dbe, "pci", "pid", "process", "timestamp", "timestamp_kind") == (
        "0000:07:00", None, None, "Dec  2 11:38:47 worker4 kernel: [  219.470994]", "syslog")
    assert dbe["message"].startswith("An uncorrectable double bit error (DBE) has been detected "
                                     "on GPU in the framebuffer at physAddr 0x7fffa8860")
    assert result["events"][1]["message"].startswith("Dynamic Page Retirement: Blacklisting failed.")
    assert result["by_pci"] == {"0000:07:00": [48, 64]}
    assert result["gpu_lost"] == []


def test_dmesg_T_xid43_31_94_akash_244():
    result = _parse("dmesg_T_xid43_31_94_akash_244.log")
    assert result["by_xid"] == {31: 1, 43: 2, 94: 1}
    assert result["by_pci"] == {"0000:00:05": [43], "0000:00:07": [31], "0000:00:08": [94]}
    mmu = [e for e in result["events"] if e["xid"] == 31][0]
    assert _fields(mmu, "pid", "process", "line", "uuid") == (
        2512125, "python3.10", 8, "GPU-3b6ec030-5adc-1847-e155-79f635584b4e")
    assert mmu["message"].startswith("Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS")
    contained = [e for e in result["events"] if e["xid"] == 94][0]
    assert _fields(contained, "pid", "process", "message", "timestamp") == (
        None, None, "Contained: SM (0x1). RST: No, D-RST: No", "[Fri Aug  9 13:32:56 2024]")
    assert result["devices"]["0000:00:08"]["serial"] == "1652923018111"
    assert result["gpu_lost"] == []


def test_dmesg_T_xid13_109_gpud_pr46():
    result = _parse("dmesg_T_xid13_109_gpud_pr46.log")
    assert result["by_xid"] == {13: 3, 109: 1}
    sm = result["events"][0]
    assert _fields(sm, "xid", "pci", "pid", "process", "line") == (13, "0000:cb:00", None, None, 2)
    assert sm["message"] == ("Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal "
                             "Instruction Parameter")
    timeout = result["events"][3]
    assert _fields(timeout, "xid", "pid", "process", "message") == (
        109, 1797828, "pt_main_thread", "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005")


def test_monotonic_old_format_without_pid_bumblebee_677():
    result = _parse("dmesg_monotonic_xid32_31_no_pid_bumblebee_677.log")
    assert [_fields(e, "xid", "pci", "pid", "process", "timestamp", "timestamp_kind")
            for e in result["events"]] == [
        (32, "0000:01:00", None, None, "[24128.828315]", "monotonic"),
        (32, "0000:01:00", None, None, "[24128.828608]", "monotonic"),
        (31, "0000:01:00", None, None, "[24128.834365]", "monotonic")]
    assert result["events"][2]["message"] == "Ch 00000003, engmask 00000101, intr 10000000"
    assert result["by_pci"] == {"0000:01:00": [31, 32]}


def test_fallen_off_the_bus_without_xid_nvsentinel_155():
    result = _parse("dmesg_fallen_off_bus_no_xid_nvsentinel_155.log")
    assert result["events"] == []
    assert result["gpu_lost"] == ["0000:b3:00"]
    assert result["errors"] == [] and result["warnings"] == []


def test_pid_without_name_ml_engineering():
    event = _parse("syslog_xid63_pid_no_name_ml_engineering.log")["events"][0]
    assert _fields(event, "xid", "pci", "pid", "process", "timestamp") == (
        63, "0000:10:1c", 1896, None, None)
    assert event["message"] == ("Row Remapper: New row marked for remapping, reset gpu to "
                                "activate.")


def test_kernel_prefix_without_timestamp_open_gpu_kernel_modules_1150():
    result = _parse("kernel_xid45_149_no_timestamp_open_gpu_kernel_modules_1150.log")
    assert result["by_xid"] == {45: 4}
    first = result["events"][0]
    assert _fields(first, "pci", "pid", "process", "timestamp", "message") == (
        "0000:dc:00", 1818990, "python3", None, "Ch 00000001 caused by previous Xid 149")
    assert sorted(result["by_pci"]) == ["0000:97:00", "0000:ba:00", "0000:dc:00", "0000:ed:00"]


def test_mixed_variants_gpud_tests():
    result = _parse("mixed_variants_gpud_tests.log")
    events = result["events"]
    assert [(e["xid"], e["pci"]) for e in events] == [
        (79, "0000:05:00"), (79, "0000:01:00"), (14, "0000:03:00"), (94, "0000:01:00"),
        (149, "0019:01:00")]
    assert _fields(events[0], "pid", "process", "timestamp_kind") == (None, None, "monotonic")
    assert _fields(events[1], "pid", "process", "timestamp", "message") == (
        None, None, None, "GPU has fallen off the bus.")
    # "(0000:03:00)" has no "PCI:" label but is still an address.
    assert _fields(events[2], "device", "timestamp", "timestamp_kind", "message") == (
        "0000:03:00", "[...]", "other", "Channel 00000001")
    assert _fields(events[3], "device", "gpu_instance", "pid", "process") == (
        "PCI:0000:01:00 GPU-I:05", 5, 7194, None)
    assert events[4]["message"].startswith("NETIR Fatal XC0 i0 Link -1")
    assert result["gpu_lost"] == ["0000:01:00", "0000:05:00", "0000:29:00"]
    assert result["warnings"] == [
        "line 7: could not parse the Xid line: NVRM: Xid critical error: 79, details follow",
        "line 8: could not parse the Xid line: NVRM: Xid error: xyz, invalid data"]
    assert result["errors"] == []


def test_journal_iso_handmade():
    result = _parse("journal_iso_handmade_xid79_120_63.log")
    assert result["by_xid"] == {63: 1, 79: 1, 94: 1, 119: 1, 120: 1}
    lost = result["events"][0]
    assert _fields(lost, "xid", "pci", "pid", "process", "timestamp", "timestamp_kind", "uuid") == (
        79, "0000:3b:00", None, None, "2025-03-14T02:11:07.512401+00:00 gpu-node-07 kernel:",
        "iso", "GPU-5f2b3c1e-8a7d-4e19-b2c3-0d9e8f7a6b5c")
    assert lost["continuation"] == [
        "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
        "NVRM: GPU 0000:3b:00.0: GPU serial number is 1654321098765.",
        "NVRM: A GPU crash dump has been created. If possible, please run",
        "NVRM: nvidia-bug-report.sh as root to collect this data before",
        "NVRM: the NVIDIA kernel module is unloaded."]
    gsp = [e for e in result["events"] if e["xid"] in (119, 120)]
    assert [_fields(e, "pci", "pid", "process") for e in gsp] == [
        ("000f:01:00", 3849, "KMS thread"), ("000f:01:00", 9111, "python")]
    assert gsp[1]["message"] == "GSP task exception: load access fault"
    remap = [e for e in result["events"] if e["xid"] == 63][0]
    assert _fields(remap, "pid", "process") == (None, None)
    assert result["gpu_lost"] == ["0000:3b:00"]
    assert result["by_pci"]["0000:5d:00"] == [63, 94]


def test_localised_syslog_and_multiline_fallen_off_handmade():
    result = _parse("syslog_localised_month_xid79_handmade.log")
    assert [_fields(e, "xid", "pci", "timestamp", "timestamp_kind") for e in result["events"]] == [
        (79, "0000:c2:00", "6月 28 02:52:53 jjf-Super-Server kernel:", "syslog"),
        (79, "0000:01:00", "Mar 21 20:18:56 pc kernel: [   65.315783]", "syslog")]
    # The "GPU ... has fallen off the bus" line 9 microseconds later continues the Xid.
    assert result["events"][1]["continuation"] == [
        "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."]
    assert result["gpu_lost"] == ["0000:01:00", "0000:5d:00", "0000:c2:00"]


# ------------------------------------------------------------------------------------------
# Edge cases
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "\n\n", "[    0.000000] Linux version 5.15.0\n",
                                  "nvidia-nvswitch3: SXid (PCI:0000:4e:00.0): 12028, Non-fatal, "
                                  "Link 32 egress non-posted PRIV error (First)\n"])
def test_log_without_xid_is_valid_and_empty(text):
    result = parse_xid_log(text)
    assert result["events"] == [] and result["gpu_lost"] == []
    assert result["errors"] == [] and result["warnings"] == []
    assert result["by_xid"] == {} and result["by_pci"] == {}


def test_pid_and_name_variants():
    text = "\n".join([
        "NVRM: Xid (PCI:0000:18:00): 13, pid=<unknown>, name=<unknown>, Graphics Exception",
        "NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name='python3', Graphics Exception",
        "NVRM: Xid (PCI:0000:18:00): 13, pid=42, name=Web Content, Graphics Exception",
        "NVRM: Xid (PCI:0000:18:00): 13, name=python, Graphics Exception",
        "NVRM: Xid (PCI:0000:18:00): 48",
    ])
    events = parse_xid_log(text)["events"]
    assert [_fields(e, "pid", "process", "message") for e in events] == [
        (None, None, "Graphics Exception"), (None, "python3", "Graphics Exception"),
        (42, "Web Content", "Graphics Exception"), (None, "python", "Graphics Exception"),
        (None, None, "")]


def test_xid_line_without_an_address():
    event = parse_xid_log("NVRM: Xid (GPU 0): 31, pid=1, name=x, MMU Fault")["events"][0]
    assert event["pci"] is None and event["device"] == "GPU 0"
    assert parse_xid_log("NVRM: Xid (): 31, MMU Fault")["events"][0]["pci"] is None


def test_fallen_off_the_bus_without_address_is_a_warning():
    result = parse_xid_log("[ 1.0] NVRM: GPU has fallen off the bus.\n")
    assert result["gpu_lost"] == []
    assert result["warnings"][0].startswith("line 1: a GPU fell off the bus but the line names "
                                            "no PCI address")


def test_kmsg_and_iso_dmesg_prefixes():
    text = ("4,1234,5678901,-;NVRM: Xid (PCI:0000:1A:00): 79, pid='<unknown>', name=<unknown>, "
            "GPU has fallen off the bus.\n"
            "2024-05-01T10:00:00,123456+00:00 NVRM: Xid (PCI:00000000:65:00): 13, pid=4242, "
            "Graphics SM Warp Exception\n")
    events = parse_xid_log(text)["events"]
    assert [_fields(e, "pci", "timestamp", "timestamp_kind") for e in events] == [
        ("0000:1a:00", "4,1234,5678901,-;", "kmsg"),
        ("0000:65:00", "2024-05-01T10:00:00,123456+00:00", "iso")]
    assert parse_xid_log(text)["gpu_lost"] == ["0000:1a:00"]


@pytest.mark.parametrize("raw, expected", [
    ("PCI:0000:3B:00", "0000:3b:00"), ("0000:3b:00.0", "0000:3b:00"), ("3b:00.0", "0000:3b:00"),
    ("00000000:1B:00.0", "0000:1b:00"), ("PCI:0019:01:00", "0019:01:00"), ("GPU 0", None),
    ("", None), (None, None)])
def test_normalize_pci(raw, expected):
    assert normalize_pci(raw) == expected


def test_none_input():
    result = parse_xid_log(None)
    assert result["events"] == [] and result["errors"]


@pytest.mark.parametrize("line, pci", [
    ("NVRM: GPU at 0000:3B:00.0 has fallen off the bus.", "0000:3b:00"),
    ("NVRM: GPU 18:00.0: GPU has fallen off the bus.", "0000:18:00"),
    ("[ 4254.197871] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.", "0000:5d:00"),
])
def test_fallen_off_the_bus_single_line_forms(line, pci):
    result = parse_xid_log(line + "\n")
    assert result["events"] == [] and result["gpu_lost"] == [pci]
