"""slurm_topology in validate mode: a provider's topology.conf with two nodes under the wrong switch,
checked against the fabric (ibnetdiscover run by the role through real Slurm) and the pair
bandwidth a real acceptance run measured (its results.json), on the simulated cluster."""
import json

import pytest

from harness import SimRun, playbook, spec

pytestmark = pytest.mark.integration

# gpu004 (fabric leaf 1) and gpu005 (fabric leaf 2) swapped, in a provider's switch names.
PROVIDER = ("# provider's topology.conf\n"
            "SwitchName=s1 Nodes=gpu[001-003],gpu005\n"
            "SwitchName=s2 Nodes=gpu004,gpu[006-008]\n"
            "SwitchName=top Switches=s[1-2]\n")


def validate(sim, tmp_path, **extra):
    variables = {"slurm_topology_action": "validate", "slurm_topology_content": PROVIDER,
                 "slurm_topology_nodes": ["gpu[001-008]"],
                 "slurm_topology_ibnetdiscover_command": ["srun", "--nodelist=gpu002", "-N1", "--ntasks=1",
                                                          "ibnetdiscover"],
                 "slurm_topology_environment": "{{ acceptance_controller_environment }}"}
    variables.update(extra)
    path = tmp_path / "validate-vars.json"
    path.write_text(json.dumps(variables))
    return playbook(sim.inventory, tmp_path / "topology-artifacts", "-e", "@%s" % path,
                    playbook_name="slurm_topology.yml")


def test_two_nodes_under_the_wrong_switch_named_with_the_measured_bandwidth(tmp_path):
    data = spec("tvalid", count=8)
    data["fabric"] = dict(data["fabric"], oversubscription=2.0)
    with SimRun(data, tmp_path) as sim:
        # Every pair measured once: the fabric stage's matrix is the bandwidth evidence. The spine is
        # 2:1 oversubscribed (the planner is told so) and the full allocation crosses it: not run.
        run = sim.acceptance("--tags", "fabric", "-e", json.dumps({
            "check_fabric_mode": "exhaustive", "check_fabric_full_allocation": False,
            "check_fabric_localize": {"oversubscription": 2.0}}))
        assert run.rc == 0, run.output[-3000:]
        matrix = run.results["fabric"]["matrix"]
        assert sum(len(row) for row in matrix.values()) >= 28
        checked = validate(sim, tmp_path, slurm_topology_results_file=str(run.dir / "results.json"))
        clean = validate(sim, tmp_path, slurm_topology_content=PROVIDER.replace(
            "gpu[001-003],gpu005", "gpu[001-004]").replace("gpu004,gpu[006-008]", "gpu[005-008]"),
            slurm_topology_results_file=str(run.dir / "results.json"))
    out = checked.output
    assert checked.rc != 0, out[-3000:]
    assert "topology.conf misdescribes the fabric" in out
    for node, switch, mates, other in (("gpu004", "s2", "gpu[006-008]", "s1"), ("gpu005", "s1", "gpu[001-003]", "s2")):
        assert "%s: topology.conf puts it under %s with %s" % (node, switch, mates) in out, out[-4000:]
        assert "(the file's %s)" % other in out
    # The measured evidence: its pairs with the file's switch-mates at the cross-spine level (2:1).
    assert out.count("the path to them crosses a spine") >= 2
    assert "measured with the nodes topology.conf puts it with: gpu004-gpu006" in out
    assert "GB/s" in out
    assert clean.rc == 0, clean.output[-3000:]
    assert "topology.conf misdescribes the fabric" not in clean.output
