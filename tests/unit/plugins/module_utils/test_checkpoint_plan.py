"""Young, Daly, goodput and the effective cost (plugins/module_utils/_checkpoint_plan.py)."""
import math

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _checkpoint_plan as plan


def test_the_seed_articles_example():
    interval = plan.young_interval(60, 28800)
    assert round(interval) == 1859
    assert round(plan.goodput(interval, 60, 28800, 600), 3) == 0.915


def test_halving_m_shrinks_the_interval_by_root_two():
    ratio = plan.young_interval(60, 28800) / plan.young_interval(60, 14400)
    assert ratio == pytest.approx(math.sqrt(2))


def test_daly_is_a_little_shorter_than_young_and_m_when_c_is_huge():
    young, daly = plan.young_interval(60, 28800), plan.daly_interval(60, 28800)
    assert 0.97 * young < daly < young
    assert round(daly) == 1819
    assert plan.daly_interval(100, 40) == 40  # C >= 2M: checkpointing barely pays


def test_exponential_goodput_agrees_with_first_order_when_everything_is_small_against_m():
    first = plan.goodput(1859, 60, 28800, 600)
    exponential = plan.goodput(1859, 60, 28800, 600, model="exponential")
    assert abs(first - exponential) < 0.005
    # Far from that regime the first order goes to 0 while the exponential model stays positive.
    assert plan.goodput(3600, 600, 3600, 1200) == 0.0
    assert 0 < plan.goodput(3600, 600, 3600, 1200, model="exponential") == pytest.approx(3600 / (3600 * math.exp(1 / 3) * math.expm1(4200 / 3600)))


def test_goodput_is_never_negative_and_bad_inputs_are_named():
    assert plan.goodput(10, 60, 100, 600) == 0.0
    with pytest.raises(ValueError, match="mtbf_s must be > 0"):
        plan.young_interval(60, 0)
    with pytest.raises(ValueError, match="write_s must be a finite number"):
        plan.young_interval(float("nan"), 10)
    with pytest.raises(ValueError, match="model must be one of"):
        plan.goodput(10, 1, 100, 1, model="magic")


def test_effective_cost_cheaper_rate_can_be_the_more_expensive_cluster():
    cheap = plan.effective_gpu_hour_cost(1.90, 0.80, 0.90)   # loses time to slow replacement
    dear = plan.effective_gpu_hour_cost(2.20, 0.95, 0.99)
    assert cheap == pytest.approx(1.90 / 0.72)
    assert cheap > dear
    assert plan.effective_gpu_hour_cost(2.0, 0.0) is None
    with pytest.raises(ValueError, match="<= 1"):
        plan.effective_gpu_hour_cost(2.0, 1.0, 1.5)


def test_sensitivity_names_each_lever_and_async_wins_points():
    rows = plan.sensitivity(60, 28800, 600, async_write_s=8)
    by = dict((r["lever"], r) for r in rows)
    assert set(by) == {"base", "write_half", "mtbf_half", "restart_half", "async"}
    assert by["base"]["goodput_points"] == 0
    assert by["write_half"]["goodput_points"] > 0 and by["mtbf_half"]["goodput_points"] < 0
    assert by["restart_half"]["goodput_points"] == pytest.approx(300 / 28800 * 100)
    assert by["async"]["interval_s"] == pytest.approx(math.sqrt(2 * 8 * 28800))
    assert by["async"]["goodput_points"] > by["write_half"]["goodput_points"]


def test_availability():
    assert plan.availability(0, 16, 3600) == 1.0
    assert plan.availability(3600, 16, 3600) == pytest.approx(15 / 16)
    assert plan.availability_from_replacement(1000 * 3600, 24 * 3600) == pytest.approx(1000 / 1024)
