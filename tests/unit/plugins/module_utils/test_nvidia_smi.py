# -*- coding: utf-8 -*-
"""Tests for the nvidia-smi CSV (--query-gpu) and -q parsers against real and derived outputs."""

from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_csv,
    parse_nvidia_smi_q,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"

I3PYSTATUS_QUERY = ("memory.total,memory.free,memory.used,temperature.gpu,fan.speed,"
                    "utilization.gpu,utilization.memory")
GPU_UTILS_QUERY = ("power.limit,power.min_limit,power.max_limit,memory.total,vbios_version,"
                   "driver_version,name,gpu_uuid,power.draw,temperature.gpu,temperature.memory,"
                   "clocks.current.graphics,clocks.sm,clocks.mem,utilization.gpu,"
                   "utilization.memory,fan.speed,pcie.link.width.current,pstate")


def load(name):
    return (FIXTURES / name).read_text()


def q(name):
    return parse_nvidia_smi_q(load(name))


# ---------------------------------------------------------------------------------- CSV ------

def test_csv_units_in_header_and_values():
    r = parse_nvidia_smi_csv(load("csv_gtx_units_loop_ksysguard.csv"))
    assert r["errors"] == []
    assert r["fields"] == ["index", "temperature.gpu", "utilization.gpu", "utilization.memory",
                           "fan.speed", "pstate", "power.draw", "clocks.current.sm",
                           "clocks.current.memory", "clocks.current.graphics"]
    assert r["units"]["power.draw"] == "W"
    assert r["units"]["utilization.gpu"] == "%"
    assert r["units"]["temperature.gpu"] is None
    assert len(r["gpus"]) == 13
    first = r["gpus"][0]
    assert first == {"index": 0, "temperature.gpu": 56, "utilization.gpu": 26,
                     "utilization.memory": 4, "fan.speed": 34, "pstate": "P3",
                     "power.draw": 83.92, "clocks.current.sm": 1320,
                     "clocks.current.memory": 5001, "clocks.current.graphics": 1320}
    assert r["gpus"][-1]["power.draw"] == 83.43
    assert any("index 0 appears in more than one row" in w for w in r["warnings"])


def test_csv_h100_units_form():
    r = parse_nvidia_smi_csv(load("csv_h100_8gpu_units_handmade.csv"))
    assert r["errors"] == [] and r["warnings"] == []
    assert len(r["gpus"]) == 8
    g0 = r["gpus"][0]
    assert g0["index"] == 0
    assert g0["name"] == "NVIDIA H100 80GB HBM3"
    assert g0["pci.bus_id"] == "00000000:18:00.0"
    assert g0["driver_version"] == "565.57.01"
    assert g0["memory.total"] == 81559 and isinstance(g0["memory.total"], int)
    assert g0["power.draw"] == 100.89
    assert g0["power.limit"] == 700.0 and isinstance(g0["power.limit"], float)
    assert g0["utilization.gpu"] == 0
    assert g0["clocks.max.sm"] == 1980
    assert g0["fan.speed"] is None
    assert g0["ecc.errors.uncorrected.volatile.total"] == 0
    assert g0["serial"] == "1654423001593"
    assert [g["pci.bus_id"] for g in r["gpus"]][-1] == "00000000:DB:00.0"
    assert r["units"]["memory.total"] == "MiB"


def test_csv_nounits_form_gives_the_same_values():
    units = parse_nvidia_smi_csv(load("csv_h100_8gpu_units_handmade.csv"))
    bare = parse_nvidia_smi_csv(load("csv_h100_8gpu_nounits_handmade.csv"))
    assert bare["errors"] == []
    assert bare["gpus"] == units["gpus"]
    assert bare["units"]["power.draw"] == "W"


@pytest.mark.parametrize("name", ["csv_noheader_nounits_na_i3pystatus.csv",
                                  "csv_noheader_nounits_not_supported_i3pystatus.csv"])
def test_csv_noheader_with_fields(name):
    r = parse_nvidia_smi_csv(load(name), fields=I3PYSTATUS_QUERY)
    assert r["errors"] == []
    assert r["gpus"] == [{"memory.total": 2004, "memory.free": 2004, "memory.used": 0,
                          "temperature.gpu": 44, "fan.speed": None, "utilization.gpu": 0,
                          "utilization.memory": 0}]


