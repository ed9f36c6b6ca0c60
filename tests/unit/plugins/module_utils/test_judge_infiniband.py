"""judge_infiniband over real ibstat outputs and sysfs counter snapshots."""
import copy
import re

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import (
    parse_ib_counters)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import parse_nvidia_topo
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_infiniband import (
    judge_infiniband, judge_infiniband_stage)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES

COUNTERS = FIXTURES / "ib_counters" / "gpud_h100_sysfs_grep_counters_hw_counters.txt"


def _ibstat(name):
    return parse_ibstat((FIXTURES / "ibstat" / name).read_text())


def _bump(text, ca, counter, by):
    """The sysfs snapshot with one counter raised, as a later `grep -H .` would print it."""
    pattern = re.compile(r"^(/sys/class/infiniband/%s/ports/1/counters/%s:)(\d+)$"
                         % (re.escape(ca), re.escape(counter)), re.M)
    return pattern.sub(lambda m: "%s%d" % (m.group(1), int(m.group(2)) + by), text)


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


@pytest.fixture(scope="module")
def two_named(h100):
    profile = copy.deepcopy(h100)
    profile["nic_names"] = ["mlx5_0", "mlx5_1"]
    return profile


def test_healthy_h100_ibstat(h100):
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), None, None, h100)
    by = dict((r["check"], r) for r in results if r["status"] != "skip")
    assert by["ib.port_count"]["message"] == "8 InfiniBand ports (at least 8 expected)"
    assert by["ib.port_state"]["status"] == "pass"
    assert by["ib.rate"]["message"] == "all 8 compute ports run at 400 Gb/s"
    skipped = [r["message"] for r in results if r["status"] == "skip"]
    assert "not on the InfiniBand compute fabric, not judged: mlx5_bond_0 port 1 (Ethernet)" \
        in skipped
    assert "IB port counters: no before/after snapshots collected" in skipped


def test_states_and_rates_named(h100):
    results = judge_infiniband(_ibstat("handmade_xdr800_states_fdr10.txt"), None, None, h100)
    failed = [r["message"] for r in results if r["status"] == "fail"]
    assert "mlx5_3 port 1 is Down (physical state Sleep)" in failed
    assert "mlx5_1 port 1 is Initializing (physical state LinkUp)" in failed
    assert "mlx4_0 port 1 runs at 40 Gb/s, expected 400" in failed
    assert "6 InfiniBand ports, expected at least 8" in failed


def test_hdr_port_on_ndr_profile(h100):
    ibstat = _ibstat("gpud_h100_ib_active_bond_spaces.txt")
    ibstat["cas"][2]["ports"][0]["rate"] = 200
    results = judge_infiniband(ibstat, None, None, h100)
    rate = [r for r in results if r["check"] == "ib.rate"]
    assert [(r["status"], r["message"], r["component"]) for r in rate] == [
        ("fail", "mlx5_4 port 1 runs at 200 Gb/s, expected 400", "mlx5_4 port 1")]


def test_roce_node_against_infiniband_profile(h100):
    results = judge_infiniband(_ibstat("gpud_h100_roce_tabs_polling.txt"), None, None, h100)
    assert [r["message"] for r in results if r["status"] == "fail"] == [
        "0 InfiniBand ports, expected at least 8"]


def test_named_hca_link_layer_and_missing(two_named):
    profile = copy.deepcopy(two_named)
    profile["nic_names"] = ["mlx5_0", "mlx5_bond_0", "mlx5_9x"]
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), None, None,
                               profile)
    failed = sorted(r["message"] for r in results if r["status"] == "fail")
    assert failed == ["compute HCA mlx5_9x is missing from ibstat",
                      "mlx5_bond_0 port 1 link layer is Ethernet, expected InfiniBand",
                      "mlx5_bond_0 port 1 runs at 200 Gb/s, expected 400"]


def test_counter_rise_over_a_test(two_named):
    text = COUNTERS.read_text()
    before = parse_ib_counters(text)
    after_text = _bump(_bump(text, "mlx5_1", "symbol_error", 57), "mlx5_0", "link_downed", 1)
    after_text = _bump(after_text, "mlx5_0", "port_xmit_discards", 1000)  # congestion: not judged
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), before,
                               parse_ib_counters(after_text), two_named)
    counters = [r for r in results if r["check"] == "ib.counters"]
    assert sorted(r["message"] for r in counters if r["status"] == "fail") == [
        "mlx5_0 port 1 link_downed rose by 1 during the test (limit 0)",
        "mlx5_1 port 1 symbol_error rose by 57 during the test (limit 0)",
    ]


