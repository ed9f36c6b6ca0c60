# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node hardware state of the simulated cluster after faults.

``node_state(spec, node)`` is deterministic: every value comes from the profile's facts, the
spec's faults and a random generator seeded with (spec seed, node name, purpose), so two calls
(in two processes) agree. Faults name GPUs by their *slot* (0..gpus-1 on a healthy node); the
tools number the GPUs they can see from 0, so after ``gpu_missing`` the later GPUs shift down, as
on a real node. Counters that rise between calls live in runstate, not here.
"""
from __future__ import annotations

import random
import time
import uuid

from . import hardware

_MHZ_THROTTLED = {"thermal": 0.62, "power": 0.74}


def rng(spec, node, purpose):
    """A random generator private to (seed, node, purpose)."""
    return random.Random("%s|%s|%s" % (spec.seed, node, purpose))


def _uuid(r):
    h = "%032x" % r.getrandbits(128)
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


class Gpu:
    """One GPU slot of a node (``present`` False after gpu_missing)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def short_bus(self):
        """'0000:18:00' as NVRM Xid lines and nccl-tests print it."""
        return "%s:%s:00" % (self.domain[-4:], self.bus.lower())


class Nic:
    """One ConnectX HCA of a node (port 1)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


# NVL72: 18 compute trays (nodes) per rack, the rack one NVLink domain (one ClusterUUID per rack
# here; the CliqueId a real rack showed, kubernetes-sigs/dra-driver-nvidia-gpu#630).
TRAYS_PER_RACK = 18
RACK_CLIQUE_ID = 32766
# The Health rows of -q's Fabric section: an HGX H100 on driver 565 prints Bandwidth only, N/A (the
# real capture in tests/fixtures/nvidia_smi/q_h100_sxm_8gpu_565.txt); a healthy NVL72 tray the
# decoded rows (no real capture of all six found: the rows and words of NVIDIA/k8s-test-infra#677
# and kubernetes-sigs/dra-driver-nvidia-gpu#626).
HGX_FABRIC_HEALTH = (("Bandwidth", "N/A"),)
RACK_FABRIC_HEALTH = (("Summary", "Healthy"), ("Bandwidth", "Full"), ("Route Recovery in progress", "False"),
                      ("Route Unhealthy", "False"), ("Access Timeout Recovery", "False"),
                      ("Incorrect Configuration", "None"))


class NodeState:
    """Everything the fake tools print about one node."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def visible_gpus(self):
        return [g for g in self.gpus if g.present]

    def gpu_by_slot(self, slot):
        return self.gpus[slot]

    def fabric(self, slot):
        """The GPU's NVLink fabric registration as -q prints it: {state, status, clique_id,
        cluster_uuid, health: [(row, value)]}; None where the GPU reports none (Ampere)."""
        kind = self.hw.get("fabric")
        if kind is None:
            return None
        rack = self.index // getattr(self.spec, "rack_trays", TRAYS_PER_RACK)
        info = {"state": "Completed", "status": "Success", "clique_id": 0,
                "cluster_uuid": "00000000-0000-0000-0000-000000000000", "health": list(HGX_FABRIC_HEALTH)}
        if kind == "rack":
            info.update(clique_id=RACK_CLIQUE_ID, health=list(RACK_FABRIC_HEALTH),
                        cluster_uuid=str(uuid.uuid5(uuid.NAMESPACE_DNS, "%s.rack%d" % (self.spec.name, rack + 1))))
        for fault in self.fabric_faults:
            if fault["gpu"] not in (None, slot):
                continue
            info["state"] = fault["state"]
            info["status"] = fault["status"] or ("Success" if fault["state"] == "Completed" else "N/A")
            for key in ("clique_id", "cluster_uuid"):
                if fault[key] is not None:
                    info[key] = fault[key]
            rows = dict(info["health"])
            rows.update(fault["health"] or {})
            info["health"] = [(row, rows[row]) for row, _v in info["health"]] + [
                (row, value) for row, value in (fault["health"] or {}).items() if row not in dict(info["health"])]
        return info

    def link(self, a, b):
        """topo -m cell between GPU slots a and b."""
        if a == b:
            return " X "
        return self.nvlink.get((min(a, b), max(a, b)), "NV%d" % self.hw["nvlink"])


