"""The health check's cron entry and HealthCheckProgram wrapper from an installed collection.

The collection is built (ansible-galaxy collection build) and installed into a fresh collections
path outside the repository; the user's own ansible.cfg sits in a directory of its own. The cron
line and the wrapper are rendered from there (the installed playbook by its FQCN, no `cd`, no
repository path, no .build/), then both are run for real against a simulated cluster: the
wrapper drains its failing node, the cron line runs the whole health check and logs it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "slurm"))

from harness import REPO, VENV_BIN, spec, wait_for  # noqa: E402  pylint: disable=wrong-import-position
import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from slurm_helpers import missing_prerequisites, sinfo_reasons  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration


def run(argv, cwd, env, timeout=300):
    return subprocess.run(argv, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(collections path, user dir with its ansible.cfg) of the collection built and installed."""
    work = tmp_path_factory.mktemp("hhinst")
    env = dict(os.environ, PATH="%s:%s" % (VENV_BIN, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    built = run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", str(REPO), "--output-path", str(work / "dist")],
                work, env)
    assert built.returncode == 0, built.stdout + built.stderr
    (tarball,) = (work / "dist").glob("gpucluster-acceptance-*.tar.gz")
    collections = work / "collections"
    done = run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", str(tarball), "-p", str(collections)],
               work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    user = work / "user"
    user.mkdir()
    (user / "ansible.cfg").write_text(
        "[defaults]\ncollections_path = %s\ncallbacks_enabled = gpucluster.acceptance.acceptance_report\n"
        "interpreter_python = auto_silent\nhost_key_checking = false\nretry_files_enabled = false\n" % collections)
    return collections, user


def test_cron_and_wrapper_from_an_installed_collection_have_no_repository_path_and_run(installed, tmp_path_factory):
    problems = missing_prerequisites()
    if problems:
        pytest.fail("health integration tests cannot run: " + "; ".join(problems), pytrace=False)
    collections, user = installed
    work = tmp_path_factory.mktemp("hhi")  # short: slurmd's socket paths are limited
    spec_path = work / "spec.yml"
    spec_path.write_text(yaml.safe_dump(spec("hhinst", faults=[{"kind": "xid", "node": "gpu002", "gpu": 1, "xid": 79}],
                                             count=2)))
    run_dir = work / "run"
    inventory = simcluster.write_inventory(simcluster.load_spec(spec_path), work / "inv", run_dir)
    cfg = user / "ansible.cfg"
    history = work / "log" / "drain-history.jsonl"
    cron_log = work / "log" / "cron.log"
    environment = {"ANSIBLE_CONFIG": str(cfg), "GPUCLUSTER_ARTIFACTS_DIR": str(work / "artifacts")}
    settings = {
        "node_health_cron_file": str(work / "crontab"),
        "node_health_cron_environment": environment,
        "node_health_cron_ansible_playbook": str(VENV_BIN / "ansible-playbook"),
        "node_health_cron_inventory": str(inventory),
        "node_health_cron_log": str(cron_log),
        "node_health_healthcheck_path": str(work / "gpucluster-healthcheck.sh"),
        "node_health_healthcheck_inventory": str(inventory),
        "node_health_healthcheck_env_path": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % VENV_BIN,
        "node_health_healthcheck_slurm_conf": str(run_dir / "etc" / "slurm.conf"),
        "node_health_healthcheck_workdir": str(work / "hc"),
        "node_health_healthcheck_environment": environment,
        "node_health_healthcheck_extra_args": ["-e", "node_health_history_log=%s" % history,
                                               "-e", "node_health_lock_file=%s" % (work / "drain.lock")],
    }
    varsfile = work / "settings.json"
    varsfile.write_text(json.dumps(settings))
    # ansible.builtin.cron looks for crontab even when it writes a cron file (it does not run it
    # then); hosts without cron installed get a stand-in that fails if it is ever called.
    stub = work / "bin"
    stub.mkdir()
    if not shutil.which("crontab"):
        (stub / "crontab").write_text("#!/bin/sh\necho 'crontab stand-in called' >&2\nexit 3\n")
        (stub / "crontab").chmod(0o755)
    env = {"PATH": "%s:%s:/usr/sbin:/usr/bin:/sbin:/bin" % (VENV_BIN, stub), "HOME": str(work), "ANSIBLE_CONFIG": str(cfg),
           "ANSIBLE_NOCOLOR": "1", "GPUCLUSTER_ARTIFACTS_DIR": str(work / "render-artifacts")}
    render = run([str(VENV_BIN / "ansible-playbook"), "gpucluster.acceptance.health_check", "-i", str(inventory),
                  "--tags", "schedule,healthcheck_program", "-e", "@%s" % varsfile], user, env)
    assert render.returncode == 0, render.stdout + render.stderr
    crontab = (work / "crontab").read_text()
    wrapper = (work / "gpucluster-healthcheck.sh").read_text()
    (job,) = [line for line in crontab.splitlines() if line and not line.startswith("#")]
    for name, text in (("cron", job), ("wrapper", wrapper)):
        # The venv's ansible-playbook is the user's Python install, not the collection: drop it, then
        # no repository path may be left (no cd, no playbooks/ path, no .build/, no repository ansible.cfg).
        bare = text.replace(str(VENV_BIN), "VENV")
        assert str(REPO) not in bare and ".build" not in bare and "cd " not in bare, (name, text)
        assert "gpucluster.acceptance.health_check" in text, (name, text)
    assert job.startswith("*/30 * * * * root ANSIBLE_CONFIG=%s GPUCLUSTER_ARTIFACTS_DIR=" % cfg), job
    assert str(collections) not in wrapper and str(cfg) in wrapper  # the user's config names the path

    sim = simcluster.SimCluster(str(spec_path), run_dir=str(run_dir))
    try:
        sim.start(timeout=60)
        # The wrapper, as slurmd runs it: root, only SLURMD_NODENAME, any working directory.
        hc = run(["/bin/sh", str(work / "gpucluster-healthcheck.sh")], "/", {"SLURMD_NODENAME": "gpu002"}, timeout=200)
        last = (work / "hc" / "gpu002.last.log").read_text() if (work / "hc" / "gpu002.last.log").exists() else ""
        assert hc.returncode == 0, hc.stdout + hc.stderr + last
        reasons = sinfo_reasons(sim)
        assert list(reasons) == ["gpu002"] and reasons["gpu002"].startswith("gpucluster: gpu_health:"), (reasons, last)
        # The cron line, as cron runs it: sh -c with cron's small environment, % unescaped.
        command = job.split(None, 6)[6].replace("\\%", "%")
        cron = run(["/bin/sh", "-c", command], "/", {"PATH": "/usr/bin:/bin", "HOME": str(work),
                                                     "SLURM_CONF": str(run_dir / "etc" / "slurm.conf")}, timeout=200)
        assert cron.returncode != 0, cron.stdout + cron.stderr  # gpu002 still fails: the run says so
        log = cron_log.read_text()
        assert "gpucluster.acceptance verdict: FAIL" in log and re.search(r"gpu001\s+: ok=", log), log[-3000:]
        wait_for(history.exists, timeout=10, what="the history log")
        actions = [(e["node"], e["action"]) for e in map(json.loads, history.read_text().splitlines())]
        assert actions == [("gpu002", "drain")], actions
    finally:
        sim.stop()