def test_counters_unchanged_pass(two_named):
    snapshot = parse_ib_counters(COUNTERS.read_text())
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), snapshot,
                               copy.deepcopy(snapshot), two_named)
    counters = [r for r in results if r["check"] == "ib.counters"]
    assert [r["status"] for r in counters] == ["pass"]


def test_counter_reset_is_a_lower_bound(two_named):
    text = COUNTERS.read_text()
    before = parse_ib_counters(_bump(text, "mlx5_0", "port_rcv_errors", 100))  # 114 before
    after = parse_ib_counters(text)                                             # 14 after
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), before, after,
                               two_named)
    failed = [r for r in results if r["check"] == "ib.counters" and r["status"] == "fail"]
    assert failed[0]["message"] == \
        "mlx5_0 port 1 port_rcv_errors rose by at least 14 during the test (limit 0)"


# ------------------------------------------------------------------------------ error inputs

@pytest.mark.parametrize("name", ["gpud_a100_ibpanic_spaces.txt",
                                  "lustreperfmon_27_hdr_tabs_truncated.txt",
                                  "mooncake_1999_roce_truncated.txt"])
def test_unreadable_part_of_ibstat_is_an_error_next_to_the_findings(name, h100):
    results = judge_infiniband(_ibstat(name), None, None, h100)
    assert results[0]["status"] == "error" and results[0]["check"] == "ib.parse"
    assert results[0]["message"].startswith(
        "ibstat: part of the output is unreadable (the rest is judged): ")
    assert results[0]["evidence"] and results[0]["evidence"][0].startswith("line ")
    assert len(results) > 1  # the ports above the unreadable part are judged


def test_ibpanic_tail_keeps_the_rate_findings(h100):
    results = judge_infiniband(_ibstat("gpud_a100_ibpanic_spaces.txt"), None, None, h100)
    rates = [r for r in results if r["check"] == "ib.rate"]
    assert len(rates) == 8 and all(r["status"] == "fail" for r in rates)
    assert rates[0]["message"] == "mlx5_0 port 1 runs at 200 Gb/s, expected 400"
    assert rates[0]["evidence"] == ["CA 'mlx5_0' > Port 1: > State: Active", "CA 'mlx5_0' > Port 1: > Rate: 200"]
    assert "mlx5_8" in results[0]["message"]  # the device ibpanic could not read


def test_ibpanic_header_before_the_blocks_keeps_the_findings(h100):
    text = (FIXTURES / "ibstat" / "gpud_h100_ib_active_bond_spaces.txt").read_text()
    panic = "ibpanic: [12] main: stat of IB device 'mlx5_9' failed: No such file or directory\n"
    results = judge_infiniband(parse_ibstat(panic + text), None, None, h100)
    assert results[0]["status"] == "error" and "mlx5_9" in results[0]["message"]
    assert [r["status"] for r in results if r["check"] == "ib.port_state"] == ["pass"]
    assert len([r for r in results if r["check"] == "ib.port_state"][0]["evidence"]) == 8


def test_missing_ibstat_and_missing_snapshot(two_named):
    assert judge_infiniband(None, None, None, two_named)[0]["message"] == \
        "ibstat: no output was collected"
    snapshot = parse_ib_counters(COUNTERS.read_text())
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), snapshot, None,
                               two_named)
    errors = [r for r in results if r["status"] == "error"]
    assert [r["message"] for r in errors] == [
        "IB port counters (after the test): no output was collected"]


def test_unreadable_counter_snapshot(two_named):
    bad = parse_ib_counters((FIXTURES / "ib_counters" /
                             "netdata_2620_perfquery_x_wrapped_truncated.txt").read_text())
    assert bad["errors"]
    snapshot = parse_ib_counters(COUNTERS.read_text())
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), snapshot, bad,
                               two_named)
    errors = [r for r in results if r["check"] == "ib.parse"]
    assert errors and errors[0]["status"] == "error"
    assert errors[0]["message"].startswith("IB port counters (after the test): part of the output is "
                                           "unreadable (the rest is judged)")
    assert not any(r["check"] == "ib.counters" and r["status"] == "pass" for r in results)


def test_a_limited_counter_that_vanished_between_the_snapshots_is_an_error_never_a_pass(two_named):
    """symbol_error unreadable after the test (a port reset, a driver reload): not 'no rise'."""
    text = COUNTERS.read_text()
    after_text = "\n".join(line for line in text.splitlines()
                           if not line.startswith("/sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error:"))
    results = judge_infiniband(_ibstat("gpud_h100_ib_active_bond_spaces.txt"), parse_ib_counters(text),
                               parse_ib_counters(after_text), two_named)
    counters = [r for r in results if r["check"] == "ib.counters"]
    assert [(r["status"], r["message"]) for r in counters if r["status"] != "skip"] == [
        ("error", "mlx5_1 port 1: symbol_error read in one snapshot and not in the other around the test: "
                  "the snapshots do not compare like with like")]


