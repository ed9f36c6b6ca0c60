"""Each node's leaf from the fabric: real ibnetdiscover outputs, the fallback to Slurm's view and the
labels, and what the check says when a source fails or leaves nodes unplaced."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_discovery as disc
from conftest import FIXTURES

IBNET = FIXTURES / "ibnetdiscover"
NDR = (IBNET / "topograph_example_ndr_full.txt").read_text()
# scontrol show topology of the simulated cluster's topology.conf (Slurm 22.05 prints this layout).
SCONTROL = ("SwitchName=leaf01 Level=0 LinkSpeed=1 Nodes=gpu[001-002]\n"
            "SwitchName=leaf02 Level=0 LinkSpeed=1 Nodes=gpu[003-004]\n"
            "SwitchName=spine Level=1 LinkSpeed=1 Nodes=gpu[001-004] Switches=leaf[01-02]\n")
NDR_NODES = ["a05-p1-dgx-01-c01", "a05-p1-dgx-01-c03", "a06-p1-dgx-02-c01", "b08-p1-dgx-08-c18"]


class Outputs(object):
    """What each command printed (a past run's capture); records which were asked for."""

    def __init__(self, **outputs):
        self.outputs = outputs
        self.asked = []

    def __call__(self, key, argv):
        self.asked.append(key)
        record = self.outputs.get(key.replace("-", "_"))
        return dict(record) if record is not None else {"output": "", "rc": None, "missing": True}


def test_leaves_of_a_real_ndr_fabric():
    run = Outputs(ibnetdiscover={"output": "$ srun ... ibnetdiscover\n" + NDR, "rc": 0})
    found = disc.discover(NDR_NODES, {"ibnetdiscover_argv": ["ibnetdiscover"]}, run)
    assert found["source"] == "ibnetdiscover" and not found["unplaced"]
    assert found["topology"]["a05-p1-dgx-01-c01"] == {"leaf": "su-A09-P1-IBLEAF-01-01"}
    assert found["topology"]["b08-p1-dgx-08-c18"] == {"leaf": "su-B09-P1-IBLEAF-01-08"}
    assert run.asked == ["ibnetdiscover"]  # every node placed: Slurm is not asked
    assert found["check"]["status"] == "pass"
    assert found["check"]["message"].startswith("4 node(s) under 3 leaf switch(es) from ibnetdiscover: ")
    # 72 adapters with a default description: said beside the leaves, never instead of them.
    assert any("default node description" in w for w in found["warnings"])


def test_a_prompt_and_a_panic_tail_are_warnings_beside_the_leaves():
    text = "user@login:~$ ibnetdiscover\n" + NDR + "ibpanic: [1234] main: discover failed\n"
    found = disc.discover(NDR_NODES, {"ibnetdiscover_argv": ["ibnetdiscover"]},
                          Outputs(ibnetdiscover={"output": text, "rc": 0}))
    assert found["source"] == "ibnetdiscover" and not found["unplaced"]


def test_a_fabric_without_leaves_falls_back_to_slurm_then_the_labels():
    lone = (IBNET / "topograph_example_bad_gb200_lone_ca.txt").read_text()
    run = Outputs(ibnetdiscover={"output": lone, "rc": 0}, scontrol_show_topology={"output": SCONTROL, "rc": 0})
    nodes = ["gpu001", "gpu002", "gpu003", "gpu004", "gpu005"]
    found = disc.discover(nodes, {"ibnetdiscover_argv": ["ibnetdiscover"], "labels": {"gpu005": "rack9"}}, run)
    assert run.asked == ["ibnetdiscover", "scontrol-show-topology"]
    assert found["by_source"] == {"gpu001": "scontrol", "gpu002": "scontrol", "gpu003": "scontrol",
                                  "gpu004": "scontrol", "gpu005": "labels"}
    assert found["topology"]["gpu003"] == {"leaf": "leaf02"} and found["topology"]["gpu005"] == {"leaf": "rack9"}
    assert [t["status"] for t in found["tried"]] == ["error", "pass", "pass"]
    assert "no leaf switch" in found["tried"][0]["sentence"]
    message = found["check"]["message"]
    assert message.startswith("5 node(s) under 3 leaf switch(es) from scontrol and labels")
    assert "(not from ibnetdiscover: the fabric shows no leaf switch" in message
    assert any("gpu005 placed by labels after scontrol placed the others" in w for w in found["warnings"])


def test_no_source_leaves_every_node_unknown_and_says_what_that_costs():
    run = Outputs(ibnetdiscover={"output": "ibwarn: [9] mad_rpc_open_port: can't open UMAD port ((null):0)\n",
                                 "rc": 255},
                  scontrol_show_topology={"output": "srun: error: Unable to contact slurm controller (connect failure)\n",
                                          "rc": 1})
    found = disc.discover(["gpu001", "gpu002"], {"ibnetdiscover_argv": ["ibnetdiscover"]}, run)
    assert found["unplaced"] == ["gpu001", "gpu002"] and found["source"] is None
    assert found["topology"] == {"gpu001": {"leaf": "unknown"}, "gpu002": {"leaf": "unknown"}}
    check = found["check"]
    assert check["status"] == "skip" and "cannot tell an uplink fault from a node fault" in check["message"]
    assert "ibnetdiscover exited with status 255: ibwarn" in check["message"]
    assert "scontrol show topology could not run: slurmctld cannot be reached (scheduler)" in check["message"]
    assert "no node has a slurm_topology_leaf label" in check["message"]


def test_one_source_only_and_a_capture_without_it():
    found = disc.discover(["gpu001"], {"source": "scontrol"}, Outputs())
    assert [t["source"] for t in found["tried"]] == ["scontrol"]
    assert "scontrol show topology is not in the captured outputs" in found["check"]["message"]


def test_host_names_mapped_to_node_names():
    text = (IBNET / "handmade_two_leaf_one_spine_full.txt").read_text()
    found = disc.discover(["n1", "n2"], {"ibnetdiscover_argv": ["ibnetdiscover"],
                                         "host_map": {"gpu001": "n1", "gpu002": "n2"}},
                          Outputs(ibnetdiscover={"output": text, "rc": 0}))
    assert found["topology"] == {"n1": {"leaf": "su-sw-leaf01"}, "n2": {"leaf": "su-sw-leaf01"}}
