"""Build a local apt repository of stand-in packages under NVIDIA's package names.

The provisioning roles install these through real apt, so version pinning, the fabric manager
matching the driver, upgrades and idempotence are exercised for real on a machine without NVIDIA's
repositories or a GPU. Each package is tiny: a VERSION file under /opt/gpucluster-standin/<name>/
(the DCGM core package also ships a stand-in ``dcgmi`` there, never on PATH). The running kernel's
headers package, ``linux-headers-<uname -r>``, is there too: nvidia_driver installs it before the driver.

The repository is flat (``deb [trusted=yes] file:<dir> /``): ``Packages`` and an unsigned
``Release`` are written here (no dpkg-dev needed; ``dpkg-deb`` builds the packages).
A stamp of the package list makes repeat runs instant.

``reset()`` purges every installed stand-in package and removes the apt source and pins that the
roles wrote for the stand-in repository (named REPO_NAME), so each test starts from a clean host.

Usage: python standin_repo.py OUT_DIR   (prints OUT_DIR)
       python standin_repo.py --reset
"""
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = "/opt/gpucluster-standin"
MAINTAINER = "gpucluster.acceptance tests <tests@example.invalid>"
# The *_repo_name the tests give the roles: their apt source and pin files carry it.
REPO_NAME = "gpucluster-standin"
DRIVER_VERSIONS = ["550.90.07-1", "550.127.05-1"]
DCGM_VERSIONS = ["1:4.1.1-1", "1:4.2.3-1"]
NCCL_VERSIONS = ["2.21.5-1+cuda12.4", "2.27.7-1+cuda12.9", "2.27.7-1+cuda13.0", "2.28.3-1+cuda13.0"]

DCGMI = """#!/bin/sh
# Stand-in dcgmi (gpucluster.acceptance tests): answers `dcgmi discovery -l` like a host engine would.
if [ "$1" = discovery ] && [ "$2" = -l ]; then
  cat <<'TABLE'
1 GPU found.
+--------+----------------------------------------------------------------------+
| GPU ID | Device Information                                                   |
+--------+----------------------------------------------------------------------+
| 0      | Name: NVIDIA H100 80GB HBM3 (stand-in)                               |
|        | PCI Bus ID: 00000000:18:00.0                                         |
|        | Device UUID: GPU-00000000-0000-0000-0000-000000000000                |
+--------+----------------------------------------------------------------------+
0 NvSwitches found.
TABLE
  exit 0
fi
echo "stand-in dcgmi: unsupported arguments: $*" >&2
exit 2
"""


def headers_package(release=None):
    """(name, version) of the headers package of the kernel (default: the running one), as Debian and
    Ubuntu name it; None where the release cannot be part of a Debian package name."""
    release = release or platform.release()
    name = "linux-headers-" + release
    if not re.match(r"^[a-z0-9][a-z0-9+.-]+$", name):
        return None
    upstream = re.match(r"[0-9]+(\.[0-9]+)*", release)
    return name, (upstream.group(0) if upstream else "0") + "-1"


def package_specs():
    """Every stand-in package: name, version, depends, conflicts, extra files {path: (text, mode)}."""
    specs = []

    def add(name, version, depends=(), conflicts=(), files=None):
        specs.append({"name": name, "version": version, "depends": list(depends),
                      "conflicts": list(conflicts), "files": files or {}})

    for version in DRIVER_VERSIONS:
        exact = "(= %s)" % version
        add("nvidia-driver-550-open", version, conflicts=["nvidia-driver-550"])
        add("nvidia-open-550", version, depends=["nvidia-driver-550-open " + exact])
        add("nvidia-driver-550", version, conflicts=["nvidia-driver-550-open"])
        add("cuda-drivers-550", version, depends=["nvidia-driver-550 " + exact])
        add("nvidia-fabricmanager-550", version)  # like the real one: no dependency on the driver
        add("nvidia-persistenced", version)
    headers = headers_package()
    if headers:
        add(*headers)
    for version in DCGM_VERSIONS:
        add("datacenter-gpu-manager-4-core", version,
            files={ROOT + "/bin/dcgmi": (DCGMI, 0o755)}, conflicts=["datacenter-gpu-manager"])
        for cuda in ("12", "13"):
            add("datacenter-gpu-manager-4-cuda" + cuda, version,
                depends=["datacenter-gpu-manager-4-core (= %s)" % version])
    add("datacenter-gpu-manager", "1:3.3.9", conflicts=["datacenter-gpu-manager-4-core"])
    for version in NCCL_VERSIONS:
        add("libnccl2", version)
        add("libnccl-dev", version, depends=["libnccl2 (= %s)" % version])
    return specs


