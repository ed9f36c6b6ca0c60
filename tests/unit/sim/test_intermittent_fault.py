# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulator's intermittent slow faults (slow_node / nic_slow with intermittent: p): slow in a
share p of the runs, drawn per run (Slurm job and step) so that every rank agrees; perftest
through a real server and client sees it run by run."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpusim import model, spec  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import parse_perftest  # noqa: E402
import test_perftest_fake as fake  # noqa: E402  pylint: disable=wrong-import-position

BASE = {"name": "flaky", "profile": "hgx_h100_sxm", "seed": 5, "nodes": {"prefix": "gpu", "count": 3, "width": 3, "start": 1}}


def _spec(faults):
    return spec.validate(dict(BASE, faults=faults))


def test_slow_node_intermittent_is_slow_in_about_p_of_the_runs_and_the_same_for_a_run():
    cluster = _spec([{"kind": "slow_node", "node": "gpu002", "factor": 0.4, "intermittent": 0.5}])
    state = model.node_state(cluster, "gpu002")
    assert state.slow_factor == 1.0 and state.flaky == [(0.4, 0.5)]
    factors = [model.this_run(state, cluster, "%d.0" % job).slow_factor for job in range(400)]
    assert set(factors) == {0.4, 1.0}
    assert 0.4 < factors.count(0.4) / 400.0 < 0.6
    # every rank of one run draws the same; a healthy node is never touched
    assert model.this_run(state, cluster, "17.3").slow_factor == model.this_run(state, cluster, "17.3").slow_factor
    healthy = model.node_state(cluster, "gpu001")
    assert model.this_run(healthy, cluster, "17.3") is healthy
    steady = _spec([{"kind": "slow_node", "node": "gpu002", "factor": 0.4}])
    assert model.node_state(steady, "gpu002").slow_factor == 0.4


def test_intermittent_is_validated():
    with pytest.raises(spec.SpecError, match=r"faults\[0\]\.intermittent: must be a number > 0 and <= 1"):
        _spec([{"kind": "slow_node", "node": "gpu002", "factor": 0.4, "intermittent": 1.5}])
    with pytest.raises(spec.SpecError, match=r"faults\[0\]\.intermittent: must be a number > 0"):
        _spec([{"kind": "nic_slow", "node": "gpu002", "nic": "mlx5_1", "factor": 0.5, "intermittent": 0}])
    with pytest.raises(spec.SpecError, match=r"unknown key for nic_down"):
        _spec([{"kind": "nic_down", "node": "gpu002", "nic": "mlx5_1", "intermittent": 0.5}])


def test_perftest_sees_an_intermittent_nic_in_some_runs_only(tmp_path, monkeypatch):
    path = tmp_path / "spec.json"
    path.write_text(__import__("json").dumps(dict(BASE, faults=[
        {"kind": "nic_slow", "node": "gpu002", "nic": "mlx5_3", "factor": 0.5, "intermittent": 0.5}])))
    cluster = spec.load(str(path))
    nic = model.node_state(cluster, "gpu002").nics[3]
    expected = {}
    for step in range(12):
        run = "900.%d" % step
        expected[step] = model.flaky_factor(cluster, "gpu002", "mlx5_3", nic.flaky, run) < 1.0
    assert set(expected.values()) == {True, False}, "the seed should give both kinds of run in 12"
    slow = [s for s in expected if expected[s]][0]
    fine = [s for s in expected if not expected[s]][0]
    values = {}
    for step in (slow, fine):
        monkeypatch.setenv("SLURM_JOB_ID", "900")
        monkeypatch.setenv("SLURM_STEP_ID", str(step))
        done, _served, _port = fake.pair(path, tmp_path, "gpu001", "gpu002", "mlx5_3")
        values[step] = parse_perftest(done.stdout)["bw_average"]
    assert values[slow] / values[fine] == pytest.approx(0.5, abs=0.01)
