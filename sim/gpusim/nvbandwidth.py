"""Fake ``nvbandwidth -t device_to_device_memcpy_read_ce``: the v0.8 layout (tests/fixtures/nvbandwidth).

Each GPU pair reads at 80 % of the one-way NVLink rate (links x the per-link rate nvidia-smi nvlink
-s prints; no public GB200 nvbandwidth output was found to take the figure from), scaled by the
links the pair has up (an nvlink_down fault: k of n links) and a little noise per pair from the
seed. Only the device-to-device read test is simulated; others print the tool's own refusal.
"""
from .common import Result
from .model import rng

TEST = "device_to_device_memcpy_read_ce"


def _links(node, gpu):
    """Active links of a GPU slot (as nvidia-smi nvlink -s shows them)."""
    inactive = 0
    for (a, b), link in node.nvlink.items():
        if gpu in (a, b):
            k = int(link[2:]) if link.startswith("NV") else 0
            inactive = max(inactive, node.hw["nvlink"] - k)
    return node.hw["nvlink"] - inactive


def run(node, args):
    if args not in (["-t", TEST], ["--testcase", TEST]):
        return Result("", "ERROR: the simulated nvbandwidth runs only -t %s\n" % TEST, 1)
    hw, gpus = node.hw, node.visible_gpus
    per_gpu = hw["nvlink"] * hw["nvlink_gbps_per_link"] * 0.8
    lines = ["nvbandwidth Version: v0.8", "Built from Git version: v0.8", "",
             "CUDA Runtime Version: %s" % node.cuda.replace(".", "0").ljust(5, "0")[:5],
             "CUDA Driver Version: %s" % node.cuda.replace(".", "0").ljust(5, "0")[:5],
             "Driver Version: %s" % node.driver, ""]
    for i, g in enumerate(gpus):
        lines.append("Device %d: %s (%s)" % (i, hw["gpu_name"], g.bus_id.lower()[:-2]))
    lines += ["", "Running %s." % TEST, "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
              "  " + "".join("%10d" % i for i in range(len(gpus)))]
    total = 0.0
    for i, a in enumerate(gpus):
        cells = []
        for j, b in enumerate(gpus):
            if i == j:
                cells.append("%10s" % "N/A")
                continue
            share = min(_links(node, a.slot), _links(node, b.slot)) / float(hw["nvlink"])
            value = per_gpu * share * (1 + rng(node.spec, node.name, "nvbw|%d|%d" % (i, j)).uniform(-0.005, 0.005))
            total += round(value, 2)
            cells.append("%10.2f" % value)
        lines.append("%2d" % i + "".join(cells))
    lines += ["", "SUM %s %.2f" % (TEST, total), ""]
    return Result("\n".join(lines), "", 0, time_key="nvidia_smi")
