"""A hand-made sysfs and procfs tree of an 8-GPU HGX H100 node, and stand-ins for modprobe, modinfo and dkms.

nvidia_driver reads the GPUs from <sysfs_root>/bus/pci/devices and the nvidia module from
<sysfs_root>/module/nvidia and <procfs_root>/modules; the tests point those roots here. The layout
follows the kernel's: devices under sys/devices/pci0000:00/, bus/pci/devices/ holding links to them,
a bound device's ``driver`` link into bus/pci/drivers/<name>. Vendor/device/class values are the real
ones (0x10de; H100 SXM5 0x2330 class 0x030200 "3D controller"; third-generation NVSwitch 0x22a3 class
0x068000 "Bridge"); the bus addresses are made up.

The stand-in tools (write_tools) go first on PATH: modprobe either fails as kmod's does when no module
was built for the kernel, or "loads" the module into the fake tree; modinfo finds no module; dkms
reports the module source as added but not built. Each call is appended to <bin>/calls.log.

Usage: python fake_gpu_host.py build ROOT [--gpus N] [--nvswitches N] [--module VERSION]
       python fake_gpu_host.py load ROOT VERSION
"""
import argparse
import os
import sys
from pathlib import Path

GPUS = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
        "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]
NVSWITCHES = ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
OTHERS = [("0000:00:00.0", "0x8086", "0x09a2", "0x060000"),   # host bridge
          ("0000:1a:00.0", "0x15b3", "0x1021", "0x020700"),   # ConnectX-7, InfiniBand
          ("0000:c1:00.0", "0x144d", "0xa80a", "0x010802")]   # NVMe
OTHER_MODULES = ["mlx5_ib 483328 0 - Live 0x0000000000000000", "mlx5_core 2383872 1 mlx5_ib, Live 0x0000000000000000",
                 "nvme 57344 3 - Live 0x0000000000000000"]
NVIDIA_MODULE = "nvidia 54042624 92 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)"

MODPROBE_FAIL = """#!/bin/sh
echo "modprobe $*" >> {calls}
echo "modprobe: FATAL: Module nvidia not found in directory /lib/modules/$(uname -r)" >&2
exit 1
"""
MODPROBE_LOAD = """#!/bin/sh
echo "modprobe $*" >> {calls}
exec {python} {helper} load {root} {version}
"""
MODINFO = """#!/bin/sh
echo "modinfo $*" >> {calls}
echo "modinfo: ERROR: Module nvidia not found." >&2
exit 1
"""
DKMS = """#!/bin/sh
echo "dkms $*" >> {calls}
[ "$1" = status ] && echo "nvidia/{version}: added"
exit 0
"""


def _device(sys_root, address, vendor, device, pci_class):
    path = sys_root / "devices" / "pci0000:00" / address
    path.mkdir(parents=True, exist_ok=True)
    for name, value in (("vendor", vendor), ("device", device), ("class", pci_class)):
        (path / name).write_text(value + "\n")
    link = sys_root / "bus" / "pci" / "devices" / address
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(Path("..", "..", "..", "devices", "pci0000:00", address))


def build(root, gpus=8, nvswitches=4, module=None):
    """The tree of a node with `gpus` H100s and `nvswitches` NVSwitches; the nvidia module loaded when
    `module` (its version) is given. Returns {"sysfs_root": ..., "procfs_root": ...}."""
    root = Path(root)
    sys_root, proc_root = root / "sys", root / "proc"
    for address, vendor, device, pci_class in OTHERS:
        _device(sys_root, address, vendor, device, pci_class)
    for address in GPUS[:gpus]:
        _device(sys_root, address, "0x10de", "0x2330", "0x030200")
    for address in NVSWITCHES[:nvswitches]:
        _device(sys_root, address, "0x10de", "0x22a3", "0x068000")
    proc_root.mkdir(parents=True, exist_ok=True)
    (proc_root / "modules").write_text("\n".join(OTHER_MODULES) + "\n")
    if module:
        load(root, module)
    return {"sysfs_root": str(sys_root), "procfs_root": str(proc_root)}


def load(root, version, unbound=None):
    """Load the nvidia module into the tree: module/nvidia/version, /proc/modules, and every GPU bound
    to it except those in `unbound` ({address: other driver, or None for no driver})."""
    root = Path(root)
    sys_root = root / "sys"
    unbound = unbound or {}
    (sys_root / "module" / "nvidia").mkdir(parents=True, exist_ok=True)
    (sys_root / "module" / "nvidia" / "version").write_text(version + "\n")
    modules = (root / "proc" / "modules").read_text()
    if not modules.startswith("nvidia "):
        (root / "proc" / "modules").write_text(NVIDIA_MODULE + "\n" + modules)
    for device in sorted((sys_root / "bus" / "pci" / "devices").iterdir()):
        if (device / "vendor").read_text().strip() != "0x10de" or \
                not (device / "class").read_text().startswith("0x03"):
            continue
        driver = unbound.get(device.name, "nvidia")
        link = device.resolve() / "driver"
        if link.is_symlink():
            link.unlink()
        if driver:
            (sys_root / "bus" / "pci" / "drivers" / driver).mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path("..", "..", "..", "bus", "pci", "drivers", driver))


def write_tools(bin_dir, root, modprobe="fail", version="550.127.05"):
    """Stand-in modprobe (fail: as kmod without a module for the kernel; load: into the fake tree),
    modinfo and dkms in bin_dir. Returns bin_dir."""
    bin_dir = Path(bin_dir)
    bin_dir.mkdir(parents=True, exist_ok=True)
    values = {"calls": str(bin_dir / "calls.log"), "python": sys.executable, "helper": str(Path(__file__).resolve()),
              "root": str(Path(root).resolve()), "version": version}
    scripts = {"modprobe": MODPROBE_FAIL if modprobe == "fail" else MODPROBE_LOAD, "modinfo": MODINFO, "dkms": DKMS}
    for name, text in scripts.items():
        (bin_dir / name).write_text(text.format(**values))
        os.chmod(bin_dir / name, 0o755)
    return bin_dir


def calls(bin_dir):
    """The stand-in tools' calls so far, one "tool args" string each."""
    log = Path(bin_dir) / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("build")
    make.add_argument("root")
    make.add_argument("--gpus", type=int, default=8)
    make.add_argument("--nvswitches", type=int, default=4)
    make.add_argument("--module")
    loading = sub.add_parser("load")
    loading.add_argument("root")
    loading.add_argument("version")
    args = parser.parse_args(argv[1:])
    if args.command == "build":
        print(build(args.root, args.gpus, args.nvswitches, args.module))
    else:
        load(args.root, args.version)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
