# -*- coding: utf-8 -*-
"""Every check of the gpu_health, topology, infiniband and preflight judges carries the lines of
the tool's output it rests on (a skip, which judged nothing, may carry none)."""

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    judge_gpu_health_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import (
    judge_infiniband_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_preflight import (
    judge_preflight_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_topology import (
    judge_topology_stage)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
CSV = (FIXTURES / "nvidia_smi" / "csv_h100_8gpu_units_handmade.csv").read_text()
COUNTERS = (FIXTURES / "ib_counters" / "gpud_h100_sysfs_grep_counters_hw_counters.txt").read_text()


def names(folder, pattern):
    return sorted(p.name for p in (FIXTURES / folder).glob(pattern))


def assert_evidence(checks):
    assert checks
    for check in checks:
        if check["status"] != "skip":
            assert check["evidence"], check
            assert all(isinstance(line, str) and line.strip() for line in check["evidence"]), check


def _pairs():
    """Every -q fixture and every kernel log fixture, each at least once."""
    reports, logs = names("nvidia_smi", "q_*.txt"), names("xid_log", "*.log")
    return [(reports[i % len(reports)], log) for i, log in enumerate(logs)] + \
        [(report, logs[0]) for report in reports]


@pytest.mark.parametrize("q, log", _pairs())
def test_gpu_health(q, log):
    outputs = {"nvidia-smi-q": (FIXTURES / "nvidia_smi" / q).read_text(), "nvidia-smi-csv": CSV,
               "dmesg": (FIXTURES / "xid_log" / log).read_text(),
               "node-clock": "now: 2025-03-14T12:00:00Z\ntz: +0000\nuptime: 99999999 1\n",
               "xid-window": "xid_since: last_pass\nwindow: 2024-12-01T00:00:00Z\nlast_pass_run: r\n"}
    assert_evidence(judge_gpu_health_stage(outputs, H100, {})[0])


@pytest.mark.parametrize("csv", names("nvidia_smi", "csv_*.csv"))
def test_gpu_health_csv_only(csv):
    outputs = {"nvidia-smi-q": None, "nvidia-smi-csv": (FIXTURES / "nvidia_smi" / csv).read_text(),
               "dmesg": "[    0.000000] Linux version 6.8.0\n"}
    assert_evidence(judge_gpu_health_stage(outputs, H100, {})[0])


def test_failing_gpu_checks_show_the_failing_lines():
    text = (FIXTURES / "nvidia_smi" / "q_p100_460_errors_throttle_handmade.txt").read_text()
    checks, _metrics = judge_gpu_health_stage({"nvidia-smi-q": text, "nvidia-smi-csv": None, "dmesg": None}, H100, {})
    failed = dict((c["check"], c["evidence"]) for c in checks if c["status"] == "fail")
    assert failed["gpu.ecc"][0] == "GPU 00000000:40:00.0"
    assert "ECC Errors > Volatile > Double Bit > Device Memory : 1" in failed["gpu.ecc"]
    assert any(line.endswith("HW Thermal Slowdown : Active") for line in failed["gpu.throttle"])
    assert "Temperature > GPU Current Temp : 86 C" in failed["gpu.temperature"]
    assert any("Pending Page Blacklist : Yes" in line for line in failed["gpu.retired_pages"])


@pytest.mark.parametrize("topo", names("nvidia_topo", "*.txt"))
def test_topology(topo):
    assert_evidence(judge_topology_stage({"nvidia-smi-topo": (FIXTURES / "nvidia_topo" / topo).read_text()},
                                         H100, {})[0])


@pytest.mark.parametrize("ibstat", names("ibstat", "*.txt"))
def test_infiniband(ibstat):
    outputs = {"ibstat": (FIXTURES / "ibstat" / ibstat).read_text(), "ib-counters-before": COUNTERS,
               "ib-counters-after": COUNTERS.replace("symbol_error:0", "symbol_error:7")}
    assert_evidence(judge_infiniband_stage(outputs, H100, {})[0])


def test_counter_rise_shows_the_before_and_after_lines():
    outputs = {"ibstat": (FIXTURES / "ibstat" / "gpud_h100_ib_active_bond_spaces.txt").read_text(),
               "ib-counters-before": COUNTERS,
               "ib-counters-after": COUNTERS.replace("mlx5_0/ports/1/counters/symbol_error:0",
                                                     "mlx5_0/ports/1/counters/symbol_error:7")}
    checks, _metrics = judge_infiniband_stage(outputs, H100, {})
    (rise,) = [c for c in checks if c["check"] == "ib.counters" and c["status"] == "fail"]
    assert rise["evidence"] == ["before: /sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:0",
                                "after: /sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:7"]


def test_preflight():
    outputs = {"tools": "/usr/bin/nvidia-smi\n/usr/bin/ibstat\n", "nvidia-smi-versions": CSV,
               "nvidia-smi-list": (FIXTURES / "nvidia_smi" / "list_h100_8gpu_handmade.txt").read_text(),
               "dcgmi-version": "garbage\n",
               "ibstat-versions": (FIXTURES / "ibstat" / "gpud_a100_ibpanic_spaces.txt").read_text()}
    checks, metrics = judge_preflight_stage(outputs, H100, {"required_tools": ["nvidia-smi", "dcgmi", "ibstat"]})
    assert_evidence(checks)
    assert metrics["nic_firmware"]  # read from the CAs above the ibpanic line
    assert [c["status"] for c in checks if c["check"] == "versions"] == ["error", "error"]
