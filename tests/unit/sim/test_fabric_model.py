# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated cluster's bus bandwidth model (sim/gpusim/fabric.py)."""
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sim"))

from gpusim import fabric, hardware  # noqa: E402  pylint: disable=wrong-import-position

H100 = hardware.PROFILES["hgx_h100_sxm"]


def part(name, gbs, leaf=0, uplink=1.0):
    return fabric.Participant(name, gbs, leaf, uplink)


def test_busfactor_matches_nccl_tests():
    assert fabric.busfactor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    for coll in ("all_gather", "reduce_scatter", "alltoall"):
        assert fabric.busfactor(coll, 16) == pytest.approx(15 / 16)
    assert fabric.busfactor("all_reduce", 1) == 0.0


def test_node_bandwidth_counts_active_nics_at_the_slowest_rate():
    healthy = fabric.node_net_gbs([400] * 8)
    assert healthy == pytest.approx(8 * 50 * fabric.NET_EFFICIENCY)
    assert fabric.node_net_gbs([400] * 7) == pytest.approx(healthy * 7 / 8)        # a NIC down
    assert fabric.node_net_gbs([400] * 7 + [200]) == pytest.approx(healthy / 2)     # one NIC at HDR drags all
    assert fabric.node_net_gbs([400] * 8, slow_factor=0.5) == pytest.approx(healthy / 2)
    assert fabric.node_net_gbs([]) == 0.0


def test_slowest_participant_bounds_the_run():
    nodes = [part("a", 368.0), part("b", 184.0), part("c", 368.0)]
    assert fabric.network_peak(nodes) == pytest.approx(184.0)
    assert fabric.network_peak([part("a", 368.0)]) is None   # one node: no network scope


def test_oversubscription_only_limits_cross_leaf_traffic():
    same_leaf = [part("a", 368.0, leaf=0), part("b", 368.0, leaf=0)]
    cross = [part("a", 368.0, leaf=0), part("b", 368.0, leaf=1)]
    assert fabric.network_peak(same_leaf, oversubscription=2.0) == pytest.approx(368.0)
    assert fabric.network_peak(cross, oversubscription=2.0) == pytest.approx(184.0)
    assert fabric.network_peak(cross, oversubscription=1.0) == pytest.approx(368.0)


def test_degraded_uplink_limits_the_nodes_under_that_leaf_when_crossing_leaves():
    cross = [part("a", 368.0, leaf=0), part("b", 368.0, leaf=1, uplink=0.25)]
    assert fabric.network_peak(cross) == pytest.approx(92.0)
    same = [part("b", 368.0, leaf=1, uplink=0.25), part("c", 368.0, leaf=1, uplink=0.25)]
    assert fabric.network_peak(same) == pytest.approx(368.0)      # traffic stays under the leaf


def test_intra_node_peak_drops_with_a_degraded_nvlink_pair():
    assert fabric.intra_peak(H100, "all_reduce", ["NV18"] * 28, 18) == pytest.approx(480.0)
    assert fabric.intra_peak(H100, "all_reduce", ["NV18", "NV12"], 18) == pytest.approx(480.0 * 12 / 18)
    assert fabric.intra_peak(H100, "all_reduce", ["NV18", "SYS"], 18) == pytest.approx(H100["pcie_gbps"])


def test_small_sizes_are_latency_bound_large_sizes_approach_the_peak():
    small = fabric.measure(8, "all_reduce", 8, 480.0, None, 0, seed=1)[2]
    mid = fabric.measure(8 << 20, "all_reduce", 8, 480.0, None, 0, seed=1)[2]
    large = fabric.measure(8 << 30, "all_reduce", 8, 480.0, None, 0, seed=1)[2]
    assert small < 0.01 < mid < large
    assert 0.95 * 480.0 < large < 1.02 * 480.0
    assert 150.0 < mid < 350.0


def test_network_scope_wins_when_slower():
    t_intra, bus_intra = fabric.measure(1 << 30, "all_reduce", 16, 480.0, None, 0, seed=3)[::2]
    t_both, bus_both = fabric.measure(1 << 30, "all_reduce", 16, 480.0, 184.0, 0, seed=3)[::2]
    assert t_both > t_intra and bus_both < bus_intra
    assert bus_both < 184.0 * 1.02


def test_measure_is_consistent_with_nccl_tests_formulas():
    size, n = 1 << 28, 16
    for coll in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
        t, algbw, busbw = fabric.measure(size, coll, n, 400.0, 300.0, 1, seed=9)
        assert algbw == pytest.approx(size / (t * 1e3))
        assert busbw == pytest.approx(algbw * fabric.busfactor(coll, n))


def test_single_rank_has_no_bus_bandwidth():
    t, algbw, busbw = fabric.measure(32 << 20, "all_gather", 1, None, None, 0, seed=0)
    assert busbw == 0.0 and algbw > 100.0 and t > 0


def test_alltoall_network_peak_uses_each_ranks_share_of_the_node():
    peak = fabric.alltoall_net_peak(368.0, 8, 16)
    assert peak == pytest.approx(368.0 / 8 / 0.5 * 15 / 16 * fabric.ALLTOALL_NET_EFFICIENCY)
    assert fabric.alltoall_net_peak(368.0, 8, 8) is None


def test_noise_is_deterministic_per_seed_and_differs_between_seeds():
    a = fabric.noise_factor(7, "all_reduce", 16, 1 << 20, 0)
    assert a == fabric.noise_factor(7, "all_reduce", 16, 1 << 20, 0)
    assert a != fabric.noise_factor(8, "all_reduce", 16, 1 << 20, 0)
    m1 = fabric.measure(1 << 30, "all_reduce", 16, 480.0, 368.0, 0, seed=5, key=("gpu001", "gpu002"))
    m2 = fabric.measure(1 << 30, "all_reduce", 16, 480.0, 368.0, 0, seed=5, key=("gpu001", "gpu002"))
    assert m1 == m2


@given(seed=st.integers(), size=st.integers(min_value=1, max_value=1 << 36),
       nranks=st.integers(min_value=2, max_value=4096), in_place=st.booleans())
def test_noise_stays_within_its_bound(seed, size, nranks, in_place):
    factor = fabric.noise_factor(seed, "all_reduce", nranks, size, int(in_place))
    assert abs(factor - 1.0) <= fabric.NOISE + 1e-12
    t_noisy = fabric.measure(size, "all_reduce", nranks, 480.0, 368.0, in_place, seed)[0]
    factor_ = fabric.busfactor("all_reduce", nranks)
    t_clean = max(fabric.collective_time_us(size, factor_, 480.0, **_intra()),
                  fabric.collective_time_us(size, factor_, 368.0, **_inter()))
    assert math.isclose(t_noisy * factor, t_clean, rel_tol=1e-9)


@given(size=st.integers(min_value=1, max_value=1 << 36),
       peak=st.floats(min_value=1.0, max_value=2000.0), nranks=st.integers(min_value=2, max_value=512))
def test_busbw_never_exceeds_the_peak_beyond_noise(size, peak, nranks):
    busbw = fabric.measure(size, "all_reduce", nranks, peak, None, 0, seed=11)[2]
    assert busbw <= peak * (1 + fabric.NOISE) + 1e-9


def _intra():
    return {"alpha_us": fabric.INTRA["alpha_us"], "s0": fabric.INTRA["s0"]}


def _inter():
    return {"alpha_us": fabric.INTER["alpha_us"], "s0": fabric.INTER["s0"]}
