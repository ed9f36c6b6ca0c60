"""The collection as users get it: a tarball installed in a fresh collections path, outside the repository.

ansible-galaxy builds the tarball from the work tree and installs it under a temporary directory;
every playbook runs by FQCN from a directory outside the repository, with an ansible.cfg there and
nothing of the repository's environment (its ansible.cfg points at .build/, which only the work
tree has). The installed run must judge a simulated cluster as a run from the repository does, and
stop at its start, naming what to add, without the results callback or without junit-xml.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import REPO, SimRun, playbook, spec, validated_results

pytestmark = pytest.mark.integration

VENV_BIN = Path(sys.executable).parent
CALLBACK = "gpucluster.acceptance.acceptance_report"
FAULTS = [{"kind": "nvlink_down", "node": "gpu002", "gpus": [0, 1]}]
# Skipped here as in most integration tests: the workload needs torch on the nodes (slow).
SKIP = ("--skip-tags", "workload")


def clean_env(bin_dir=VENV_BIN, **extra):
    """The environment of a user's shell: no ANSIBLE_* or GPUCLUSTER_* setting of the test run."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GPUCLUSTER_")))
    env.update(PATH="%s:%s" % (bin_dir, env.get("PATH", "")), ANSIBLE_NOCOLOR="1")
    env.update(extra)
    return env


def run(cmd, cwd, env, timeout=300):
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def last_task(out):
    """The name of the last task the run started."""
    return out.rsplit("TASK [", 1)[-1].split("]", 1)[0]


