"""nvidia_driver and the kernel: the running kernel's headers installed before the driver (DKMS builds the
module against them), a missing headers package stopping the role before the driver is installed, and
the check after installing that every NVIDIA GPU on the PCI bus has the nvidia module loaded and bound.

The packages go through this host's real apt from the stand-in repository (standin_repo.py), which
has linux-headers-<uname -r>. The GPUs are a hand-made sysfs/procfs tree (fake_gpu_host.py) that the
role reads through nvidia_driver_sysfs_root / nvidia_driver_procfs_root, and modprobe, modinfo and
dkms are stand-ins first on PATH: the host's own kernel modules are never touched.
"""
# pylint: disable=redefined-outer-name  # pytest fixtures imported from provision_fixtures
import platform
from pathlib import Path

import pytest

import fake_gpu_host  # pylint: disable=import-error
import prereqs  # pylint: disable=import-error
import standin_repo  # pylint: disable=import-error
from provision_fixtures import clean_host, stand_ins  # noqa: F401  pylint: disable=import-error,unused-import
from provision_support import dpkg_versions, repo_vars, run_role  # pylint: disable=import-error

pytestmark = pytest.mark.integration

KERNEL = platform.release()
HEADERS = "linux-headers-" + KERNEL
VERSION = "550.127.05"
DRIVER_PACKAGES = ("nvidia-open-550", "nvidia-driver-550-open", "nvidia-persistenced", "nvidia-fabricmanager-550")
DPKG_LOG = Path("/var/log/dpkg.log")
SOURCE = Path("/etc/apt/sources.list.d/%s.list" % standin_repo.REPO_NAME)


class Host:
    """A fake GPU node (sysfs/procfs tree) and the stand-in tools the role runs on it."""

    def __init__(self, tmp_path, gpus=8, nvswitches=4, modprobe="fail"):
        self.root = tmp_path / "host"
        self.tree = fake_gpu_host.build(self.root, gpus=gpus, nvswitches=nvswitches)
        self.bin = fake_gpu_host.write_tools(tmp_path / "bin", self.root, modprobe=modprobe, version=VERSION)

    def role_vars(self, paths, **more):
        variables = dict(repo_vars(paths), nvidia_driver_version=VERSION, nvidia_driver_nvswitch="auto",
                         nvidia_driver_sysfs_root=self.tree["sysfs_root"],
                         nvidia_driver_procfs_root=self.tree["procfs_root"])
        variables.update(more)
        return variables

    def run(self, paths, tmp_path, check=False, **more):
        return run_role("nvidia_driver", self.role_vars(paths, **more), tmp_path, check=check, path_prepend=self.bin)

    def modprobe_calls(self):
        return [call for call in fake_gpu_host.calls(self.bin) if call.startswith("modprobe")]


def dpkg_events(offset):
    """(event, package) for each install and configured ("status installed") line dpkg logged after offset."""
    events = []
    with DPKG_LOG.open("rb") as log:
        log.seek(offset)
        for line in log.read().decode(errors="replace").splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[2] == "install":
                events.append(("install", fields[3].split(":")[0]))
            elif len(fields) >= 5 and fields[2:4] == ["status", "installed"]:
                events.append(("installed", fields[4].split(":")[0]))
    return events


def test_headers_come_before_the_driver_and_gpus_without_the_module_fail(clean_host, tmp_path):
    host = Host(tmp_path)
    offset = DPKG_LOG.stat().st_size

    first = host.run(clean_host, tmp_path)
    assert first.rc != 0, first
    assert "0 of 8 GPUs usable: module not built for kernel %s" % KERNEL in first.output, first
    assert "dkms status: nvidia/%s: added" % VERSION in first.output, first
    assert "modprobe nvidia: modprobe: FATAL: Module nvidia not found in directory /lib/modules/%s" % KERNEL \
        in first.output, first
    assert host.modprobe_calls() == ["modprobe nvidia"], "modprobe must be tried exactly once"
    # The packages are all there (auto-detected NVSwitches in the tree: the fabric manager too): only the
    # GPU check tells that nothing can use them.
    assert dpkg_versions(HEADERS, *DRIVER_PACKAGES) == dict(dict.fromkeys(DRIVER_PACKAGES, VERSION + "-1"),
                                                            **{HEADERS: standin_repo.headers_package()[1]})
    events = dpkg_events(offset)
    assert ("installed", HEADERS) in events and ("install", "nvidia-driver-550-open") in events, events
    assert events.index(("installed", HEADERS)) < events.index(("install", "nvidia-driver-550-open")), \
        "the headers must be installed (configured) before the driver is unpacked: %s" % events
    assert events.index(("installed", HEADERS)) < events.index(("install", "nvidia-open-550")), events

    fake_gpu_host.load(host.root, VERSION)
    loaded = host.run(clean_host, tmp_path)
    assert loaded.rc == 0, loaded
    assert "8 of 8 NVIDIA GPUs usable: the nvidia module %s is loaded for kernel %s" % (VERSION, KERNEL) \
        in loaded.output, loaded
    assert loaded.recap["changed"] == 0, "a second run over installed packages must change nothing\n%r" % loaded
    assert len(host.modprobe_calls()) == 1, "modprobe tried although the module was loaded"

    fake_gpu_host.load(host.root, VERSION, unbound={"0000:2a:00.0": "nouveau", "0000:db:00.0": None})
    partly = host.run(clean_host, tmp_path)
    assert partly.rc != 0, partly
    assert ("6 of 8 GPUs usable: the nvidia module %s is loaded but not bound to 0000:2a:00.0 (bound to nouveau), "
            "0000:db:00.0 (no driver)" % VERSION) in partly.output, partly


