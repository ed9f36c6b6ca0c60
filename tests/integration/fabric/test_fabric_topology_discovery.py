"""Leaves read from the fabric itself: no slurm_topology_leaf labels in the inventory, ibnetdiscover
run on one node through real Slurm, and the localisation of the fabric stage working on them."""
import json

import pytest

from harness import SimRun, playbook, spec

pytestmark = pytest.mark.integration


def unlabelled(name, leaves, faults=(), **extra):
    data = spec(name, faults=faults, leaf_labels=False, **extra)
    data["fabric"] = dict(data["fabric"], leaves=leaves)
    return data


def leaves_check(run):
    (check,) = [c for c in run.results["checks"] if c["stage"] == "fabric_topology"]
    return check


def groups(run):
    """The leaf groups the fabric stage localised with: {frozenset(nodes)}."""
    by_leaf = {}
    for node, entry in run.results["fabric"]["nodes"].items():
        by_leaf.setdefault(entry["leaf"], set()).add(node)
    return by_leaf


def test_two_leaves_from_ibnetdiscover_without_labels(tmp_path):
    with SimRun(unlabelled("tdisc2", 2, count=8), tmp_path) as sim:
        inventory = sim.inventory.read_text()
        run = sim.acceptance("--tags", "fabric")
    assert "slurm_topology_leaf" not in inventory
    assert run.rc == 0, run.output[-3000:]
    check = leaves_check(run)
    assert check["status"] == "pass" and check["metrics"]["source"] == "ibnetdiscover"
    assert check["message"].startswith("8 node(s) under 2 leaf switch(es) from ibnetdiscover: ")
    by_leaf = groups(run)
    assert sorted(map(sorted, by_leaf.values())) == [["gpu001", "gpu002", "gpu003", "gpu004"],
                                                     ["gpu005", "gpu006", "gpu007", "gpu008"]]
    assert "unknown" not in by_leaf
    # The output it rests on is kept, with the command that printed it (srun on the first node).
    text = (run.dir / "raw" / "_fabric_topology" / "ibnetdiscover.txt").read_text()
    assert text.startswith("$ srun --nodelist=gpu001 -N1 --ntasks=1") and "Switch\t65" in text
    assert run.results["raw"]["_fabric_topology"]["ibnetdiscover"].get("rc", 0) == 0


def test_degraded_uplink_pinned_on_four_discovered_leaves(tmp_path):
    faults = [{"kind": "degraded_uplink", "leaf": "leaf03", "factor": 0.5}]
    with SimRun(unlabelled("tdisc4", 4, faults=faults), tmp_path) as sim:
        run = sim.acceptance("--tags", "fabric")
        inventory = sim.inventory
    assert run.rc != 0
    check = leaves_check(run)
    assert check["status"] == "pass" and check["metrics"]["leaves"] == 4, check
    by_leaf = groups(run)
    assert len(by_leaf) == 4 and all(len(nodes) == 4 for nodes in by_leaf.values())
    pinned = run.results["fabric"]["pinned"]
    assert pinned["nodes"] == [] and len(pinned["uplinks"]) == 1, pinned
    assert by_leaf[pinned["uplinks"][0]] == {"gpu009", "gpu010", "gpu011", "gpu012"}
    (uplink,) = [c for c in run.results["checks"] if c["check"] == "leaf_uplink"]
    assert uplink["component"] == "%s uplink" % pinned["uplinks"][0]
    assert not [c for c in run.results["checks"] if c["check"] == "pair_bandwidth" and c["status"] != "pass"]
    # Replayed with the cluster stopped: the leaves come from the captured ibnetdiscover output.
    replay = playbook(inventory, tmp_path / "replayed", "--tags", "fabric", "-e", "acceptance_replay_dir=%s" % run.dir)
    assert leaves_check(replay)["message"] == check["message"]
    assert replay.results["fabric"]["pinned"] == pinned


def test_a_broken_ibnetdiscover_falls_back_to_slurms_view_and_says_so(tmp_path):
    # ibnetdiscover cannot open its port on the controller (no adapter there): Slurm's
    # topology.conf (the simulated cluster writes one) places the nodes instead.
    with SimRun(unlabelled("tdiscs", 2, count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "fabric", "-e", json.dumps({"check_fabric_ibnetdiscover_on": "controller"}))
    assert run.rc == 0, run.output[-3000:]
    check = leaves_check(run)
    assert check["status"] == "pass" and check["metrics"]["source"] == "scontrol", check
    assert "from scontrol: leaf01 (gpu[001-002]), leaf02 (gpu[003-004])" in check["message"]
    (failed,) = [t for t in check["metrics"]["tried"] if t["status"] == "error"]
    assert failed["source"] == "ibnetdiscover" and failed["raw"] == "ibnetdiscover"
    assert failed["sentence"].startswith("ibnetdiscover (on the controller) exited with status 255: ")
    assert "Failed to open '(null)' port '0'" in failed["sentence"] and failed["sentence"] in check["message"]