def _storage_hcas(faults, hw, node_index):
    """The node's storage HCAs (storage_hca): after the compute NICs, on NUMA node 0, their own rate;
    the tools that list every HCA (ibstat, topo -m, sysfs) show them, the fabric never uses them."""
    out = []
    for f in faults:
        for _number in range(f["count"]):
            index = hw["nics"] + len(out)
            out.append(Nic(index=index, name="mlx5_%d" % index, guid=nic_guid(node_index, index), state="Active",
                           phys="LinkUp", rate=f["rate"], nominal=f["rate"], fw=hw["nic_fw"], lid=2 + node_index * 4
                           + len(out), sm_lid=1, pci="0000:%02x:00.0" % (0x60 + len(out)), numa=0, rail=None,
                           rising=[], data_factor=1.0, pcie_gen=hw["nic_pcie_gen"], pcie_width=16, flaps_per_run=0,
                           nccl_flaps_per_run=0, flaky=[], link_layer=f["link_layer"], storage=True))
    return out


def nic_guid(node_index, nic):
    """Node/port GUID of an HCA: a fixed ConnectX OUI prefix and a unique 24-bit tail."""
    tail = ((node_index * 64 + nic + 1) * 2654435761) & 0xFFFFFF
    return 0x946DAE0300000000 | tail


def switch_guid(index):
    tail = ((index + 1) * 40503 * 65537) & 0xFFFFFF
    return 0xFC6A1C0300000000 | tail


def cpu_affinity(hw, numa):
    """CPU list of NUMA node ``numa`` ('0-55,112-167' on a 2-socket, 224-thread HGX host)."""
    threads, nodes = hw["cpu_threads"], hw["numa_nodes"]
    cores = threads // (2 if hw["smt"] else 1)
    per = cores // nodes
    first = numa * per
    text = "%d-%d" % (first, first + per - 1)
    if hw["smt"]:
        text += ",%d-%d" % (cores + first, cores + first + per - 1)
    return text


def boot_epoch(spec, node, state=None):
    """When the node booted: three days (plus a per-node offset) before the run started."""
    offset = rng(spec, node, "boot").randint(0, 3600)
    start = int(time.time()) - 3 * 86400 - offset
    if state is not None:
        return int(state.remember("boot_epoch", start))
    return start


