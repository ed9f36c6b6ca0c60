"""M from failures and exposure with its Poisson interval (plugins/module_utils/_mtbf.py)."""
import random

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _mtbf

# Published chi-square quantiles (any table): p, dof, value.
TABLE = [(0.025, 2, 0.0506), (0.975, 2, 7.3778), (0.95, 1, 3.8415), (0.5, 10, 9.3418), (0.025, 20, 9.5908),
         (0.975, 22, 36.7807), (0.05, 100, 77.9295), (0.999, 4, 18.4668)]


@pytest.mark.parametrize("p,dof,value", TABLE)
def test_chi2_quantiles_match_the_tables(p, dof, value):
    assert _mtbf.chi2_quantile(p, dof) == pytest.approx(value, abs=2e-4)


def test_estimate_and_interval():
    found = _mtbf.mtbf_estimate(10, 36000)
    assert found["status"] == "measured" and found["mtbf_node_s"] == 3600
    # Garwood's interval for k = 10: rate in [4.795, 18.39] per 10 h.
    assert found["mtbf_node_s_low"] == pytest.approx(36000 / 18.39, rel=1e-3)
    assert found["mtbf_node_s_high"] == pytest.approx(36000 / 4.795, rel=1e-3)


def test_no_failure_is_not_enough_data_with_the_bound():
    found = _mtbf.mtbf_estimate(0, 1200 * 3600)
    assert found["status"] == "not_enough_data" and found["mtbf_node_s"] is None
    assert found["bound_node_s"] == pytest.approx(1200 * 3600 / 2.9957, rel=1e-3)  # T / -ln(0.05)
    assert found["reason"] == "no job-killing failure in 1,200 node-hours: M_node >= 401 h at 95 %"


def test_too_little_exposure_and_none_at_all():
    few = _mtbf.mtbf_estimate(2, 10 * 3600, min_node_hours=100)
    assert few["status"] == "not_enough_data" and few["mtbf_node_s"] is None and few["bound_node_s"] > 0
    assert "fewer than the 100 node-hours asked for" in few["reason"]
    nothing = _mtbf.mtbf_estimate(0, 0)
    assert nothing["status"] == "not_enough_data" and nothing["bound_node_s"] is None


def test_job_mtbf_divides_by_nodes():
    found = _mtbf.job_mtbf(_mtbf.mtbf_estimate(4, 4 * 1000 * 3600), 64)
    assert found["mtbf_s"] == pytest.approx(1000 * 3600 / 64)


def test_interval_covers_the_true_rate_about_95_percent_of_the_time():
    rng = random.Random(11)
    rate, exposure, covered, trials = 1.0 / 5000.0, 50000.0, 0, 400
    for _trial in range(trials):
        t, k = rng.expovariate(rate), 0
        while t < exposure:
            k += 1
            t += rng.expovariate(rate)
        low, high = _mtbf.rate_interval(k, exposure)
        covered += low <= rate <= high
    assert 0.92 <= covered / trials <= 0.995  # Garwood's interval is conservative
