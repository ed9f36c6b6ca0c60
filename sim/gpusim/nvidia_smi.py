# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``nvidia-smi``: the summary table, -L, -q [-d ...], --query-gpu CSV, topo -m, nvlink -s, nvlink -e.

Layouts follow real driver 565.57.01 output of an 8x H100 80GB HBM3 node (the summary table and
``-q`` of https://github.com/thamada/nvidia-smi gls/H100SXMx8_smi.py, kept in
tests/fixtures/nvidia_smi/q_h100_sxm_8gpu_565.txt) and a GB200 ``topo -m`` captured with its SGR
underline. Options: ``-i/--id`` selects GPUs (visible indices, as on a real node).
"""
from __future__ import annotations

import os
import time

from . import hardware
from .common import Result
from .runstate import RunState

NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
             "the latest NVIDIA driver is installed and running.\n\n")
BAD_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"
KEY_WIDTH = 42

_REASONS = (  # -q "Clocks Event Reasons" rows: (label, bit, level)
    ("Idle", hardware.REASON_IDLE, 2),
    ("Applications Clocks Setting", hardware.REASON_APP_CLOCKS, 2),
    ("SW Power Cap", hardware.REASON_SW_POWER_CAP, 2),
    ("HW Slowdown", hardware.REASON_HW_SLOWDOWN, 2),
    ("HW Thermal Slowdown", hardware.REASON_HW_THERMAL, 3),
    ("HW Power Brake Slowdown", hardware.REASON_HW_POWER_BRAKE, 3),
    ("Sync Boost", hardware.REASON_SYNC_BOOST, 2),
    ("SW Thermal Slowdown", hardware.REASON_SW_THERMAL, 2),
    ("Display Clock Setting", hardware.REASON_DISPLAY_CLOCK, 2),
)

# -q -d NAME: which top-level sections of a GPU block to keep.
DISPLAY = {
    "MEMORY": ("FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage"),
    "UTILIZATION": ("Utilization",),
    "ECC": ("ECC Mode", "ECC Errors"),
    "TEMPERATURE": ("Temperature",),
    "POWER": ("GPU Power Readings", "GPU Memory Power Readings ", "Module Power Readings"),
    "CLOCK": ("Clocks", "Applications Clocks", "Default Applications Clocks", "Deferred Clocks", "Max Clocks",
              "Max Customer Boost Clocks", "Clock Policy"),
    "COMPUTE": ("Compute Mode",),
    "PIDS": ("Processes",),
    "PERFORMANCE": ("Performance State", "Clocks Event Reasons", "Sparse Operation Mode"),
    "PAGE_RETIREMENT": ("Retired Pages",),
    "ROW_REMAPPER": ("Remapped Rows",),
    "ACCOUNTING": ("Accounting Mode", "Accounting Mode Buffer Size"),
    "ENCODER_STATS": ("Encoder Stats",),
    "FBC_STATS": ("FBC Stats",),
    "VOLTAGE": ("Voltage",),
}


def _active(g, bit):
    return "Active" if g.reasons & bit else "Not Active"


def _yes(flag):
    return "Yes" if flag else "No"


def q_entries(node, g):
    """(level, key, value) rows of one GPU's ``-q`` block; value None for a section title."""
    hw = node.hw
    used = 1
    total = hw["memory_mib"]
    reserved = hw["memory_reserved_mib"]

    def pwr(watts):
        return "%.2f W" % watts
    rows = [
        (1, "Product Name", hw["gpu_name"]), (1, "Product Brand", "NVIDIA"),
        (1, "Product Architecture", hw["architecture"]), (1, "Display Mode", "Enabled"),
        (1, "Display Active", "Disabled"), (1, "Persistence Mode", "Enabled"), (1, "Addressing Mode", "None"),
        (1, "MIG Mode", None), (2, "Current", "Disabled"), (2, "Pending", "Disabled"),
        (1, "Accounting Mode", "Disabled"), (1, "Accounting Mode Buffer Size", "4000"),
        (1, "Driver Model", None), (2, "Current", "N/A"), (2, "Pending", "N/A"),
        (1, "Serial Number", g.serial), (1, "GPU UUID", g.uuid), (1, "Minor Number", str(g.slot)),
        (1, "VBIOS Version", node.vbios), (1, "MultiGPU Board", "No"), (1, "Board ID", "0x%x" % (int(g.bus, 16) << 8)),
        (1, "Board Part Number", hw["board_part_number"]), (1, "GPU Part Number", hw["gpu_part_number"]),
        (1, "FRU Part Number", "N/A"),
        (1, "Platform Info", None), (2, "RACK Serial Number", "N/A"), (2, "Chassis Physical Slot Number", "N/A"),
        (2, "Compute Slot Index", "N/A"), (2, "Node Index", "N/A"), (2, "Peer Type", "N/A"),
        (2, "Module Id", str(g.module_id)),
        (1, "Inforom Version", None), (2, "Image Version", hw["inforom_image"]), (2, "OEM Object", "2.1"),
        (2, "ECC Object", hw["inforom_ecc"]), (2, "Power Management Object", "N/A"),
        (1, "Inforom BBX Object Flush", None), (2, "Latest Timestamp", "%s %s" % (
            time.strftime("%Y/%m/%d", time.localtime(node.boot)), g.bbx_ts)),
        (2, "Latest Duration", "%d us" % g.bbx_us),
        (1, "GPU Operation Mode", None), (2, "Current", "N/A"), (2, "Pending", "N/A"),
        (1, "GPU C2C Mode", "Disabled"),
        (1, "GPU Virtualization Mode", None), (2, "Virtualization Mode", "None"), (2, "Host VGPU Mode", "N/A"),
        (2, "vGPU Heterogeneous Mode", "N/A"),
        (1, "GPU Reset Status", None), (2, "Reset Required", "No"), (2, "Drain and Reset Recommended", "No"),
        (1, "GPU Recovery Action", "None"), (1, "GSP Firmware Version", node.driver),
        (1, "IBMNPU", None), (2, "Relaxed Ordering Mode", "N/A"),
        (1, "PCI", None), (2, "Bus", "0x%s" % g.bus.upper()), (2, "Device", "0x00"),
        (2, "Domain", "0x%s" % g.domain[-4:]), (2, "Base Classcode", "0x3"), (2, "Sub Classcode", "0x2"),
        (2, "Device Id", "0x%s10DE" % hw["pci_device_id"].upper()), (2, "Bus Id", g.bus_id),
        (2, "Sub System Id", hw["pci_subsystem_id"]),
        (2, "GPU Link Info", None), (3, "PCIe Generation", None), (4, "Max", str(hw["pcie_gen"])),
        (4, "Current", str(g.pcie_gen)), (4, "Device Current", str(g.pcie_gen)),
        (4, "Device Max", str(hw["pcie_gen"])), (4, "Host Max", str(hw["pcie_gen"])),
        (3, "Link Width", None), (4, "Max", "16x"), (4, "Current", "%dx" % g.pcie_width),
        (2, "Bridge Chip", None), (3, "Type", "N/A"), (3, "Firmware", "N/A"),
        (2, "Replays Since Reset", str(g.replays)), (2, "Replay Number Rollovers", "0"),
        (2, "Tx Throughput", "%d KB/s" % g.tx_kbs), (2, "Rx Throughput", "%d KB/s" % g.rx_kbs),
        (2, "Atomic Caps Outbound", "FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64 "),
        (2, "Atomic Caps Inbound", "FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64 "),
        (1, "Fan Speed", "N/A"), (1, "Performance State", g.pstate),
        (1, "Clocks Event Reasons", None),
    ]
    rows += [(level, label, _active(g, bit)) for label, bit, level in _REASONS]
    rows += [
        (1, "Sparse Operation Mode", "Disabled"),
        (1, "FB Memory Usage", None), (2, "Total", "%d MiB" % total), (2, "Reserved", "%d MiB" % reserved),
        (2, "Used", "%d MiB" % used), (2, "Free", "%d MiB" % (total - reserved - used)),
        (1, "BAR1 Memory Usage", None), (2, "Total", "%d MiB" % hw["bar1_mib"]), (2, "Used", "1 MiB"),
        (2, "Free", "%d MiB" % (hw["bar1_mib"] - 1)),
        (1, "Conf Compute Protected Memory Usage", None), (2, "Total", "0 MiB"), (2, "Used", "0 MiB"),
        (2, "Free", "0 MiB"),
        (1, "Compute Mode", "Default"),
        (1, "Utilization", None), (2, "Gpu", "%d %%" % g.util), (2, "Memory", "%d %%" % (g.util // 2)),
        (2, "Encoder", "0 %"), (2, "Decoder", "0 %"), (2, "JPEG", "0 %"), (2, "OFA", "0 %"),
        (1, "Encoder Stats", None), (2, "Active Sessions", "0"), (2, "Average FPS", "0"), (2, "Average Latency", "0"),
        (1, "FBC Stats", None), (2, "Active Sessions", "0"), (2, "Average FPS", "0"), (2, "Average Latency", "0"),
        (1, "ECC Mode", None), (2, "Current", "Enabled"), (2, "Pending", "Enabled"),
        (1, "ECC Errors", None), (2, "Volatile", None),
        (3, "SRAM Correctable", "0"), (3, "SRAM Uncorrectable Parity", "0"), (3, "SRAM Uncorrectable SEC-DED", "0"),
        (3, "DRAM Correctable", "0"), (3, "DRAM Uncorrectable", str(g.ecc_dram_unc)),
        (2, "Aggregate", None),
        (3, "SRAM Correctable", "0"), (3, "SRAM Uncorrectable Parity", "0"), (3, "SRAM Uncorrectable SEC-DED", "0"),
        (3, "DRAM Correctable", "0"), (3, "DRAM Uncorrectable", str(g.ecc_dram_unc)),
        (3, "SRAM Threshold Exceeded", "No"),
        (2, "Aggregate Uncorrectable SRAM Sources", None), (3, "SRAM L2", "0"), (3, "SRAM SM", "0"),
        (3, "SRAM Microcontroller", "0"), (3, "SRAM PCIE", "0"), (3, "SRAM Other", "0"),
        (1, "Retired Pages", None), (2, "Single Bit ECC", "N/A"), (2, "Double Bit ECC", "N/A"),
        (2, "Pending Page Blacklist", "N/A"),
        (1, "Remapped Rows", None), (2, "Correctable Error", str(g.remap_corr)),
        (2, "Uncorrectable Error", str(g.remap_unc)), (2, "Pending", _yes(g.remap_pending)),
        (2, "Remapping Failure Occurred", _yes(g.remap_failure)),
        (2, "Bank Remap Availability Histogram", None),
        (3, "Max", "%d bank(s)" % (hw["bank_remap_max"] - g.remap_unc - g.remap_corr - int(g.remap_pending))),
        (3, "High", "%d bank(s)" % (g.remap_unc + g.remap_corr + int(g.remap_pending))),
        (3, "Partial", "0 bank(s)"), (3, "Low", "0 bank(s)"), (3, "None", "0 bank(s)"),
        (1, "Temperature", None), (2, "GPU Current Temp", "%d C" % g.temp), (2, "GPU T.Limit Temp", "%d C" % g.tlimit),
        (2, "GPU Shutdown T.Limit Temp", "-8 C"), (2, "GPU Slowdown T.Limit Temp", "-2 C"),
        (2, "GPU Max Operating T.Limit Temp", "0 C"), (2, "GPU Target Temperature", "N/A"),
        (2, "Memory Current Temp", "%d C" % g.mem_temp), (2, "Memory Max Operating T.Limit Temp", "0 C"),
        (1, "GPU Power Readings", None), (2, "Power Draw", pwr(g.power)),
        (2, "Current Power Limit", pwr(hw["power_limit_w"])), (2, "Requested Power Limit", pwr(hw["power_limit_w"])),
        (2, "Default Power Limit", pwr(hw["power_limit_w"])), (2, "Min Power Limit", pwr(hw["power_min_w"])),
        (2, "Max Power Limit", pwr(hw["power_limit_w"])),
        (1, "GPU Memory Power Readings ", None), (2, "Power Draw", pwr(g.mem_power)),
        (1, "Module Power Readings", None), (2, "Power Draw", "N/A"), (2, "Current Power Limit", "N/A"),
        (2, "Requested Power Limit", "N/A"), (2, "Default Power Limit", "N/A"), (2, "Min Power Limit", "N/A"),
        (2, "Max Power Limit", "N/A"),
        (1, "Clocks", None), (2, "Graphics", "%d MHz" % g.sm_mhz), (2, "SM", "%d MHz" % g.sm_mhz),
        (2, "Memory", "%d MHz" % g.mem_mhz), (2, "Video", "%d MHz" % g.video_mhz),
        (1, "Applications Clocks", None), (2, "Graphics", "%d MHz" % hw["max_sm_mhz"]),
        (2, "Memory", "%d MHz" % hw["max_mem_mhz"]),
        (1, "Default Applications Clocks", None), (2, "Graphics", "%d MHz" % hw["max_sm_mhz"]),
        (2, "Memory", "%d MHz" % hw["max_mem_mhz"]),
        (1, "Deferred Clocks", None), (2, "Memory", "N/A"),
        (1, "Max Clocks", None), (2, "Graphics", "%d MHz" % hw["max_sm_mhz"]), (2, "SM", "%d MHz" % hw["max_sm_mhz"]),
        (2, "Memory", "%d MHz" % hw["max_mem_mhz"]), (2, "Video", "%d MHz" % hw["max_video_mhz"]),
        (1, "Max Customer Boost Clocks", None), (2, "Graphics", "%d MHz" % hw["max_sm_mhz"]),
        (1, "Clock Policy", None), (2, "Auto Boost", "N/A"), (2, "Auto Boost Default", "N/A"),
        (1, "Voltage", None), (2, "Graphics", "%s mV" % g.voltage),
    ] + _fabric_rows(node, g) + [
        (1, "Processes", "None"),
        (1, "Capabilities", None), (2, "EGM", "disabled"),
    ]
    return rows


def _fabric_rows(node, g):
    """-q's Fabric section: N/A where the GPU reports no fabric (Ampere, as the real RTX 3090 capture
    in tests/fixtures/nvidia_smi shows), else the node's registration (NodeState.fabric)."""
    info = node.fabric(g.slot)
    if info is None:
        return [(1, "Fabric", None), (2, "State", "N/A"), (2, "Status", "N/A"), (2, "CliqueId", "N/A"),
                (2, "ClusterUUID", "N/A"), (2, "Health", None), (3, "Bandwidth", "N/A")]
    return [(1, "Fabric", None), (2, "State", info["state"]), (2, "Status", info["status"]),
            (2, "CliqueId", str(info["clique_id"])), (2, "ClusterUUID", info["cluster_uuid"]),
            (2, "Health", None)] + [(3, row, value) for row, value in info["health"]]


def _fabric_field(key):
    def get(n, g):
        info = n.fabric(g.slot)
        return "[N/A]" if info is None else str(info[key])
    return get


def _format_row(level, key, value):
    text = "    " * level + key
    if value is None:
        return text
    return text.ljust(KEY_WIDTH) + ": " + value


def _filter_sections(rows, keep):
    out, keeping = [], False
    for level, key, value in rows:
        if level == 1:
            keeping = key in keep
        if keeping:
            out.append((level, key, value))
    return out


def render_q(node, gpus, displays=None):
    now = time.asctime(time.localtime(node.now))
    lines = ["", "==============NVSMI LOG==============", "",
             _format_row(0, "Timestamp", now), _format_row(0, "Driver Version", node.driver),
             _format_row(0, "CUDA Version", node.cuda), "",
             _format_row(0, "Attached GPUs", str(len(node.visible_gpus)))]
    keep = None
    if displays:
        keep = set()
        for d in displays:
            keep.update(DISPLAY[d])
    for g in gpus:
        lines.append("GPU %s" % g.bus_id)
        rows = q_entries(node, g)
        if keep is not None:
            rows = _filter_sections(rows, keep)
        lines += [_format_row(*row) for row in rows]
        lines.append("")
    return "\n".join(lines) + "\n"


# -- summary table ------------------------------------------------------------------------------
_TABLE_HEAD = (
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI {smi:<23}Driver Version: {drv:<15}CUDA Version: {cuda:<9}|\n"
    "|-----------------------------------------+------------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                        |               MIG M. |\n"
    "|=========================================+========================+======================|\n"
)
_SEP = "+-----------------------------------------+------------------------+----------------------+\n"
_PROCESSES = (
    " " * 89 + "\n"
    "+-----------------------------------------------------------------------------------------+\n"
    "| Processes:                                                                              |\n"
    "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |\n"
    "|        ID   ID                                                               Usage      |\n"
    "|=========================================================================================|\n"
    "|  No running processes found                                                             |\n"
    "+-----------------------------------------------------------------------------------------+\n"
)


def _name_cell(name, width=31):
    return name if len(name) <= width else name[:width - 3] + "..."


def render_table(node, gpus=None):
    hw = node.hw
    gpus = node.visible_gpus if gpus is None else gpus
    out = [time.asctime(time.localtime(node.now)) + "       \n",
           _TABLE_HEAD.format(smi=node.driver, drv=node.driver, cuda=node.cuda)]
    for g in gpus:
        line1 = "|%4d  %-31s%-4s|   %s %3s | %20s |\n" % (
            g.index, _name_cell(hw["gpu_name"]), "On", g.bus_id[-16:], "Off", str(g.ecc_dram_unc))
        power = "%dW / %4dW" % (int(round(g.power)), hw["power_limit_w"])
        line2 = "| %3s  %4s    %-4s%22s | %10s / %9s | %7s %12s |\n" % (
            "N/A", "%dC" % g.temp, g.pstate, power, "%dMiB" % 1, "%dMiB" % hw["memory_mib"],
            "%d%%" % g.util, "Default")
        line3 = "|%41s|%24s| %20s |\n" % ("", "", "Disabled")
        out += [line1, line2, line3, _SEP]
    out.append(_PROCESSES)
    return "".join(out)


def render_list(node, gpus):
    return "".join("GPU %d: %s (UUID: %s)\n" % (g.index, node.hw["gpu_name"], g.uuid) for g in gpus)


# -- topo -m ------------------------------------------------------------------------------------
_TOPO_LEGEND = (
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)


def _pcie_relation(numa_a, numa_b, same_switch):
    if same_switch:
        return "PIX"
    return "NODE" if numa_a == numa_b else "SYS"


def render_topo(node):
    gpus = node.visible_gpus
    nics = node.nics + list(getattr(node, "storage_nics", []))
    head = ["GPU%d" % g.index for g in gpus] + ["NIC%d" % n.index for n in nics]
    out = ["\t\x1b[4m" + "\t".join(head + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]) + "\x1b[0m\n"]
    for g in gpus:
        cells = [node.link(g.slot, o.slot) for o in gpus]
        cells += [_pcie_relation(g.numa, n.numa, n.index == g.slot) for n in nics]
        from .model import cpu_affinity  # pylint: disable=import-outside-toplevel
        out.append("GPU%d\t%s\t%s\t%d\t\tN/A\n" % (g.index, "\t".join(cells), cpu_affinity(node.hw, g.numa), g.numa))
    for n in nics:
        cells = [_pcie_relation(n.numa, g.numa, n.index == g.slot) for g in gpus]
        cells += [" X " if o.index == n.index else _pcie_relation(n.numa, o.numa, False) for o in nics]
        out.append("NIC%d\t%s\t\t\t\t\n" % (n.index, "\t".join(cells)))
    out.append(_TOPO_LEGEND)
    out.append("\nNIC Legend:\n\n")
    out += ["  NIC%d: %s\n" % (n.index, n.name) for n in nics]
    out.append("\n")
    return "".join(out)


def render_nvlink_status(node, gpus):
    hw = node.hw
    out = []
    for g in gpus:
        inactive = 0
        for (a, b), link in node.nvlink.items():
            if g.slot in (a, b):
                k = int(link[2:]) if link.startswith("NV") else 0
                inactive = max(inactive, hw["nvlink"] - k)
        out.append("GPU %d: %s (UUID: %s)\n" % (g.index, hw["gpu_name"], g.uuid))
        for link in range(hw["nvlink"]):
            if link >= hw["nvlink"] - inactive:
                out.append("\t Link %d: <inactive>\n" % link)
            else:
                # as nvidia-smi prints the rate: 26.562, 53.125, but 50 (a B200, NVIDIA/nvbandwidth#44)
                out.append("\t Link %d: %s GB/s\n" % (link, ("%.3f" % hw["nvlink_gbps_per_link"]).rstrip("0").rstrip(".")))
    return "".join(out)


# nvidia-smi nvlink -e: Hopper's three counters per link, a blank line after each link's group
# (layout of the H100 output in stas00/ml-engineering, compute/accelerator/nvidia/debug.md).
NVLINK_COUNTERS = (("replay", "Replay Errors"), ("recovery", "Recovery Errors"), ("crc", "CRC Errors"))


def nvlink_counter_key(gpu, link, counter):
    """The RunState key of one NVLink error counter (nccl_tests bumps it, nvlink -e reads it)."""
    return "nvlink:%d:%d:%s" % (gpu, link, counter)


def render_nvlink_errors(node, gpus):
    state = RunState(os.environ.get("GPUCLUSTER_SIM_RUN") or None, node.name)
    faulty = set((f["gpu"], f["link"], f["counter"]) for f in node.nvlink_errors)
    out = []
    for g in gpus:
        out.append("GPU %d: %s (UUID: %s)\n" % (g.index, node.hw["gpu_name"], g.uuid))
        for link in range(node.hw["nvlink"]):
            for key, label in NVLINK_COUNTERS:
                value = state.bump(nvlink_counter_key(g.index, link, key), 0) if (g.index, link, key) in faulty else 0
                out.append("\t Link %d: %s: %d\n" % (link, label, value))
            out.append("\n")
    return "".join(out)


# -- --query-gpu ---------------------------------------------------------------------------------
def _reason_field(bit):
    return lambda n, g: _active(g, bit)


def _fields():
    def hw_(key):
        return lambda n, g: str(n.hw[key])

    def mhz(get):
        return lambda n, g: "%d MHz" % get(n, g)

    def watts(get):
        return lambda n, g: "%.2f W" % get(n, g)

    def unc(n, g):
        return str(g.ecc_dram_unc)

    def zero(n, g):
        return "0"

    def na(n, g):
        return "[N/A]"
    fields = {
        "timestamp": ("timestamp", lambda n, g: time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(n.now)) + ".%03d" % (int(n.now * 1000) % 1000)),
        "driver_version": ("driver_version", lambda n, g: n.driver),
        "count": ("count", lambda n, g: str(len(n.visible_gpus))),
        "name": ("name", lambda n, g: n.hw["gpu_name"]),
        "serial": ("serial", lambda n, g: g.serial),
        "uuid": ("uuid", lambda n, g: g.uuid),
        "pci.bus_id": ("pci.bus_id", lambda n, g: g.bus_id),
        "pci.domain": ("pci.domain", lambda n, g: "0x%s" % g.domain[-4:]),
        "pci.bus": ("pci.bus", lambda n, g: "0x%s" % g.bus.upper()),
        "pci.device": ("pci.device", lambda n, g: "0x00"),
        "pci.device_id": ("pci.device_id", lambda n, g: "0x%s10DE" % n.hw["pci_device_id"].upper()),
        "pci.sub_device_id": ("pci.sub_device_id", lambda n, g: n.hw["pci_subsystem_id"]),
        "pcie.link.gen.current": ("pcie.link.gen.current", lambda n, g: str(g.pcie_gen)),
        "pcie.link.gen.gpucurrent": ("pcie.link.gen.gpucurrent", lambda n, g: str(g.pcie_gen)),
        "pcie.link.gen.max": ("pcie.link.gen.max", lambda n, g: str(n.hw["pcie_gen"])),
        "pcie.link.gen.gpumax": ("pcie.link.gen.gpumax", lambda n, g: str(n.hw["pcie_gen"])),
        "pcie.link.gen.hostmax": ("pcie.link.gen.hostmax", lambda n, g: str(n.hw["pcie_gen"])),
        "pcie.link.width.current": ("pcie.link.width.current", lambda n, g: str(g.pcie_width)),
        "pcie.link.width.max": ("pcie.link.width.max", lambda n, g: "16"),
        "index": ("index", lambda n, g: str(g.index)),
        "display_mode": ("display_mode", lambda n, g: "Enabled"),
        "display_active": ("display_active", lambda n, g: "Disabled"),
        "persistence_mode": ("persistence_mode", lambda n, g: "Enabled"),
        "addressing_mode": ("addressing_mode", lambda n, g: "None"),
        "accounting.mode": ("accounting.mode", lambda n, g: "Disabled"),
        "accounting.buffer_size": ("accounting.buffer_size", lambda n, g: "4000"),
        "driver_model.current": ("driver_model.current", na),
        "driver_model.pending": ("driver_model.pending", na),
        "vbios_version": ("vbios_version", lambda n, g: n.vbios),
        "inforom.img": ("inforom.img", hw_("inforom_image")),
        "inforom.oem": ("inforom.oem", lambda n, g: "2.1"),
        "inforom.ecc": ("inforom.ecc", hw_("inforom_ecc")),
        "inforom.pwr": ("inforom.pwr", na),
        "gom.current": ("gom.current", na),
        "gom.pending": ("gom.pending", na),
        "fan.speed": ("fan.speed [%]", na),
        "pstate": ("pstate", lambda n, g: g.pstate),
        "clocks_event_reasons.supported": ("clocks_event_reasons.supported", lambda n, g: "0x00000000000001FF"),
        "clocks_event_reasons.active": ("clocks_event_reasons.active", lambda n, g: "0x%016X" % g.reasons),
        "clocks_event_reasons.gpu_idle": ("clocks_event_reasons.gpu_idle", _reason_field(hardware.REASON_IDLE)),
        "clocks_event_reasons.applications_clocks_setting": (
            "clocks_event_reasons.applications_clocks_setting", _reason_field(hardware.REASON_APP_CLOCKS)),
        "clocks_event_reasons.sw_power_cap": ("clocks_event_reasons.sw_power_cap", _reason_field(hardware.REASON_SW_POWER_CAP)),
        "clocks_event_reasons.hw_slowdown": ("clocks_event_reasons.hw_slowdown", _reason_field(hardware.REASON_HW_SLOWDOWN)),
        "clocks_event_reasons.hw_thermal_slowdown": (
            "clocks_event_reasons.hw_thermal_slowdown", _reason_field(hardware.REASON_HW_THERMAL)),
        "clocks_event_reasons.hw_power_brake_slowdown": (
            "clocks_event_reasons.hw_power_brake_slowdown", _reason_field(hardware.REASON_HW_POWER_BRAKE)),
        "clocks_event_reasons.sw_thermal_slowdown": (
            "clocks_event_reasons.sw_thermal_slowdown", _reason_field(hardware.REASON_SW_THERMAL)),
        "clocks_event_reasons.sync_boost": ("clocks_event_reasons.sync_boost", _reason_field(hardware.REASON_SYNC_BOOST)),
        "memory.total": ("memory.total [MiB]", lambda n, g: "%d MiB" % n.hw["memory_mib"]),
        "memory.reserved": ("memory.reserved [MiB]", lambda n, g: "%d MiB" % n.hw["memory_reserved_mib"]),
        "memory.used": ("memory.used [MiB]", lambda n, g: "1 MiB"),
        "memory.free": ("memory.free [MiB]", lambda n, g: "%d MiB" % (n.hw["memory_mib"] - n.hw["memory_reserved_mib"] - 1)),
        "compute_mode": ("compute_mode", lambda n, g: "Default"),
        "compute_cap": ("compute_cap", lambda n, g: {"Hopper": "9.0", "Blackwell": "10.0", "Ampere": "8.0"}[n.hw["architecture"]]),
        "utilization.gpu": ("utilization.gpu [%]", lambda n, g: "%d %%" % g.util),
        "utilization.memory": ("utilization.memory [%]", lambda n, g: "%d %%" % (g.util // 2)),
        "encoder.stats.sessionCount": ("encoder.stats.sessionCount", zero),
        "encoder.stats.averageFps": ("encoder.stats.averageFps", zero),
        "encoder.stats.averageLatency": ("encoder.stats.averageLatency", zero),
        "ecc.mode.current": ("ecc.mode.current", lambda n, g: "Enabled"),
        "ecc.mode.pending": ("ecc.mode.pending", lambda n, g: "Enabled"),
        "ecc.errors.corrected.volatile.device_memory": ("ecc.errors.corrected.volatile.device_memory", zero),
        "ecc.errors.corrected.volatile.dram": ("ecc.errors.corrected.volatile.dram", zero),
        "ecc.errors.corrected.volatile.sram": ("ecc.errors.corrected.volatile.sram", zero),
        "ecc.errors.corrected.volatile.total": ("ecc.errors.corrected.volatile.total", zero),
        "ecc.errors.corrected.aggregate.device_memory": ("ecc.errors.corrected.aggregate.device_memory", zero),
        "ecc.errors.corrected.aggregate.dram": ("ecc.errors.corrected.aggregate.dram", zero),
        "ecc.errors.corrected.aggregate.sram": ("ecc.errors.corrected.aggregate.sram", zero),
        "ecc.errors.corrected.aggregate.total": ("ecc.errors.corrected.aggregate.total", zero),
        "ecc.errors.uncorrected.volatile.device_memory": ("ecc.errors.uncorrected.volatile.device_memory", unc),
        "ecc.errors.uncorrected.volatile.dram": ("ecc.errors.uncorrected.volatile.dram", unc),
        "ecc.errors.uncorrected.volatile.sram": ("ecc.errors.uncorrected.volatile.sram", zero),
        "ecc.errors.uncorrected.volatile.total": ("ecc.errors.uncorrected.volatile.total", unc),
        "ecc.errors.uncorrected.aggregate.device_memory": ("ecc.errors.uncorrected.aggregate.device_memory", unc),
        "ecc.errors.uncorrected.aggregate.dram": ("ecc.errors.uncorrected.aggregate.dram", unc),
        "ecc.errors.uncorrected.aggregate.sram": ("ecc.errors.uncorrected.aggregate.sram", zero),
        "ecc.errors.uncorrected.aggregate.total": ("ecc.errors.uncorrected.aggregate.total", unc),
        "retired_pages.single_bit_ecc.count": ("retired_pages.single_bit_ecc.count", na),
        "retired_pages.double_bit.count": ("retired_pages.double_bit.count", na),
        "retired_pages.pending": ("retired_pages.pending", na),
        "remapped_rows.correctable": ("remapped_rows.correctable", lambda n, g: str(g.remap_corr)),
        "remapped_rows.uncorrectable": ("remapped_rows.uncorrectable", lambda n, g: str(g.remap_unc)),
        "remapped_rows.pending": ("remapped_rows.pending", lambda n, g: _yes(g.remap_pending)),
        "remapped_rows.failure": ("remapped_rows.failure", lambda n, g: _yes(g.remap_failure)),
        "temperature.gpu": ("temperature.gpu", lambda n, g: str(g.temp)),
        "temperature.gpu.tlimit": ("temperature.gpu.tlimit", lambda n, g: str(g.tlimit)),
        "temperature.memory": ("temperature.memory", lambda n, g: str(g.mem_temp)),
        "power.management": ("power.management", lambda n, g: "Enabled"),
        "power.draw": ("power.draw [W]", watts(lambda n, g: g.power)),
        "power.draw.average": ("power.draw.average [W]", watts(lambda n, g: g.power)),
        "power.draw.instant": ("power.draw.instant [W]", watts(lambda n, g: g.power)),
        "power.limit": ("power.limit [W]", watts(lambda n, g: n.hw["power_limit_w"])),
        "enforced.power.limit": ("enforced.power.limit [W]", watts(lambda n, g: n.hw["power_limit_w"])),
        "power.default_limit": ("power.default_limit [W]", watts(lambda n, g: n.hw["power_limit_w"])),
        "power.min_limit": ("power.min_limit [W]", watts(lambda n, g: n.hw["power_min_w"])),
        "power.max_limit": ("power.max_limit [W]", watts(lambda n, g: n.hw["power_limit_w"])),
        "clocks.current.graphics": ("clocks.current.graphics [MHz]", mhz(lambda n, g: g.sm_mhz)),
        "clocks.current.sm": ("clocks.current.sm [MHz]", mhz(lambda n, g: g.sm_mhz)),
        "clocks.current.memory": ("clocks.current.memory [MHz]", mhz(lambda n, g: g.mem_mhz)),
        "clocks.current.video": ("clocks.current.video [MHz]", mhz(lambda n, g: g.video_mhz)),
        "clocks.applications.graphics": ("clocks.applications.graphics [MHz]", mhz(lambda n, g: n.hw["max_sm_mhz"])),
        "clocks.applications.memory": ("clocks.applications.memory [MHz]", mhz(lambda n, g: n.hw["max_mem_mhz"])),
        "clocks.default_applications.graphics": (
            "clocks.default_applications.graphics [MHz]", mhz(lambda n, g: n.hw["max_sm_mhz"])),
        "clocks.default_applications.memory": (
            "clocks.default_applications.memory [MHz]", mhz(lambda n, g: n.hw["max_mem_mhz"])),
        "clocks.max.graphics": ("clocks.max.graphics [MHz]", mhz(lambda n, g: n.hw["max_sm_mhz"])),
        "clocks.max.sm": ("clocks.max.sm [MHz]", mhz(lambda n, g: n.hw["max_sm_mhz"])),
        "clocks.max.memory": ("clocks.max.memory [MHz]", mhz(lambda n, g: n.hw["max_mem_mhz"])),
        "mig.mode.current": ("mig.mode.current", lambda n, g: "Disabled"),
        "mig.mode.pending": ("mig.mode.pending", lambda n, g: "Disabled"),
        "fabric.state": ("fabric.state", _fabric_field("state")),
        "fabric.status": ("fabric.status", _fabric_field("status")),
        "fabric.cliqueId": ("fabric.cliqueId", _fabric_field("clique_id")),
        "fabric.clusterUuid": ("fabric.clusterUuid", _fabric_field("cluster_uuid")),
    }
    aliases = {
        "gpu_name": "name", "gpu_serial": "serial", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id",
        "clocks.gr": "clocks.current.graphics", "clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory",
        "clocks.video": "clocks.current.video", "clocks.applications.gr": "clocks.applications.graphics",
        "clocks.applications.mem": "clocks.applications.memory",
        "clocks.default_applications.gr": "clocks.default_applications.graphics",
        "clocks.default_applications.mem": "clocks.default_applications.memory",
        "clocks.max.gr": "clocks.max.graphics", "clocks.max.mem": "clocks.max.memory",
        "inforom.image": "inforom.img", "inforom.power": "inforom.pwr",
        "retired_pages.sbe": "retired_pages.single_bit_ecc.count", "retired_pages.dbe": "retired_pages.double_bit.count",
        "enforced.power.limit": "enforced.power.limit", "power.draw.avg": "power.draw.average",
    }
    for key in list(fields):
        if key.startswith("clocks_event_reasons."):
            aliases["clocks_throttle_reasons." + key[len("clocks_event_reasons."):]] = key
    return fields, aliases


FIELDS, ALIASES = _fields()


def render_query(node, gpus, query, fmt):
    names = [q.strip() for q in query.split(",") if q.strip()]
    if not names:
        return Result(BAD_ARGS, "", 2)
    cols = []
    for name in names:
        key = ALIASES.get(name, name)
        if key not in FIELDS:
            return Result('Field "%s" is not a valid field to query.\n\n' % name, "", 2)
        cols.append(FIELDS[key])
    opts = [o.strip() for o in fmt.split(",")]
    if "csv" not in opts or any(o not in ("csv", "noheader", "nounits") for o in opts):
        return Result('"%s" is not a valid format.\n' % fmt, "", 2)
    nounits = "nounits" in opts
    lines = []
    if "noheader" not in opts:
        lines.append(", ".join(h.split(" [")[0] if nounits else h for h, _get in cols))
    for g in gpus:
        values = []
        for _head, get in cols:
            value = get(node, g)
            if nounits and not value.startswith("["):
                for unit in (" MiB", " MHz", " W", " %"):
                    if value.endswith(unit):
                        value = value[:-len(unit)]
            values.append(value)
        lines.append(", ".join(values))
    return Result("\n".join(lines) + "\n", "", 0)


# -- command line -------------------------------------------------------------------------------
def _select(node, ids):
    if ids is None:
        return node.visible_gpus, None
    chosen = []
    for token in ids.split(","):
        token = token.strip()
        match = [g for g in node.visible_gpus
                 if token == str(g.index) or token.lower() == g.uuid.lower() or token.upper() in (g.bus_id.upper(), g.bus_id[4:].upper())]
        if not match:
            return None, Result("No devices were found\n", "", 6)
        chosen += match
    return chosen, None


def run(node, args):  # noqa: C901
    """Run ``nvidia-smi ARGS`` on ``node``; return a Result."""
    ids = query = fmt = None
    mode = "table"
    displays = []
    sub = None
    i = 0
    while i < len(args):
        arg = args[i]
        val = None
        if "=" in arg and arg.startswith("--"):
            arg, val = arg.split("=", 1)

        def take():
            nonlocal i
            if val is not None:
                return val
            i += 1
            if i >= len(args):
                raise ValueError(arg)
            return args[i]
        try:
            if arg in ("-i", "--id"):
                ids = take()
            elif arg in ("-q", "--query"):
                mode = "q"
            elif arg in ("-d", "--display"):
                displays += [d.strip().upper() for d in take().split(",") if d.strip()]
            elif arg in ("-L", "--list-gpus"):
                mode = "list"
            elif arg == "--query-gpu":
                mode, query = "query", take()
            elif arg == "--format":
                fmt = take()
            elif arg in ("topo", "nvlink") and sub is None and i == 0:
                sub = arg
            elif sub == "topo" and arg in ("-m", "--matrix"):
                mode = "topo"
            elif sub == "nvlink" and arg in ("-s", "--status"):
                mode = "nvlink"
            elif sub == "nvlink" and arg in ("-e", "--errorcounters"):
                mode = "nvlink-errors"
            elif arg in ("-h", "--help"):
                return Result("NVIDIA System Management Interface -- v%s\n" % node.driver, "", 0)
            else:
                return Result(BAD_ARGS, "", 2)
        except ValueError:
            return Result(BAD_ARGS, "", 2)
        i += 1
    if sub == "topo" and mode != "topo" or sub == "nvlink" and mode not in ("nvlink", "nvlink-errors"):
        return Result(BAD_ARGS, "", 2)
    for d in displays:
        if d not in DISPLAY:
            return Result(BAD_ARGS, "", 2)
    gpus, err = _select(node, ids)
    if err:
        return err
    if mode == "query":
        if fmt is None:
            return Result(BAD_ARGS, "", 2)
        return render_query(node, gpus, query, fmt)
    if mode == "q":
        return Result(render_q(node, gpus, displays or None), "", 0)
    if mode == "list":
        return Result(render_list(node, gpus), "", 0)
    if mode == "topo":
        return Result(render_topo(node), "", 0)
    if mode == "nvlink":
        return Result(render_nvlink_status(node, gpus), "", 0)
    if mode == "nvlink-errors":
        return Result(render_nvlink_errors(node, gpus), "", 0)
    if displays:
        return Result(BAD_ARGS, "", 2)
    return Result(render_table(node, gpus), "", 0)
