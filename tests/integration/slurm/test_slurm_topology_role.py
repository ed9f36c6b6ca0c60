"""Role slurm_topology (playbooks/slurm_topology.yml) against a real slurmctld with topology/tree.

The simulated cluster starts with TopologyPlugin=topology/tree and its own topology.conf (two
leaves). The role rewrites that file from an ibnetdiscover text made for the cluster's nodes
(three leaves), and slurmctld must take it; malformed files must be stopped before slurmctld sees
them (slurmctld keeps running, the file stays as it was); a failing reconfigure must be rolled
back. Synchronisation polls Slurm with deadlines.
"""
import hashlib
from pathlib import Path

import pytest

from slurm_helpers import (  # pylint: disable=import-error,unused-import
    REPO, cluster_fixtures, poll, prerequisites)
from fabric_text import ibnetdiscover_text

pytestmark = [pytest.mark.integration]

PLAYBOOK = REPO / "playbooks" / "slurm_topology.yml"
NODES = ["tn%02d" % i for i in range(1, 7)]
SPEC = {"name": "h5topo", "profile": "hgx_h100_sxm", "nodes": {"prefix": "tn", "count": 6, "width": 2, "start": 1},
        "cpus_per_node": 2, "fabric": {"leaves": 2, "spines": 1}, "topology": True}
# The fabric the role reads: tn01-02 on leafA, tn03-04 on leafB, tn05-06 on leafC, two spines.
THREE_LEAVES = {"tn01": ["leafA"], "tn02": ["leafA"], "tn03": ["leafB"], "tn04": ["leafB"], "tn05": ["leafC"],
                "tn06": ["leafC"]}
EXPECTED = {"leafA": "tn[01-02]", "leafB": "tn[03-04]", "leafC": "tn[05-06]"}


cluster, ansible = cluster_fixtures(SPEC, "h5topo")


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    path = tmp_path_factory.mktemp("h5topo-fabric") / "ibnetdiscover.txt"
    path.write_text(ibnetdiscover_text(THREE_LEAVES, spines=["spine01", "spine02"]))
    return path


def conf(cluster):  # pylint: disable=redefined-outer-name
    return Path(cluster.conf).parent / "topology.conf"


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def shown_topology(cluster):  # pylint: disable=redefined-outer-name
    """{switch: (nodes, switches)} from scontrol show topology."""
    text = cluster.scontrol("show", "topology").stdout
    out = {}
    for line in text.splitlines():
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        out[fields["SwitchName"]] = (fields.get("Nodes"), fields.get("Switches"))
    return out


def ctld_up(cluster):  # pylint: disable=redefined-outer-name
    proc = cluster.scontrol("ping", check=False)
    return proc.returncode == 0 and " is UP" in proc.stdout


def ctld_pid(cluster):  # pylint: disable=redefined-outer-name
    return cluster.status()["slurmctld"]["pid"]


def backups(cluster):  # pylint: disable=redefined-outer-name
    return sorted(conf(cluster).parent.glob("topology.conf.*.bak"))


def run_role(ansible, **extra):  # pylint: disable=redefined-outer-name
    variables = {"slurm_topology_ready_timeout": 10}
    variables.update(extra)
    return ansible.playbook(PLAYBOOK, extra_vars=variables)


