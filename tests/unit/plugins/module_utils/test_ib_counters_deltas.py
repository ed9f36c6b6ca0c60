"""counter_deltas between two snapshots of real sysfs counter dumps (tests/fixtures/ib_counters)."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_deltas import counter_deltas

from test_ib_counters import fixture


def before_after():
    after_text = fixture("gpud_h100_sysfs_grep_counters_hw_counters.txt")
    before = parse_ib_counters(after_text)
    after = parse_ib_counters(after_text)
    return before, after


def test_deltas_of_identical_snapshots_are_zero():
    before, after = before_after()
    result = counter_deltas(before, after)
    assert result["errors"] == []
    assert all(v == 0 for ports in result["deltas"].values() for names in ports.values() for v in names.values())
    assert len(result["deltas"]["mlx5_0"]["1"]) == 47
    # excessive_buffer_overrun_errors is stuck at 15 on every CA: a lower bound.
    assert "mlx5_0/1/excessive_buffer_overrun_errors" in result["saturated"]


def test_deltas_growth_reset_and_missing():
    before, after = before_after()
    after["counters"]["mlx5_0"]["1"]["symbol_error"] = 7
    after["counters"]["mlx5_0"]["1"]["port_rcv_errors"] = 2   # was 14: reset in between
    del after["counters"]["mlx5_1"]["1"]["link_downed"]
    after["counters"]["mlx5_9"] = {"1": {"symbol_error": 1}}
    del after["counters"]["mlx5_bond_0"]
    result = counter_deltas(before, after)
    deltas = result["deltas"]
    assert deltas["mlx5_0"]["1"]["symbol_error"] == 7
    assert deltas["mlx5_0"]["1"]["port_rcv_errors"] == 2
    assert result["resets"] == ["mlx5_0/1/port_rcv_errors"]
    assert any("went from 14 to 2" in w for w in result["warnings"])
    assert "mlx5_1/1/link_downed" in result["missing_after"]
    assert "mlx5_9/1" in result["missing_before"]
    assert "mlx5_bond_0/1" in result["missing_after"]
    assert "mlx5_9" not in deltas and "mlx5_bond_0" not in deltas
    assert result["errors"] == []


def test_deltas_accept_text_and_bare_mappings():
    text = fixture("gpud_943_mlx5_1_saturated_grep.txt")
    bare = {"mlx5_1": {1: {"symbol_error": 0, "port_xmit_data": 205143497464000}}}
    result = counter_deltas(bare, text)
    assert result["deltas"]["mlx5_1"]["1"]["symbol_error"] == 0
    assert result["deltas"]["mlx5_1"]["1"]["port_xmit_data"] == 492
    assert "mlx5_1/1/link_downed" in result["missing_before"]


def test_deltas_report_snapshot_errors_and_bad_input():
    result = counter_deltas("", fixture("gpud_943_mlx5_1_saturated_grep.txt"))
    assert any(e.startswith("before: no counters found") for e in result["errors"])
    result = counter_deltas(42, ["x"])
    assert any("before: expected" in e for e in result["errors"])
    assert any("after: expected" in e for e in result["errors"])
    result = counter_deltas({"mlx5_0": {"1": {"symbol_error": "x"}}}, {"mlx5_0": {"1": {"symbol_error": 1}}})
    assert any("not an integer" in w for w in result["warnings"])
    assert result["missing_before"] == ["mlx5_0/1/symbol_error"]


def test_deltas_nothing_in_common():
    result = counter_deltas({"mlx5_0": {"1": {"a": 1}}}, {"mlx5_1": {"1": {"a": 1}}})
    assert result["errors"] == ["no CA/port in common between 'before' and 'after'"]
    assert counter_deltas({}, {})["errors"] == ["no counters in either snapshot"]