def test_csv_noheader_without_fields_is_an_error():
    r = parse_nvidia_smi_csv(load("csv_noheader_nounits_na_i3pystatus.csv"))
    assert r["gpus"] == []
    assert r["errors"] and "line 1" in r["errors"][0] and "header" in r["errors"][0]


def test_csv_versions_stay_text():
    r = parse_nvidia_smi_csv(load("csv_noheader_nounits_rtx2080_gpu_utils.csv"),
                             fields=GPU_UTILS_QUERY.split(","))
    assert r["errors"] == []
    g = r["gpus"][0]
    assert g["vbios_version"] == "90.04.23.00.5F"
    assert g["driver_version"] == "440.64"
    assert g["name"] == "GeForce RTX 2080"
    assert g["gpu_uuid"] == "GPU-22b2c6ac-2d49-4863-197c-9c469071178a"
    assert g["power.limit"] == 200.0
    assert g["memory.total"] == 7979
    assert g["temperature.memory"] is None
    assert g["pcie.link.width.current"] == 8
    assert g["pstate"] == "P2"


def test_csv_single_not_supported_field():
    r = parse_nvidia_smi_csv(load("csv_noheader_nounits_fan_not_supported_zabbix.csv"),
                             fields=["fan.speed"])
    assert r["errors"] == []
    assert r["gpus"] == [{"fan.speed": None}]


def test_csv_fields_with_units_and_header_present():
    text = load("csv_h100_8gpu_units_handmade.csv")
    fields = text.split("\n")[0]
    r = parse_nvidia_smi_csv(text, fields=fields)
    assert r["errors"] == [] and len(r["gpus"]) == 8
    assert r["units"]["power.draw"] == "W"


@pytest.mark.parametrize("missing", ["N/A", "[N/A]", "[Not Supported]", "[Unknown Error]",
                                     "[Insufficient Permissions]", "[GPU requires reset]"])
def test_csv_missing_values_are_null(missing):
    r = parse_nvidia_smi_csv("index, power.draw [W]\n0, %s\n" % missing)
    assert r["errors"] == []
    assert r["gpus"] == [{"index": 0, "power.draw": None}]


def test_csv_unusual_bracketed_status_warns():
    r = parse_nvidia_smi_csv("index, power.draw [W]\n0, [GPU is lost]\n")
    assert r["gpus"][0]["power.draw"] is None
    assert any("[GPU is lost]" in w for w in r["warnings"])


def test_csv_ragged_row_names_the_line():
    text = load("csv_h100_8gpu_units_handmade.csv").split("\n")
    text[3] = text[3].rsplit(",", 2)[0]
    r = parse_nvidia_smi_csv("\n".join(text))
    assert any(e.startswith("line 4:") for e in r["errors"])
    assert len(r["gpus"]) == 7


def test_csv_header_only_is_an_error():
    r = parse_nvidia_smi_csv("index, name, memory.total [MiB]\n")
    assert r["errors"] == ["no data rows after the header"]
    assert r["gpus"] == []
    assert r["fields"] == ["index", "name", "memory.total"]


def test_csv_repeated_header_is_skipped():
    one = load("csv_h100_8gpu_units_handmade.csv")
    r = parse_nvidia_smi_csv(one + one)
    assert r["errors"] == []
    assert len(r["gpus"]) == 16


def test_csv_srun_labels():
    text = "\n".join("0: " + line for line in load("csv_h100_8gpu_units_handmade.csv").split("\n")
                     if line)
    r = parse_nvidia_smi_csv(text)
    assert r["errors"] == [] and len(r["gpus"]) == 8


def test_csv_lowercase_values_after_header_are_data():
    r = parse_nvidia_smi_csv("persistence_mode, compute_mode\nEnabled, Default\n")
    assert r["gpus"] == [{"persistence_mode": "Enabled", "compute_mode": "Default"}]


def test_csv_bad_fields_argument():
    r = parse_nvidia_smi_csv("0, 1\n", fields=12)
    assert r["errors"] and r["gpus"] == []


@pytest.mark.parametrize("text", ["", "\n\n", "No devices were found\n"])
def test_csv_empty_or_failure(text):
    r = parse_nvidia_smi_csv(text)
    assert r["errors"]
    assert r["gpus"] == []


