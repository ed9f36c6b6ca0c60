"""The gpucluster.acceptance.slurm inventory plugin against a real slurmctld (the simulated cluster's):
ansible-inventory shows partitions, features, states and leaves; filters and the reservation; a
Slurm that cannot be reached, or filters that leave nobody, fail with the reason (never an empty
inventory)."""
import json
import subprocess

import pytest
import yaml

import harness

pytestmark = [pytest.mark.integration]

SLURM = {"partitions": {"batch": ["gpu001", "gpu002", "gpu003", "gpu004"], "debug": ["gpu004"]},
         "features": {"h100": ["gpu001", "gpu002", "gpu003", "gpu004"], "ib_ndr": ["gpu001", "gpu002"]}}


def _spec(name):
    data = harness.spec(name, count=4, slurm=SLURM)
    data["fabric"] = {"leaves": 2, "spines": 1, "rails": 8, "oversubscription": 1.0}
    return data


def _inventory(path, **options):
    path.write_text(yaml.safe_dump(dict({"plugin": "gpucluster.acceptance.slurm"}, **options)))
    return path


def _ansible_inventory(inventory, *args):
    return subprocess.run([str(harness.VENV_BIN / "ansible-inventory"), "-i", str(inventory)] + list(args),
                          cwd=str(harness.REPO), env=harness.ansible_env(inventory.parent / "artifacts"),
                          capture_output=True, text=True, timeout=120, check=False)


def _plain(value):
    """A value of ansible-inventory --list ({"__ansible_unsafe": text} for a string it marks unsafe)."""
    return value.get("__ansible_unsafe") if isinstance(value, dict) else value


def _groups(listing):
    return dict((name, sorted(body.get("hosts", []))) for name, body in listing.items()
                if name not in ("_meta", "all") and body.get("hosts"))


def test_graph_shows_partitions_features_states_and_leaves(tmp_path):
    with harness.SimRun(_spec("invgraph"), tmp_path) as sim:
        conf = str(sim.run_dir / "etc" / "slurm.conf")
        sim.cluster.scontrol("update", "NodeName=gpu003", "State=DRAIN", "Reason=bad fan")
        inventory = _inventory(tmp_path / "slurm.yml", slurm_conf=conf)
        graph = _ansible_inventory(inventory, "--graph")
        assert graph.returncode == 0, graph.stderr
        for group in ("@gpu_nodes", "@slurm_partition_batch", "@slurm_partition_debug", "@slurm_feature_ib_ndr",
                      "@slurm_leaf_leaf01", "@slurm_leaf_leaf02", "@slurm_state_drain"):
            assert group in graph.stdout, (group, graph.stdout)
        listing = _ansible_inventory(inventory, "--list")
        groups = _groups(json.loads(listing.stdout))
        assert groups["gpu_nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004"]
        assert groups["slurm_partition_debug"] == ["gpu004"]
        assert groups["slurm_feature_ib_ndr"] == ["gpu001", "gpu002"]
        assert groups["slurm_leaf_leaf02"] == ["gpu003", "gpu004"] and groups["slurm_state_drain"] == ["gpu003"]
        host = json.loads(_ansible_inventory(inventory, "--host", "gpu003").stdout)
        assert host["slurm_topology_leaf"] == "leaf02" and host["slurm_reason"] == "bad fan"
        assert host["slurm_state"] == "idle" and host["slurm_state_flags"] == ["drain"]
        assert host["acceptance_slurm_partition"] == ""

        # Filters: one partition is also the partition every launch uses; idle only leaves the drained node out.
        inventory = _inventory(tmp_path / "slurm.yml", slurm_conf=conf, partitions=["batch"], states=["idle"],
                               features=["h100"])
        listing = json.loads(_ansible_inventory(inventory, "--list").stdout)
        assert _groups(listing)["gpu_nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004"]  # drained is still idle
        host = json.loads(_ansible_inventory(inventory, "--host", "gpu001").stdout)
        assert host["acceptance_slurm_partition"] == "batch"
        inventory = _inventory(tmp_path / "slurm.yml", slurm_conf=conf, states=["idle"], exclude_states=["drain"],
                               partitions=["batch", "debug"])
        listing = json.loads(_ansible_inventory(inventory, "--list").stdout)
        assert _groups(listing)["gpu_nodes"] == ["gpu001", "gpu002", "gpu004"]
        host = json.loads(_ansible_inventory(inventory, "--host", "gpu004").stdout)
        assert host["acceptance_slurm_partition"] == "batch,debug"
        sim.cluster.scontrol("update", "NodeName=gpu003", "State=RESUME")