def _ca_block(name, rate, guid):
    """One CA of ibstat as infiniband-diags prints it (ca_dump / port_dump)."""
    return ("CA '%s'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: 20.35.1012\n\tHardware version: 0\n"
            "\tNode GUID: 0x%016x\n\tSystem image GUID: 0x%016x\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            "\t\tRate: %d\n\t\tBase lid: %d\n\t\tLMC: 0\n\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n"
            "\t\tPort GUID: 0x%016x\n\t\tLink layer: InfiniBand\n" % (name, guid, guid, rate, guid % 1000 + 2, guid))


def test_storage_hcas_near_no_gpu_are_reported_not_failed():
    """DGX A100 (real topo -m: mlx5_8/9, the storage HCAs, SYS to every GPU), its storage fabric at
    100 Gb/s: without the matrix every IB port is judged at the compute rate (the old false alarm);
    with it the two are named in a skip and the eight compute ports pass, and only they get rails."""
    a100 = load_profile("a100_sxm_80gb")
    ibstat = "".join(_ca_block("mlx5_%d" % i, 100 if i >= 8 else 200, 0x0c42a1030065a000 + i) for i in range(10))
    topo = (FIXTURES / "nvidia_topo" / "dgx_a100_8gpu_10nic_tabs_legend.txt").read_text()
    outputs = {"ibstat": ibstat, "ib-counters-before": None, "ib-counters-after": None}
    blind = judge_infiniband_stage(dict(outputs), a100, {})[0]
    assert ("fail", "mlx5_8 port 1") in [(r["status"], r["component"]) for r in blind if r["check"] == "ib.rate"]
    seen, metrics = judge_infiniband_stage(dict(outputs, **{"ib-gpu-affinity": topo}), a100, {})
    assert not [r for r in seen if r["status"] in ("fail", "error")], [r for r in seen if r["status"] != "pass"]
    storage = [r for r in seen if r["check"] == "ib.port_count" and r["status"] == "skip"]
    assert len(storage) == 1 and "mlx5_8 port 1 (InfiniBand, 100 Gb/s)" in storage[0]["message"]
    assert "mlx5_9 port 1" in storage[0]["message"] and storage[0]["metrics"]["storage"] is True
    assert sorted(metrics["ports"]) == ["mlx5_%d" % i for i in range(8)]
    assert [r["message"] for r in seen if r["check"] == "ib.port_count" and r["status"] == "pass"] == [
        "8 InfiniBand ports (at least 8 expected)"]


def test_the_nic_of_a_gpu_that_fell_off_stays_judged():
    """GPU 6 gone from topo -m leaves its NIC near no GPU. A matrix short of a GPU does not tell
    storage from compute: every HCA is judged (its NIC's fault shows), the surplus named by count;
    with every GPU there, only the HCA beyond nics_per_node near no GPU is set apart."""
    a100 = load_profile("a100_sxm_80gb")
    topo = parse_nvidia_topo((FIXTURES / "nvidia_topo" / "dgx_a100_8gpu_10nic_tabs_legend.txt").read_text())
    nine = "".join(_ca_block("mlx5_%d" % i, 100 if i == 6 else 200, 0x0c42a1030065a000 + i) for i in range(9))
    whole = judge_infiniband(parse_ibstat(nine), None, None, a100, topo=topo)
    storage = [r for r in whole if r["check"] == "ib.port_count" and r["status"] == "skip"]
    assert len(storage) == 1 and "mlx5_8 port 1 (InfiniBand, 200 Gb/s)" in storage[0]["message"]
    assert ("fail", "mlx5_6 port 1") in [(r["status"], r["component"]) for r in whole if r["check"] == "ib.rate"]
    short = dict(topo, gpus=[g for g in topo["gpus"] if g != "GPU6"])
    short["nic_affinity"] = dict(topo["nic_affinity"], NIC6=dict(topo["nic_affinity"]["NIC6"], relation="SYS"))
    results = judge_infiniband(parse_ibstat(nine), None, None, a100, topo=short)
    assert not [r for r in results if r["check"] == "ib.port_count" and r["status"] == "skip"]
    assert ("fail", "mlx5_6 port 1") in [(r["status"], r["component"]) for r in results if r["check"] == "ib.rate"]
    assert "9 InfiniBand ports (at least 8 expected)" in [r["message"] for r in results if r["check"] == "ib.port_count"]
