# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate a simulated-cluster spec and its faults (the keys sim/clusterctl reads too).

``load(path)`` returns a ``Spec`` or raises ``SpecError`` whose message names the file and the
key ("sim/clusters/demo.yml: faults[2].gpu: 9 is not a GPU of this profile (0..7)"). YAML needs
PyYAML; a ``.json`` spec (such as the ``spec.json`` clusterctl writes into the run directory)
needs nothing. This is the only validator of a spec: sim/simcluster.py (the Slurm daemons, the
inventory) and the fake tools both use it, so what one accepts the other runs.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from . import hardware
from .common import write_atomic

REQUIRED_KEYS = ("name", "profile", "nodes")
TOP_KEYS = ("name", "profile", "nodes", "cpus_per_node", "fabric", "tool_times", "seed", "unreachable",
            "faults", "health_check", "topology", "leaf_labels", "transport", "accounting", "slurm_auth",
            "rack_trays", "slurm", "unprivileged")
NODES_KEYS = ("prefix", "count", "width", "start")
FABRIC_KEYS = ("leaves", "spines", "rails", "oversubscription", "nic_gbps")
HEALTH_KEYS = ("program", "interval")
# slurm: what slurm.conf says about the nodes beyond their names (the inventory plugin reads it back).
SLURM_KEYS = ("partitions", "features")
# nic_gbps: None = the profile's rate.
DEFAULT_FABRIC = {"leaves": 1, "spines": 1, "rails": 8, "oversubscription": 1.0, "nic_gbps": None}
DEFAULT_HEALTH_INTERVAL = 15
TRANSPORTS = ("local", "ssh")
# How the simulated Slurm signs its messages and job credentials: munge as on a real cluster, or
# none (Slurm's auth/none and cred/none plugins): 1,024 slurmds on one host all verifying through one
# munged on 2 cores overflow its socket backlog, a limit of the simulation, not of Slurm.
SLURM_AUTHS = ("munge", "none")
# One slurmd per node on one host: 1,024 start on 2 cores and 24 GiB (README, Benchmarks).
MAX_NODES = 1024
MAX_CPUS_PER_NODE = 1024

_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}\Z")
_PREFIX_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9-]{0,30}[A-Za-z-])?\Z")

# Tool names a wrapper in sim/bin may run (hang faults name one of these).
TOOLS = ("nvidia-smi", "dcgmi", "ibstat", "perfquery", "ibnetdiscover", "dmesg", "journalctl", "all_reduce_perf",
         "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "sdc-hook", "storage-hook",
         "ib_write_bw", "ib_read_bw", "nvidia-imex-ctl", "nvbandwidth")
# tool_times keys: seconds each fake sleeps before printing.
TOOL_TIME_KEYS = ("nvidia_smi", "dcgmi", "dcgmi_diag_r1", "dcgmi_diag_r2", "dcgmi_diag_r3", "dcgmi_diag_r4",
                  "ibstat", "perfquery", "ibnetdiscover", "dmesg", "all_reduce_perf", "all_gather_perf",
                  "reduce_scatter_perf", "alltoall_perf", "perftest")

# DCGM diagnostic tests a dcgm_fail fault may name: canonical display name -> lowest run level.
DCGM_TESTS = {
    "PCIe": 2, "GPU Memory": 2, "Diagnostic": 3, "SM Stress": 3, "Targeted Stress": 3,
    "Targeted Power": 3, "Memory Bandwidth": 3, "Memtest": 4, "Pulse Test": 4,
}
_DCGM_ALIASES = {
    "memory": "GPU Memory", "gpu_memory": "GPU Memory", "gpu memory": "GPU Memory", "pcie": "PCIe",
    "diagnostic": "Diagnostic", "sm_stress": "SM Stress", "sm stress": "SM Stress",
    "targeted_stress": "Targeted Stress", "targeted stress": "Targeted Stress",
    "targeted_power": "Targeted Power", "targeted power": "Targeted Power",
    "memory_bandwidth": "Memory Bandwidth", "memory bandwidth": "Memory Bandwidth",
    "memtest": "Memtest", "pulse_test": "Pulse Test", "pulse test": "Pulse Test",
}

# ib_counters_rising counter -> perfquery -x field.
IB_COUNTERS = {
    "symbol_error": "SymbolErrorCounter",
    "link_error_recovery": "LinkErrorRecoveryCounter",
    "link_downed": "LinkDownedCounter",
    "port_rcv_errors": "PortRcvErrors",
    "port_rcv_remote_physical_errors": "PortRcvRemotePhysicalErrors",
    "port_xmit_discards": "PortXmitDiscards",
    "local_link_integrity_errors": "LocalLinkIntegrityErrors",
    "excessive_buffer_overrun_errors": "ExcessiveBufferOverrunErrors",
    "port_xmit_wait": "PortXmitWait",
}

_TOPO_LINKS = ("SYS", "NODE", "PHB", "PXB", "PIX")

