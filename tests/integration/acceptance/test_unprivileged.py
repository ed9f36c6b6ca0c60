"""A team's first day as a tenant: the inventory from Slurm (the slurm inventory plugin), the srun
transport (no SSH to the nodes, no become), tools that run as a user without root (the simulator's
unprivileged mode: dmesg refused as with kernel.dmesg_restrict=1). Every fault the user can see is
found; the Xid scan, refused, is one skipped check per node named once in the summary with its
reason, never a node error; a member of adm/systemd-journal has it read from the journal instead."""
import pytest
import yaml

import harness
import simcluster

pytestmark = [pytest.mark.integration]

FAULTS = [{"kind": "ecc_uncorrectable", "node": "gpu002", "gpu": 1},
          {"kind": "nic_down", "node": "gpu003", "nic": "mlx5_2"},
          {"kind": "xid", "node": "gpu004", "gpu": 5, "xid": 79}]
SKIP = ("--skip-tags", "fabric,workload,rdma,sdc,nvlink")


def _plugin_inventory(sim, where):
    """slurm.yml for the plugin, and beside it the simulator's settings (its tools on PATH, ...) as
    group_vars: the hosts themselves come from Slurm."""
    data = simcluster.inventory(sim.cluster.spec, sim.run_dir)["all"]
    where.mkdir(parents=True, exist_ok=True)
    (where / "group_vars").mkdir(exist_ok=True)
    (where / "group_vars" / "all.yml").write_text(yaml.safe_dump(dict(data["vars"], acceptance_transport="srun")))
    node_vars = dict(data["children"]["gpu_nodes"]["vars"])
    (where / "group_vars" / "gpu_nodes.yml").write_text(yaml.safe_dump(node_vars))
    (where / "slurm.yml").write_text(yaml.safe_dump({
        "plugin": "gpucluster.acceptance.slurm", "partitions": ["batch"],
        "slurm_conf": str(sim.run_dir / "etc" / "slurm.conf")}))
    return where


@pytest.mark.parametrize("journal", [False, True])
def test_tenant_without_root_or_ssh(tmp_path, journal):
    data = harness.spec("tenant%d" % journal, count=4, faults=FAULTS, unprivileged={"journal": journal},
                        slurm={"partitions": {"batch": ["gpu001", "gpu002", "gpu003", "gpu004"]}})
    with harness.SimRun(data, tmp_path) as sim:
        inventory = _plugin_inventory(sim, tmp_path / "tenant-inventory")
        run = harness.playbook(inventory, sim.artifacts, *SKIP)
        assert run.dir is not None, run.output[-3000:]
        assert run.results["run"]["targets"] == ["gpu001", "gpu002", "gpu003", "gpu004"]
        bad = run.bad()
        assert ("gpu002", "gpu_health") in bad and ("gpu003", "infiniband") in bad, run.bad_checks()
        # No node errored for a permission, whatever it was.
        assert not [c for c in run.results["checks"] if c["status"] == "error"], run.bad_checks()
        xid = dict((c["node"], c) for c in run.results["checks"] if c["check"] == "gpu.xid" and c["node"] == "gpu004")
        summary = [line for line in run.output.splitlines() if "not permitted to this user" in line]
        if journal:
            # adm/systemd-journal: the kernel log read from the journal; gpu004's Xid 79 is found.
            assert ("gpu004", "gpu_health") in bad and xid["gpu004"]["status"] == "fail", xid
            assert not summary
        else:
            assert ("gpu004", "gpu_health") not in bad  # its Xid is in a log this user may not read
            skipped = [c for c in run.results["checks"] if c["check"] == "gpu.xid" and c["status"] == "skip"]
            assert sorted(c["node"] for c in skipped) == ["gpu001", "gpu002", "gpu003", "gpu004"]
            assert all(c["component"] == "permission" and "read kernel buffer failed" in c["message"] for c in skipped)
            assert len(summary) == 1, run.output[-3000:]
            lines = run.output.splitlines()
            detail = lines[lines.index(summary[0]) + 1]
            assert "gpu_health gpu.xid on 4 node(s) (gpu[001-004])" in detail and "adm/systemd-journal" in detail