def node_state(spec, node):  # noqa: C901  (one pass over the faults)
    """The NodeState of ``node`` (a name from spec.nodes)."""
    hw = spec.hw
    faults = spec.faults_for(node)
    node_index = spec.node_index(node)
    by_kind = {}
    for f in faults:
        by_kind.setdefault(f["kind"], []).append(f)

    driver = by_kind["driver_mismatch"][-1]["version"] if "driver_mismatch" in by_kind else hw["driver"]
    cuda = hardware.cuda_for_driver(driver, hw["cuda"])

    missing = {f["gpu"] for f in by_kind.get("gpu_missing", [])}
    throttle = {f["gpu"]: f["reason"] for f in by_kind.get("throttle", [])}
    ecc = {}
    for f in by_kind.get("ecc_uncorrectable", []):
        ecc[f["gpu"]] = ecc.get(f["gpu"], 0) + f["count"]
    pending = {f["gpu"] for f in by_kind.get("row_remap_pending", [])}
    # (gen, width) of the links pcie_downtrained trains low: {("gpu", index) | ("nic", name): ...}.
    links = {}
    for f in by_kind.get("pcie_downtrained", []):
        device = ("gpu", f["gpu"]) if f.get("gpu") is not None else ("nic", f["nic"])
        links[device] = (f["gen"] or (hw["pcie_gen"] if device[0] == "gpu" else hw["nic_pcie_gen"]), f["width"] or 16)
    dcgm_fail = {}
    for f in by_kind.get("dcgm_fail", []):
        dcgm_fail.setdefault(f["gpu"], set()).add(f["test"])
    xids = [(f["gpu"], f["xid"], f["count"]) for f in by_kind.get("xid", [])]

    gpus = []
    visible = 0
    r_serial = rng(spec, node, "serial")
    serial_base = 1650000000000 + r_serial.randint(0, 9999999) * 1000
    domains = hw.get("gpu_domains") or ("0000",) * hw["gpus"]
    for slot in range(hw["gpus"]):
        r = rng(spec, node, "gpu%d" % slot)
        bus = hw["gpu_bus_ids"][slot]
        domain = "0000%s" % domains[slot]
        present = slot not in missing
        temp = r.randint(27, 35)
        mem_temp = temp + r.randint(3, 8)
        lo, hi = hw["idle_power_w"]
        power = round(r.uniform(lo, hi), 2)
        mem_power = round(r.uniform(55, 75), 2)
        sm = hw["idle_sm_mhz"]
        reasons = hardware.REASON_IDLE
        pstate = "P0"
        util = 0
        tlimit = 57 - (temp - 30)
        reason = throttle.get(slot)
        if reason == "thermal":
            temp = r.randint(87, 91)
            mem_temp = temp + r.randint(4, 7)
            tlimit = -r.randint(3, 5)
            power = round(r.uniform(0.55, 0.7) * hw["power_limit_w"], 2)
            sm = int(hw["max_sm_mhz"] * _MHZ_THROTTLED["thermal"]) // 15 * 15
            reasons = hardware.REASON_HW_SLOWDOWN | hardware.REASON_HW_THERMAL | hardware.REASON_SW_THERMAL
            util = 100
        elif reason == "power":
            # The board's external power brake asserted (a PSU or power-shelf fault): clocks are
            # forced down while the draw stays far below the limit. Running at the software power
            # cap alone is normal under load and not a fault.
            temp = r.randint(52, 60)
            mem_temp = temp + r.randint(3, 6)
            tlimit = 57 - (temp - 30)
            power = round(r.uniform(0.35, 0.5) * hw["power_limit_w"], 2)
            sm = int(hw["max_sm_mhz"] * _MHZ_THROTTLED["power"]) // 15 * 15
            reasons = hardware.REASON_HW_SLOWDOWN | hardware.REASON_HW_POWER_BRAKE
            util = 100
        unc = ecc.get(slot, 0)
        gpus.append(Gpu(
            slot=slot, index=visible if present else None, present=present,
            bus=bus, domain=domain, bus_id="%s:%s:00.0" % (domain, bus),
            uuid=_uuid(r), serial=str(serial_base + slot * 37 + r.randint(0, 30)),
            module_id=[2, 4, 3, 1, 7, 5, 8, 6][slot] if hw["gpus"] == 8 else slot + 1,
            numa=hw["gpu_numa"][slot], temp=temp, mem_temp=mem_temp, tlimit=tlimit,
            power=power, mem_power=mem_power, sm_mhz=sm, mem_mhz=hw["max_mem_mhz"],
            video_mhz=hw["idle_video_mhz"] if not reason else hw["max_video_mhz"],
            reasons=reasons, throttle=reason, pstate=pstate, util=util,
            ecc_dram_unc=unc, remap_unc=unc, remap_corr=0,
            remap_pending=slot in pending, remap_failure=False,
            replays=r.choice((0, 0, 0, 3, 7)), tx_kbs=r.randint(400, 900), rx_kbs=r.randint(400, 4000),
            voltage="%.3f" % (r.choice((670, 675, 680, 685, 690)),),
            bbx_ts="%02d:%02d:%02d.%03d" % (r.randint(0, 23), r.randint(0, 59), r.randint(0, 59), r.randint(0, 999)),
            bbx_us=r.randint(80000, 130000),
            dcgm_fail=sorted(dcgm_fail.get(slot, ())),
            pcie_gen=links.get(("gpu", slot), (hw["pcie_gen"], 16))[0],
            pcie_width=links.get(("gpu", slot), (hw["pcie_gen"], 16))[1],
        ))
        if present:
            visible += 1

    nvlink = {}
    for f in by_kind.get("nvlink_down", []):
        a, b = sorted(f["gpus"])
        nvlink[(a, b)] = f["link"]

    nominal = spec.nic_gbps()
    down = {f["nic"]: f["physical_state"] for f in by_kind.get("nic_down", [])}
    degraded = {f["nic"]: f["rate"] for f in by_kind.get("nic_degraded", [])}
    slow_nic, flaky_nic = {}, {}
    for f in by_kind.get("nic_slow", []):
        if f.get("intermittent"):
            flaky_nic.setdefault(f["nic"], []).append((f["factor"], f["intermittent"]))
        else:
            slow_nic[f["nic"]] = slow_nic.get(f["nic"], 1.0) * f["factor"]
    fw_all, fw_nic = None, {}
    for f in by_kind.get("firmware_mismatch", []):
        if f.get("nic"):
            fw_nic[f["nic"]] = f["version"]
        else:
            fw_all = f["version"]
    flaps, nccl_flaps = {}, {}
    for f in by_kind.get("link_flap", []):
        into = nccl_flaps if f.get("during") == "nccl" else flaps
        into[f["nic"]] = into.get(f["nic"], 0) + f["per_run"]
    rising = {}
    for f in by_kind.get("ib_counters_rising", []):
        rising.setdefault(f["nic"], []).append((spec_counter(f["counter"]), f["per_call"]))
    nic_domains = hw.get("nic_domains") or ("0000",) * hw["nics"]
    n_switches = spec.fabric["spines"] + spec.fabric["leaves"] * min(spec.fabric["rails"], hw["nics"])
    nics = []
    for i in range(hw["nics"]):
        name = "mlx5_%d" % i
        guid = nic_guid(node_index, i)
        state, phys, rate = "Active", "LinkUp", nominal
        if name in degraded:
            rate = degraded[name]
        if name in down:
            state, phys, rate = "Down", down[name], 10
        gen, width = links.get(("nic", name), (hw["nic_pcie_gen"], 16))
        # The HCA moves data at what its link carries, at most (DMA over the PCIe link; ~90 % of it).
        link_factor = min(1.0, 0.9 * pcie_link_gbps(gen, width) / nominal)
        nics.append(Nic(
            index=i, name=name, guid=guid, state=state, phys=phys, rate=rate, nominal=nominal,
            fw=fw_nic.get(name, fw_all or hw["nic_fw"]),
            lid=n_switches + 1 + node_index * hw["nics"] + i, sm_lid=1,
            pci="%s:%s:00.0" % (nic_domains[i], hw["nic_bus_ids"][i].lower()),
            numa=hw["gpu_numa"][i] if i < len(hw["gpu_numa"]) else 0,
            rail=i % spec.fabric["rails"], rising=rising.get(name, []), data_factor=slow_nic.get(name, 1.0) * link_factor,
            pcie_gen=gen, pcie_width=width, flaps_per_run=flaps.get(name, 0),
            nccl_flaps_per_run=nccl_flaps.get(name, 0), flaky=flaky_nic.get(name, []),
        ))

    storage = _storage_hcas(by_kind.get("storage_hca", []), hw, node_index)
    slow, flaky = 1.0, []
    for f in by_kind.get("slow_node", []):
        if f.get("intermittent"):
            flaky.append((f["factor"], f["intermittent"]))
        else:
            slow *= f["factor"]
    return NodeState(
        name=node, index=node_index, hw=hw, spec=spec, driver=driver, cuda=cuda, vbios=hw["vbios"],
        gpus=gpus, nics=nics, storage_nics=storage, nvlink=nvlink, xids=xids, slow_factor=slow, flaky=flaky,
        wrong_results=by_kind.get("wrong_results", []), no_mpi=bool(by_kind.get("no_mpi")),
        nvlink_errors=[dict(f) for f in by_kind.get("nvlink_errors", [])],
        hang={f["tool"] for f in by_kind.get("hang", [])},
        tool_delay=_tool_delays(by_kind.get("slow_tool", [])),
        tool_release={f["tool"]: f["release_file"] for f in by_kind.get("slow_tool", []) if f.get("release_file")},
        leaf=spec.leaf_index(node),
        fabric_faults=[dict(f) for f in by_kind.get("fabric", [])] + [
            dict(f) for f in spec.faults_for(kind="fabric")
            if f.get("rack") == node_index // getattr(spec, "rack_trays", TRAYS_PER_RACK) + 1],
    )


def flaky_factor(spec, node, what, flaky, run):
    """The factor of intermittent slow faults (flaky: [(factor, p)]) in one run: each is active in
    a share p of the runs, drawn from the seed, the node, what is slowed and the run's key (its
    Slurm job and step), so that every rank of the run agrees and a rerun draws afresh."""
    factor = 1.0
    for i, (slow, share) in enumerate(flaky):
        if rng(spec, node, "intermittent|%s|%d|%s" % (what, i, run)).random() < share:
            factor *= slow
    return factor


def this_run(state, spec, run):
    """A copy of NodeState ``state`` with its intermittent slow faults drawn for run ``run``."""
    if not state.flaky and not any(nic.flaky for nic in state.nics):
        return state
    nics = [Nic(**dict(nic.__dict__, data_factor=nic.data_factor * flaky_factor(spec, state.name, nic.name, nic.flaky, run)))
            for nic in state.nics]
    return NodeState(**dict(state.__dict__, nics=nics,
                            slow_factor=state.slow_factor * flaky_factor(spec, state.name, "node", state.flaky, run)))


# Usable Mb/s per lane and generation, as the kernel counts it (8b/10b to Gen2, 128b/130b after).
_PCIE_MBS = {1: 2000, 2: 4000, 3: 7876, 4: 15753, 5: 31507, 6: 64000}
PCIE_GTS = {1: "2.5", 2: "5.0", 3: "8.0", 4: "16.0", 5: "32.0", 6: "64.0"}


def pcie_link_gbps(gen, width):
    """Gb/s a PCIe link carries (504.112 for Gen5 x16), as mlx5_core prints it at probe time."""
    return _PCIE_MBS[gen] * width / 1000.0


def gpu_link_factor(gpu, nic_gbps):
    """Share of a NIC's rate a GPUDirect transfer through this GPU's PCIe link can reach."""
    return min(1.0, 0.9 * pcie_link_gbps(gpu.pcie_gen, gpu.pcie_width) / nic_gbps)


def _tool_delays(faults):
    """tool_times key -> the extra seconds slow_tool faults add on this node."""
    delays = {}
    for f in faults:
        delays[f["tool"]] = delays.get(f["tool"], 0.0) + f["seconds"]
    return delays


def spec_counter(counter):
    from .spec import IB_COUNTERS  # pylint: disable=import-outside-toplevel
    return IB_COUNTERS[counter]


def uplink_factor(spec, leaf_index):
    """Product of the degraded_uplink factors of leaf ``leaf_index`` (1.0 when healthy)."""
    factor = 1.0
    for f in spec.faults_for(kind="degraded_uplink"):
        if f["leaf_index"] == leaf_index:
            factor *= f["factor"]
    return factor
