"""[gpucluster] artifacts_dir in ansible.cfg is honoured everywhere, not only by the results
callback: with no GPUCLUSTER_ARTIFACTS_DIR in the environment the run directory goes there, and the
next run's Xid window starts at the last passed run recorded there (not silently 'since boot')."""
import subprocess

import pytest

import harness

pytestmark = [pytest.mark.integration]


def test_ini_artifacts_dir_feeds_the_xid_window(tmp_path):
    artifacts = tmp_path / "from-ini"
    config = tmp_path / "ansible.cfg"
    config.write_text((harness.REPO / "ansible.cfg").read_text().replace(
        "./.build/collections", str(harness.REPO / ".build" / "collections")).replace(
        "./inventory/sim", str(harness.REPO / "inventory" / "sim"))
        + "\n[gpucluster]\nartifacts_dir = %s\n" % artifacts)
    with harness.SimRun(harness.spec("inidir", count=2), tmp_path) as sim:
        def run():
            env = dict(harness.ansible_env(artifacts), ANSIBLE_CONFIG=str(config))
            del env["GPUCLUSTER_ARTIFACTS_DIR"]  # only ansible.cfg names the directory
            proc = subprocess.run([str(harness.VENV_BIN / "ansible-playbook"), "-i", str(sim.inventory),
                                   str(harness.REPO / "playbooks" / "acceptance.yml"), "--tags", "gpu_health"],
                                  cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
            return harness.Run(proc, artifacts)
        first = run()
        assert first.dir is not None and first.dir.parent == artifacts, first.output[-2000:]
        assert (artifacts / "last-pass.json").exists()
        second = run()
        windows = [c["message"] for c in second.results["checks"] if c["check"] == "gpu.xid"]
        assert windows and all("since the last passed run" in m for m in windows), windows
        assert not (tmp_path / "artifacts").exists()
