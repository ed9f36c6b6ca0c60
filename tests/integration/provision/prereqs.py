"""Everything the provisioning tests and molecule scenarios need, built once under .build/.

- the stand-in apt repository (standin_repo.py) at .build/standin-repo;
- NCCL headers and library from the nvidia-nccl-cu13 wheel at .build/nccl/wheel/nvidia/nccl
  (installed with pip --target; a libnccl.so link is added, as a real NCCL install has);
- the stand-in nccl-tests source (tests/fixtures/nccl_tests_standin) packed as a tarball with a
  top-level directory, as a release archive has, at .build/nccl-tests-standin.tar.gz.

A missing system prerequisite is an error naming what to install: the tests fail, never skip.

Usage: python prereqs.py [--repo] [--nccl] [--reset]    (prints the paths as JSON)
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))

import standin_repo  # noqa: E402  pylint: disable=wrong-import-position

BUILD = REPO / ".build"
STANDIN_REPO = BUILD / "standin-repo"
NCCL_WHEEL = "nvidia-nccl-cu13==2.32.3"
NCCL_TARGET = BUILD / "nccl" / "wheel"
NCCL_HOME = NCCL_TARGET / "nvidia" / "nccl"
FIXTURE = REPO / "tests" / "fixtures" / "nccl_tests_standin"
ARCHIVE = BUILD / "nccl-tests-standin.tar.gz"
CUDA_HOME = Path("/usr/local/cuda")
MPI_HOME = Path("/usr/lib/x86_64-linux-gnu/openmpi")
SYSTEM_PACKAGES = "libopenmpi-dev openmpi-bin python3-apt"


class PrereqError(RuntimeError):
    """A prerequisite is missing; the message says what to install."""


def check_system(nccl):
    problems = []
    if os.geteuid() != 0:
        problems.append("the provisioning tests install packages with apt: run them as root")
    for tool in ("dpkg-deb", "dpkg-query", "apt-get", "apt-cache"):
        if shutil.which(tool) is None:
            problems.append("%s is missing (Debian/Ubuntu's dpkg/apt)" % tool)
    if nccl:
        if not (CUDA_HOME / "bin" / "nvcc").exists():
            problems.append("no nvcc at %s/bin/nvcc (CUDA toolkit)" % CUDA_HOME)
        if not (MPI_HOME / "include" / "mpi.h").exists() or shutil.which("mpirun") is None:
            problems.append("OpenMPI is missing (%s/include/mpi.h, mpirun): apt-get install -y libopenmpi-dev "
                            "openmpi-bin" % MPI_HOME)
        for tool in ("make", "cc", "ldd", "git"):
            if shutil.which(tool) is None:
                problems.append("%s is missing" % tool)
    if problems:
        raise PrereqError("provisioning test prerequisites missing (tools/install-system-deps.sh with "
                          "PACKAGES_EXTRA=%r): %s" % (SYSTEM_PACKAGES, "; ".join(problems)))


def ensure_nccl():
    """NCCL headers and library from the PyPI wheel (no NVIDIA apt repository reachable here)."""
    marker = NCCL_TARGET / ".installed"
    if not (marker.exists() and marker.read_text().strip() == NCCL_WHEEL):
        if NCCL_TARGET.exists():
            shutil.rmtree(NCCL_TARGET)
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--no-deps", "--target", str(NCCL_TARGET), NCCL_WHEEL],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not (NCCL_HOME / "include" / "nccl.h").exists():
            detail = (proc.stderr or proc.stdout)[-2000:]
            raise PrereqError("pip could not install %s into %s: %s" % (NCCL_WHEEL, NCCL_TARGET, detail))
        marker.write_text(NCCL_WHEEL + "\n")
    link = NCCL_HOME / "lib" / "libnccl.so"
    if not link.is_symlink():
        link.symlink_to("libnccl.so.2")
    return NCCL_HOME


def ensure_archive():
    """The stand-in source tree as a release-style tarball, repacked when a fixture file changed."""
    files = sorted(p for p in FIXTURE.rglob("*") if p.is_file())
    newest = max(p.stat().st_mtime for p in files)
    if ARCHIVE.exists() and ARCHIVE.stat().st_mtime >= newest:
        return ARCHIVE
    ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    partial = ARCHIVE.with_suffix(".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for path in files:
            tar.add(path, arcname="nccl-tests-standin/" + str(path.relative_to(FIXTURE)), recursive=False)
    partial.replace(ARCHIVE)
    return ARCHIVE


def reset():
    """A host without the stand-ins and without the tests' nccl-tests and HPC-X-style trees."""
    for tree in (BUILD / "nccl-tests", BUILD / "hpcx-standin"):
        if tree.exists():
            shutil.rmtree(tree)
    return standin_repo.reset()


def ensure(repo=True, nccl=False):
    check_system(nccl)
    paths = {"repo_root": str(REPO), "collections": str(BUILD / "collections")}
    if repo:
        paths["standin_repo"] = str(standin_repo.build(STANDIN_REPO))
    if nccl:
        paths.update(nccl_home=str(ensure_nccl()), archive=str(ensure_archive()), mpi_home=str(MPI_HOME),
                     cuda_home=str(CUDA_HOME))
    return paths


def main(argv):
    args = set(argv[1:])
    unknown = args - {"--repo", "--nccl", "--reset"}
    if unknown:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        paths = ensure(repo="--repo" in args or not args, nccl="--nccl" in args)
    except PrereqError as error:
        print("prereqs: %s" % error, file=sys.stderr)
        return 1
    if "--reset" in args:
        paths["purged"] = reset()
    print(json.dumps(paths, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
