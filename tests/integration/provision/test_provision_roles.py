"""The provisioning roles run for real on this host: stand-in NVIDIA packages through apt, a real
nccl-tests build with nvcc, OpenMPI and NCCL, and checks of the resulting binaries.
"""
# pylint: disable=redefined-outer-name  # pytest fixtures imported from provision_fixtures
import shutil
import subprocess
from pathlib import Path

import pytest

from provision_fixtures import clean_host, stand_ins  # noqa: F401  pylint: disable=import-error,unused-import
from provision_support import (  # pylint: disable=import-error
    PROVISION_PLAYBOOK, REPO, dpkg_versions, repo_vars, run_playbook, run_role)

pytestmark = pytest.mark.integration

DRIVER_PACKAGES = ("nvidia-open-550", "nvidia-driver-550-open", "nvidia-fabricmanager-550", "nvidia-persistenced")
STANDIN_FILES = (Path("/etc/apt/sources.list.d/gpucluster-standin.list"),
                 Path("/etc/apt/preferences.d/gpucluster-standin-driver.pref"),
                 Path("/etc/apt/preferences.d/gpucluster-standin-nccl.pref"))
NO_MPI = "built without MPI=1: every rank would run alone"


def host_state():
    """What provisioning may change on this host: package versions and the apt source and pins."""
    return (dpkg_versions(*DRIVER_PACKAGES, "cuda-drivers-550", "nvidia-driver-550", "libnccl2", "libnccl-dev",
                          "datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda12"),
            {str(path): path.read_text() if path.exists() else None for path in STANDIN_FILES})


def driver_vars(paths, version, **more):
    variables = dict(repo_vars(paths), nvidia_driver_version=version, nvidia_driver_nvswitch=True)
    variables.update(more)
    return variables


def nccl_tests_vars(paths, tmp_path, **more):
    variables = {"nccl_tests_dir": str(tmp_path / "nccl-tests"), "nccl_tests_mpi_home": paths["mpi_home"],
                 "nccl_tests_nccl_home": paths["nccl_home"], "nccl_tests_make_jobs": 2,
                 "nccl_tests_source": "archive", "nccl_tests_archive": paths["archive"]}
    variables.update(more)
    return variables


def ldd(binary, nccl_home):
    return subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True,
                          env={"LD_LIBRARY_PATH": nccl_home + "/lib", "PATH": "/usr/bin:/bin"}).stdout


def test_fabric_manager_version_differing_from_the_driver_is_refused(clean_host, tmp_path):
    run = run_role("nvidia_driver", driver_vars(clean_host, "550.127.05", nvidia_driver_fabricmanager_version="550.90.07"),
                   tmp_path)
    assert run.rc != 0, run
    assert "refusing nvidia_driver_fabricmanager_version 550.90.07" in run.output, run
    assert "must be exactly the driver's version (550.127.05)" in run.output, run
    assert dpkg_versions(*DRIVER_PACKAGES) == {}, "the refusal must come before anything is installed"


def test_upgrade_moves_driver_and_fabric_manager_together_and_check_mode_changes_nothing(clean_host, tmp_path):
    first = run_role("nvidia_driver", driver_vars(clean_host, "550.90.07"), tmp_path)
    assert first.rc == 0, first
    assert dpkg_versions(*DRIVER_PACKAGES) == dict.fromkeys(DRIVER_PACKAGES, "550.90.07-1")

    before = host_state()
    dry = run_role("nvidia_driver", driver_vars(clean_host, "550.127.05"), tmp_path, check=True)
    assert dry.rc == 0, dry
    assert dry.recap["changed"] > 0, "check mode must report the upgrade it would make\n%r" % dry
    assert host_state() == before, "check mode changed the host"

    upgrade = run_role("nvidia_driver", driver_vars(clean_host, "550.127.05"), tmp_path)
    assert upgrade.rc == 0, upgrade
    assert dpkg_versions(*DRIVER_PACKAGES) == dict.fromkeys(DRIVER_PACKAGES, "550.127.05-1")
    assert "Pin: version 550.127.05-*" in STANDIN_FILES[1].read_text()
    assert "cannot enable or start nvidia-persistenced, nvidia-fabricmanager" in upgrade.output, upgrade
    assert "no NVIDIA GPU on the PCI bus of localhost" in upgrade.output, upgrade
    assert "the check that the nvidia module is loaded for the GPUs is skipped" in upgrade.output, upgrade