def test_generated_topology_is_taken_by_slurmctld(cluster, ansible, fabric):  # pylint: disable=redefined-outer-name
    original = conf(cluster).read_text()
    assert "leaf01" in original and "SwitchName=leafA" not in original

    # check mode: the diff, nothing written
    proc = ansible.playbook(PLAYBOOK, extra_vars={"slurm_topology_ibnetdiscover_file": str(fabric)},
                            args=["--check", "--diff"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "+SwitchName=leafA Nodes=tn[01-02]" in proc.stdout and "-SwitchName=leaf01" in proc.stdout
    assert conf(cluster).read_text() == original and backups(cluster) == []

    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(fabric))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = conf(cluster).read_text()
    assert text.splitlines()[1:] == ["SwitchName=leafA Nodes=tn[01-02]", "SwitchName=leafB Nodes=tn[03-04]",
                                     "SwitchName=leafC Nodes=tn[05-06]", "SwitchName=root Switches=leafA,leafB,leafC"]
    shown = shown_topology(cluster)
    assert {name: nodes for name, (nodes, _kids) in shown.items() if name != "root"} == EXPECTED
    assert shown["root"] == ("tn[01-06]", "leafA,leafB,leafC")
    saved = backups(cluster)
    assert len(saved) == 1 and saved[0].read_text() == original

    # again: nothing to change, no new backup
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(fabric))
    assert proc.returncode == 0 and "changed=0" in proc.stdout, proc.stdout + proc.stderr
    assert backups(cluster) == saved


def test_switches_job_runs_on_one_leaf(cluster, ansible, fabric, tmp_path):  # pylint: disable=redefined-outer-name
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(fabric))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "job.out"
    submit = cluster.run(["sbatch", "--parsable", "-N2", "--switches=1@00:00:10", "-o", str(out),
                          "--wrap", "echo NODES=$SLURM_JOB_NODELIST"], timeout=30)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    try:
        line = poll(lambda: out.exists() and "NODES=" in out.read_text() and out.read_text(), timeout=60,
                    what="job %s output" % job)
    finally:
        cluster.run(["scancel", job], timeout=30)
    nodes = cluster.scontrol("show", "hostnames", line.split("NODES=", 1)[1].strip()).stdout.split()
    assert len(nodes) == 2
    leaves = {leaf for leaf, members in EXPECTED.items()
              if set(nodes) <= set(cluster.scontrol("show", "hostnames", members).stdout.split())}
    assert len(leaves) == 1, "job ran on %s, across leaves" % nodes


MALFORMED = {
    "undefined_child": ("SwitchName=leafA Nodes=tn[01-03]\nSwitchName=leafB Nodes=tn[04-06]\n"
                        "SwitchName=root Switches=leafA,leafB,leafZ\n", "leafZ"),
    "duplicate_switch": ("SwitchName=leafA Nodes=tn[01-03]\nSwitchName=leafA Nodes=tn[04-06]\n", "leafA"),
    "unknown_key": ("SwitchName=leafA Nodes=tn[01-03] Speed=400\nSwitchName=leafB Nodes=tn[04-06]\n"
                    "SwitchName=root Switches=leafA,leafB\n", "Speed"),
    "node_two_leaves": ("SwitchName=leafA Nodes=tn[01-04]\nSwitchName=leafB Nodes=tn[04-06]\n"
                        "SwitchName=root Switches=leafA,leafB\n", "tn04"),
    "node_not_covered": ("SwitchName=leafA Nodes=tn[01-03]\nSwitchName=leafB Nodes=tn[04-05]\n"
                         "SwitchName=root Switches=leafA,leafB\n", "tn06"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_topology_never_reaches_slurmctld(cluster, ansible, case):  # pylint: disable=redefined-outer-name
    content, named = MALFORMED[case]
    before, pid, saved = digest(conf(cluster)), ctld_pid(cluster), backups(cluster)
    proc = run_role(ansible, slurm_topology_source="content", slurm_topology_content=content)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "topology.conf not written" in output and named in output, output
    assert "Write topology.conf" not in output and "Make slurmctld read it" not in output
    assert digest(conf(cluster)) == before and backups(cluster) == saved
    assert ctld_up(cluster) and ctld_pid(cluster) == pid


def test_fabric_missing_a_node_is_refused(cluster, ansible, tmp_path):  # pylint: disable=redefined-outer-name
    partial = tmp_path / "partial.txt"
    partial.write_text(ibnetdiscover_text({node: leaves for node, leaves in THREE_LEAVES.items() if node != "tn06"}))
    before = digest(conf(cluster))
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(partial))
    assert proc.returncode != 0 and "tn06" in proc.stdout and "no leaf switch" in proc.stdout, proc.stdout
    assert digest(conf(cluster)) == before and ctld_up(cluster)


def test_rollback_when_reconfigure_fails(cluster, ansible, tmp_path):  # pylint: disable=redefined-outer-name
    two = tmp_path / "two.txt"
    two.write_text(ibnetdiscover_text({node: ["leafX" if node < "tn04" else "leafY"] for node in THREE_LEAVES}))
    before_text, pid = conf(cluster).read_text(), ctld_pid(cluster)
    before_topology = shown_topology(cluster)
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(two),
                    slurm_topology_reconfigure_command=["false"])
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "rescued=1" in output, output
    assert "was refused and rolled back: `timeout -k 5 60 false` failed (rc=1)" in output
    assert "slurmctld answers again" in output
    assert conf(cluster).read_text() == before_text
    assert backups(cluster)[-1].read_text() == before_text
    assert ctld_up(cluster) and ctld_pid(cluster) == pid and shown_topology(cluster) == before_topology


