"""playbooks/baseline.yml on a simulated cluster: record, refuse to overwrite, overwrite with a backup, compare."""
import json
import subprocess

import pytest

from harness import REPO, VENV_BIN, SimRun, ansible_env, spec

pytestmark = pytest.mark.integration

STAGES = ("--tags", "preflight,nccl_single_node")


def baseline_playbook(sim, cwd, *args):
    """Run playbooks/baseline.yml from cwd (where relative baseline paths land)."""
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(sim.inventory), str(REPO / "playbooks" / "baseline.yml")]
    proc = subprocess.run(cmd + list(args), cwd=str(cwd), env=ansible_env(sim.artifacts), capture_output=True,
                          text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_baseline(tmp_path):  # a short name: slurmd socket paths under tmp_path are limited
    work = tmp_path / "w"
    work.mkdir()
    with SimRun(spec("blrec", count=4, seed=3), tmp_path) as sim:
        first = sim.acceptance(*STAGES)
        assert first.rc == 0, first.output[-2000:]

        # Record: the default file is baselines/<cluster>-baseline.json under the working directory.
        rc, out = baseline_playbook(sim, work)
        assert rc == 0, out[-3000:]
        path = work / "baselines" / "blrec-baseline.json"
        recorded = json.loads(path.read_text())
        assert recorded["schema"] == 1 and recorded["cluster"]["name"] == "blrec"
        assert recorded["source_run"]["id"] == first.results["run"]["id"]
        assert set(recorded["nodes"]) == {"gpu001", "gpu002", "gpu003", "gpu004"}
        for node, record in recorded["nodes"].items():
            assert record["single_node_busbw"] > 400, (node, record)
            assert record["driver_version"]
        assert "single_node_busbw" in recorded["spread"]

        # Check mode writes nothing, even with the flag.
        before = path.read_text()
        rc, out = baseline_playbook(sim, work, "--check", "-e", "baseline_overwrite=true")
        assert rc == 0, out[-3000:]
        assert path.read_text() == before and not list(path.parent.glob("*.bak"))

        # Again without the flag: refused, the file kept, the message names the file and the flag.
        rc, out = baseline_playbook(sim, work)
        assert rc != 0
        assert "baseline_overwrite=true" in out and str(path) in out
        assert path.read_text() == before

        # With the flag: replaced, the old one kept as a .bak.
        rc, out = baseline_playbook(sim, work, "-e", "baseline_overwrite=true")
        assert rc == 0, out[-3000:]
        backups = list(path.parent.glob("blrec-baseline.json.*.bak"))
        assert len(backups) == 1 and backups[0].read_text() == before
        assert json.loads(path.read_text())["created"] >= recorded["created"]

        # A second run compared with the baseline: noise within the band passes.
        second = sim.acceptance(*STAGES)
        assert second.rc == 0, second.output[-2000:]
        results = second.dir / "results.json"
        rc, out = baseline_playbook(sim, work, "-e", "baseline_action=compare", "-e", "baseline_results=%s" % results)
        assert rc == 0, out[-3000:]
        assert "is within the baseline" in out
        compared = sorted(p for p in sim.artifacts.iterdir() if (p / "results.json").exists())[-1]
        document = json.loads((compared / "results.json").read_text())
        assert document["run"]["playbook"] == "baseline.yml"
        busbw = [c for c in document["checks"] if c["check"] == "baseline.single_node_busbw"]
        assert len(busbw) == 4 and all(c["status"] == "pass" for c in busbw), busbw
        assert "of its baseline" in busbw[0]["message"]

        # A baseline that expects far more than this run measured: the compare fails and names it.
        strict = json.loads(path.read_text())
        strict["nodes"]["gpu002"]["single_node_busbw"] *= 1.2
        strict_path = work / "strict.json"
        strict_path.write_text(json.dumps(strict))
        rc, out = baseline_playbook(sim, work, "-e", "baseline_action=compare", "-e", "baseline_results=%s" % results,
                                    "-e", "baseline_file=%s" % strict_path)
        assert rc != 0
        assert "gpu002 single-node busbw" in out and "below its baseline" in out