def test_modprobe_loads_the_module_once_and_a_second_run_changes_nothing(clean_host, tmp_path):
    host = Host(tmp_path, modprobe="load")
    first = host.run(clean_host, tmp_path)
    assert first.rc == 0, first
    assert first.recap["changed"] > 0, first
    probed = "8 of 8 NVIDIA GPUs usable: the nvidia module %s is loaded now by modprobe for kernel %s" % (VERSION, KERNEL)
    assert probed in first.output, first
    assert host.modprobe_calls() == ["modprobe nvidia"]

    second = host.run(clean_host, tmp_path)
    assert second.rc == 0, second
    assert second.recap["changed"] == 0, "the second run changed something\n%r" % second
    assert "8 of 8 NVIDIA GPUs usable: the nvidia module %s is loaded for kernel" % VERSION in second.output, second
    assert host.modprobe_calls() == ["modprobe nvidia"], "modprobe must not run when the module is loaded"


@pytest.mark.parametrize("case", ["running kernel", "nvidia_driver_kernel_release"])
def test_missing_headers_package_fails_naming_the_kernel_before_the_driver_is_installed(case, clean_host, tmp_path):
    host = Host(tmp_path)
    if case == "running kernel":
        # The host's package sources (here: the stand-in repository without it) lack the running kernel's
        # headers. Under .build, not tmp_path: apt reads file: repositories as its own unprivileged user.
        repo = standin_repo.without(clean_host["standin_repo"], prereqs.BUILD / "standin-repo-no-headers", {HEADERS})
        run = host.run(dict(clean_host, standin_repo=str(repo)), tmp_path)
        kernel, words = KERNEL, "no kernel headers for the running kernel %s" % KERNEL
    else:
        kernel = "6.1.0-99-standin-amd64"
        run = host.run(clean_host, tmp_path, nvidia_driver_kernel_release=kernel)
        words = "no kernel headers for kernel %s" % kernel
    assert run.rc != 0, run
    assert words in run.output, run
    assert "linux-headers-%s is not installed and no configured package source offers it" % kernel in run.output, run
    assert "nvidia_driver : Install the pinned driver packages (apt)]" not in run.output, run
    assert dpkg_versions(HEADERS, "linux-headers-" + kernel, *DRIVER_PACKAGES) == {}, \
        "the failure must come before anything is installed"
    assert host.modprobe_calls() == []


def test_no_gpus_on_the_bus_skips_the_module_check_with_a_message(clean_host, tmp_path):
    host = Host(tmp_path, gpus=0, nvswitches=0)
    first = host.run(clean_host, tmp_path)
    assert first.rc == 0, first
    assert "no NVIDIA GPU on the PCI bus of localhost" in first.output, first
    assert "the check that the nvidia module is loaded for the GPUs is skipped" in first.output, first
    assert host.modprobe_calls() == [], "modprobe without a GPU"
    versions = dpkg_versions(HEADERS, *DRIVER_PACKAGES)
    assert HEADERS in versions and "nvidia-fabricmanager-550" not in versions, versions

    second = host.run(clean_host, tmp_path)
    assert second.rc == 0, second
    assert second.recap["changed"] == 0, second
    assert "the check that the nvidia module is loaded for the GPUs is skipped" in second.output, second


def test_check_mode_installs_nothing_and_says_what_it_would_do(clean_host, tmp_path):
    host = Host(tmp_path)
    dry = host.run(clean_host, tmp_path, check=True)
    assert dry.rc == 0, dry
    assert dry.recap["changed"] > 0, dry
    assert "check mode: would install the kernel headers %s for kernel %s before the driver" % (HEADERS, KERNEL) \
        in dry.output, dry
    assert "check mode: 8 NVIDIA GPU(s) on the PCI bus" in dry.output, dry
    assert dpkg_versions(HEADERS, *DRIVER_PACKAGES) == {} and not SOURCE.exists(), "check mode changed the host"
    assert host.modprobe_calls() == [], "modprobe in check mode"

    fake_gpu_host.load(host.root, VERSION)
    assert host.run(clean_host, tmp_path).rc == 0
    again = host.run(clean_host, tmp_path, check=True)
    assert again.rc == 0, again
    assert again.recap["changed"] == 0, again
    assert "8 of 8 NVIDIA GPUs usable" in again.output, again
