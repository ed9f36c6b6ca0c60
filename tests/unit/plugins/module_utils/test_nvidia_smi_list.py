# -*- coding: utf-8 -*-
"""parse_nvidia_smi_list (nvidia-smi -L) and the preflight stage's gpu_list check and GPU metrics."""

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_preflight import (
    judge_preflight_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    normalize_bus_id, parse_nvidia_smi_list)

from conftest import FIXTURES


def load(name):
    return (FIXTURES / "nvidia_smi" / name).read_text()


def test_h100_list():
    r = parse_nvidia_smi_list(load("list_h100_8gpu_handmade.txt"))
    assert r["errors"] == [] and r["warnings"] == []
    assert [g["index"] for g in r["gpus"]] == list(range(8))
    assert r["gpus"][0]["uuid"] == "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1"
    assert r["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"


def test_mig_devices_belong_to_their_gpu():
    r = parse_nvidia_smi_list(load("list_a100_mig_telegraf_5812.txt"))
    assert r["errors"] == []
    assert len(r["gpus"]) == 4
    assert [m["device"] for m in r["gpus"][0]["mig"]] == [0, 1, 2, 3]
    assert r["gpus"][0]["mig"][0] == {"profile": "1g.20gb", "device": 0,
                                      "uuid": "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"}
    assert r["gpus"][1]["mig"] == []


def test_prompts_are_warnings_not_errors():
    r = parse_nvidia_smi_list(load("list_quadro_prompt_akash_pr12.txt"))
    assert r["errors"] == []
    assert len(r["gpus"]) == 2
    assert [w.split(":")[0] for w in r["warnings"]] == ["line 1", "line 5"]


def test_lost_gpu_is_named_by_bus_id_and_the_rest_is_kept():
    r = parse_nvidia_smi_list(load("list_h100_gpu_lost_handmade.txt"))
    assert r["errors"] == []
    assert [g["index"] for g in r["gpus"]] == [0, 1, 2, 3, 4, 6, 7]
    assert r["unreachable"][0]["bus_id"] == "00000000:AB:00.0"
    assert r["unreachable"][0]["reason"].startswith("GPU is lost")
    assert any("not 0..6" in w for w in r["warnings"])


@pytest.mark.parametrize("line, bus", [
    ("Unable to determine the device handle for GPU0000:17:00.0: Unknown Error", "00000000:17:00.0"),
    ("Unable to determine the device handle for gpu 0000:3B:00.0: Unknown Error", "00000000:3B:00.0"),
])
def test_unreachable_forms(line, bus):
    r = parse_nvidia_smi_list(line + "\n")
    assert r["unreachable"][0]["bus_id"] == bus and r["errors"] == []


def test_garbled_line_is_an_error_next_to_the_gpus():
    text = load("list_h100_8gpu_handmade.txt").replace("GPU 3: NVIDIA", "GPU 3 NVIDIA")
    r = parse_nvidia_smi_list("[1,0]<stdout>:" + text.replace("\n", "\n[1,0]<stdout>:"))
    assert len(r["gpus"]) == 7
    assert len(r["errors"]) == 1 and r["errors"][0].startswith("line 4: not an `nvidia-smi -L` line")


@pytest.mark.parametrize("text", ["", "\n", "GPU 0: X (UUID: nonsense)\n"])
def test_empty_or_bad_uuid_is_an_error(text):
    assert parse_nvidia_smi_list(text)["errors"]


def test_no_devices():
    r = parse_nvidia_smi_list("No devices were found\n")
    assert r["no_devices"] and r["gpus"] == [] and r["errors"] == []


@pytest.mark.parametrize("text, bus", [("00000000:18:00.0", "00000000:18:00.0"), ("0000:18:00", "00000000:18:00.0"),
                                       ("PCI:0000:1b:00", "00000000:1B:00.0"), ("3b:00.0", "00000000:3B:00.0"),
                                       ("0019:01:00.0", "00000019:01:00.0"), ("00000000:ZZ:00.0", None),
                                       ("18:00.9", None), ("", None), (None, None)])
def test_normalize_bus_id(text, bus):
    assert normalize_bus_id(text) == bus


# ---------------------------------------------------------------------- preflight stage ----

CSV = ("index, name, pci.bus_id, uuid, driver_version, vbios_version, serial\n"
       "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1, 565.57.01, "
       "96.00.74.00.01, 1654423001593\n"
       "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, GPU-7c3cadbd-17e5-0913-f69b-c618122ea0cd, 565.57.01, "
       "96.00.74.00.01, 1654223054577\n")


def test_preflight_records_the_gpus_each_tool_saw():
    outputs = {"tools": "/usr/bin/nvidia-smi\n", "nvidia-smi-versions": CSV,
               "nvidia-smi-list": load("list_h100_8gpu_handmade.txt"), "dcgmi-version": None,
               "ibstat-versions": None}
    checks, metrics = judge_preflight_stage(outputs, {}, {"required_tools": ["nvidia-smi"]})
    assert metrics["gpu_count"] == 2
    assert metrics["gpu_bus_ids"] == ["00000000:18:00.0", "00000000:2A:00.0"]
    assert metrics["gpu_identity"]["nvidia-smi-list"]["count"] == 8
    assert metrics["gpu_identity"]["nvidia-smi-versions"]["uuids"][0] == "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1"
    listed = [c for c in checks if c["check"] == "gpu_list"]
    assert [c["status"] for c in listed] == ["pass"]
    assert listed[0]["evidence"][0].startswith("GPU 0: NVIDIA H100")
    assert all(c["evidence"] for c in checks)


def test_preflight_fails_a_gpu_the_driver_cannot_reach():
    outputs = {"tools": "", "nvidia-smi-versions": None, "nvidia-smi-list": load("list_h100_gpu_lost_handmade.txt"),
               "dcgmi-version": None, "ibstat-versions": None}
    checks, metrics = judge_preflight_stage(outputs, {}, {})
    (lost,) = [c for c in checks if c["check"] == "gpu_list"]
    assert lost["status"] == "fail" and lost["component"] == "00000000:AB:00.0"
    assert "GPU is lost" in lost["message"] and lost["evidence"][0].startswith("Unable to determine")
    assert metrics["gpu_identity"]["nvidia-smi-list"]["unreachable"] == ["00000000:AB:00.0"]


def test_preflight_without_the_list_tool_still_judges_the_rest():
    outputs = {"tools": "/usr/bin/nvidia-smi\n", "nvidia-smi-versions": CSV, "dcgmi-version": None,
               "ibstat-versions": None}
    checks, metrics = judge_preflight_stage(outputs, {}, {"required_tools": ["nvidia-smi"]})
    assert "gpu_list" not in [c["check"] for c in checks]
    assert metrics["gpu_count"] == 2
    checks, _metrics = judge_preflight_stage(dict(outputs, **{"nvidia-smi-list": None}), {}, {})
    assert [c["status"] for c in checks if c["check"] == "gpu_list"] == ["skip"]
