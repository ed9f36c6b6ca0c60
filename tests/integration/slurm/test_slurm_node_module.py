"""gpucluster.acceptance.slurm_node against a real slurmctld with one slurmd per node (sim/simcluster.py).

One 8-node cluster for the module (each test uses its own nodes): sn01-02 drain and rerun,
sn03 check mode, sn04 operator drain, sn05 a running job, sn06 has no slurmd (UNKNOWN, later
DOWN*), sn07 FUTURE, sn08 playbook diff. Synchronisation polls Slurm with deadlines.
"""
import json

import pytest

from slurm_helpers import (  # pylint: disable=import-error,unused-import
    cluster_fixtures, node_record, poll, prerequisites, sinfo_reasons)

pytestmark = [pytest.mark.integration]

SPEC = {"name": "h5node", "profile": "hgx_h100_sxm", "nodes": {"prefix": "sn", "count": 8, "width": 2, "start": 1},
        "cpus_per_node": 2, "fabric": {"leaves": 2, "spines": 1}, "unreachable": ["sn06"], "topology": False}


cluster, ansible = cluster_fixtures(SPEC, "h5node")


def by_name(result):
    return {entry["name"]: entry for entry in result["nodes"]}


def test_drain_shows_in_sinfo_and_rerun_changes_nothing(cluster, ansible):  # pylint: disable=redefined-outer-name
    status, result, output = ansible.module({"name": ["sn[01-02]"], "state": "drained", "reason": "xid 79 on GPU3"})
    assert status == "CHANGED", output
    assert result["drained_nodes"] == ["sn01", "sn02"] and result["reason"] == "gpucluster: xid 79 on GPU3"
    nodes = by_name(result)
    assert nodes["sn01"]["before"] == {"state": "IDLE", "reason": None}
    assert nodes["sn01"]["after"] == {"state": "IDLE+DRAIN", "reason": "gpucluster: xid 79 on GPU3"}
    reasons = sinfo_reasons(cluster)
    assert reasons["sn01"] == reasons["sn02"] == "gpucluster: xid 79 on GPU3"
    assert cluster.sinfo()["sn01"] == "drain"

    status, result, output = ansible.module({"name": ["sn01", "sn02", "sn01"], "state": "drained",
                                             "reason": "gpucluster: xid 79 on GPU3"})
    assert status == "SUCCESS" and result["changed"] is False, output
    assert result["unchanged_nodes"] == ["sn01", "sn02"]

    # our tag, another finding: the reason is updated
    status, result, output = ansible.module({"name": "sn02", "state": "drained", "reason": "xid 94"})
    assert status == "CHANGED" and result["drained_nodes"] == ["sn02"], output
    assert "reason updated from 'gpucluster: xid 79 on GPU3'" in result["nodes"][0]["message"]
    assert sinfo_reasons(cluster)["sn02"] == "gpucluster: xid 94"

    status, result, output = ansible.module({"name": "sn[01-02]", "state": "resumed"})
    assert status == "CHANGED" and result["resumed_nodes"] == ["sn01", "sn02"], output
    assert not node_record(cluster, "sn01")["drained"] and "sn01" not in sinfo_reasons(cluster)


def test_check_mode_drains_nothing_and_says_what_it_would_do(cluster, ansible):  # pylint: disable=redefined-outer-name
    status, result, output = ansible.module({"name": "sn03", "state": "drained", "reason": "would drain"},
                                            check=True)
    assert status == "CHANGED", output
    entry = result["nodes"][0]
    assert entry["action"] == "drained"
    assert entry["after"] == {"state": "IDLE+DRAIN", "reason": "gpucluster: would drain"}
    assert node_record(cluster, "sn03")["state"] == "IDLE"
    assert "sn03" not in sinfo_reasons(cluster)


def test_operator_drain_stays_through_resume_and_ours_is_resumed(cluster, ansible):  # pylint: disable=redefined-outer-name
    cluster.scontrol("update", "NodeName=sn04", "State=DRAIN", "Reason=operator: PSU swap ticket 4711")
    status, result, output = ansible.module({"name": "sn04", "state": "drained", "reason": "xid 79"})
    assert status == "SUCCESS" and result["skipped_nodes"] == ["sn04"], output
    assert "drained by someone else" in result["nodes"][0]["message"]
    assert sinfo_reasons(cluster)["sn04"] == "operator: PSU swap ticket 4711"

    status, result, output = ansible.module({"name": "sn03", "state": "drained", "reason": "dcgm r3"})
    assert status == "CHANGED", output
    status, result, output = ansible.module({"name": ["sn03", "sn04"], "state": "resumed"})
    assert status == "CHANGED", output
    assert result["resumed_nodes"] == ["sn03"] and result["skipped_nodes"] == ["sn04"]
    assert "not resumed" in by_name(result)["sn04"]["message"]
    record = node_record(cluster, "sn04")
    assert record["drained"] and record["reason"] == "operator: PSU swap ticket 4711"
    assert not node_record(cluster, "sn03")["drained"]
    cluster.scontrol("update", "NodeName=sn04", "State=RESUME")