def write_cfg(workdir, collections, callback=True):
    """A user's ansible.cfg: only the installed collections path (no ~/.ansible, no sys.path copies)."""
    workdir.mkdir(parents=True, exist_ok=True)
    lines = ["[defaults]", "collections_path = %s" % collections, "collections_scan_sys_path = false",
             "stdout_callback = ansible.builtin.default", "retry_files_enabled = false", "forks = 8"]
    if callback:
        lines.append("callbacks_enabled = %s" % CALLBACK)
    (workdir / "ansible.cfg").write_text("\n".join(lines) + "\n")
    return workdir


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The collection built from the work tree and installed into <tmp>/collections."""
    root = tmp_path_factory.mktemp("installed")
    rc, out = run([VENV_BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", root / "dist", REPO],
                  root, clean_env())
    assert rc == 0, out
    tarball = next((root / "dist").glob("gpucluster-acceptance-*.tar.gz"))
    rc, out = run([VENV_BIN / "ansible-galaxy", "collection", "install", tarball, "-p", root / "collections"],
                  root, clean_env())
    assert rc == 0, out
    path = root / "collections" / "ansible_collections" / "gpucluster" / "acceptance"
    assert (path / "MANIFEST.json").exists() and not path.is_symlink()
    return {"root": root, "tarball": tarball, "collections": root / "collections", "path": path}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    with SimRun(spec("eeinst", faults=FAULTS, count=3), tmp_path_factory.mktemp("eeinst")) as running:
        yield running


def test_the_tarball_ships_what_users_run_and_nothing_of_the_development_tree(installed):
    names = set(p.relative_to(installed["path"]).parts[0] for p in installed["path"].iterdir())
    for needed in ("playbooks", "roles", "plugins", "profiles", "schemas", "meta", "execution-environment.yml",
                   "bindep.txt", "README.md"):
        assert needed in names, (needed, sorted(names))
    # requirements.txt is the dev venv (torch, black, pytest): ansible-builder would take it as the
    # collection's Python dependencies; ansible.cfg points at the repository's .build/.
    for dev in ("tests", "sim", "bench", "molecule", ".venv", ".build", ".hypothesis", "requirements.txt",
                "ansible.cfg", "Makefile"):
        assert dev not in names, (dev, sorted(names))
    assert (installed["path"] / "meta" / "ee-requirements.txt").exists()


def test_acceptance_from_the_installed_collection_judges_as_from_the_repository(installed, sim, tmp_path):
    work = write_cfg(tmp_path / "user", installed["collections"])
    artifacts = tmp_path / "artifacts"
    env = clean_env(GPUCLUSTER_ARTIFACTS_DIR=str(artifacts))

    # The one gpucluster.acceptance in sight is the installed copy, with this directory's ansible.cfg.
    rc, out = run([VENV_BIN / "ansible-galaxy", "collection", "list", "gpucluster.acceptance"], work, env)
    assert rc == 0 and str(installed["collections"]) in out and str(REPO) not in out, out
    rc, out = run([VENV_BIN / "ansible", "--version"], work, env)
    assert "config file = %s" % (work / "ansible.cfg") in out, out

    rc, out = run([VENV_BIN / "ansible-playbook", "gpucluster.acceptance.acceptance", "-i", sim.inventory] + list(SKIP),
                  work, env, timeout=600)
    runs = sorted(p for p in artifacts.iterdir() if p.is_dir()) if artifacts.exists() else []
    assert len(runs) == 1, out[-3000:]
    installed_doc = validated_results(runs[0] / "results.json")
    assert (runs[0] / "junit.xml").exists() and (runs[0] / "COMPLETE").exists()
    assert rc == 2, out[-3000:]
    assert "Origin: %s/playbooks/acceptance.yml" % installed["path"] in out, out[-3000:]
    assert "Traceback" not in out and str(REPO / "playbooks") not in out

    from_repo = playbook(sim.inventory, tmp_path / "repo-artifacts", *SKIP)
    assert from_repo.rc == rc

    def bad(doc):
        return sorted((c["node"], c["stage"], c["check"], c["message"]) for c in doc["checks"]
                      if c["status"] in ("fail", "error"))
    assert bad(installed_doc) == bad(from_repo.results) and bad(installed_doc), (bad(installed_doc), bad(from_repo.results))
    for key in ("status", "nodes_total", "nodes_failed", "failed_nodes"):
        assert installed_doc["verdict"][key] == from_repo.results["verdict"][key], key
    assert installed_doc["verdict"]["failed_nodes"] == ["gpu002"]
    # The final message points to what follows it: the summary below and the run's results file.
    assert "see the summary below and %s" % (runs[0] / "results.json") in out
    assert out.index("see the summary below") < out.index("gpucluster.acceptance verdict: FAIL")
    assert "summary above" not in out


def test_without_the_results_callback_the_run_stops_at_its_start_naming_the_setting(installed, sim, tmp_path):
    work = write_cfg(tmp_path / "user", installed["collections"], callback=False)
    artifacts = tmp_path / "artifacts"
    rc, out = run([VENV_BIN / "ansible-playbook", "gpucluster.acceptance.acceptance", "-i", sim.inventory],
                  work, clean_env(GPUCLUSTER_ARTIFACTS_DIR=str(artifacts)))
    assert rc == 2, out[-3000:]
    assert ("enable the results callback with callbacks_enabled = %s under [defaults] in ansible.cfg "
            "(or ANSIBLE_CALLBACKS_ENABLED=%s)" % (CALLBACK, CALLBACK)) in out, out[-3000:]
    assert last_task(out) == "Check that the results callback records this run", out[-3000:]  # no node touched
    assert "summary above" not in out and "summary below" not in out and "Traceback" not in out
    assert not artifacts.exists()
    # The same setting through the environment (an AWX job template's env, the EE's image) is enough.
    rc, out = run([VENV_BIN / "ansible-playbook", "gpucluster.acceptance.acceptance", "-i", sim.inventory,
                   "--tags", "preflight"], work,
                  clean_env(GPUCLUSTER_ARTIFACTS_DIR=str(artifacts), ANSIBLE_CALLBACKS_ENABLED=CALLBACK))
    assert rc == 0, out[-3000:]
    assert validated_results(next(p for p in artifacts.iterdir() if p.is_dir()) / "results.json")["verdict"]["status"] == "pass"


@pytest.fixture(scope="module")
def venv_without_junit_xml(tmp_path_factory):
    """A real controller venv with ansible-core and the runtime requirements, junit-xml left out."""
    root = tmp_path_factory.mktemp("nojunit")
    base = getattr(sys, "_base_executable", sys.executable)
    rc, out = run([base, "-m", "venv", root / "venv"], root, clean_env())
    assert rc == 0, out
    runtime = [line.split("#", 1)[0].strip() for line in (REPO / "meta" / "ee-requirements.txt").read_text().splitlines()]
    pins = [line for line in runtime if line and not line.lower().startswith("junit-xml")]
    core = [line for line in (REPO / "requirements.txt").read_text().splitlines() if line.startswith("ansible-core==")]
    rc, out = run([root / "venv" / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check"] + core + pins,
                  root, clean_env())
    assert rc == 0, "pip could not install %s: %s" % (core + pins, out[-2000:])
    rc, out = run([root / "venv" / "bin" / "python", "-c", "import junit_xml"], root, clean_env())
    assert rc != 0 and "No module named 'junit_xml'" in out, out
    return root / "venv" / "bin"


def test_without_junit_xml_the_run_stops_at_its_start_naming_the_package(installed, sim, venv_without_junit_xml, tmp_path):
    work = write_cfg(tmp_path / "user", installed["collections"])
    rc, out = run([venv_without_junit_xml / "ansible-playbook", "gpucluster.acceptance.acceptance", "-i", sim.inventory],
                  work, clean_env(bin_dir=venv_without_junit_xml, GPUCLUSTER_ARTIFACTS_DIR=str(tmp_path / "artifacts")))
    assert rc == 2, out[-3000:]
    python = venv_without_junit_xml / "python"
    assert "lacks junit-xml, which the results callback needs" in out, out[-3000:]
    assert "-m pip install junit-xml (or -r %s)" % (installed["path"] / "meta" / "ee-requirements.txt") in out, out[-3000:]
    assert "the controller's Python (%s" % python.parent in out
    assert last_task(out) == "Check that the results callback records this run", out[-3000:]
    assert "Traceback" not in out and "summary above" not in out
    # Stopped before any stage: no results.json claims a verdict for this run.
    assert not list((tmp_path / "artifacts").glob("*/results.json"))


def test_shipped_ee_files_parse(installed):
    """The installed execution-environment.yml names the shipped runtime files, not the dev ones."""
    import yaml  # pylint: disable=import-outside-toplevel
    ee = yaml.safe_load((installed["path"] / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    assert ee["dependencies"]["python"] == "meta/ee-requirements.txt"
    assert ee["dependencies"]["system"] == "bindep.txt"
    meta = yaml.safe_load((installed["path"] / "meta" / "execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": "meta/ee-requirements.txt", "system": "bindep.txt"}
    assert json.loads((installed["path"] / "MANIFEST.json").read_text())["collection_info"]["name"] == "acceptance"


def test_ansible_runner_runs_the_documented_project_and_the_artifacts_land_in_its_data_dir(installed, sim, tmp_path):
    """docs/execution-environment.md's ansible-runner layout, without the container (the same command
    with --process-isolation runs it in the image, where /runner is this private data dir)."""
    import yaml  # pylint: disable=import-outside-toplevel
    data = tmp_path / "runner"
    (data / "project").mkdir(parents=True)
    (data / "env").mkdir()
    (data / "inventory").mkdir()
    (data / "inventory" / "hosts.yml").write_text(Path(sim.inventory).read_text())
    (data / "project" / "acceptance.yml").write_text(
        "---\n- name: Acceptance (gpucluster.acceptance)\n  ansible.builtin.import_playbook: gpucluster.acceptance.acceptance\n")
    (data / "env" / "envvars").write_text(yaml.safe_dump({
        "ANSIBLE_CALLBACKS_ENABLED": CALLBACK,
        "ANSIBLE_COLLECTIONS_PATH": str(installed["collections"]),
        "GPUCLUSTER_ARTIFACTS_DIR": str(data / "artifacts" / "gpucluster"),
    }))
    rc, out = run([VENV_BIN / "ansible-runner", "run", data, "-p", "acceptance.yml", "--ident", "acc1",
                   "--cmdline", "--tags preflight"], tmp_path, clean_env())
    assert rc == 0, out[-3000:]
    assert (data / "artifacts" / "acc1" / "rc").read_text().strip() == "0"
    assert (data / "artifacts" / "acc1" / "job_events").is_dir()
    runs = [p for p in (data / "artifacts" / "gpucluster").iterdir() if p.is_dir()]
    assert len(runs) == 1 and validated_results(runs[0] / "results.json")["verdict"]["status"] == "pass"
    assert (runs[0] / "junit.xml").exists()
