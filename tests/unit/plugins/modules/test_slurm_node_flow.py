"""Unit tests for the slurm_node module's command flow, against a fake scontrol.

The fake keeps node states and answers the two commands the module runs, the way Slurm 22.05
does on the simulated cluster (tests/integration/slurm/ exercise the real one):
``scontrol --future show node -o HOSTLIST`` (rc=1 and "Node X not found" for unknown names) and
``scontrol update NodeName=HOSTLIST State=... [Reason=...]``, including RESUME of an UNKNOWN node
answering rc=1 "Invalid node state specified" while clearing the drain.
"""
import json

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import expand_hostlist
from ansible_collections.gpucluster.acceptance.plugins.modules import slurm_node


class FakeSlurm(object):
    def __init__(self, nodes):
        self.nodes = dict((name, list(value)) for name, value in nodes.items())  # name -> [state, reason]
        self.calls = []
        self.stuck = set()  # nodes whose drain silently does not happen

    def line(self, name):
        state, reason = self.nodes[name]
        text = ("NodeName=%s Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 OS=Linux 6.1 #1 SMP "
                "RealMemory=1000 State=%s ThreadsPerCore=1 Partitions=gpu  CfgTRES=cpu=2 AllocTRES= "
                "CurrentWatts=0 AveWatts=0" % (name, state))
        if reason:
            text += " Reason=%s [root@2026-01-01T00:00:00]" % reason
        return text

    def run_command(self, argv, environ_update=None, check_rc=False):  # pylint: disable=unused-argument
        assert argv[:4] == ["/usr/bin/timeout", "-k", "5", "30"] and argv[4] == "/usr/bin/scontrol"
        assert environ_update["SLURM_TIME_FORMAT"] == "standard"
        args = argv[5:]
        self.calls.append(args)
        if args[:4] == ["--future", "show", "node", "-o"]:
            out, missing = [], []
            for name in (expand_hostlist(args[4]) if len(args) > 4 else sorted(self.nodes)):
                if name in self.nodes:
                    out.append(self.line(name))
                else:
                    missing.append("Node %s not found" % name)
            return (1 if missing else 0), "\n".join(out + missing) + "\n", ""
        if args[0] == "update":
            fields = dict(arg.split("=", 1) for arg in args[1:])
            for name in expand_hostlist(fields["NodeName"]):
                state, reason = self.nodes[name]
                base = state.split("+")[0]
                flags = [f for f in state.split("+")[1:] if f != "DRAIN"]
                if fields["State"] == "DRAIN":
                    if name not in self.stuck:
                        self.nodes[name] = ["+".join([base, "DRAIN"] + flags), fields["Reason"]]
                elif fields["State"] in ("RESUME", "UNDRAIN"):
                    self.nodes[name] = ["+".join([base] + flags), None]
                    if base == "UNKNOWN":
                        # Slurm clears the drain, then complains, and stops with this node.
                        return 1, "", "slurm_update error: Invalid node state specified\n"
            return 0, "", ""
        raise AssertionError("unexpected scontrol call %r" % args)


def run_module(monkeypatch, capsys, fake, args, check=False):
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, *a, **k: fake.run_command(*a, **k))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **k: {"timeout": "/usr/bin/timeout",
                                                     "scontrol": "/usr/bin/scontrol"}.get(name))
    module_args = dict(args)
    if check:
        module_args["_ansible_check_mode"] = True
    module_args["_ansible_diff"] = True
    with patch_module_args(module_args):
        with pytest.raises(SystemExit):
            slurm_node.main()
    return json.loads(capsys.readouterr().out)


def test_drain_groups_nodes_and_rerun_is_unchanged(monkeypatch, capsys):
    fake = FakeSlurm({"n1": ["IDLE", None], "n2": ["ALLOCATED", None], "n3": ["IDLE+DRAIN", "ops: psu"]})
    result = run_module(monkeypatch, capsys, fake, {"name": ["n[1-3]"], "state": "drained", "reason": "xid 79"})
    assert result["changed"] and result["drained_nodes"] == ["n1", "n2"] and result["skipped_nodes"] == ["n3"]
    updates = [call for call in fake.calls if call[0] == "update"]
    assert updates == [["update", "NodeName=n[1-2]", "State=DRAIN", "Reason=gpucluster: xid 79"]]
    assert fake.nodes["n2"] == ["ALLOCATED+DRAIN", "gpucluster: xid 79"]
    assert fake.nodes["n3"] == ["IDLE+DRAIN", "ops: psu"]
    assert "n2: state=ALLOCATED+DRAIN reason=gpucluster: xid 79\n" in result["diff"]["after"]
    assert "n2: state=ALLOCATED reason=-\n" in result["diff"]["before"]
    fake.calls = []
    result = run_module(monkeypatch, capsys, fake, {"name": ["n[1-2]"], "state": "drained", "reason": "xid 79"})
    assert not result["changed"] and result["unchanged_nodes"] == ["n1", "n2"]
    assert [call for call in fake.calls if call[0] == "update"] == []


def test_check_mode_runs_no_update(monkeypatch, capsys):
    fake = FakeSlurm({"n1": ["IDLE", None]})
    result = run_module(monkeypatch, capsys, fake, {"name": "n1", "state": "drained", "reason": "x"}, check=True)
    assert result["changed"] and result["nodes"][0]["after"] == {"state": "IDLE+DRAIN", "reason": "gpucluster: x"}
    assert [call for call in fake.calls if call[0] == "update"] == [] and fake.nodes["n1"] == ["IDLE", None]


