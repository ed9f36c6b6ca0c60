"""The execution environment: ansible-builder's build context holds the runtime requirements only.

The build context is made from the files the collection ships (the tarball, installed), the way a
user builds the image: `ansible-builder create` works offline. The image itself is built only where
a container engine runs and the base image is in its local storage (nothing can be pulled here):
that test says which of the two is missing when it skips; the context test never skips.
"""
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from harness import REPO

VENV_BIN = Path(sys.executable).parent
# Development-only packages that must never reach the image.
DEV_ONLY = ("torch", "black", "hypothesis", "pytest", "ansible-lint", "molecule", "numpy", "ansible-builder")
IMAGE = "localhost/gpucluster-acceptance-ee:test"


def run(cmd, cwd, timeout=300):
    """A command as a user's shell runs it: no ANSIBLE_* setting of the test run (make test exports
    ANSIBLE_COLLECTIONS_PATH with the work tree in it, and ansible-galaxy would then find the
    collection already installed there and install nothing)."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return proc.returncode, proc.stdout + proc.stderr


def names(requirement_lines):
    """Lower-case package names of pip requirement lines (comments and blanks dropped)."""
    found = []
    for line in requirement_lines:
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            for sep in ("==", ">=", "<=", "~=", "[", ";", " "):
                line = line.split(sep, 1)[0]
            found.append(line.strip().lower().replace("_", "-"))
    return found


@pytest.fixture(scope="module")
def ee_dir(tmp_path_factory):
    """An EE project as docs/execution-environment.md makes one: the shipped files and the tarball."""
    root = tmp_path_factory.mktemp("ee")
    rc, out = run([VENV_BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", root / "dist", REPO],
                  root)
    assert rc == 0, out
    tarball = next((root / "dist").glob("gpucluster-acceptance-*.tar.gz"))
    rc, out = run([VENV_BIN / "ansible-galaxy", "collection", "install", tarball, "-p", root / "collections"], root)
    assert rc == 0, out
    shipped = root / "collections" / "ansible_collections" / "gpucluster" / "acceptance"
    project = root / "project"
    (project / "meta").mkdir(parents=True)
    (project / "dist").mkdir()
    for name in ("execution-environment.yml", "bindep.txt", "meta/ee-requirements.txt"):
        shutil.copy(shipped / name, project / name)
    shutil.copy(tarball, project / "dist" / "gpucluster-acceptance.tar.gz")
    return {"project": project, "collections": root / "collections"}


def test_the_build_context_holds_the_runtime_requirements_only(ee_dir):
    project = ee_dir["project"]
    rc, out = run([VENV_BIN / "ansible-builder", "create", "-c", "context", "--output-filename", "Containerfile"],
                  project)
    assert rc == 0, out
    context = project / "context"
    pip = names((context / "_build" / "requirements.txt").read_text().splitlines())
    assert set(pip) >= {"jsonschema", "junit-xml", "pyyaml"}, pip
    assert not set(pip) & set(DEV_ONLY), pip
    bindep = (context / "_build" / "bindep.txt").read_text()
    assert "slurm [platform:rpm]" in bindep and "rsync" in bindep and "openssh-clients [platform:rpm]" in bindep
    assert "fio" not in bindep.split("NOT here", 1)[0]  # node-side tools are named only as node-side
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy["collections"] == [{"name": "collections/gpucluster-acceptance.tar.gz", "type": "file"}]
    assert (context / "_build" / "collections" / "gpucluster-acceptance.tar.gz").exists()
    containerfile = (context / "Containerfile").read_text()
    assert 'ANSIBLE_INSTALL_REFS="ansible-core==2.19.14 ansible-runner==2.4.3"' in containerfile
    assert "ENV ANSIBLE_CALLBACKS_ENABLED=gpucluster.acceptance.acceptance_report" in containerfile
    # The pins are the development venv's: the image runs what the tests ran.
    dev = dict(line.split("==", 1) for line in (REPO / "requirements.txt").read_text().splitlines() if "==" in line)
    for line in (REPO / "meta" / "ee-requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==", 1)
            assert metadata.version(name) == version, line
            assert name not in dev, "%s is pinned twice (requirements.txt includes meta/ee-requirements.txt)" % name


def test_ansible_builder_finds_the_collections_runtime_requirements_not_the_dev_ones(ee_dir):
    """What ansible-builder adds for the collection when another EE lists it in its galaxy requirements."""
    rc, out = run([VENV_BIN / "ansible-builder", "introspect", "--sanitize", ee_dir["collections"]], ee_dir["project"])
    assert rc == 0, out
    data = yaml.safe_load(out.split("---", 1)[1])
    pip = names(data["python"])
    assert {"jsonschema", "junit-xml"} <= set(pip) and not set(pip) & set(DEV_ONLY), data
    assert any(line.startswith("slurm [platform:rpm]") for line in data["system"]), data


def _engine_problem():
    """(engine, None) when an engine runs here and has the base image; else (None, why not)."""
    base = yaml.safe_load((REPO / "execution-environment.yml").read_text())["images"]["base_image"]["name"]
    reasons = []
    for engine in ("podman", "docker"):
        if not shutil.which(engine):
            reasons.append("%s is not installed" % engine)
            continue
        rc, out = run([engine, "info"], REPO, timeout=60)
        if rc != 0:
            reasons.append("%s does not run: %s" % (engine, (out.strip().splitlines() or ["rc=%d" % rc])[-1]))
            continue
        rc, out = run([engine, "image", "inspect", base], REPO, timeout=60)
        if rc != 0:
            reasons.append("%s has no base image %s in its local storage and nothing can be pulled here" % (engine, base))
            continue
        return engine, None
    return None, "; ".join(reasons)


def test_the_image_builds_and_runs_the_collection(ee_dir):
    engine, why = _engine_problem()
    if engine is None:
        pytest.skip("no image build: %s (the build context is checked by the test above)" % why)
    project = ee_dir["project"]
    rc, out = run([VENV_BIN / "ansible-builder", "build", "--container-runtime", engine, "-t", IMAGE,
                   "-c", "built-context"], project, timeout=1800)
    assert rc == 0, out[-4000:]
    rc, out = run([engine, "run", "--rm", IMAGE, "ansible-doc", "-t", "callback", "gpucluster.acceptance.acceptance_report"],
                  project)
    assert rc == 0 and "acceptance_report" in out, out[-2000:]
    rc, out = run([engine, "run", "--rm", IMAGE, "python3", "-c", "import junit_xml, jsonschema, yaml; import torch"],
                  project)
    assert rc != 0 and "No module named 'torch'" in out, out[-2000:]
