# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-profile hardware facts of the simulated nodes (what the real tools would report).

One entry per ``profile`` a spec may name. Values follow public real outputs of those systems
(nvidia-smi of an HGX H100 with driver 565.57.01, ibstat of ConnectX-7/-6 HCAs, nccl-tests on
NVLink/NVSwitch systems); bandwidth figures are what healthy systems typically reach, used by
fabric.py.
"""

# Clock event reason bits (nvml.h nvmlClocksEventReason*), as `clocks_event_reasons.active` shows them.
REASON_IDLE = 0x1
REASON_APP_CLOCKS = 0x2
REASON_SW_POWER_CAP = 0x4
REASON_HW_SLOWDOWN = 0x8
REASON_SYNC_BOOST = 0x10
REASON_SW_THERMAL = 0x20
REASON_HW_THERMAL = 0x40
REASON_HW_POWER_BRAKE = 0x80
REASON_DISPLAY_CLOCK = 0x100

# Infiniband rates (Gb/s, as ibstat prints "Rate:") and the name ibnetdiscover gives a 4x link.
IB_SPEED_NAME = {10: "SDR", 20: "DDR", 40: "QDR", 56: "FDR", 100: "EDR", 200: "HDR", 400: "NDR", 800: "XDR"}
VALID_IB_RATES = (10, 20, 25, 40, 50, 56, 100, 200, 400, 800)

# CUDA version the driver branch reports (nvidia-smi "CUDA Version").
CUDA_BY_DRIVER_BRANCH = {
    "470": "11.4", "510": "11.6", "515": "11.7", "525": "12.0", "530": "12.1", "535": "12.2",
    "545": "12.3", "550": "12.4", "555": "12.5", "560": "12.6", "565": "12.7", "570": "12.8",
    "575": "12.9", "580": "13.0",
}

_HGX8_NVLINK_NUMA = (0, 0, 0, 0, 1, 1, 1, 1)

PROFILES = {
    "hgx_h100_sxm": {
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "architecture": "Hopper",
        "gpus": 8,
        "gpu_bus_ids": ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"),
        "gpu_numa": _HGX8_NVLINK_NUMA,
        "pci_device_id": "2330",  # 0x233010DE
        "pci_subsystem_id": "0x16C110DE",
        "board_part_number": "692-2G520-0200-000",
        "gpu_part_number": "2330-885-A1",
        "inforom_image": "G520.0200.00.05",
        "inforom_ecc": "7.16",
        "nvlink": 18,
        "nvlink_gbps_per_link": 26.562,
        "fabric": "nvswitch",
        "memory_mib": 81559,
        "memory_reserved_mib": 454,
        "bar1_mib": 131072,
        "power_limit_w": 700,
        "power_min_w": 200,
        "idle_power_w": (70, 110),
        "max_sm_mhz": 1980,
        "max_mem_mhz": 2619,
        "max_video_mhz": 1545,
        "idle_sm_mhz": 345,
        "idle_video_mhz": 765,
        "bank_remap_max": 2560,
        "driver": "565.57.01",
        "vbios": "96.00.74.00.01",
        "cuda": "12.7",
        "dcgm": "3.3.9",
        "nics": 8,
        "nic_gbps": 400,
        "nic_ca_type": "MT4129",
        "nic_devid": "0x1021",
        "nic_fw": "28.39.2048",
        "nic_bus_ids": ("17", "29", "39", "5C", "99", "AA", "B9", "DA"),
        "nccl": "2.23.4",
        "nccl_tests": "2.17.10",
        "cpu_threads": 224,
        "numa_nodes": 2,
        "smt": True,
        "nvswitches": 4,
        # bandwidth model (GB/s busbw a healthy 8-GPU node reaches at large sizes)
        "nvlink_busbw": {"all_reduce": 480.0, "all_gather": 365.0, "reduce_scatter": 360.0, "alltoall": 345.0},
        "pcie_gbps": 22.0,
        # PCIe generation of the GPUs' and the compute NICs' links (x16 each).
        "pcie_gen": 5,
        "nic_pcie_gen": 5,
    },
    "hgx_h200": {
        "gpu_name": "NVIDIA H200",
        "architecture": "Hopper",
        "gpus": 8,
        "gpu_bus_ids": ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB"),
        "gpu_numa": _HGX8_NVLINK_NUMA,
        "pci_device_id": "2335",
        "pci_subsystem_id": "0x18B010DE",
        "board_part_number": "692-2G520-0280-000",
        "gpu_part_number": "2335-885-A1",
        "inforom_image": "G520.0280.00.01",
        "inforom_ecc": "7.16",
        "nvlink": 18,
        "nvlink_gbps_per_link": 26.562,
        "fabric": "nvswitch",
        "memory_mib": 143771,
        "memory_reserved_mib": 538,
        "bar1_mib": 262144,
        "power_limit_w": 700,
        "power_min_w": 200,
        "idle_power_w": (72, 115),
        "max_sm_mhz": 1980,
        "max_mem_mhz": 3201,
        "max_video_mhz": 1545,
        "idle_sm_mhz": 345,
        "idle_video_mhz": 765,
        "bank_remap_max": 3840,
        "driver": "570.86.15",
        "vbios": "96.00.A0.00.01",
        "cuda": "12.8",
        "dcgm": "3.3.9",
        "nics": 8,
        "nic_gbps": 400,
        "nic_ca_type": "MT4129",
        "nic_devid": "0x1021",
        "nic_fw": "28.42.1000",
        "nic_bus_ids": ("18", "3A", "4B", "5C", "9A", "BA", "CA", "DA"),
        "nccl": "2.25.1",
        "nccl_tests": "2.17.10",
        "cpu_threads": 224,
        "numa_nodes": 2,
        "smt": True,
        "nvswitches": 4,
        "nvlink_busbw": {"all_reduce": 480.0, "all_gather": 368.0, "reduce_scatter": 362.0, "alltoall": 350.0},
        "pcie_gbps": 22.0,
        # PCIe generation of the GPUs' and the compute NICs' links (x16 each).
        "pcie_gen": 5,
        "nic_pcie_gen": 5,
    },
    "hgx_b200": {
        "gpu_name": "NVIDIA B200",
        "architecture": "Blackwell",
        "gpus": 8,
        "gpu_bus_ids": ("1B", "43", "52", "61", "9D", "C3", "D1", "DF"),
        "gpu_numa": _HGX8_NVLINK_NUMA,
        "pci_device_id": "2901",
        "pci_subsystem_id": "0x199910DE",
        "board_part_number": "692-2G525-0200-000",
        "gpu_part_number": "2901-886-A1",
        "inforom_image": "G525.0200.00.04",
        "inforom_ecc": "8.10",
        "nvlink": 18,
        "nvlink_gbps_per_link": 50.0,
        "fabric": "nvswitch",
        "memory_mib": 183359,
        "memory_reserved_mib": 692,
        "bar1_mib": 262144,
        "power_limit_w": 1000,
        "power_min_w": 200,
        "idle_power_w": (120, 160),
        "max_sm_mhz": 1965,
        "max_mem_mhz": 3996,
        "max_video_mhz": 1695,
        "idle_sm_mhz": 120,
        "idle_video_mhz": 600,
        "bank_remap_max": 5120,
        "driver": "570.124.06",
        "vbios": "97.00.88.00.0F",
        "cuda": "12.8",
        "dcgm": "3.3.9",
        "nics": 8,
        "nic_gbps": 400,
        "nic_ca_type": "MT4129",
        "nic_devid": "0x1021",
        "nic_fw": "28.43.1014",
        "nic_bus_ids": ("1A", "42", "51", "60", "9C", "C2", "D0", "DE"),
        "nccl": "2.26.2",
        "nccl_tests": "2.17.10",
        "cpu_threads": 224,
        "numa_nodes": 2,
        "smt": True,
        "nvswitches": 2,
        "nvlink_busbw": {"all_reduce": 840.0, "all_gather": 660.0, "reduce_scatter": 650.0, "alltoall": 620.0},
        "pcie_gbps": 45.0,
        # PCIe generation of the GPUs' and the compute NICs' links (x16 each).
        "pcie_gen": 5,
        "nic_pcie_gen": 5,
    },
    "a100_sxm_80gb": {
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "architecture": "Ampere",
        "gpus": 8,
        "gpu_bus_ids": ("07", "0F", "47", "4E", "87", "90", "B7", "BD"),
        "gpu_numa": (3, 3, 1, 1, 7, 7, 5, 5),
        "pci_device_id": "20b2",
        "pci_subsystem_id": "0x147F10DE",
        "board_part_number": "692-2G506-0210-003",
        "gpu_part_number": "20B2-895-A1",
        "inforom_image": "G506.0210.00.04",
        "inforom_ecc": "6.16",
        "nvlink": 12,
        "nvlink_gbps_per_link": 25.0,
        "fabric": None,
        "memory_mib": 81920,
        "memory_reserved_mib": 492,
        "bar1_mib": 131072,
        "power_limit_w": 400,
        "power_min_w": 100,
        "idle_power_w": (55, 68),
        "max_sm_mhz": 1410,
        "max_mem_mhz": 1593,
        "max_video_mhz": 1290,
        "idle_sm_mhz": 210,
        "idle_video_mhz": 795,
        "bank_remap_max": 640,
        "driver": "535.183.01",
        "vbios": "92.00.45.00.03",
        "cuda": "12.2",
        "dcgm": "3.3.9",
        "nics": 8,
        "nic_gbps": 200,
        "nic_ca_type": "MT4123",
        "nic_devid": "0x101b",
        "nic_fw": "20.39.1002",
        "nic_bus_ids": ("0C", "12", "4B", "54", "8D", "94", "BA", "CC"),
        "nccl": "2.21.5",
        "nccl_tests": "2.17.10",
        "cpu_threads": 256,
        "numa_nodes": 8,
        "smt": True,
        "nvswitches": 6,
        "nvlink_busbw": {"all_reduce": 232.0, "all_gather": 182.0, "reduce_scatter": 180.0, "alltoall": 172.0},
        "pcie_gbps": 11.0,
        # PCIe generation of the GPUs' and the compute NICs' links (x16 each).
        "pcie_gen": 4,
        "nic_pcie_gen": 4,
    },
    "gb200_nvl72_tray": {
        "gpu_name": "NVIDIA GB200",
        "architecture": "Blackwell",
        "gpus": 4,
        "gpu_bus_ids": ("01", "01", "01", "01"),
        "gpu_domains": ("0008", "0009", "0018", "0019"),
        "gpu_numa": (0, 0, 1, 1),
        "pci_device_id": "2941",
        "pci_subsystem_id": "0x20D510DE",
        "board_part_number": "692-2G548-0200-000",
        "gpu_part_number": "2941-886-A1",
        "inforom_image": "G548.0201.01.03",
        "inforom_ecc": "8.10",
        "nvlink": 18,
        # nvidia-smi nvlink -s on a GB200 tray prints 53.125 GB/s per link (links 0-17).
        "nvlink_gbps_per_link": 53.125,
        "fabric": "rack",
        "memory_mib": 189471,
        "memory_reserved_mib": 1004,
        "bar1_mib": 262144,
        "power_limit_w": 1200,
        "power_min_w": 200,
        "idle_power_w": (140, 190),
        "max_sm_mhz": 2062,
        "max_mem_mhz": 3996,
        "max_video_mhz": 1695,
        "idle_sm_mhz": 120,
        "idle_video_mhz": 600,
        "bank_remap_max": 5120,
        "driver": "570.133.20",
        "vbios": "97.00.A3.00.01",
        "cuda": "12.8",
        "dcgm": "3.3.9",
        "nics": 4,
        "nic_gbps": 400,
        "nic_ca_type": "MT4129",
        "nic_devid": "0x1021",
        "nic_fw": "28.43.2026",
        "nic_bus_ids": ("03", "03", "03", "03"),
        "nic_domains": ("0000", "0002", "0010", "0012"),
        "nccl": "2.26.2",
        "nccl_tests": "2.17.10",
        "cpu_threads": 144,
        "numa_nodes": 2,
        "smt": False,
        "nvswitches": 0,
        "nvlink_busbw": {"all_reduce": 680.0, "all_gather": 540.0, "reduce_scatter": 530.0, "alltoall": 500.0},
        "pcie_gbps": 45.0,
        # PCIe generation of the GPUs' and the compute NICs' links (x16 each).
        "pcie_gen": 5,
        "nic_pcie_gen": 5,
    },
}

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")


def profile(name):
    """The facts of profile ``name`` (KeyError when unknown)."""
    return PROFILES[name]


def cuda_for_driver(driver, default):
    """CUDA version a driver branch reports ('565.57.01' -> '12.7'), else ``default``."""
    return CUDA_BY_DRIVER_BRANCH.get(str(driver).split(".", 1)[0], default)


def nccl_version_code(version):
    """NCCL_VERSION_CODE of '2.23.4' -> 22304 (the 2.9+ encoding nccl-tests prints)."""
    major, minor, patch = (int(x) for x in version.split(".")[:3])
    return major * 10000 + minor * 100 + patch
