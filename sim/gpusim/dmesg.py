# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``dmesg`` [-T|--ctime|--time-format=iso|-t]: a normal boot tail plus the node's faults.

Kernel lines as real hosts log them: NVRM module load, ``NVRM: GPU at PCI:0000:18:00: GPU-<uuid>``
and ``NVRM: GPU Board Serial Number: ...`` before a GPU's first Xid, then
``NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.``;
RmInitAdapter failures for a missing GPU; mlx5_core ``Port: 1 Link DOWN`` for a down NIC.
Timestamps are seconds since boot (``[%5lu.%06lu]``) or, with -T, ``[Wed Jul 31 23:14:18 2024]``.
"""
from __future__ import annotations

import random
import time

from . import model
from .common import Result

KERNEL = "5.15.0-125-generic"
BUILD = {
    "565.57.01": "Thu Oct 10 12:29:05 UTC 2024", "570.86.15": "Thu Jan 23 19:35:52 UTC 2025",
    "570.124.06": "Wed Feb 26 01:55:10 UTC 2025", "535.183.01": "Sun May 12 19:39:15 UTC 2024",
    "570.133.20": "Wed Apr  2 09:48:59 UTC 2025",
}
DMI = {
    "hgx_h100_sxm": "NVIDIA DGXH100/DGXH100, BIOS 1.6.7 09/27/2024",
    "hgx_h200": "NVIDIA DGXH200/DGXH200, BIOS 1.6.7 09/27/2024",
    "hgx_b200": "NVIDIA DGXB200/DGXB200, BIOS 1.3.2 01/14/2025",
    "a100_sxm_80gb": "NVIDIA DGXA100 920-23687-2530-000/DGXA100, BIOS 1.25 03/02/2024",
    "gb200_nvl72_tray": "NVIDIA GB200 NVL/P3809-BMC, BIOS 02.04.06 02/12/2025",
}


def xid_text(xid, r):
    pid = r.randint(20000, 3999999)
    proc = r.choice(("python", "pt_main_thread", "python3.10"))
    unknown = "pid='<unknown>', name=<unknown>, "
    texts = {
        13: "pid=%d, name=%s, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address" % (pid, proc),
        31: "pid=%d, name=%s, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ "
            "0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE" % (pid, proc),
        43: "pid=%d, name=%s, Ch 00000008" % (pid, proc),
        45: "pid=%d, name=%s, Ch 00000010" % (pid, proc),
        48: unknown + "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
                      "physAddr 0x%x partition %d, subpartition %d." % (
                          r.randint(0x100000, 0x7fffffff), r.randint(0, 7), r.randint(0, 1)),
        61: unknown + "Internal micro-controller breakpoint/warning (0x%06x)" % r.randint(0, 0xffffff),
        62: unknown + "Internal micro-controller halt (0x%06x)" % r.randint(0, 0xffffff),
        63: "pid=%d, Row Remapper: New row marked for remapping, reset gpu to activate." % pid,
        64: unknown + "Row Remapper: Failed to remap row 0x%x." % r.randint(0x100, 0xffff),
        74: unknown + "NVLink: fatal error detected on link %d(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)" % r.randint(0, 17),
        79: unknown + "GPU has fallen off the bus.",
        92: unknown + "High single-bit ECC error rate",
        94: unknown + "Contained: SM (0x1). RST: No, D-RST: No",
        95: unknown + "Uncontained: FBHUB. RST: Yes, D-RST: No",
        119: "pid=%d, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected "
             "function 103 (GSP_RM_ALLOC) (0x2081 0x4)." % pid,
        120: unknown + "GSP task timeout @ pc:0x%x, task: 1" % r.randint(0x100000, 0x2ffffff),
    }
    return texts.get(xid, unknown + "Unspecified error (Xid %d)" % xid)


def events(node):
    """[(uptime seconds, kernel message)] of the node, in time order."""
    hw = node.hw
    r = random.Random("dmesg|%s|%s" % (node.spec.seed, node.name))
    ev = [
        (0.0, "Linux version %s (buildd@lcy02-amd64-049) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU "
              "Binutils for Ubuntu) 2.38) #135-Ubuntu SMP Fri Sep 27 13:53:58 UTC 2024 (Ubuntu 5.15.0-125.135-generic "
              "5.15.167)" % KERNEL),
        (0.0, "Command line: BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=%08x-%04x-%04x-%04x-%012x ro console=tty0 "
              "console=ttyS0,115200n8 iommu=pt" % (KERNEL, r.getrandbits(32), r.getrandbits(16), r.getrandbits(16),
                                                   r.getrandbits(16), r.getrandbits(48))),
        (0.0, "DMI: %s" % DMI.get(node.spec.profile_name, "NVIDIA HGX")),
    ]
    t = 2.0 + r.random()
    for g in node.gpus:
        t += r.uniform(0.0005, 0.003)
        if g.present:
            ev.append((t, "pci %s:00.0: [10de:%s] type 00 class 0x030200" % (g.short_bus[:-3], hw["pci_device_id"])))
    t = 7.0 + r.random()
    for n in node.nics:
        t += r.uniform(0.02, 0.2)
        ev.append((t, "mlx5_core %s: firmware version: %s" % (n.pci, n.fw)))
        ev.append((t + 0.0004, "mlx5_core %s: %s" % (n.pci, _pcie_line(node.hw, n))))
    t = 14.0 + r.random()
    build = BUILD.get(node.driver, "Tue Mar  4 12:00:00 UTC 2025")
    ev += [(t, "nvidia: loading out-of-tree module taints kernel."),
           (t + 0.0001, "nvidia: module license 'NVIDIA' taints kernel."),
           (t + 0.031, "nvidia-nvlink: Nvlink Core is being initialized, major device number 508"),
           (t + 0.035, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  %s" % (node.driver, build)),
           (t + 0.092, "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  %s  %s"
            % (node.driver, build))]
    t += 0.11
    for g in node.gpus:
        if not g.present:
            t += 2.3
            ev.append((t, "NVRM: GPU %s:00.0: RmInitAdapter failed! (0x24:0x72:1568)" % g.short_bus[:-3]))
            ev.append((t + 0.0003, "NVRM: GPU %s:00.0: rm_init_adapter failed, device minor number %d"
                       % (g.short_bus[:-3], g.slot)))
    t = 21.0 + r.random()
    for n in node.nics:
        t += r.uniform(0.01, 0.4)
        ev.append((t, "mlx5_core %s %s: Port: 1 Link ACTIVE" % (n.pci, n.name)))
        if n.state != "Active":
            ev.append((1.6 * 86400 + r.uniform(0, 7200), "mlx5_core %s %s: Port: 1 Link DOWN" % (n.pci, n.name)))
    seen = set()
    for slot, xid, count in node.xids:
        g = node.gpus[slot]
        rx = random.Random("xid|%s|%s|%s|%s" % (node.spec.seed, node.name, slot, xid))
        start = 2 * 86400 + rx.uniform(0, 20 * 3600)
        for k in range(count):
            at = start + k * rx.uniform(30, 900)
            if slot not in seen:
                seen.add(slot)
                ev.append((at - 0.000004, "NVRM: GPU at PCI:%s: %s" % (g.short_bus, g.uuid)))
                ev.append((at - 0.000002, "NVRM: GPU Board Serial Number: %s" % g.serial))
            ev.append((at, "NVRM: Xid (PCI:%s): %d, %s" % (g.short_bus, xid, xid_text(xid, rx))))
    ev.sort(key=lambda e: e[0])
    return ev


def _ctime(epoch):
    tm = time.localtime(epoch)
    return time.strftime("%a %b ", tm) + "%2d" % tm.tm_mday + time.strftime(" %H:%M:%S %Y", tm)


def _iso(epoch):
    tm = time.localtime(epoch)
    off = time.strftime("%z", tm) or "+0000"
    return time.strftime("%Y-%m-%dT%H:%M:%S", tm) + ",%06d" % int((epoch % 1) * 1e6) + off[:3] + ":" + off[3:]


# util-linux dmesg as a user when kernel.dmesg_restrict=1 (sys-utils/dmesg.c: "read kernel buffer failed").
REFUSED = "dmesg: read kernel buffer failed: Operation not permitted\n"
# journalctl for a user outside adm/systemd-journal: the notice on stderr, no entry on stdout.
JOURNAL_HINT = ("Hint: You are currently not seeing messages from other users and the system.\n"
                "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"
                "      Pass -q to turn off this notice.\n")


def journalctl(node, args):
    """Fake ``journalctl -k [-o short-iso] [--no-pager] [-q] [-b]``: the kernel messages of this boot
    as ``2024-01-15T10:23:45+0000 gpu001 kernel: text``; for a user who may not read the journal
    (unprivileged without journal) the notice and ``-- No entries --``."""
    quiet = "-q" in args or "--quiet" in args
    allowed = ("-k", "--dmesg", "--no-pager", "-q", "--quiet", "-b", "--boot", "-o", "short-iso", "--output=short-iso")
    for a in args:
        if a not in allowed:
            return Result("", "journalctl: unrecognized option '%s'\n" % a, 1)
    unprivileged = node.spec.unprivileged
    if unprivileged and not unprivileged.get("journal"):
        return Result("-- No entries --\n" if not quiet else "", "" if quiet else JOURNAL_HINT, 0, "dmesg")
    # short-iso as systemd before 252 prints it (ISO 8601, whole seconds, +0000 offset)
    lines = ["%s %s kernel: %s" % (time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(node.boot + uptime)),
                                   node.name, text) for uptime, text in events(node) if node.boot + uptime <= node.now]
    return Result("\n".join(lines) + "\n", "", 0, "dmesg")


def run(node, args):
    if node.spec.unprivileged:
        return Result("", REFUSED, 1, "dmesg")
    fmt = "raw"
    for a in args:
        if a in ("-T", "--ctime"):
            fmt = "ctime"
        elif a in ("-t", "--notime"):
            fmt = "none"
        elif a in ("--time-format=iso", "--time-format=ISO"):
            fmt = "iso"
        elif a.startswith("--time-format="):
            fmt = {"ctime": "ctime", "notime": "none", "raw": "raw", "reltime": "raw", "delta": "raw"}.get(
                a.split("=", 1)[1], "raw")
        elif a in ("-k", "--kernel", "-x", "--decode", "-L", "--color=never", "--nopager", "-P", "-H", "--human",
                   "-l", "--level", "err,warn", "err", "warn", "-w", "--follow") or a.startswith("--level="):
            continue
        else:
            return Result("", "dmesg: unrecognized option '%s'\nTry 'dmesg --help' for more information.\n" % a, 1)
    now = node.now
    lines = []
    for uptime, text in events(node):
        at = node.boot + uptime
        if at > now:
            continue
        if fmt == "raw":
            us = int(round(uptime * 1e6))
            lines.append("[%5d.%06d] %s" % (us // 1000000, us % 1000000, text))
        elif fmt == "ctime":
            lines.append("[%s] %s" % (_ctime(at), text))
        elif fmt == "iso":
            lines.append("%s %s" % (_iso(at), text))
        else:
            lines.append(text)
    return Result("\n".join(lines) + "\n", "", 0, "dmesg")


def _pcie_line(hw, nic):
    """The kernel's link report at probe (pcie_print_link_status): 'limited by' a link below the cap."""
    top = hw["nic_pcie_gen"]
    cap = model.pcie_link_gbps(top, 16)
    if (nic.pcie_gen, nic.pcie_width) == (top, 16):
        return "%.3f Gb/s available PCIe bandwidth (%s GT/s PCIe x16 link)" % (cap, model.PCIE_GTS[top])
    return ("%.3f Gb/s available PCIe bandwidth, limited by %s GT/s PCIe x%d link at %s (capable of "
            "%.3f Gb/s with %s GT/s PCIe x16 link)" % (
                model.pcie_link_gbps(nic.pcie_gen, nic.pcie_width), model.PCIE_GTS[nic.pcie_gen], nic.pcie_width,
                nic.pci, cap, model.PCIE_GTS[top]))