def test_resume_with_an_unknown_node_in_the_group_retries_one_by_one(monkeypatch, capsys):
    fake = FakeSlurm({"n1": ["UNKNOWN+DRAIN", "gpucluster: unreachable"], "n2": ["IDLE+DRAIN", "gpucluster: x"]})
    original = fake.run_command

    def stop_at_unknown(argv, environ_update=None, check_rc=False):
        args = argv[5:]
        if args[0] == "update" and args[1] == "NodeName=n[1-2]":
            fake.calls.append(args)
            fake.nodes["n1"] = ["UNKNOWN", None]  # cleared, then Slurm gave up: n2 untouched
            return 1, "", "slurm_update error: Invalid node state specified\n"
        return original(argv, environ_update, check_rc)

    fake.run_command = stop_at_unknown
    result = run_module(monkeypatch, capsys, fake, {"name": "n[1-2]", "state": "resumed"})
    assert result["changed"] and result["resumed_nodes"] == ["n1", "n2"] and "failed" not in result
    assert ["update", "NodeName=n2", "State=RESUME"] in fake.calls
    n1 = [n for n in result["nodes"] if n["name"] == "n1"][0]
    assert "Invalid node state specified" in n1["message"] and n1["after"]["state"] == "UNKNOWN"


def test_a_drain_that_does_not_happen_fails_naming_the_node(monkeypatch, capsys):
    fake = FakeSlurm({"n1": ["IDLE", None], "n2": ["IDLE", None]})
    fake.stuck.add("n2")
    result = run_module(monkeypatch, capsys, fake, {"name": "n[1-2]", "state": "drained", "reason": "x"})
    assert result["failed"] and "n2: still IDLE" in result["msg"] and result["drained_nodes"] == ["n1"]


def test_unknown_names_fail_before_any_change(monkeypatch, capsys):
    fake = FakeSlurm({"n1": ["IDLE", None]})
    result = run_module(monkeypatch, capsys, fake, {"name": ["n1", "x[1-2]"], "state": "drained", "reason": "x"})
    assert result["failed"] and result["unknown"] == ["x1", "x2"] and "x[1-2]" in result["msg"]
    assert [call for call in fake.calls if call[0] == "update"] == []


@pytest.mark.parametrize("args, message", [
    ({"name": "n1", "state": "drained", "reason": "x", "reason_tag": " "}, "reason_tag must not be empty"),
    ({"name": "n1", "state": "drained", "reason": "gpucluster:"}, "reason must say why"),
    ({"name": "n[1-", "state": "drained", "reason": "x"}, "name: invalid hostlist"),
    ({"name": "n1", "state": "drained", "reason": "x", "timeout": 0}, "timeout must be from 1 to 604800: 0 is below 1"),
    ({"name": "n1", "state": "drained", "reason": "x", "lock_timeout": 10 ** 9}, "lock_timeout must be from 0 to 604800"),
    ({"name": "n1", "state": "drained", "reason": "x", "lock_file": "/"}, "cannot take the drain lock /"),
])
def test_bad_arguments(monkeypatch, capsys, args, message):
    result = run_module(monkeypatch, capsys, FakeSlurm({"n1": ["IDLE", None]}), args)
    assert result["failed"] and message in result["msg"]


def test_cap_is_read_again_cluster_wide_and_refuses_without_draining(monkeypatch, capsys, tmp_path):
    # Another run drained n3 and n4 after this run read sinfo: the module reads every node again.
    fake = FakeSlurm({"n1": ["IDLE", None], "n2": ["IDLE", None], "n3": ["IDLE+DRAIN", "gpucluster: xid"],
                      "n4": ["IDLE+DRAIN", "gpucluster: ecc"], "n5": ["IDLE+DRAIN", "ops: fan"]})
    lock = tmp_path / "lock"
    result = run_module(monkeypatch, capsys, fake, {
        "name": ["n1", "n2"], "state": "drained", "reasons": {"n1": "a: x", "n2": "b: y"},
        "max_drained": 3, "lock_file": str(lock)})
    assert result["refused"] and not result["changed"] and result["drained_nodes"] == []
    assert result["ours_elsewhere"] == ["n3", "n4"]
    assert "draining n[1-2] would make 4 node(s) drained by us, more than node_health_max_drain_nodes 3" in result["refusal"]
    assert "n3, n4" in result["refusal"] and lock.exists()
    assert [call for call in fake.calls if call[0] == "update"] == []
    # Within the cap: each node gets its own reason.
    result = run_module(monkeypatch, capsys, fake, {
        "name": ["n1"], "state": "drained", "reasons": {"n1": "a: x"}, "max_drained": 3, "lock_file": str(lock)})
    assert not result["refused"] and result["drained_nodes"] == ["n1"] and result["refusal"] == ""
    assert fake.nodes["n1"] == ["IDLE+DRAIN", "gpucluster: a: x"]


def test_lock_held_elsewhere_times_out_naming_the_lock_and_holder(monkeypatch, capsys, tmp_path):
    import fcntl  # pylint: disable=import-outside-toplevel
    import os  # pylint: disable=import-outside-toplevel
    fake = FakeSlurm({"n1": ["IDLE", None]})
    lock = tmp_path / "lock"
    fd = os.open(str(lock), os.O_RDWR | os.O_CREAT)
    os.write(fd, b"4242\n")
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = run_module(monkeypatch, capsys, fake, {
            "name": "n1", "state": "drained", "reason": "x", "max_drained": 2,
            "lock_file": str(lock), "lock_timeout": 0})
    finally:
        os.close(fd)
    assert result["failed"] and "could not take the health-check drain lock %s within 0 s" % lock in result["msg"]
    assert "(pid 4242)" in result["msg"] and fake.calls == []