def test_reservation_and_launch_settings(tmp_path):
    with harness.SimRun(_spec("invresv"), tmp_path) as sim:
        conf = str(sim.run_dir / "etc" / "slurm.conf")
        sim.cluster.scontrol("create", "reservation", "ReservationName=burnin", "Nodes=gpu[002-003]",
                             "StartTime=now", "Duration=60", "Users=root")
        try:
            inventory = _inventory(tmp_path / "slurm.yml", slurm_conf=conf, reservation="burnin")
            listing = json.loads(_ansible_inventory(inventory, "--list").stdout)
            assert _groups(listing)["gpu_nodes"] == ["gpu002", "gpu003"]
            host = json.loads(_ansible_inventory(inventory, "--host", "gpu002").stdout)
            assert host["acceptance_slurm_reservation"] == "burnin"
            missing = _ansible_inventory(_inventory(tmp_path / "slurm.yml", slurm_conf=conf, reservation="nope"), "--list")
            assert missing.returncode != 0 and "Reservation nope not found" in missing.stderr, missing.stderr
        finally:
            sim.cluster.scontrol("delete", "ReservationName=burnin")


def test_unreachable_slurm_and_empty_filters_fail_with_the_reason(tmp_path):
    with harness.SimRun(_spec("invbad"), tmp_path) as sim:
        conf = (sim.run_dir / "etc" / "slurm.conf").read_text()
        dead = tmp_path / "dead" / "slurm.conf"
        dead.parent.mkdir()
        # The same cluster, but a controller port nothing listens on.
        dead.write_text("\n".join("SlurmctldPort=%d" % harness.free_port() if line.startswith("SlurmctldPort=")
                                  else line for line in conf.splitlines()) + "\n")
        bad = _ansible_inventory(_inventory(tmp_path / "slurm.yml", slurm_conf=str(dead), timeout=60), "--list")
        assert bad.returncode != 0, bad.stdout
        assert "Unable to contact slurm controller" in bad.stderr and "slurm inventory" in bad.stderr, bad.stderr
        none = _ansible_inventory(_inventory(tmp_path / "slurm.yml", slurm_conf=str(sim.run_dir / "etc" / "slurm.conf"),
                                             features=["b200"]), "--list")
        assert none.returncode != 0 and "no node left of 4 after the filters" in none.stderr, none.stderr


def test_within_job_is_the_jobs_own_allocation(tmp_path):
    """Run as an sbatch job (docs/examples/acceptance.sbatch): the inventory is the job's nodes, the
    launch settings empty (its steps inherit the allocation); outside a job it fails."""
    with harness.SimRun(_spec("invjob"), tmp_path) as sim:
        conf = str(sim.run_dir / "etc" / "slurm.conf")
        inventory = _inventory(tmp_path / "slurm.yml", slurm_conf=conf, within_job=True, partitions=["batch"])
        outside = _ansible_inventory(inventory, "--list")
        assert outside.returncode != 0 and "not inside a Slurm job" in outside.stderr, outside.stderr
        listing = tmp_path / "listing.json"
        script = tmp_path / "job.sh"
        script.write_text("#!/bin/bash\nexec %s -i %s --list > %s\n" % (
            harness.VENV_BIN / "ansible-inventory", inventory, listing))
        script.chmod(0o755)
        env = dict(harness.ansible_env(tmp_path / "artifacts"), SLURM_CONF=conf)
        job = subprocess.run(["sbatch", "--parsable", "--wait", "--nodes=2", "--nodelist=gpu[002-003]",
                              "--output=%s" % (tmp_path / "job.out"), str(script)],
                             env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
        assert job.returncode == 0, (job.stdout, job.stderr, (tmp_path / "job.out").read_text()
                                     if (tmp_path / "job.out").exists() else "")
        document = json.loads(listing.read_text())
        assert _groups(document)["gpu_nodes"] == ["gpu002", "gpu003"]
        host = document["_meta"]["hostvars"]["gpu002"]
        assert _plain(host["acceptance_slurm_partition"]) == "" and _plain(host["acceptance_slurm_reservation"]) == ""