def test_rollback_restarts_a_slurmctld_that_died(cluster, ansible, tmp_path):  # pylint: disable=redefined-outer-name
    """A 'reconfigure' that takes slurmctld down (as a fatal topology error does): restore, restart."""
    two = tmp_path / "two.txt"
    two.write_text(ibnetdiscover_text({node: ["leafX" if node < "tn04" else "leafY"] for node in THREE_LEAVES}))
    before_text, pid = conf(cluster).read_text(), ctld_pid(cluster)
    before_topology = shown_topology(cluster)
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(two),
                    slurm_topology_ready_timeout=3,
                    slurm_topology_reconfigure_command=["scontrol", "shutdown", "slurmctld"],
                    slurm_topology_restart_command=["/usr/sbin/slurmctld", "-f", str(cluster.conf)])
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "rescued=1" in output, output
    assert "slurmctld does not answer after the reconfigure" in output
    assert "slurmctld answers again after /usr/sbin/slurmctld" in output
    assert conf(cluster).read_text() == before_text
    assert ctld_up(cluster) and ctld_pid(cluster) != pid
    assert shown_topology(cluster) == before_topology
    poll(lambda: all(state == "idle" for state in cluster.sinfo().values()), timeout=60, what="nodes idle again")


def test_topology_from_inventory_labels(cluster, ansible, fabric):  # pylint: disable=redefined-outer-name
    inventory = ansible.workdir / "labels.yml"
    hosts = "".join("        %s: {slurm_topology_rack: rack-%s}\n" % (node, "a" if node < "tn04" else "b")
                    for node in NODES)
    inventory.write_text(ansible.inventory.read_text() + "    gpu_nodes:\n      hosts:\n" + hosts)
    proc = ansible.playbook(PLAYBOOK, inventory=inventory,
                            extra_vars={"slurm_topology_source": "labels", "slurm_topology_ready_timeout": 10})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = shown_topology(cluster)
    assert shown["rack-a"] == ("tn[01-03]", None) and shown["rack-b"] == ("tn[04-06]", None)
    assert shown["root"] == ("tn[01-06]", "rack-a,rack-b")
    # back to the fabric's three leaves for the tests that follow
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(fabric))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bandwidth_check_names_cross_spine_pairs(cluster, ansible, fabric):  # pylint: disable=redefined-outer-name
    busbw = {a: {b: 380.0 for b in NODES if b > a} for a in NODES}
    busbw["tn01"]["tn02"] = 150.0  # Slurm has them on leafA; the measurement says otherwise
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(fabric), slurm_topology_pair_busbw=busbw)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tn01 and tn02 are on leaf leafA in Slurm's topology, but measured 150.0 GB/s" in proc.stdout
    proc = run_role(ansible, slurm_topology_ibnetdiscover_file=str(fabric), slurm_topology_pair_busbw=busbw,
                    slurm_topology_fail_on_bandwidth=True)
    assert proc.returncode != 0 and "looks cross-spine" in proc.stdout, proc.stdout