def test_provision_playbook_runs_the_roles_in_order_and_check_mode_changes_nothing(clean_host, tmp_path):
    variables = dict(repo_vars(clean_host), provision_nodes="localhost", provision_become=False,
                     nvidia_driver_version="550.127.05", dcgm_cuda_major="12", dcgm_version="1:4.2.3-1",
                     dcgm_dcgmi="/opt/gpucluster-standin/bin/dcgmi", nccl_version="2.27.7-1",
                     nccl_tests_dir=str(tmp_path / "nccl-tests"), nccl_tests_nccl_home=clean_host["nccl_home"],
                     nccl_tests_source="archive", nccl_tests_archive=clean_host["archive"])
    before = host_state()
    dry = run_playbook(PROVISION_PLAYBOOK, variables, tmp_path, check=True)
    assert dry.rc == 0, dry
    assert dry.recap["changed"] > 0, "check mode must report what it would install\n%r" % dry
    assert host_state() == before, "check mode changed the host"
    assert not (tmp_path / "nccl-tests").exists(), "check mode unpacked or built nccl-tests"
    order = [dry.output.find("TASK [gpucluster.acceptance.%s :" % role)
             for role in ("nvidia_driver", "dcgm", "nccl", "mpi", "nccl_tests")]
    assert -1 not in order and order == sorted(order), "roles ran out of order: %s" % order
    assert "check mode: would rebuild nccl-tests" in dry.output, dry


def test_nccl_tests_from_git_tag_builds_with_mpi_and_rebuilds_only_when_an_input_changes(stand_ins, tmp_path):
    source = tmp_path / "nccl-tests.git"
    shutil.copytree(REPO / "tests" / "fixtures" / "nccl_tests_standin", source)
    git = ["git", "-C", str(source), "-c", "user.name=tests", "-c", "user.email=tests@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "stand-in"], ["tag", "v0.0.1-standin"]):
        subprocess.run(git + args, check=True, capture_output=True)
    variables = nccl_tests_vars(stand_ins, tmp_path, nccl_tests_source="git", nccl_tests_git_url="file://%s" % source,
                                nccl_tests_version="v0.0.1-standin")
    binary = tmp_path / "nccl-tests" / "build" / "all_reduce_perf"

    first = run_role("nccl_tests", variables, tmp_path)
    assert first.rc == 0, first
    assert "rebuilding nccl-tests" in first.output and "first build" in first.output, first
    assert "2 nccl-tests binaries link libnccl and libmpi" in first.output, first
    listing = ldd(binary, stand_ins["nccl_home"])
    assert "libmpi.so" in listing and "libnccl.so.2 => " + stand_ins["nccl_home"] in listing, listing
    built = binary.stat().st_mtime_ns

    again = run_role("nccl_tests", variables, tmp_path)
    assert again.rc == 0, again
    assert again.recap["changed"] == 0, again
    assert binary.stat().st_mtime_ns == built, "rebuilt although no input changed"

    other_gpu = run_role("nccl_tests", dict(variables, nccl_tests_cuda_archs=["80"]), tmp_path)
    assert other_gpu.rc == 0, other_gpu
    assert "changed inputs: make" in other_gpu.output, other_gpu
    assert binary.stat().st_mtime_ns != built, "not rebuilt for another GPU"
    stamp = (tmp_path / "nccl-tests" / ".gpucluster-build.json").read_text()
    assert "compute_80" in stamp and "compute_90" not in stamp, stamp


def test_nccl_tests_built_without_mpi_is_caught(stand_ins, tmp_path):
    run = run_role("nccl_tests", nccl_tests_vars(stand_ins, tmp_path, nccl_tests_make_args=["MPI=0"]), tmp_path)
    assert run.rc != 0, run
    assert "all_reduce_perf: does not link libmpi: nccl-tests was " + NO_MPI in run.output, run
    assert "all_gather_perf: does not link libmpi" in run.output, run
    # The check looked at real binaries: they exist, find NCCL, and lack libmpi.
    listing = ldd(tmp_path / "nccl-tests" / "build" / "all_reduce_perf", stand_ins["nccl_home"])
    assert "libnccl.so.2 => " + stand_ins["nccl_home"] in listing and "libmpi" not in listing, listing