# kind -> (required keys, {optional key: default}); "node" is required unless noted in the check.
FAULTS = {
    "nvlink_down": (("node", "gpus"), {"link": "SYS"}),
    "nic_down": (("node", "nic"), {"port": 1, "physical_state": "Polling"}),
    "nic_degraded": (("node", "nic", "rate"), {"port": 1}),
    # The HCA trains at its full rate (ibstat shows it) but moves data at this fraction of it: a
    # marginal cable or transceiver, a PCIe problem behind the NIC. perftest on that NIC sees it;
    # nccl-tests across the node only by the NIC's share of the node's rails.
    "nic_slow": (("node", "nic", "factor"), {"intermittent": None}),
    # A GPU's (gpu: index) or a NIC's (nic: mlx5_N) PCIe link trained below its maximum: gen
    # and/or width (null: unchanged). nvidia-smi -q / sysfs show it; the NIC moves data at what the
    # link carries, GPUDirect RDMA through the GPU likewise (mlx5_core's probe line says "limited by").
    "pcie_downtrained": (("node",), {"gpu": None, "nic": None, "gen": None, "width": None}),
    # The link goes down and recovers under traffic only: each perftest run through that NIC on
    # the node (during: perftest), or each multi-node nccl-tests run including the node (during:
    # nccl), adds per_run to its link_downed and link_error_recovery counters (sysfs, perfquery)
    # and costs a perftest run a little bandwidth; with no traffic the counters stay still.
    "link_flap": (("node", "nic"), {"per_run": 1, "during": "perftest"}),
    # Not a fault: an extra HCA for storage (mlx5_<nics>, ...), on no GPU's PCIe switch (NODE/SYS in
    # topo -m), its own rate and link layer; not on the compute fabric (no rail, no fabric traffic).
    "storage_hca": (("node",), {"count": 1, "rate": 200, "link_layer": "InfiniBand"}),
    # An NVLink of a GPU that errs under traffic only: each nccl-tests run on the node adds per_run
    # to that link's counter (replay, recovery or crc) that nvidia-smi nvlink -e shows.
    "nvlink_errors": (("node", "gpu", "link"), {"counter": "replay", "per_run": 1}),
    # A GPU's (gpu: index; null: every GPU of the node) NVLink fabric registration as nvidia-smi -q's
    # Fabric section shows it: state Not Started / In Progress (the fabric manager down or not
    # finished), status (e.g. Insufficient Resources: registration failed), clique_id (0: in no
    # clique), cluster_uuid, health ({row: value} of the Health block, e.g. {"Bandwidth": "Degraded"}).
    # rack (1-based, rack_trays trays each) instead of node: every tray of that rack (an NVLink switch
    # tray down degrades the whole rack's fabric).
    "fabric": ((), {"node": None, "rack": None, "gpu": None, "state": "Completed", "status": None,
                    "clique_id": None, "cluster_uuid": None, "health": None}),
    # A tray's IMEX daemon stopped: nvidia-imex-ctl -N fails there; its rack peers show it UNAVAILABLE,
    # its connections I and the IMEX domain DEGRADED (rack-scale profiles).
    "imex_down": (("node",), {}),
    # NVLink traffic between trays at this fraction of the rate (rack-scale profiles): every link up,
    # the registration and its Health block clean, only a multi-node NVLink run including the tray
    # (node) or any tray of the rack (rack, 1-based) is slower: a marginal NVLink cable cartridge or
    # switch-tray port, CRC replays. Found only by measuring across the trays (the nvlink_domain stage).
    "nvlink_slow": (("factor",), {"node": None, "rack": None}),
    "gpu_missing": (("node", "gpu"), {}),
    "ecc_uncorrectable": (("node", "gpu"), {"count": 1}),
    "row_remap_pending": (("node", "gpu"), {}),
    "xid": (("node", "gpu", "xid"), {"count": 1}),
    "throttle": (("node", "gpu", "reason"), {}),
    "dcgm_fail": (("node", "gpu", "test"), {}),
    # intermittent (slow_node, nic_slow): slow in this share of the runs only (each multi-node
    # nccl-tests or perftest run draws afresh, from the seed and its Slurm step), fine in the others
    "slow_node": (("node", "factor"), {"intermittent": None}),
    "degraded_uplink": (("factor",), {"leaf": None, "node": None}),
    "ib_counters_rising": (("node", "nic", "counter"), {"per_call": 1, "port": 1}),
    "driver_mismatch": (("node", "version"), {}),
    "firmware_mismatch": (("node", "version"), {"nic": None}),
    "wrong_results": (("node",), {"count": None}),
    "no_mpi": (("node",), {}),
    "hang": (("node", "tool"), {}),
    # The tool takes this many seconds longer on this node than tool_times says (a node whose DCGM
    # diagnostic or nccl-tests run is slower to finish, not slower in what it measures); with
    # release_file, only until that file exists (tests hold a node at a stage without timing).
    "slow_tool": (("node", "tool", "seconds"), {"release_file": None}),
    # Silent data corruption: the SDC probe's results on this GPU get one bit flipped, in each
    # iteration with this probability (1: always), for the named workloads (null: all).
    "sdc": (("node", "gpu"), {"probability": 1.0, "workloads": None}),
    # A GPU computing at this fraction of its peers' throughput (the SDC probe's compute floor).
    "slow_gpu": (("node", "gpu", "factor"), {}),
    # The node's storage at this fraction of the nominal: path local (default) slows its NVMe (the
    # data loader's reads, the checkpoint probe's local writes and reads), shared its client of
    # the shared file system (the checkpoint probe's shared path), all both.
    "slow_storage": (("node", "factor"), {"path": "local"}),
}
# nvidia-smi -q Fabric states and Health rows a fabric fault may set.
FABRIC_STATES = ("Not Started", "In Progress", "Completed")
FABRIC_HEALTH_ROWS = ("Summary", "Bandwidth", "Route Recovery in progress", "Route Unhealthy",
                      "Access Timeout Recovery", "Incorrect Configuration")