def test_unknown_node_drain_and_resume(cluster, ansible):  # pylint: disable=redefined-outer-name
    before = node_record(cluster, "sn06")
    assert before["base"] in ("UNKNOWN", "DOWN"), before  # no slurmd: UNKNOWN, DOWN* after SlurmdTimeout
    status, result, output = ansible.module({"name": "sn06", "state": "drained", "reason": "unreachable"})
    assert status == "CHANGED", output
    after = node_record(cluster, "sn06")
    assert after["drained"] and after["reason"] == "gpucluster: unreachable"
    assert sinfo_reasons(cluster)["sn06"] == "gpucluster: unreachable"
    # RESUME on an UNKNOWN node: scontrol rc=1 "Invalid node state specified", yet the drain goes
    status, result, output = ansible.module({"name": "sn06", "state": "resumed"})
    assert status == "CHANGED", output
    assert result["resumed_nodes"] == ["sn06"]
    assert not node_record(cluster, "sn06")["drained"]
    status, result, output = ansible.module({"name": "sn06", "state": "resumed"})
    assert status == "SUCCESS" and result["unchanged_nodes"] == ["sn06"], output


def test_allocated_node_becomes_draining_not_down(cluster, ansible):  # pylint: disable=redefined-outer-name
    submit = cluster.run(["sbatch", "--parsable", "--exclusive", "-w", "sn05", "-o", "/dev/null",
                          "--wrap", "sleep 300"], timeout=30)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    try:
        poll(lambda: node_record(cluster, "sn05")["base"] == "ALLOCATED", timeout=30, what="sn05 ALLOCATED")
        status, result, output = ansible.module({"name": "sn05", "state": "drained", "reason": "nccl low"})
        assert status == "CHANGED", output
        entry = result["nodes"][0]
        assert entry["after"]["state"] == "ALLOCATED+DRAIN" and "DRAINING" in entry["message"]
        assert cluster.sinfo()["sn05"] == "drng"
        queue = cluster.run(["squeue", "--noheader", "--format=%i %T", "-j", job], timeout=30).stdout.split()
        assert queue == [job, "RUNNING"]
        assert node_record(cluster, "sn05")["base"] != "DOWN"
        status, result, output = ansible.module({"name": "sn05", "state": "resumed"})
        assert status == "CHANGED", output
        # back to ALLOCATED (+NOT_RESPONDING until slurmctld's next ping), the job untouched
        assert result["nodes"][0]["after"]["state"].split("+")[0] == "ALLOCATED"
        assert not node_record(cluster, "sn05")["drained"]
    finally:
        cluster.run(["scancel", job], timeout=30)
    poll(lambda: node_record(cluster, "sn05")["base"] == "IDLE", timeout=30, what="sn05 idle after scancel")


def test_future_node_is_not_drained(cluster, ansible):  # pylint: disable=redefined-outer-name
    cluster.scontrol("update", "NodeName=sn07", "State=FUTURE")
    assert "sn07" not in cluster.sinfo()  # hidden from sinfo and plain `show node`
    status, result, output = ansible.module({"name": "sn07", "state": "drained", "reason": "x"})
    assert status == "SUCCESS" and result["skipped_nodes"] == ["sn07"], output
    assert "FUTURE" in result["nodes"][0]["message"]
    assert node_record(cluster, "sn07")["state"] == "FUTURE"
    # drained with our tag before it went FUTURE: undrained, stays FUTURE
    cluster.scontrol("update", "NodeName=sn07", "State=DRAIN", "Reason=gpucluster: earlier finding")
    status, result, output = ansible.module({"name": "sn07", "state": "resumed"})
    assert status == "CHANGED" and result["resumed_nodes"] == ["sn07"], output
    assert node_record(cluster, "sn07")["state"] == "FUTURE"


def test_unknown_name_fails_naming_it_and_changes_nothing(cluster, ansible):  # pylint: disable=redefined-outer-name
    status, result, output = ansible.module({"name": ["sn08", "nosuch[1-2]"], "state": "drained", "reason": "x"})
    assert status == "FAILED", output
    assert "nosuch[1-2]" in result["msg"] and "nothing was changed" in result["msg"]
    assert result["unknown"] == ["nosuch1", "nosuch2"]
    assert node_record(cluster, "sn08")["state"] == "IDLE"
    status, result, output = ansible.module({"name": "sn08", "state": "drained"})
    assert status == "FAILED" and "reason" in result["msg"], output


def test_playbook_check_diff_then_apply(cluster, ansible, tmp_path):  # pylint: disable=redefined-outer-name
    playbook = tmp_path / "drain.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Drain\n      gpucluster.acceptance.slurm_node:\n        name: [sn08]\n"
        "        state: drained\n        reason: playbook drain\n      register: drained\n"
        "    - name: Show\n      ansible.builtin.debug:\n        msg: \"RESULT={{ drained.nodes | to_json }}\"\n")
    proc = ansible.playbook(playbook, args=["--check", "--diff"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "-sn08: state=IDLE reason=-" in proc.stdout
    assert "+sn08: state=IDLE+DRAIN reason=gpucluster: playbook drain" in proc.stdout
    assert node_record(cluster, "sn08")["state"] == "IDLE"
    proc = ansible.playbook(playbook)
    assert proc.returncode == 0 and "changed=1" in proc.stdout, proc.stdout + proc.stderr
    proc = ansible.playbook(playbook)
    assert proc.returncode == 0 and "changed=0" in proc.stdout, proc.stdout + proc.stderr
    shown = json.loads(proc.stdout.split("RESULT=", 1)[1].split('"\n', 1)[0].replace('\\"', '"'))
    assert shown[0]["action"] == "unchanged"
