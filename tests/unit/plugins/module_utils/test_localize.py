"""Localisation planner and analyser: rounds of disjoint groups, verdicts with evidence."""
import copy
import json
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize as loc
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize_base as base

HEALTHY = 368.0
FLOOR = 300.0


def cluster(count, leaf_size):
    nodes = ["n%03d" % i for i in range(count)]
    topology = dict((n, {"leaf": "L%02d" % (i // leaf_size), "rack": "r%02d" % (i // leaf_size)})
                    for i, n in enumerate(nodes))
    return nodes, topology


class Fabric(object):
    """Group busbw = slowest member share, +- noise; across leaves a member's share is also capped
    by its leaf's uplink (healthy / oversubscription * uplink factor).

    Checks that every round it is asked to run is made of disjoint groups of known nodes."""

    def __init__(self, topology, slow=None, uplink=None, hang=(), error=(), noise=0.015, seed=0,
                 oversubscription=1.0):
        self.topology = topology
        self.slow = slow or {}
        self.uplink = uplink or {}
        self.hang = set(hang)
        self.error = set(error)
        self.noise = noise
        self.rng = random.Random(seed)
        self.oversubscription = oversubscription
        self.rounds = []

    def __call__(self, groups):
        seen = set()
        for group in groups:
            assert len(group) >= 2
            assert not seen.intersection(group), "groups of one round overlap"
            assert all(n in self.topology for n in group)
            seen.update(group)
        self.rounds.append([list(g) for g in groups])
        results = []
        for group in groups:
            if self.hang.intersection(group):
                results.append({"group": group, "busbw": None, "status": "timeout"})
                continue
            if self.error.intersection(group):
                results.append({"group": group, "busbw": None, "status": "error"})
                continue
            leaves = set(self.topology[n]["leaf"] for n in group)
            shares = []
            for node in group:
                share = HEALTHY * self.slow.get(node, 1.0)
                if len(leaves) > 1:
                    uplink = HEALTHY / self.oversubscription * self.uplink.get(self.topology[node]["leaf"], 1.0)
                    share = min(share, uplink)
                shares.append(share)
            value = min(shares) * (1 + self.rng.uniform(-self.noise, self.noise))
            results.append({"group": group, "busbw": value, "status": "ok"})
        return results


def run(count=64, leaf_size=16, mode="adaptive", seed=1, config=None, **faults):
    nodes, topology = cluster(count, leaf_size)
    fabric = Fabric(topology, seed=seed, **faults)
    cfg = {"floor": FLOOR}
    cfg.update(config or {})
    state = loc.localize(nodes, topology, fabric, mode=mode, seed=seed, config=cfg)
    return state, fabric


# ------------------------------------------------------------------------------ planning

@pytest.mark.parametrize("count,leaf_size", [(2, 1), (3, 3), (16, 4), (17, 5), (64, 16), (100, 32), (33, 32)])
def test_adaptive_round_one_tests_every_node_in_disjoint_groups(count, leaf_size):
    nodes, topology = cluster(count, leaf_size)
    state = loc.new_state(nodes, topology, seed=3, config={"floor": FLOOR})
    groups = loc.plan_round(state)
    members = [n for g in groups for n in g]
    assert sorted(members) == sorted(nodes)
    assert len(members) == len(set(members))
    assert all(len(g) >= 2 for g in groups)


def test_adaptive_round_one_mixes_intra_and_cross_leaf_pairs():
    nodes, topology = cluster(128, 32)
    groups = loc.plan_round(loc.new_state(nodes, topology, seed=0))
    cross = [g for g in groups if len(set(topology[n]["leaf"] for n in g)) > 1]
    intra = [g for g in groups if len(set(topology[n]["leaf"] for n in g)) == 1]
    assert len(cross) == 32 and len(intra) == 32        # half of each leaf crosses
    # a leaf's cross pairs go to every other leaf (round-robin over leaves)
    partners = dict((leaf, set()) for leaf in ("L00", "L01", "L02", "L03"))
    for group in cross:
        first, second = (topology[n]["leaf"] for n in group)
        partners[first].add(second)
        partners[second].add(first)
    assert all(len(p) == 3 for p in partners.values())


@pytest.mark.parametrize("mode", loc.MODES)
def test_every_round_of_every_mode_is_disjoint(mode):
    # Fabric asserts disjointness of each round it is asked to run
    state, fabric = run(count=24, leaf_size=6, mode=mode, slow={"n005": 0.5}, uplink={"L02": 0.5})
    assert fabric.rounds
    assert state["done"]


def test_exhaustive_tests_every_pair_once():
    state, fabric = run(count=8, leaf_size=4, mode="exhaustive")
    pairs = [tuple(sorted(g)) for r in fabric.rounds for g in r]
    assert len(fabric.rounds) == 7
    assert len(pairs) == len(set(pairs)) == 28
    assert len(state["matrix"]["n000"]) == 7


def test_halving_is_sequential_and_starts_with_the_whole_allocation():
    state, fabric = run(count=32, leaf_size=8, mode="halving", slow={"n013": 0.4})
    assert sorted(fabric.rounds[0][0]) == sorted(state["nodes"])
    assert all(len(r) == 1 for r in fabric.rounds)
    assert state["pinned"]["nodes"] == ["n013"]


def test_benchmark_baselines_are_not_product_modes():
    assert loc.MODES == ("adaptive", "exhaustive", "halving")     # the benchmark registers its own
    with pytest.raises(ValueError, match="unknown mode 'bisect'"):
        loc.new_state(["a", "b"], mode="bisect")


def test_clean_cluster_confirms_every_node_in_a_second_round_and_stops():
    state, fabric = run(count=64, leaf_size=16)
    assert len(fabric.rounds) == 2
    # the confirmation round meets new partners: no pair twice
    pairs = [tuple(sorted(g)) for r in fabric.rounds for g in r]
    assert len(pairs) == len(set(pairs))
    assert all(state["_index"]["pass_count"][n] >= 2 for n in state["nodes"])
    assert state["summary"]["nodes"]["cleared"] == 64
    assert state["summary"]["uplinks"]["cleared"] == 4
    assert state["pinned"] == {"nodes": [], "uplinks": []}
    assert state["suspects"] == {"nodes": [], "uplinks": []}


# ------------------------------------------------------------------------------ verdicts

def test_slow_node_pinned_with_evidence():
    state, fabric = run(slow={"n021": 0.45})
    assert state["pinned"] == {"nodes": ["n021"], "uplinks": []}
    assert state["suspects"] == {"nodes": [], "uplinks": []}
    assert len(fabric.rounds) <= 3
    record = state["nodes"]["n021"]
    assert record["verdict"] == "pinned"
    summary = record["evidence"][0]
    assert re.match(r"n021: (\d) of \1 pairs \u2264 1\d\d GB/s, median of others 3\d\d; "
                    r"each partner passed twice with other nodes$", summary), summary
    assert any("-> low" in line for line in record["evidence"][1:])
    # its partners are cleared, each with a passing test of its own
    for partner in state["matrix"]["n021"]:
        assert state["nodes"][partner]["verdict"] == "cleared"
        assert state["nodes"][partner]["evidence"][0].startswith("%s: passed " % partner)
    assert sum(1 for r in state["nodes"].values() if r["verdict"] == "cleared") == 63


def test_two_slow_nodes_paired_together_are_both_pinned():
    nodes, topology = cluster(64, 16)
    first = loc.plan_round(loc.new_state(nodes, topology, seed=1, config={"floor": FLOOR}))
    intra = next(g for g in first if topology[g[0]]["leaf"] == topology[g[1]]["leaf"])
    state, _fabric = run(slow=dict((n, 0.5) for n in intra))
    assert state["pinned"]["nodes"] == sorted(intra)
    assert state["suspects"]["nodes"] == []


def test_degraded_uplink_pinned_not_its_nodes():
    state, fabric = run(uplink={"L02": 0.5})
    assert state["pinned"] == {"nodes": [], "uplinks": ["L02"]}
    assert state["suspects"] == {"nodes": [], "uplinks": []}
    assert len(fabric.rounds) <= 3
    for node, record in state["nodes"].items():
        assert record["verdict"] == "cleared", (node, record["evidence"])
    summary = state["uplinks"]["L02"]["evidence"][0]
    assert summary.startswith("L02 uplink: ")
    assert "cross-leaf pairs \u2264 1" in summary
    assert summary.endswith("its nodes passed other tests and each partner leaf passed cross-leaf twice with another leaf")
    for leaf in ("L00", "L01", "L03"):
        assert state["uplinks"][leaf]["verdict"] == "cleared"


def test_uplink_and_slow_node_in_the_same_leaf():
    state, fabric = run(uplink={"L01": 0.6}, slow={"n020": 0.4, "n050": 0.5})
    assert state["pinned"] == {"nodes": ["n020", "n050"], "uplinks": ["L01"]}
    assert len(fabric.rounds) <= 3


def test_two_leaves_cannot_tell_which_uplink():
    state, _fabric = run(count=32, leaf_size=16, uplink={"L00": 0.5})
    assert state["pinned"] == {"nodes": [], "uplinks": []}
    assert state["suspects"]["uplinks"] == ["L00", "L01"]
    assert "cannot tell which one" in state["uplinks"]["L00"]["evidence"][0]
    assert state["suspects"]["nodes"] == []


def test_oversubscribed_fabric_uses_its_own_cross_leaf_reference():
    state, _fabric = run(oversubscription=2.0, config={"oversubscription": 2.0}, slow={"n007": 0.5})
    assert state["pinned"] == {"nodes": ["n007"], "uplinks": []}
    refs = state["references"]
    assert refs["cross"]["floor"] == FLOOR / 2
    assert refs["cross"]["median"] == pytest.approx(refs["intra"]["median"] / 2)
    assert 170 < refs["cross"]["median"] < 200


@pytest.mark.parametrize("mode", ["adaptive", "halving", "exhaustive"])
def test_slow_node_masked_by_oversubscription_is_not_cleared_cross_leaf(mode):
    # at 2:1 every node gets 184 GB/s across leaves: a node at 0.6 (221 GB/s) passes cross-leaf
    state, fabric = run(count=32, leaf_size=8, mode=mode, oversubscription=2.0, config={"oversubscription": 2.0},
                        slow={"n003": 0.6, "n017": 0.6})
    assert state["nodes"]["n003"]["verdict"] != "cleared" and state["nodes"]["n017"]["verdict"] != "cleared"
    assert set(state["pinned"]["nodes"]) <= {"n003", "n017"}
    if mode != "halving":       # halves may leave a node without a full-speed (intra-leaf) pass
        assert state["pinned"] == {"nodes": ["n003", "n017"], "uplinks": []}
        assert state["suspects"] == {"nodes": [], "uplinks": []}
        assert state["summary"]["nodes"]["cleared"] == 30
    if mode == "adaptive":
        assert len(fabric.rounds) <= 3


def test_timeout_counts_as_low_with_evidence():
    state, fabric = run(hang={"n033"})
    assert state["pinned"]["nodes"] == ["n033"]
    summary = state["nodes"]["n033"]["evidence"][0]
    assert "timed out" in summary and "each partner passed twice with other nodes" in summary
    assert any("timed out -> low" in line for line in state["nodes"]["n033"]["evidence"])
    assert state["rounds"][0]["timeouts"] == 1
    assert len(fabric.rounds) <= 3


def test_error_counts_as_low():
    state, _fabric = run(error={"n002"})
    assert state["pinned"]["nodes"] == ["n002"]
    assert "failed" in state["nodes"]["n002"]["evidence"][0]


def test_busbw_missing_with_status_ok_is_an_error():
    nodes, topology = cluster(4, 4)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    loc.analyse_round(state, [{"group": ["n000", "n001"], "busbw": None, "status": "ok"},
                              {"group": ["n002", "n003"], "busbw": 360.0, "status": "ok"}])
    assert state["tests"][0]["status"] == "error" and state["tests"][0]["low"] is True
    assert state["nodes"]["n002"]["verdict"] == "cleared"
    assert state["nodes"]["n000"]["verdict"] == "suspect"


def test_relative_drop_flags_above_the_floor_but_noise_does_not():
    nodes, topology = cluster(40, 40)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    groups = loc.plan_round(state)
    results = []
    for i, group in enumerate(groups):
        value = 368.0 * (1 + 0.02 * ((-1) ** i))       # +-2 % noise
        if i == 3:
            value = 318.0                               # above the floor, 14 % below the median
        results.append({"group": group, "busbw": value, "status": "ok"})
    loc.analyse_round(state, results)
    lows = [t for t in state["tests"] if t["low"]]
    assert len(lows) == 1 and lows[0]["busbw"] == 318.0
    ref = state["references"]["intra"]
    # +-2 % alternating: the MAD margin (3.5 MAD / 0.6745) is wider than 10 % of the median
    assert ref["threshold"] == pytest.approx(ref["median"] - 3.5 * ref["mad"] / 0.6745)
    assert ref["threshold"] < ref["median"] * 0.9


def test_no_floor_and_too_few_peers_judges_nothing_by_value():
    nodes, topology = cluster(4, 4)
    state = loc.new_state(nodes, topology)
    loc.analyse_round(state, [{"group": ["n000", "n001"], "busbw": 50.0, "status": "ok"},
                              {"group": ["n002", "n003"], "busbw": 360.0, "status": "ok"}])
    assert state["references"]["intra"]["threshold"] is None
    assert state["summary"]["nodes"]["cleared"] == 4
    assert "no floor or peers" in state["nodes"]["n000"]["evidence"][1]


def test_expected_busbw_is_the_reference_when_peers_are_few():
    nodes, topology = cluster(4, 4)
    state = loc.new_state(nodes, topology, config={"expected_busbw": 368.0})
    loc.analyse_round(state, [{"group": ["n000", "n001"], "busbw": 300.0, "status": "ok"},
                              {"group": ["n002", "n003"], "busbw": 360.0, "status": "ok"}])
    assert state["references"]["intra"]["basis"] == "expected_busbw"
    assert state["tests"][0]["low"] is True and state["tests"][1]["low"] is False


def test_marginal_node_is_reported_not_pinned_and_its_partners_are_cleared():
    state, fabric = run(slow={"n021": 0.92})
    assert state["pinned"] == {"nodes": [], "uplinks": []}
    assert state["suspects"] == {"nodes": ["n021"], "uplinks": []}
    summary = state["nodes"]["n021"]["evidence"][0]
    assert re.match(r"n021: (\d) of \1 pairs marginal \(3\d\d-3\d\d GB/s, \d-\d+ % below the median 3\d\d\)", summary)
    assert summary.endswith("each partner passed elsewhere, so the shortfall is its own")
    assert any("-> marginal" in line for line in state["nodes"]["n021"]["evidence"])
    assert state["summary"]["nodes"]["cleared"] == 63
    assert len(fabric.rounds) <= 3
    assert state["rounds"][0]["marginal"] == 1


def test_every_verdict_is_backed_by_evidence():
    state, _fabric = run(count=96, leaf_size=16, slow={"n003": 0.5, "n040": 0.6, "n041": 0.35},
                         uplink={"L04": 0.5}, hang={"n090"})
    for name, record in list(state["nodes"].items()) + list(state["uplinks"].items()):
        evidence = record["evidence"]
        assert evidence and evidence[0].startswith(name), (name, evidence)
        assert len(evidence) >= 2
        assert all(isinstance(line, str) and line for line in evidence)
    assert state["pinned"] == {"nodes": ["n003", "n040", "n041", "n090"], "uplinks": ["L04"]}


def test_evidence_every_round_off_still_writes_evidence_when_done():
    state, _fabric = run(slow={"n021": 0.45}, config={"evidence_every_round": False})
    assert state["nodes"]["n021"]["evidence"][0].startswith("n021: 3 of 3 pairs")
    assert state["nodes"]["n000"]["evidence"][0].startswith("n000: passed")


def _healthy_round(state, value=368.0):
    return [{"group": g, "busbw": value, "status": "ok"} for g in loc.plan_round(state)]


def test_low_test_of_elements_that_all_passed_twice_is_ambiguous_suspect():
    nodes, topology = cluster(40, 40)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    loc.analyse_round(state, _healthy_round(state))
    loc.analyse_round(state, _healthy_round(state))
    assert state["done"] and all(state["_index"]["pass_count"][n] == 2 for n in nodes)
    # an extra round run by hand: two nodes that passed twice now low together
    a, c = nodes[0], nodes[1]
    state["done"] = False
    loc.analyse_round(state, [{"group": [a, c], "busbw": 150.0, "status": "ok"}])
    assert state["nodes"][a]["verdict"] == state["nodes"][c]["verdict"] == "suspect"
    assert "one of them is intermittent" in state["nodes"][a]["evidence"][0]


def test_node_that_passed_once_then_low_with_confirmed_partners_is_intermittent_and_never_a_partner():
    nodes, topology = cluster(16, 16)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    first = loc.plan_round(state)
    loc.analyse_round(state, _healthy_round(state))
    flaky = first[0][0]
    # round 2: flaky is low with a partner that passes twice (rounds 1 and 3)
    partner = next(n for g in first[1:] for n in g)
    results = []
    for group in loc.plan_round(state):
        low = flaky in group
        results.append({"group": group, "busbw": 150.0 if low else 368.0, "status": "ok"})
    loc.analyse_round(state, results)
    flaky_partner = next(n for r in results if flaky in r["group"] for n in r["group"] if n != flaky)
    assert state["nodes"][flaky]["verdict"] in ("suspect", "intermittent")
    # a third round: whatever is planned, flaky is never anyone's known-good partner
    plan = loc.plan_round(state)
    for group in plan:
        if flaky in group:
            assert all(state["nodes"][n]["verdict"] != "cleared" or n != flaky for n in group)
    loc.analyse_round(state, [{"group": g, "busbw": 150.0 if flaky in g else 368.0, "status": "ok"} for g in plan])
    assert state["_index"]["pass_count"][flaky_partner] >= 2
    assert state["nodes"][flaky]["verdict"] == "intermittent", state["nodes"][flaky]["evidence"]
    summary = state["nodes"][flaky]["evidence"][0]
    assert summary.startswith("%s: intermittent: passed 1 of " % flaky)
    assert "low in round 2" in summary and "more than once" in summary
    assert state["nodes"][flaky_partner]["verdict"] == "cleared"
    assert partner != flaky
    assert state["intermittent"]["nodes"] == [flaky]


def test_pin_waits_for_a_partner_that_passed_twice():
    nodes, topology = cluster(8, 8)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    first = loc.plan_round(state)
    slow = first[0][0]

    def answer(groups):
        return [{"group": g, "busbw": 150.0 if slow in g else 368.0, "status": "ok"} for g in groups]
    loc.analyse_round(state, answer(first))
    # round 2: slow is low with a partner that passed once: not pinned yet
    loc.analyse_round(state, answer(loc.plan_round(state)))
    assert state["nodes"][slow]["verdict"] == "suspect"
    assert "confirmation pending" in state["nodes"][slow]["evidence"][0]
    # round 3 confirms the partners (and re-pairs slow with a confirmed one): pinned
    loc.analyse_round(state, answer(loc.plan_round(state)))
    assert state["nodes"][slow]["verdict"] == "pinned"
    assert state["pinned"]["nodes"] == [slow] and state["round"] == 3


def test_confirm_passes_one_restores_the_single_pass_rule():
    state, fabric = run(slow={"n021": 0.45}, config={"confirm_passes": 1})
    assert state["pinned"]["nodes"] == ["n021"] and len(fabric.rounds) == 2
    with pytest.raises(ValueError, match="confirm_passes"):
        loc.new_state(["a", "b"], config={"confirm_passes": 0})


def test_unstable_samples_flag_an_intermittent_node():
    nodes, topology = cluster(16, 16)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    flaky = loc.plan_round(state)[0][0]

    def answer(groups):
        out = []
        for group in groups:
            if flaky in group:
                out.append({"group": group, "busbw": 360.0, "status": "ok", "samples": [366.0, 150.0, 365.0, 368.0]})
            else:
                out.append({"group": group, "busbw": 368.0, "status": "ok", "samples": [367.0, 368.0, 369.0, 366.0]})
        return out
    state = loc.localize(nodes, topology, answer, config={"floor": FLOOR})
    record = state["nodes"][flaky]
    assert record["verdict"] == "intermittent", record["evidence"]
    assert "unstable in round" in record["evidence"][0] and "runs 150-368 GB/s" in record["evidence"][0]
    assert any("-> unstable" in line for line in record["evidence"][1:])
    assert state["rounds"][0]["unstable"] == 1
    assert sum(1 for n in nodes if state["nodes"][n]["verdict"] != "cleared") == 1


def test_whole_slow_leaf_is_one_leaf_fault_with_cross_leaf_evidence():
    slow = dict(("n%03d" % i, 0.5) for i in range(16, 32))
    state, fabric = run(count=64, leaf_size=16, slow=slow)
    assert state["leaf_faults"] == ["L01"]
    assert len(fabric.rounds) <= 3
    for node in slow:
        assert state["nodes"][node]["verdict"] == "leaf"
    assert state["uplinks"]["L01"]["verdict"] == "leaf"
    assert state["pinned"] == {"nodes": [], "uplinks": []}
    assert state["suspects"] == {"nodes": [], "uplinks": []}
    summary = state["nodes"]["n016"]["evidence"][0]
    assert summary.startswith("n016: leaf-level fault of L01 (its leaf switch or all its 16 nodes)"), summary
    assert "partners of other leaves that passed elsewhere" in summary and "tests inside the leaf were low" in summary
    others = [n for n in state["nodes"] if n not in slow]
    assert all(state["nodes"][n]["verdict"] == "cleared" for n in others)


def test_few_slow_nodes_in_one_leaf_are_pinned_not_a_leaf_fault():
    state, _fabric = run(count=64, leaf_size=16, slow={"n016": 0.5, "n017": 0.5, "n018": 0.5})
    assert state["leaf_faults"] == []
    assert state["pinned"]["nodes"] == ["n016", "n017", "n018"]


def test_planner_registry_runs_a_registered_mode_through_the_same_decoding():
    def pairs(state):
        if state["round"]:
            return []
        names = sorted(state["nodes"])
        return [names[i:i + 2] for i in range(0, len(names) - 1, 2)]
    loc.register_planner("test_pairs_once", pairs, lambda count: 1)
    try:
        state, fabric = run(count=8, leaf_size=8, mode="test_pairs_once", slow={"n003": 0.5})
        assert len(fabric.rounds) == 1
        assert sorted(state["suspects"]["nodes"]) == ["n002", "n003"]
    finally:
        base.PLANNERS.pop("test_pairs_once")


# ------------------------------------------------------------------------------ determinism, state

def test_deterministic_for_a_given_seed():
    first, _fabric = run(seed=5, slow={"n010": 0.5}, uplink={"L01": 0.5})
    second, _fabric = run(seed=5, slow={"n010": 0.5}, uplink={"L01": 0.5})
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    nodes, topology = cluster(64, 16)
    plans = [loc.plan_round(loc.new_state(nodes, topology, seed=s)) for s in (1, 2)]
    assert plans[0] != plans[1]


def test_state_survives_a_json_round_trip_between_rounds():
    nodes, topology = cluster(64, 16)
    faults = {"slow": {"n011": 0.5}, "uplink": {"L03": 0.5}, "hang": {"n030"}}
    expected, _fabric = run(seed=2, **faults)
    fabric = Fabric(topology, seed=2, **faults)
    state = loc.new_state(nodes, topology, seed=2, config={"floor": FLOOR})
    while not state["done"]:
        state = json.loads(json.dumps(state))
        state = loc.analyse_round(state, fabric(loc.plan_round(state)))
    assert state["pinned"] == expected["pinned"]
    assert state["nodes"] == expected["nodes"]
    public = loc.public_state(state)
    assert "_index" not in public and public["matrix"]["n011"]


def test_max_rounds_stops():
    state, fabric = run(slow={"n001": 0.5}, mode="adaptive", config={})
    limited = loc.localize(*cluster(64, 16), run_group=Fabric(cluster(64, 16)[1], slow={"n001": 0.5}, seed=1),
                           seed=1, max_rounds=1, config={"floor": FLOOR})
    assert limited["round"] == 1 and limited["done"]
    assert limited["pinned"]["nodes"] == [] and "n001" in limited["suspects"]["nodes"]
    assert state["pinned"]["nodes"] == ["n001"] and len(fabric.rounds) == 3


def test_bad_results_are_ignored_with_a_warning():
    nodes, topology = cluster(8, 4)
    state = loc.new_state(nodes, topology, config={"floor": FLOOR})
    loc.analyse_round(state, [{"group": ["n000", "zzz"], "busbw": 360.0},
                              {"group": ["n001"], "busbw": 360.0},
                              {"group": ["n002", "n003"], "busbw": 360.0},
                              {"group": ["n003", "n004"], "busbw": 360.0}])
    assert len(state["tests"]) == 1
    assert len([w for w in state["warnings"] if "ignored" in w]) == 3
    assert any("planned groups" in w for w in state["warnings"])


def test_inputs_validated_and_missing_leaf_warned():
    with pytest.raises(ValueError):
        loc.new_state(["a", "b"], {}, mode="bisect")
    with pytest.raises(ValueError):
        loc.new_state(["a", "b"], {}, config={"floorr": 1})
    state = loc.new_state(["a", "b", "c"], {"a": {"leaf": "x"}})
    assert state["nodes"]["b"]["leaf"] == "unknown"
    assert any("without a leaf" in w for w in state["warnings"])
    single = loc.new_state(["a"], {})
    assert single["done"] and loc.plan_round(single) == []


def test_default_round_limits():
    nodes, topology = cluster(10, 5)
    assert loc.new_state(nodes, topology)["max_rounds"] == 3
    assert loc.new_state(nodes, topology, mode="exhaustive")["max_rounds"] == 9
    assert loc.new_state(nodes[:9], topology, mode="exhaustive")["max_rounds"] == 9
    assert loc.new_state(nodes, topology, mode="halving")["max_rounds"] == 56


def test_mad_of_sorted_values():
    values = sorted([1.0, 2.0, 3.0, 4.0, 100.0])
    assert base.mad_sorted(values, 3.0) == 1.0
    values = sorted([1.0, 2.0, 3.0, 4.0])
    assert base.mad_sorted(values, 2.5) == 1.0


# ------------------------------------------------------------------------------ properties

@given(count=st.integers(min_value=2, max_value=150), leaf_size=st.integers(min_value=1, max_value=40),
       noise=st.floats(min_value=0.0, max_value=0.02), seed=st.integers(min_value=0, max_value=2 ** 16),
       floor=st.sampled_from([None, FLOOR]), over=st.sampled_from([1.0, 2.0]))
def test_clean_noisy_cluster_has_no_suspects(count, leaf_size, noise, seed, floor, over):
    nodes, topology = cluster(count, leaf_size)
    fabric = Fabric(topology, noise=noise, seed=seed, oversubscription=over)
    state = loc.localize(nodes, topology, fabric, seed=seed, config={"floor": floor, "oversubscription": over})
    assert state["pinned"] == {"nodes": [], "uplinks": []}
    assert state["suspects"] == {"nodes": [], "uplinks": []}
    if over == 1.0:
        assert state["summary"]["nodes"]["cleared"] == count
        assert len(fabric.rounds) <= 3      # rounds 2 (and 3 for an odd one) confirm every node
    else:
        # oversubscribed: a cross-leaf pass does not clear a node; round 2 re-pairs those nodes
        # inside their leaf, which a node alone in its leaf does not have
        alone = sum(1 for n in nodes if len(state["leaves"][topology[n]["leaf"]]) == 1)
        assert state["summary"]["nodes"]["untested"] <= alone
        assert state["summary"]["nodes"]["cleared"] + state["summary"]["nodes"]["untested"] == count
        assert len(fabric.rounds) <= 3


@given(count=st.integers(min_value=4, max_value=32), leaf_size=st.integers(min_value=2, max_value=16),
       data=st.data(), mode=st.sampled_from(loc.MODES), seed=st.integers(min_value=0, max_value=2 ** 16))
def test_pinned_are_always_injected_faults(count, leaf_size, data, mode, seed):
    """Soundness: whatever the mode and the faults, nothing healthy is pinned or cleared wrongly."""
    nodes, topology = cluster(count, leaf_size)
    # any shortfall, marginal ones included: noise (+-1.5 %) is narrower than half the margin
    factor = st.floats(min_value=0.3, max_value=0.97)
    slow = data.draw(st.dictionaries(st.sampled_from(nodes), factor, max_size=4))
    leaves = sorted(set(t["leaf"] for t in topology.values()))
    uplink = data.draw(st.dictionaries(st.sampled_from(leaves), factor, max_size=1))
    fabric = Fabric(topology, slow=slow, uplink=uplink, seed=seed)
    state = loc.localize(nodes, topology, fabric, mode=mode, seed=seed, config={"floor": FLOOR})
    assert set(state["pinned"]["nodes"]) <= set(slow)
    assert set(state["pinned"]["uplinks"]) <= set(uplink)
    # a fault below the floor even with noise is never cleared (a milder one may be, where too few
    # peers leave only the floor to judge by: the detection limit, not a false verdict)
    for node, factor in slow.items():
        if factor * HEALTHY * 1.015 < FLOOR:
            assert state["nodes"][node]["verdict"] != "cleared"
    for record in state["nodes"].values():
        assert record["evidence"]


def test_localize_does_not_share_state_between_runs():
    first, _fabric = run(slow={"n001": 0.5})
    copy_of_first = copy.deepcopy(first)
    run(slow={"n002": 0.5})
    assert first == copy_of_first


def test_marginal_only_suspect_is_what_the_threshold_accepts():
    nodes, topology = cluster(16, 16)
    slowish = "n003"

    def answer(groups):
        return [{"group": g, "busbw": 345.0 if slowish in g else 368.0, "status": "ok"} for g in groups]
    state = loc.localize(nodes, topology, answer, config={"floor": FLOOR})
    assert state["nodes"][slowish]["verdict"] == "suspect"
    assert loc.marginal_only(state, slowish)
    assert "inside the margin" in state["nodes"][slowish]["evidence"][0]
    assert not loc.marginal_only(state, "n000")
    low, _fabric = run(slow={"n021": 0.45})
    assert not loc.marginal_only(low, "n021")