# What a slow_storage fault slows (see FAULTS).
STORAGE_PATHS = ("local", "shared", "all")
# Workloads of the SDC probe (roles/check_sdc/files/gpucluster_sdc_probe.py) a sdc fault may name.
SDC_WORKLOADS = ("gemm_fp64", "gemm_fp32", "gemm_tf32", "gemm_bf16", "gemm_fp16", "reduce_fp32", "elementwise_fp32")


class SpecError(ValueError):
    """The spec is unusable; the message is one line naming the file and the key."""


def _show(value):
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Spec:  # pylint: disable=too-many-instance-attributes
    """A validated spec: node names, the profile's facts, fabric, timings and normalized faults.

    ``data`` is the spec with defaults filled in and its faults as written: validating it again
    gives the same Spec (clusterctl writes it to the run directory's spec.json for the tools).
    ``faults`` are the normalized faults (defaults filled in, leaf faults resolved).
    """

    def __init__(self, data, path=None, faults=None):
        self.data = data
        self.path = Path(path).resolve() if path else None
        self.name = data["name"]
        self.profile = self.profile_name = data["profile"]
        self.hw = hardware.profile(self.profile_name)
        self.nodes = node_names(data["nodes"])
        self._index = {n: i for i, n in enumerate(self.nodes)}
        self.cpus_per_node = data["cpus_per_node"]
        self.fabric = data["fabric"]
        self.tool_times = data["tool_times"]
        self.seed = data["seed"]
        self.rack_trays = data.get("rack_trays", 18)
        self.unreachable = list(data["unreachable"])
        self.faults = data["faults"] if faults is None else faults
        self.health_check = data["health_check"]
        self.topology = data["topology"]
        self.leaf_labels = data["leaf_labels"]
        self.transport = data["transport"]
        self.accounting = data["accounting"]
        self.slurm_auth = data["slurm_auth"]
        self.slurm = data.get("slurm") or {"partitions": {}, "features": {}}
        # The tools run as a user without root: dmesg refused (kernel.dmesg_restrict=1), the journal
        # readable only with journal: true (a member of adm/systemd-journal).
        self.unprivileged = data.get("unprivileged")

    # -- nodes and leaves (nodes fill the leaves in order, ceil(count / leaves) per leaf) -------
    @property
    def reachable(self):
        """Nodes whose slurmd runs."""
        skip = set(self.unreachable)
        return [node for node in self.nodes if node not in skip]

    def node_name(self, index):
        """Name of the node at 0-based ``index``."""
        return self.nodes[index]

    def hostlist(self, first=0, last=None):
        """Slurm hostlist for nodes ``first..last`` (0-based, inclusive), e.g. ``gpu[001-016]``."""
        nodes = self.data["nodes"]
        last = len(self.nodes) - 1 if last is None else last
        if first == last:
            return self.nodes[first]
        low, high = nodes["start"] + first, nodes["start"] + last
        return "%s[%0*d-%0*d]" % (nodes["prefix"], nodes["width"], low, nodes["width"], high)

    def leaves(self):
        """[(leaf name, [nodes])] for every leaf, in order; a leaf may be empty."""
        per = self.nodes_per_leaf()
        return [(self.leaf_name(i), self.nodes[i * per:(i + 1) * per]) for i in range(self.fabric["leaves"])]

    def digest(self):
        """Short hash of ``data``: a running cluster with the same digest has this configuration."""
        import hashlib  # pylint: disable=import-outside-toplevel
        # (not at the top: every fake tool call imports this module, few hash a spec)
        return hashlib.sha256(json.dumps(self.data, sort_keys=True).encode()).hexdigest()[:16]

    def node_index(self, node):
        return self._index[node]

    def has_node(self, node):
        return node in self._index

    def nodes_per_leaf(self):
        return -(-len(self.nodes) // self.fabric["leaves"])

    def leaf_index(self, node):
        """0-based leaf of ``node``."""
        return self._index[node] // self.nodes_per_leaf()

    def leaf_name(self, index):
        """Name of leaf ``index`` (0-based): leaf01, leaf02, ..."""
        return "leaf%0*d" % (max(2, len(str(self.fabric["leaves"]))), index + 1)

    def spine_name(self, index):
        return "spine%0*d" % (max(2, len(str(self.fabric["spines"]))), index + 1)

    def nic_gbps(self):
        return self.fabric.get("nic_gbps") or self.hw["nic_gbps"]

    def faults_for(self, node=None, kind=None):
        return [f for f in self.faults
                if (node is None or f.get("node") == node) and (kind is None or f["kind"] == kind)]


def node_names(nodes):
    return ["%s%0*d" % (nodes["prefix"], nodes["width"], nodes["start"] + i) for i in range(nodes["count"])]


def read_spec_file(path):
    """Parse the file at ``path`` (YAML or JSON) into plain data; SpecError when unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise SpecError("%s: no such spec file" % path) from None
    except OSError as exc:
        raise SpecError("%s: cannot read the spec: %s" % (path, exc.strerror or exc)) from None
    if str(path).endswith(".json"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise SpecError("%s: not valid JSON: %s" % (path, exc)) from None
    try:
        import yaml  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise SpecError("%s: PyYAML is missing in %s: run the fake tools with the project venv "
                        "(GPUCLUSTER_SIM_PYTHON=.venv/bin/python) or give a .json spec" % (path, _python())) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d column %d)" % (mark.line + 1, mark.column + 1) if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError("%s: not valid YAML%s: %s" % (path, where, problem)) from None


def _python():
    import sys  # pylint: disable=import-outside-toplevel
    return sys.executable or "python"


# The parsed spec file as JSON in the run directory, keyed by the file's inode, modification time
# and size: every fake tool call re-reads the spec (faults change on a running cluster), and parsing
# YAML costs more than the rest of a call. An edit in place changes the time, an atomic rewrite the
# inode; the key is checked on every call, so a changed spec is always parsed afresh.
SPEC_CACHE = "spec-cache.json"


def read_cached(path, cache_dir):
    """read_spec_file(path), through ``cache_dir``/SPEC_CACHE when cache_dir is given."""
    if not cache_dir:
        return read_spec_file(path)
    try:
        stat = os.stat(path)
    except OSError:
        return read_spec_file(path)  # its own words for a missing or unreadable file
    key = [os.path.abspath(str(path)), stat.st_ino, stat.st_mtime_ns, stat.st_size]
    cache = os.path.join(cache_dir, SPEC_CACHE)
    try:
        with open(cache, encoding="utf-8") as handle:
            kept = json.load(handle)
        if kept.get("key") == key:
            return kept["data"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    data = read_spec_file(path)
    try:
        text = json.dumps({"key": key, "data": data})
        os.makedirs(cache_dir, exist_ok=True)
        write_atomic(cache, text)
    except (OSError, TypeError, ValueError):
        pass  # not cacheable (a value JSON cannot hold, a read-only run directory): parsed every time
    return data


def load(path, fallback_json=None, cache_dir=None):
    """Load and validate the spec at ``path``; when PyYAML is missing, ``fallback_json`` (a
    spec.json written by clusterctl) is used instead if it exists. cache_dir: where the parsed
    file may be kept between calls (read_cached)."""
    try:
        data = read_cached(path, cache_dir)
    except SpecError as exc:
        if "PyYAML is missing" in str(exc) and fallback_json and os.path.exists(fallback_json):
            return validate(read_spec_file(fallback_json), fallback_json)
        raise
    return validate(data, path)


def validate(data, path=None):  # noqa: C901  (one straight pass over the keys)
    """Validate spec data; return a Spec with defaults filled in, or raise SpecError.

    The message is one line: the file as given (or "spec"), the key, what is wrong.
    """
    where = str(path) if path else "spec"

    def fail(key, message):
        raise SpecError("%s: %s: %s" % (where, key, message))

    def integer(value, key, low, high=None):
        if not _is_int(value) or value < low or (high is not None and value > high):
            bound = ">= %d" % low if high is None else "from %d to %d" % (low, high)
            fail(key, "must be an integer %s, got %s" % (bound, _show(value)))
        return value

    if data is None:
        raise SpecError("%s: empty spec (needs at least %s)" % (where, ", ".join(REQUIRED_KEYS)))
    if not isinstance(data, dict):
        raise SpecError("%s: the spec must be a mapping, got %s" % (where, _show(data)))
    for key in data:
        if key not in TOP_KEYS:
            fail(key, "unknown key (known: %s)" % ", ".join(TOP_KEYS))
    for key in REQUIRED_KEYS:
        if key not in data:
            fail(key, "missing (required: %s)" % ", ".join(REQUIRED_KEYS))
    out = {"name": data["name"]}
    if not isinstance(data["name"], str) or not _NAME_RE.match(data["name"]):
        fail("name", "must be lower-case letters, digits, '-' or '_' (starting with a letter, at most 32), "
             "got %s" % _show(data["name"]))
    profile = data["profile"]
    if profile not in hardware.PROFILES:
        fail("profile", "%s is not a known profile (known: %s)" % (_show(profile), ", ".join(hardware.PROFILES)))
    out["profile"] = profile
    hw = hardware.PROFILES[profile]

    nodes = data["nodes"]
    if not isinstance(nodes, dict):
        fail("nodes", "must be a mapping {prefix, count, width, start}, got %s" % _show(nodes))
    for key in nodes:
        if key not in NODES_KEYS:
            fail("nodes.%s" % key, "unknown key (known: %s)" % ", ".join(NODES_KEYS))
    for key in ("prefix", "count"):
        if key not in nodes:
            fail("nodes.%s" % key, "missing")
    if not isinstance(nodes["prefix"], str) or not _PREFIX_RE.match(nodes["prefix"]):
        fail("nodes.prefix", "must start with a letter, hold letters, digits or '-', not end in a digit "
             "and be at most 32 long, got %s" % _show(nodes["prefix"]))
    count = integer(nodes["count"], "nodes.count", 1, MAX_NODES)
    start = integer(nodes.get("start", 1), "nodes.start", 0)
    width = integer(nodes.get("width", 3), "nodes.width", 1, 8)
    need = len(str(start + count - 1))
    if width < need:
        fail("nodes.width", "%d is too narrow for node number %d (needs %d)" % (width, start + count - 1, need))
    out["nodes"] = {"prefix": nodes["prefix"], "count": count, "width": width, "start": start}
    names = node_names(out["nodes"])
    known = set(names)
    span = "%s..%s" % (names[0], names[-1])

    out["cpus_per_node"] = integer(data.get("cpus_per_node", 2), "cpus_per_node", 1, MAX_CPUS_PER_NODE)
    # Rack-scale profiles: trays (nodes, in order) per rack, one NVLink domain each (NVL72: 18).
    out["rack_trays"] = integer(data.get("rack_trays", 18), "rack_trays", 1, 72)

    fabric = dict(DEFAULT_FABRIC)
    given = data.get("fabric") or {}
    if not isinstance(given, dict):
        fail("fabric", "must be a mapping with keys %s, got %s" % (", ".join(FABRIC_KEYS), _show(given)))
    for key in given:
        if key not in FABRIC_KEYS:
            fail("fabric.%s" % key, "unknown key (known: %s)" % ", ".join(FABRIC_KEYS))
    fabric.update(given)
    for key in ("leaves", "spines", "rails"):
        integer(fabric[key], "fabric.%s" % key, 1, 1024)
    if fabric["leaves"] > count:
        fail("fabric.leaves", "%d leaves for %d nodes: at most one leaf per node" % (fabric["leaves"], count))
    if not _is_number(fabric["oversubscription"]) or fabric["oversubscription"] <= 0:
        fail("fabric.oversubscription", "must be a number > 0 (1.0 = non-blocking), got %s"
             % _show(fabric["oversubscription"]))
    fabric["oversubscription"] = float(fabric["oversubscription"])
    if fabric["nic_gbps"] is not None and fabric["nic_gbps"] not in hardware.VALID_IB_RATES:
        fail("fabric.nic_gbps", "must be an Infiniband rate (%s), got %s"
             % (", ".join(map(str, hardware.VALID_IB_RATES)), _show(fabric["nic_gbps"])))
    out["fabric"] = fabric

    times = data.get("tool_times") or {}
    if not isinstance(times, dict):
        fail("tool_times", "must be a mapping of tool name to seconds, got %s" % _show(times))
    for tool, seconds in times.items():
        if tool not in TOOL_TIME_KEYS:
            fail("tool_times.%s" % tool, "unknown tool (known: %s)" % ", ".join(TOOL_TIME_KEYS))
        if not _is_number(seconds) or seconds < 0 or seconds > 3600:
            fail("tool_times.%s" % tool, "must be a number of seconds from 0 to 3600, got %s" % _show(seconds))
    out["tool_times"] = {tool: float(seconds) for tool, seconds in times.items()}

    seed = data.get("seed", 0)
    if not _is_int(seed):
        fail("seed", "must be an integer, got %s" % _show(seed))
    out["seed"] = seed

    unreachable = data.get("unreachable") or []
    if not isinstance(unreachable, list):
        fail("unreachable", "must be a list of node names, got %s" % _show(unreachable))
    for i, node in enumerate(unreachable):
        if node not in known:
            fail("unreachable[%d]" % i, "%s is not a node of this cluster (%s)" % (_show(node), span))
    if len(set(unreachable)) != len(unreachable):
        fail("unreachable", "lists a node twice")
    out["unreachable"] = list(unreachable)

    faults = data.get("faults") or []
    if not isinstance(faults, list):
        fail("faults", "must be a list of {kind, node, ...}, got %s" % _show(faults))
    leaf_count = fabric["leaves"]
    per_leaf = -(-count // leaf_count)
    leaf_width = max(2, len(str(leaf_count)))
    normalized = [_fault(i, f, hw, known, span, leaf_count, per_leaf, leaf_width, names, fail,
                         rack_trays=out["rack_trays"]) for i, f in enumerate(faults)]
    out["faults"] = [dict(f) for f in faults]
    out["health_check"] = _health_check(data.get("health_check"), path, fail, integer)
    out["topology"] = data.get("topology", True)
    if not isinstance(out["topology"], bool):
        fail("topology", "must be true or false, got %s" % _show(out["topology"]))
    # Whether the inventory labels each host with its leaf (slurm_topology_leaf).
    out["leaf_labels"] = data.get("leaf_labels", True)
    if not isinstance(out["leaf_labels"], bool):
        fail("leaf_labels", "must be true or false, got %s" % _show(out["leaf_labels"]))
    # How Ansible reaches the nodes (sim/sshnodes.py); the tools behave the same either way.
    out["transport"] = data.get("transport", "local")
    if out["transport"] not in TRANSPORTS:
        fail("transport", "must be one of %s, got %s" % (", ".join(TRANSPORTS), _show(out["transport"])))
    # MariaDB + slurmdbd for the cluster (sim/accounting.py); the tools do not use it.
    out["accounting"] = data.get("accounting", False)
    if not isinstance(out["accounting"], bool):
        fail("accounting", "must be true or false, got %s" % _show(out["accounting"]))
    out["slurm_auth"] = data.get("slurm_auth", "munge")
    if out["slurm_auth"] not in SLURM_AUTHS:
        fail("slurm_auth", "must be one of %s, got %s" % (", ".join(SLURM_AUTHS), _show(out["slurm_auth"])))
    if out["slurm_auth"] == "none" and out["accounting"]:
        fail("slurm_auth", "none cannot be combined with accounting: slurmdbd authenticates with munge")
    out["slurm"] = _slurm(data.get("slurm"), known, fail)
    unprivileged = data.get("unprivileged")
    if unprivileged not in (None, False) and not (isinstance(unprivileged, dict) and set(unprivileged) <= {"journal"}
                                                  and isinstance(unprivileged.get("journal", False), bool)):
        fail("unprivileged", "must be false or {journal: true|false}, got %s" % _show(unprivileged))
    out["unprivileged"] = {"journal": unprivileged.get("journal", False)} if isinstance(unprivileged, dict) else None
    return Spec(out, path, normalized)


def _node_list(value, known, key, fail):
    """A list of this cluster's node names (each once)."""
    if not isinstance(value, list) or not value or not all(isinstance(n, str) for n in value):
        fail(key, "must be a non-empty list of node names, got %s" % _show(value))
    for node in value:
        if node not in known:
            fail(key, "%s is not a node of this cluster" % _show(node))
    if len(set(value)) != len(value):
        fail(key, "lists a node twice")
    return list(value)


def _slurm(slurm, known, fail):
    """{partitions: {name: [nodes]}, features: {feature: [nodes]}}.

    No partitions: one partition ``gpu`` with every node (the default). No GRES: slurmd here has no
    GPU to count (gres/gpu with counts only left every node INVAL, "count reported lower than
    configured (0 < 8)").
    """
    slurm = {} if slurm is None else slurm
    if not isinstance(slurm, dict):
        fail("slurm", "must be a mapping with keys %s, got %s" % (", ".join(SLURM_KEYS), _show(slurm)))
    for key in slurm:
        if key not in SLURM_KEYS:
            fail("slurm.%s" % key, "unknown key (known: %s)" % ", ".join(SLURM_KEYS))
    out = {"partitions": {}, "features": {}}
    for key in ("partitions", "features"):
        given = slurm.get(key) or {}
        if not isinstance(given, dict):
            fail("slurm.%s" % key, "must map a name to a list of nodes, got %s" % _show(given))
        for name, nodes in given.items():
            if not isinstance(name, str) or not _NAME_RE.match(name):
                fail("slurm.%s" % key, "%s is not a usable name (lower-case letters, digits, '-', '_')" % _show(name))
            out[key][name] = _node_list(nodes, known, "slurm.%s.%s" % (key, name), fail)
    return out


def _health_check(health, path, fail, integer):
    """{program, interval} for Slurm's HealthCheckProgram; a relative program is the spec file's."""
    if health is None:
        return None
    if not isinstance(health, dict):
        fail("health_check", "must be a mapping with keys %s, got %s" % (", ".join(HEALTH_KEYS), _show(health)))
    for key in health:
        if key not in HEALTH_KEYS:
            fail("health_check.%s" % key, "unknown key (known: %s)" % ", ".join(HEALTH_KEYS))
    program = health.get("program")
    if not isinstance(program, str) or not program:
        fail("health_check.program", "must be a path to an executable, got %s" % _show(program))
    interval = integer(health.get("interval", DEFAULT_HEALTH_INTERVAL), "health_check.interval", 1, 86400)
    program_path = Path(program).expanduser()
    if not program_path.is_absolute() and path is not None:
        program_path = Path(path).resolve().parent / program_path
    return {"program": str(program_path), "interval": interval}


def _fabric_fault(out, key, fail, gpu_index):
    """A fabric fault's GPU, state, clique and Health rows."""
    if out["gpu"] is not None:
        gpu_index(out["gpu"], "gpu")
    if out["state"] not in FABRIC_STATES:
        fail(key + ".state", "must be one of %s, got %s" % (", ".join(FABRIC_STATES), _show(out["state"])))
    if out["clique_id"] is not None and not (_is_int(out["clique_id"]) and 0 <= out["clique_id"] < 1 << 32):
        fail(key + ".clique_id", "must be a whole number 0..2^32-1, got %s" % _show(out["clique_id"]))
    health = out["health"] or {}
    if not isinstance(health, dict) or any(k not in FABRIC_HEALTH_ROWS or not isinstance(v, str)
                                           for k, v in health.items()):
        fail(key + ".health", "must map Health rows (%s) to the text shown, got %s"
             % (", ".join(FABRIC_HEALTH_ROWS), _show(out["health"])))


def _fault(i, fault, hw, known, span, leaf_count, per_leaf, leaf_width, names, fail,  # noqa: C901
           rack_trays=18):
    key = "faults[%d]" % i
    if not isinstance(fault, dict):
        fail(key, "must be a mapping {kind, node, ...}, got %s" % _show(fault))
    kind = fault.get("kind", fault.get("type"))
    if kind is None:
        fail(key + ".kind", "missing (kinds: %s)" % ", ".join(FAULTS))
    if kind not in FAULTS:
        fail(key + ".kind", "%s is not a fault kind (kinds: %s)" % (_show(kind), ", ".join(FAULTS)))
    required, optional = FAULTS[kind]
    allowed = set(required) | set(optional) | {"kind", "type"}
    for k in fault:
        if k not in allowed:
            fail("%s.%s" % (key, k), "unknown key for %s (keys: %s)" % (kind, ", ".join(list(required) + list(optional))))
    for k in required:
        if k not in fault:
            fail("%s.%s" % (key, k), "missing (%s needs %s)" % (kind, ", ".join(required)))
    out = dict(optional)
    out.update({k: v for k, v in fault.items() if k not in ("type",)})
    out["kind"] = kind
    where = "%s (%s)" % (key, kind)

    if out.get("node") is not None and out["node"] not in known:
        fail(key + ".node", "%s is not a node of this cluster (%s)" % (_show(out["node"]), span))
    ngpus, nnics = hw["gpus"], hw["nics"]

    def gpu_index(value, sub):
        if not _is_int(value) or not 0 <= value < ngpus:
            fail("%s.%s" % (key, sub), "%s is not a GPU of this profile (0..%d)" % (_show(value), ngpus - 1))
        return value

    def nic_name(value, sub):
        m = re.match(r"^mlx5_(\d+)$", str(value)) if isinstance(value, str) else None
        if not m or int(m.group(1)) >= nnics:
            fail("%s.%s" % (key, sub), "%s is not a NIC of this profile (mlx5_0..mlx5_%d)" % (_show(value), nnics - 1))
        return value

    def positive(value, sub, integer=False, high=None):
        ok = _is_int(value) if integer else _is_number(value)
        if not ok or value <= 0 or (high is not None and value > high):
            fail("%s.%s" % (key, sub), "must be a %s > 0%s, got %s" % (
                "whole number" if integer else "number", "" if high is None else " and <= %s" % high, _show(value)))
        return value

    if kind == "nvlink_down":
        gpus = out["gpus"]
        if not isinstance(gpus, list) or len(gpus) != 2 or gpus[0] == gpus[1]:
            fail(key + ".gpus", "must be two different GPU indices [a, b], got %s" % _show(gpus))
        out["gpus"] = [gpu_index(g, "gpus") for g in gpus]
        link = str(out["link"])
        m = re.match(r"^NV(\d+)$", link)
        if link not in _TOPO_LINKS and not (m and 0 < int(m.group(1)) < hw["nvlink"]):
            fail(key + ".link", "must be NV1..NV%d (fewer links than the healthy NV%d) or one of %s, got %s"
                 % (hw["nvlink"] - 1, hw["nvlink"], "/".join(_TOPO_LINKS), _show(out["link"])))
        out["link"] = link
    elif kind in ("fabric", "nvlink_slow"):
        if (out["node"] is None) == (out["rack"] is None):
            fail(where, "names a node or a rack (1-based), one of them")
        if out["rack"] is not None and not (_is_int(out["rack"]) and 1 <= out["rack"] <= -(-len(names) // rack_trays)):
            fail(key + ".rack", "must be a rack number 1..%d (%d trays per rack), got %s"
                 % (-(-len(names) // rack_trays), rack_trays, _show(out["rack"])))
        if kind == "nvlink_slow":
            out["factor"] = float(positive(out["factor"], "factor", high=1))
        else:
            _fabric_fault(out, key, fail, gpu_index)
    elif kind == "pcie_downtrained":
        if (out["gpu"] is None) == (out["nic"] is None):
            fail(key, "pcie_downtrained names one device: gpu (an index) or nic (mlx5_N)")
        if out["gpu"] is not None:
            gpu_index(out["gpu"], "gpu")
        else:
            nic_name(out["nic"], "nic")
        top = hw["pcie_gen"] if out["gpu"] is not None else hw["nic_pcie_gen"]
        if out["gen"] is None and out["width"] is None:
            fail(key, "pcie_downtrained needs gen (below %d) and/or width (below 16)" % top)
        if out["gen"] is not None and (not _is_int(out["gen"]) or not 1 <= out["gen"] < top):
            fail(key + ".gen", "must be a PCIe generation 1..%d (below the healthy Gen%d), got %s"
                 % (top - 1, top, _show(out["gen"])))
        if out["width"] is not None and out["width"] not in (1, 2, 4, 8):
            fail(key + ".width", "must be a link width below x16 (1, 2, 4, 8), got %s" % _show(out["width"]))
    elif kind == "storage_hca":
        positive(out["count"], "count", integer=True, high=4)
        if out["rate"] not in (100, 200, 400, 800):
            fail(key + ".rate", "must be an HCA rate in Gb/s (100, 200, 400, 800), got %s" % _show(out["rate"]))
        if out["link_layer"] not in ("InfiniBand", "Ethernet"):
            fail(key + ".link_layer", "must be InfiniBand or Ethernet, got %s" % _show(out["link_layer"]))
    elif kind == "link_flap":
        nic_name(out["nic"], "nic")
        positive(out["per_run"], "per_run", integer=True, high=1000)
        if out["during"] not in ("perftest", "nccl"):
            fail(key + ".during", "must be perftest or nccl, got %s" % _show(out["during"]))
    elif kind == "nvlink_errors":
        gpu_index(out["gpu"], "gpu")
        if not _is_int(out["link"]) or not 0 <= out["link"] < hw["nvlink"]:
            fail(key + ".link", "must be an NVLink of the GPU 0..%d, got %s" % (hw["nvlink"] - 1, _show(out["link"])))
        if out["counter"] not in ("replay", "recovery", "crc"):
            fail(key + ".counter", "must be replay, recovery or crc, got %s" % _show(out["counter"]))
        positive(out["per_run"], "per_run", integer=True, high=100000)
    elif kind == "nic_slow":
        nic_name(out["nic"], "nic")
        positive(out["factor"], "factor", high=1)
        out["factor"] = float(out["factor"])
        if out.get("intermittent") is not None:
            positive(out["intermittent"], "intermittent", high=1)
            out["intermittent"] = float(out["intermittent"])
    elif kind in ("nic_down", "nic_degraded", "ib_counters_rising"):
        nic_name(out["nic"], "nic")
        if out["port"] != 1:
            fail(key + ".port", "the simulated HCAs have one port: 1, got %s" % _show(out["port"]))
        if kind == "nic_down" and out["physical_state"] not in ("Polling", "Disabled"):
            fail(key + ".physical_state", "must be Polling or Disabled, got %s" % _show(out["physical_state"]))
        if kind == "nic_degraded":
            rate = out["rate"]
            nominal = hw["nic_gbps"]
            if rate not in hardware.VALID_IB_RATES or rate >= nominal:
                fail(key + ".rate", "must be an Infiniband rate below the healthy %d (%s), got %s" % (
                    nominal, ", ".join(str(r) for r in hardware.VALID_IB_RATES if r < nominal), _show(rate)))
        if kind == "ib_counters_rising":
            if out["counter"] not in IB_COUNTERS:
                fail(key + ".counter", "%s is not a counter (counters: %s)" % (_show(out["counter"]), ", ".join(IB_COUNTERS)))
            positive(out["per_call"], "per_call", integer=True)
    elif kind in ("gpu_missing", "ecc_uncorrectable", "row_remap_pending", "xid", "throttle", "dcgm_fail"):
        gpu_index(out["gpu"], "gpu")
        if kind == "ecc_uncorrectable":
            positive(out["count"], "count", integer=True)
        if kind == "xid":
            positive(out["xid"], "xid", integer=True, high=999)
            positive(out["count"], "count", integer=True, high=1000)
        if kind == "throttle" and out["reason"] not in ("thermal", "power"):
            fail(key + ".reason", "must be thermal or power, got %s" % _show(out["reason"]))
        if kind == "dcgm_fail":
            test = out["test"]
            canon = test if test in DCGM_TESTS else _DCGM_ALIASES.get(str(test).lower())
            if canon is None:
                fail(key + ".test", "%s is not a DCGM diagnostic test (tests: %s)" % (_show(test), ", ".join(DCGM_TESTS)))
            out["test"] = canon
    elif kind in ("sdc", "slow_gpu"):
        gpu_index(out["gpu"], "gpu")
        if kind == "slow_gpu":
            positive(out["factor"], "factor", high=1)
            out["factor"] = float(out["factor"])
        else:
            positive(out["probability"], "probability", high=1)
            out["probability"] = float(out["probability"])
            workloads = out["workloads"]
            if workloads is not None:
                if not isinstance(workloads, list) or not workloads or any(w not in SDC_WORKLOADS for w in workloads):
                    fail(key + ".workloads", "must be a list of SDC probe workloads (%s), got %s"
                         % (", ".join(SDC_WORKLOADS), _show(workloads)))
    elif kind in ("slow_node", "slow_storage"):
        positive(out["factor"], "factor", high=1)
        out["factor"] = float(out["factor"])
        if out.get("intermittent") is not None:
            positive(out["intermittent"], "intermittent", high=1)
            out["intermittent"] = float(out["intermittent"])
        if kind == "slow_storage" and out["path"] not in STORAGE_PATHS:
            fail(key + ".path", "must be one of %s, got %s" % (", ".join(STORAGE_PATHS), _show(out["path"])))
    elif kind == "degraded_uplink":
        positive(out["factor"], "factor", high=1)
        out["factor"] = float(out["factor"])
        leaf, node = out.get("leaf"), out.get("node")
        if leaf is None and node is None:
            fail(where, "needs leaf (leaf01.. or its 1-based number) or node (that node's leaf is meant)")
        if leaf is None:
            index = names.index(node) // per_leaf
        elif _is_int(leaf):
            if not 1 <= leaf <= leaf_count:
                fail(key + ".leaf", "leaf numbers are 1-based like their names (leaf01 is 1): 1..%d, got %s"
                     % (leaf_count, _show(leaf)))
            index = leaf - 1
        else:
            m = re.match(r"^leaf0*(\d+)$", str(leaf))
            if not m or not 1 <= int(m.group(1)) <= leaf_count:
                fail(key + ".leaf", "%s is not a leaf of this fabric (leaf%0*d..leaf%0*d)"
                     % (_show(leaf), leaf_width, 1, leaf_width, leaf_count))
            index = int(m.group(1)) - 1
        if node is not None and names.index(node) // per_leaf != index:
            fail(key + ".leaf", "%s is not the leaf of node %s (leaf%0*d)" % (
                _show(leaf), node, leaf_width, names.index(node) // per_leaf + 1))
        out["leaf_index"] = index
        out["leaf"] = "leaf%0*d" % (leaf_width, index + 1)
    elif kind in ("driver_mismatch", "firmware_mismatch"):
        version = out["version"]
        if isinstance(version, bool) or not isinstance(version, (str, int, float)) or not str(version).strip():
            fail(key + ".version", "must be a version string such as '550.54.15', got %s" % _show(version))
        out["version"] = str(version).strip()
        if kind == "firmware_mismatch" and out.get("nic") is not None:
            nic_name(out["nic"], "nic")
    elif kind == "wrong_results":
        if out["count"] is not None:
            positive(out["count"], "count", integer=True)
    elif kind == "hang":
        tool = str(out["tool"]).replace("_", "-") if out["tool"] in ("nvidia_smi",) else out["tool"]
        if tool not in TOOLS:
            fail(key + ".tool", "%s is not a simulated tool (tools: %s)" % (_show(out["tool"]), ", ".join(TOOLS)))
        out["tool"] = tool
    elif kind == "slow_tool":
        if out["tool"] not in TOOL_TIME_KEYS:
            fail(key + ".tool", "%s is not a tool_times key (keys: %s)" % (_show(out["tool"]), ", ".join(TOOL_TIME_KEYS)))
        if not _is_number(out["seconds"]) or not 0 < out["seconds"] <= 3600:
            fail(key + ".seconds", "must be a number of seconds from 0 (excluded) to 3600, got %s" % _show(out["seconds"]))
        out["seconds"] = float(out["seconds"])
        release = out["release_file"]
        if release is not None and not (isinstance(release, str) and release.startswith("/")):
            fail(key + ".release_file", "must be an absolute path, got %s" % _show(release))
    return out