def build_deb(spec, workdir, out_dir):
    """Build one .deb with dpkg-deb; returns its path."""
    tree = Path(workdir) / ("%s_%s" % (spec["name"], spec["version"].replace(":", "%3a")))
    (tree / "DEBIAN").mkdir(parents=True)
    control = ["Package: " + spec["name"], "Version: " + spec["version"], "Architecture: all",
               "Maintainer: " + MAINTAINER, "Section: misc",
               "Priority: optional"]
    if spec["depends"]:
        control.append("Depends: " + ", ".join(spec["depends"]))
    if spec["conflicts"]:
        control.append("Conflicts: " + ", ".join(spec["conflicts"]))
    owner = "the distribution's" if spec["name"].startswith("linux-headers-") else "NVIDIA's"
    control.append("Description: stand-in for %s %s (gpucluster.acceptance tests)" % (owner, spec["name"]))
    (tree / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
    files = dict(spec["files"])
    files["%s/%s/VERSION" % (ROOT, spec["name"])] = (spec["version"] + "\n", 0o644)
    for path, (text, mode) in files.items():
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
    deb = Path(out_dir) / ("%s_%s_all.deb" % (spec["name"], spec["version"].replace(":", "%3a")))
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", str(tree), str(deb)],
                   check=True, stdout=subprocess.DEVNULL)
    return deb, control


def index_entry(deb, control, out_dir):
    data = deb.read_bytes()
    lines = [line for line in control if not line.startswith("Description:")]
    lines += ["Filename: ./" + os.path.relpath(deb, out_dir), "Size: %d" % len(data),
              "MD5sum: " + hashlib.md5(data).hexdigest(), "SHA256: " + hashlib.sha256(data).hexdigest(),
              next(line for line in control if line.startswith("Description:"))]
    return "\n".join(lines) + "\n"


def build(out_dir):
    out = Path(out_dir).resolve()
    specs = package_specs()
    fingerprint = hashlib.sha256(json.dumps([specs, DCGMI], sort_keys=True).encode()).hexdigest()
    stamp = out / ".standin-stamp"
    if stamp.exists() and stamp.read_text().strip() == fingerprint and (out / "Packages").exists():
        return out
    if shutil.which("dpkg-deb") is None:
        raise SystemExit("standin_repo: dpkg-deb is missing (Debian's dpkg package)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    entries = []
    with tempfile.TemporaryDirectory() as work:
        for spec in specs:
            deb, control = build_deb(spec, work, out)
            entries.append(index_entry(deb, control, out))
    write_index(out, entries)
    stamp.write_text(fingerprint + "\n")
    return out


def write_index(out, entries):
    """Packages (the entries) and an unsigned Release of a flat repository in out."""
    packages = "\n".join(entries).encode()
    (out / "Packages").write_bytes(packages)
    release = ["Origin: gpucluster-standin", "Label: gpucluster-standin", "Suite: ./", "Architectures: all",
               "Date: Thu, 01 Jan 2026 00:00:00 UTC",
               "Description: stand-in NVIDIA packages for gpucluster.acceptance tests", "SHA256:"]
    release.append(" %s %d Packages" % (hashlib.sha256(packages).hexdigest(), len(packages)))
    (out / "Release").write_text("\n".join(release) + "\n")


def without(repo, out_dir, names):
    """A copy of the built repository at repo without the packages `names` (a host whose package
    sources lack them); the .debs are linked, not copied. Returns out_dir."""
    repo, out = Path(repo).resolve(), Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for entry in (repo / "Packages").read_text().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in entry.strip().splitlines() if ": " in line)
        if not fields or fields["Package"] in names:
            continue
        deb = fields["Filename"][len("./"):]
        if not (out / deb).exists():
            (out / deb).symlink_to(repo / deb)
        entries.append(entry.strip("\n") + "\n")
    write_index(out, entries)
    return out


def installed_standins():
    """Names of the stand-in packages dpkg knows as installed (or half-removed)."""
    out = subprocess.run(["dpkg-query", "--show", "--showformat=${Package}\t${Maintainer}\t${db:Status-Status}\n"],
                         capture_output=True, text=True, check=False).stdout
    names = []
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[1] == MAINTAINER and fields[2] not in ("not-installed", ""):
            names.append(fields[0])
    return names


def reset():
    """Purge the stand-in packages and the roles' apt source and pins for the stand-in repository."""
    names = installed_standins()
    if names:
        subprocess.run(["dpkg", "--purge", "--force-depends"] + names, check=True, stdout=subprocess.DEVNULL)
    for path in [Path("/etc/apt/sources.list.d/%s.list" % REPO_NAME)] + sorted(
            Path("/etc/apt/preferences.d").glob(REPO_NAME + "-*.pref")):
        if path.exists():
            path.unlink()
    return names


def main(argv):
    if argv[1:] == ["--reset"]:
        print("purged: " + (" ".join(reset()) or "nothing"))
        return 0
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    print(build(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
