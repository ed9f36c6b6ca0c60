# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bus bandwidth model of the simulated cluster (what nccl-tests would measure).

A collective on ``n`` ranks moves ``size * busfactor`` bytes per rank (busfactor 2(n-1)/n for
all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall, as nccl-tests' *GetBw). Its time is

    t(size) = alpha + size * busfactor / (peak * efficiency(size))
    efficiency(size) = 1 / (1 + sqrt(s0 / size))

so small sizes are latency-bound and large ones approach ``peak``. Two scopes may bound a run:

* NVLink inside a node: the profile's ``nvlink_busbw`` for the collective; a degraded GPU pair
  among the GPUs used (nvlink_down) scales it by k/NVLINKS (NVk) or caps it at PCIe speed (SYS..).
* The network between nodes (more than one node): each node brings (Active NICs) x (slowest
  Active NIC rate) x NET_EFFICIENCY x (slow_node factor); when the nodes sit under more than one
  leaf, each node's share is further divided by the oversubscription and multiplied by its leaf's
  degraded_uplink factor. The slowest participant sets the peak.

The slower scope wins. A seeded noise of at most +-NOISE (1.5 %) is applied per (size, placement),
deterministic for a given seed and run shape. Pure functions: tests/unit/sim/test_fabric_model.py.
"""
from __future__ import annotations

import math
import random
from collections import namedtuple

NET_EFFICIENCY = 0.92       # share of the IB line rate NCCL reaches
NOISE = 0.015               # +- relative noise on each measured time
INTRA = {"alpha_us": 18.0, "s0": 2 * 1024 * 1024}      # NVLink/NVSwitch
INTER = {"alpha_us": 42.0, "s0": 8 * 1024 * 1024}      # Infiniband
SINGLE_RANK = {"alpha_us": 4.0, "copy_gbs": 1800.0}    # one rank: a local copy (busbw 0)
ALLTOALL_NET_EFFICIENCY = 0.85

Participant = namedtuple("Participant", "name net_gbs leaf uplink")


def busfactor(collective, nranks):
    """nccl-tests' bus bandwidth factor for ``collective`` on ``nranks`` ranks."""
    if nranks <= 1:
        return 0.0
    if collective == "all_reduce":
        return 2.0 * (nranks - 1) / nranks
    return float(nranks - 1) / nranks


def efficiency(size, s0):
    """Share of the peak a message of ``size`` bytes reaches (0..1, rising with size)."""
    if size <= 0:
        return 0.0
    return 1.0 / (1.0 + math.sqrt(float(s0) / size))


def collective_time_us(size, factor, peak_gbs, alpha_us, s0):
    """Time in microseconds of one collective of ``size`` bytes (see the module docstring)."""
    if size <= 0 or factor <= 0 or peak_gbs is None:
        return alpha_us
    eff = efficiency(size, s0)
    return alpha_us + size * factor / (peak_gbs * 1e3 * eff)


def node_net_gbs(nic_rates, slow_factor=1.0):
    """Network bandwidth (GB/s) one node brings: ``nic_rates`` are the Gb/s of its Active NICs."""
    rates = [r for r in nic_rates if r and r > 0]
    if not rates:
        return 0.0
    return len(rates) * min(rates) / 8.0 * NET_EFFICIENCY * slow_factor


def rails_share(data_factors):
    """What a node's rails together carry, as a share of their line rate, when some NICs move data
    slower (nic_slow). Modelled as the mean over the rails (NCCL spreads its channels over every
    rail and the good ones carry most of the ring): one NIC at half rate of eight costs 1/16 of
    the node's bandwidth, inside the peers' 10 % margin, which is why perftest per NIC exists."""
    factors = [f for f in data_factors if f and f > 0]
    return sum(factors) / len(factors) if factors else 1.0


def network_peak(participants, oversubscription=1.0):
    """Peak network busbw (GB/s) of a run over ``participants`` (one per node), or None for one node.

    The slowest participant bounds the run; across leaves its share is divided by the
    oversubscription and multiplied by its leaf's uplink factor."""
    if len(participants) <= 1:
        return None
    cross_leaf = len({p.leaf for p in participants}) > 1
    shares = []
    for p in participants:
        share = p.net_gbs
        if cross_leaf:
            share = min(share, p.net_gbs / oversubscription * p.uplink)
        shares.append(share)
    return min(shares)


def intra_peak(hw, collective, links, nvlinks):
    """NVLink peak busbw (GB/s) of ``collective`` among GPUs joined by ``links`` (topo cells).

    ``links`` are the cells between the GPUs a node uses ('NV18', 'NV12', 'SYS', ...)."""
    peak = hw["nvlink_busbw"][collective]
    for link in links:
        if link.startswith("NV"):
            k = int(link[2:])
            peak = min(peak, hw["nvlink_busbw"][collective] * k / float(nvlinks))
        else:
            peak = min(peak, hw["pcie_gbps"])
    return peak


def alltoall_net_peak(node_peak, ranks_per_node, nranks):
    """Network busbw of alltoall: each rank's share of its node's bandwidth over the off-node part."""
    if node_peak is None or nranks <= ranks_per_node:
        return None
    off_node = float(nranks - ranks_per_node) / nranks
    per_rank = node_peak / max(1, ranks_per_node)
    return per_rank / off_node * busfactor("alltoall", nranks) * ALLTOALL_NET_EFFICIENCY


def noise_factor(seed, *key, amplitude=NOISE):
    """1 + u, u uniform in [-amplitude, amplitude], fixed by (seed, key)."""
    r = random.Random("noise|%s|%s" % (seed, "|".join(str(k) for k in key)))
    return 1.0 + r.uniform(-amplitude, amplitude)


def measure(size, collective, nranks, intra_gbs, net_gbs, in_place, seed, key=()):
    """(time_us, algbw GB/s, busbw GB/s) of one row half (out-of-place or in-place).

    ``intra_gbs``: NVLink peak (None when each node runs one rank); ``net_gbs``: network peak
    (None on one node)."""
    factor = busfactor(collective, nranks)
    if nranks <= 1:
        if in_place:
            t = 0.05 + size / (SINGLE_RANK["copy_gbs"] * 1e3 * 400.0)
        else:
            t = SINGLE_RANK["alpha_us"] + size / (SINGLE_RANK["copy_gbs"] * 1e3)
    else:
        times = []
        if intra_gbs is not None:
            times.append(collective_time_us(size, factor, intra_gbs, INTRA["alpha_us"], INTRA["s0"]))
        if net_gbs is not None:
            times.append(collective_time_us(size, factor, net_gbs, INTER["alpha_us"], INTER["s0"]))
        if not times:
            times.append(INTRA["alpha_us"])
        t = max(times)
    t = t / noise_factor(seed, collective, nranks, size, int(bool(in_place)), *key)
    algbw = size / (t * 1e3) if t > 0 else 0.0
    return t, algbw, algbw * factor