# ----------------------------------------------------------------------------------- -q ------

def test_q_h100_eight_gpus():
    r = q("q_h100_sxm_8gpu_565.txt")
    assert r["errors"] == [] and r["warnings"] == []
    assert r["driver_version"] == "565.57.01"
    assert r["cuda_version"] == "12.7"
    assert r["attached_gpus"] == 8
    assert r["timestamp"] == "Thu Nov 14 07:00:14 2024"
    assert [g["index"] for g in r["gpus"]] == list(range(8))
    assert [g["bus_id"] for g in r["gpus"]] == [
        "00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
        "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]
    g = r["gpus"][0]
    assert g["product_name"] == "NVIDIA H100 80GB HBM3"
    assert g["product_architecture"] == "Hopper"
    assert g["serial"] == "1654423001593"
    assert g["uuid"].startswith("GPU-")
    assert g["vbios_version"] == "96.00.74.00.01"
    assert g["persistence_mode"] == "Enabled"
    assert g["persistence_mode_enabled"] is True
    assert g["ecc"]["enabled"] is True
    assert g["ecc"]["layout"] == "sram_dram"
    for scale in ("volatile", "aggregate"):
        counts = g["ecc"][scale]
        assert counts["sram_correctable"] == 0
        assert counts["sram_uncorrectable"] == 0
        assert counts["sram_uncorrectable_parity"] == 0
        assert counts["sram_uncorrectable_secded"] == 0
        assert counts["dram_correctable"] == 0
        assert counts["dram_uncorrectable"] == 0
        assert counts["correctable_total"] == 0
        assert counts["uncorrectable_total"] == 0
    assert g["ecc"]["aggregate"]["sram_threshold_exceeded"] is False
    assert g["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False,
                                  "failure": False, "supported": True,
                                  "histogram": {"max": 2560, "high": 0, "partial": 0,
                                                "low": 0, "none": 0}}
    assert g["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}
    assert g["clocks_event_reasons_section"] == "Clocks Event Reasons"
    assert g["clocks_event_reasons"]["idle"] is True
    assert g["clocks_event_reasons"]["hw_thermal_slowdown"] is False
    assert g["clocks_event_reasons"]["display_clock_setting"] is False
    assert g["active_throttle"] == []
    assert g["temperature"]["gpu"] == 30
    assert g["temperature"]["memory"] == 36
    assert g["temperature"]["tlimit"] == 57
    assert g["temperature"]["shutdown_tlimit"] == -8
    assert g["temperature"]["slowdown_tlimit"] == -2
    assert g["temperature"]["max_operating_tlimit"] == 0
    assert g["temperature"]["shutdown"] is None
    assert g["power"]["section"] == "GPU Power Readings"
    assert g["power"]["draw"] == 100.89
    assert g["power"]["limit"] == 700.0
    assert g["power"]["enforced_limit"] == 700.0
    assert g["power"]["max_limit"] == 700.0
    assert g["power"]["min_limit"] == 200.0
    assert g["power"]["memory_draw"] == 69.61
    assert g["clocks"] == {"graphics": 345, "sm": 345, "memory": 2619, "video": 765}
    assert g["max_clocks"] == {"graphics": 1980, "sm": 1980, "memory": 2619, "video": 1545}
    assert g["pcie"]["gen_current"] == 5 and g["pcie"]["gen_max"] == 5
    assert g["pcie"]["width_current"] == 16 and g["pcie"]["width_max"] == 16
    assert g["pcie"]["replays"] == 7
    fabric = dict((k, g["fabric"][k]) for k in ("state", "status", "clique_id", "cluster_uuid", "health"))
    assert fabric == {"state": "Completed", "status": "Success", "clique_id": "0",
                      "cluster_uuid": "00000000-0000-0000-0000-000000000000", "health": {"bandwidth": "N/A"}}
    assert g["fabric"]["evidence"][:2] == ["Fabric > State : Completed", "Fabric > Status : Success"]
    assert g["memory"]["total"] == 81559
    assert g["reset_required"] is False


def test_q_a100_pending_remap_on_one_gpu():
    r = q("q_a100_sxm4_4gpu_pending_remap_555.txt")
    assert r["errors"] == []
    assert r["driver_version"] == "555.42.02" and r["cuda_version"] == "12.5"
    assert r["attached_gpus"] == 4 and len(r["gpus"]) == 4
    healthy, pending, applied, last = r["gpus"]
    assert healthy["remapped_rows"]["pending"] is False
    assert healthy["remapped_rows"]["correctable"] == 0
    assert pending["bus_id"] == "00000000:9E:00.0"
    assert pending["index"] == 1
    assert pending["remapped_rows"]["pending"] is True
    assert pending["remapped_rows"]["failure"] is False
    assert pending["remapped_rows"]["correctable"] == 1
    assert pending["remapped_rows"]["uncorrectable"] == 0
    assert pending["remapped_rows"]["histogram"]["max"] == 639
    assert pending["ecc"]["volatile"]["dram_correctable"] == 353
    assert pending["ecc"]["volatile"]["correctable_total"] == 353
    assert pending["ecc"]["aggregate"]["uncorrectable_total"] == 0
    assert applied["remapped_rows"]["pending"] is False
    assert applied["remapped_rows"]["correctable"] == 1
    assert last["bus_id"] == "00000000:D4:00.0"
    assert healthy["power"]["limit"] == 500.0
    assert healthy["temperature"]["shutdown"] == 92
    assert healthy["temperature"]["slowdown"] == 89
    assert healthy["temperature"]["max_operating"] == 85
    assert healthy["temperature"]["memory"] == 43
    assert healthy["max_clocks"]["sm"] == 1410
    assert healthy["fabric"]["state"] == "N/A"  # kept as printed: whether N/A is fine is the profile's call


def test_q_ecc_not_available_everywhere():
    r = q("q_rtx3090_2gpu_ecc_na_560.txt")
    assert r["errors"] == []
    assert len(r["gpus"]) == 2
    g = r["gpus"][0]
    assert g["product_name"] == "NVIDIA GeForce RTX 3090"
    assert g["ecc"]["mode_current"] is None
    assert g["ecc"]["enabled"] is None
    for scale in ("volatile", "aggregate"):
        assert set(g["ecc"][scale].values()) == {None}
    assert g["remapped_rows"]["supported"] is False
    assert g["remapped_rows"]["pending"] is None
    assert g["temperature"]["shutdown"] == 98
    assert g["temperature"]["target"] == 70
    assert g["power"]["limit"] == 350.0


def test_q_a10g_single_gpu_cloud():
    r = q("q_a10g_1gpu_535.txt")
    assert r["errors"] == [] and r["warnings"] == []
    assert r["driver_version"] == "535.247.01" and r["cuda_version"] == "12.2"
    (g,) = r["gpus"]
    assert g["bus_id"] == "00000000:00:1E.0"
    assert g["product_name"] == "NVIDIA A10G"
    assert g["persistence_mode_enabled"] is False
    assert g["ecc"]["aggregate"]["dram_correctable"] == 1
    assert g["ecc"]["aggregate"]["correctable_total"] == 1
    assert g["ecc"]["volatile"]["correctable_total"] == 0
    assert g["pcie"]["width_current"] == 8 and g["pcie"]["width_max"] == 16
    assert g["pcie"]["gen_host_max"] is None
    assert g["power"]["draw"] == 60.3
    assert g["power"]["enforced_limit"] == 300.0
    assert g["temperature"]["max_operating"] == 88
    assert g["clocks"]["memory"] == 6250
    assert dict((k, g["fabric"][k]) for k in ("state", "status", "clique_id", "cluster_uuid")) == {
        "state": "N/A", "status": "N/A", "clique_id": None, "cluster_uuid": None}  # (not printed by 535)


def test_q_old_driver_layout():
    r = q("q_p100_460_old_layout_excerpt.txt")
    assert r["errors"] == []
    assert r["driver_version"] == "460.32.03" and r["cuda_version"] == "11.2"
    assert any("Attached GPUs is 8" in w for w in r["warnings"])
    (g,) = r["gpus"]
    assert g["product_name"] == "Tesla P100-PCIE-16GB"
    assert g["clocks_event_reasons_section"] == "Clocks Throttle Reasons"
    assert g["clocks_event_reasons"] == {
        "idle": True, "applications_clocks_setting": False, "sw_power_cap": False,
        "hw_slowdown": False, "hw_thermal_slowdown": False, "hw_power_brake_slowdown": False,
        "sync_boost": False, "sw_thermal_slowdown": False}
    assert g["active_throttle"] == []
    assert g["ecc"]["layout"] == "single_double_bit"
    assert g["ecc"]["enabled"] is True
    assert g["ecc"]["volatile"]["dram_correctable"] == 0
    assert g["ecc"]["volatile"]["correctable_total"] == 0
    assert g["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
    assert g["remapped_rows"]["supported"] is False
    assert g["power"]["section"] == "Power Readings"
    assert g["power"]["draw"] == 25.33
    assert g["power"]["limit"] == 250.0
    assert g["power"]["enforced_limit"] == 250.0
    assert g["power"]["max_limit"] == 250.0
    assert g["temperature"]["shutdown"] == 85 and g["temperature"]["slowdown"] == 82
    assert g["pcie"]["gen_current"] == 3 and g["pcie"]["gen_device_max"] is None
    assert "fabric" not in g


def test_q_old_driver_errors_and_throttle():
    r = q("q_p100_460_errors_throttle_handmade.txt")
    assert r["errors"] == [] and r["warnings"] == []
    (g,) = r["gpus"]
    vol, agg = g["ecc"]["volatile"], g["ecc"]["aggregate"]
    assert vol["dram_correctable"] == 12 and vol["sram_correctable"] == 2
    assert vol["correctable_total"] == 14
    assert vol["dram_uncorrectable"] == 1 and vol["sram_uncorrectable"] == 0
    assert vol["uncorrectable_total"] == 1
    assert agg["dram_correctable"] == 40 and agg["correctable_total"] == 42
    assert agg["dram_uncorrectable"] == 3 and agg["uncorrectable_total"] == 3
    assert g["retired_pages"] == {"single_bit": 2, "double_bit": 1, "pending": True}
    assert g["clocks_event_reasons"]["hw_slowdown"] is True
    assert g["clocks_event_reasons"]["idle"] is False
    assert g["active_throttle"] == ["hw_slowdown", "hw_thermal_slowdown"]
    assert g["temperature"]["gpu"] == 86


def test_q_sram_dram_sums_with_parity_split():
    text = load("q_a10g_1gpu_535.txt")
    text = text.replace("SRAM Uncorrectable Parity     : 0", "SRAM Uncorrectable Parity     : 2", 1)
    text = text.replace("SRAM Uncorrectable SEC-DED    : 0", "SRAM Uncorrectable SEC-DED    : 3", 1)
    text = text.replace("SRAM Correctable              : 0", "SRAM Correctable              : 7", 1)
    (g,) = parse_nvidia_smi_q(text)["gpus"]
    vol = g["ecc"]["volatile"]
    assert vol["sram_uncorrectable_parity"] == 2 and vol["sram_uncorrectable_secded"] == 3
    assert vol["sram_uncorrectable"] == 5
    assert vol["uncorrectable_total"] == 5
    assert vol["correctable_total"] == 7


def test_q_older_sram_dram_layout_without_split():
    """Drivers 470-525 print 'SRAM Uncorrectable' as one counter (A100, stas00/ml-engineering)."""
    text = ("GPU 00000000:07:00.0\n"
            "    Product Name                          : NVIDIA A100-SXM4-80GB\n"
            "    ECC Errors\n"
            "        Volatile\n"
            "            SRAM Correctable              : 0\n"
            "            SRAM Uncorrectable            : 0\n"
            "            DRAM Correctable              : 177\n"
            "            DRAM Uncorrectable            : 0\n"
            "        Aggregate\n"
            "            SRAM Correctable              : 0\n"
            "            SRAM Uncorrectable            : 0\n"
            "            DRAM Correctable              : 177\n"
            "            DRAM Uncorrectable            : 0\n"
            "    Remapped Rows\n"
            "        Correctable Error                 : 1\n"
            "        Uncorrectable Error               : 0\n"
            "        Pending                           : Yes\n"
            "        Remapping Failure Occurred        : No\n"
            "    Processes                             : None\n")
    r = parse_nvidia_smi_q(text)
    assert r["errors"] == []
    (g,) = r["gpus"]
    assert g["ecc"]["volatile"]["dram_correctable"] == 177
    assert g["ecc"]["volatile"]["sram_uncorrectable"] == 0
    assert g["ecc"]["aggregate"]["correctable_total"] == 177
    assert g["remapped_rows"]["pending"] is True


def test_q_new_power_draw_names_and_counters():
    text = ("GPU 00000000:18:00.0\n"
            "    Clocks Event Reasons\n"
            "        Idle                              : Not Active\n"
            "        SW Power Cap                      : Active\n"
            "    Clocks Event Reasons Counters\n"
            "        SW Power Capping                  : 1202176 us\n"
            "        HW Thermal Slowdown               : 0 us\n"
            "    GPU Power Readings\n"
            "        Average Power Draw                : 690.12 W\n"
            "        Instantaneous Power Draw          : 699.50 W\n"
            "        Current Power Limit               : 700.00 W\n"
            "    GPU Recovery Action                   : None\n")
    (g,) = parse_nvidia_smi_q(text)["gpus"]
    assert g["power"]["draw"] == 699.5
    assert g["power"]["draw_average"] == 690.12
    assert g["active_throttle"] == ["sw_power_cap"]
    assert g["clocks_event_reasons_counters"] == {"sw_power_capping": 1202176,
                                                  "hw_thermal_slowdown": 0}
    assert g["recovery_action"] is None


def test_q_filtered_report_is_not_truncated():
    """`nvidia-smi -q -d ROW_REMAPPER` prints no Product Name and no Processes."""
    text = ("==============NVSMI LOG==============\n"
            "GPU 00000000:65:00.0\n"
            "    Remapped Rows\n"
            "        Correctable Error                 : 0\n"
            "        Uncorrectable Error               : 2\n"
            "        Pending                           : Yes\n"
            "        Remapping Failure Occurred        : No\n")
    r = parse_nvidia_smi_q(text)
    assert r["errors"] == []
    assert r["gpus"][0]["remapped_rows"]["uncorrectable"] == 2
    assert r["gpus"][0]["remapped_rows"]["pending"] is True


def test_q_truncated_report_is_an_error():
    text = load("q_h100_sxm_8gpu_565.txt")
    cut = text[:text.index("GPU 00000000:5D:00.0") + 2000]
    r = parse_nvidia_smi_q(cut)
    assert len(r["gpus"]) == 4
    assert any("00000000:5D:00.0" in e and "truncated" in e for e in r["errors"])
    assert any("Attached GPUs is 8" in w for w in r["warnings"])


def test_q_more_sections_than_attached_is_an_error():
    text = load("q_a10g_1gpu_535.txt")
    body = text[text.index("GPU 00000000:00:1E.0"):]
    r = parse_nvidia_smi_q(text + "\n" + body.replace("00000000:00:1E.0", "00000000:00:1F.0"))
    assert any("Attached GPUs is 1" in e for e in r["errors"])
    assert len(r["gpus"]) == 2 and r["gpus"][1]["index"] == 1


def test_q_launcher_prefixes():
    text = "\n".join("[1,0]<stdout>:" + line for line in load("q_a10g_1gpu_535.txt").split("\n"))
    r = parse_nvidia_smi_q(text)
    assert r["errors"] == []
    assert r["gpus"][0]["power"]["draw"] == 60.3


def test_q_header_only_is_an_error():
    text = load("q_h100_sxm_8gpu_565.txt")
    head = text[:text.index("GPU 00000000:18:00.0")]
    r = parse_nvidia_smi_q(head)
    assert r["errors"] and r["gpus"] == []
    assert r["driver_version"] == "565.57.01"


@pytest.mark.parametrize("text", ["", "\n", "No devices were found\n",
                                  "NVIDIA-SMI has failed because it couldn't communicate with "
                                  "the NVIDIA driver. Make sure that the latest NVIDIA driver is "
                                  "installed and running.\n"])
def test_q_empty_or_failure(text):
    r = parse_nvidia_smi_q(text)
    assert r["errors"] and r["gpus"] == []


def test_q_non_string():
    assert parse_nvidia_smi_q(b"x")["errors"]
    assert parse_nvidia_smi_csv(None)["errors"]
