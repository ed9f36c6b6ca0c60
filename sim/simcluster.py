# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated cluster: its spec (YAML) and a real Slurm for it on this one host.

A spec names the cluster, its nodes and fabric; ``load_spec`` validates it (errors name the key).
``SimCluster`` runs slurmctld plus one slurmd per reachable node, all on 127.0.0.1 with their own
ports, with every file under one run directory (default ``<repo>/.build/sim/<name>/``):

    etc/slurm.conf, etc/topology.conf   generated configuration (SLURM_CONF points here)
    env.sh                              export lines for SLURM_CONF and GPUCLUSTER_SIM_*
    state.json                          pids, ports, nodes of the running cluster
    spec.json                           the validated spec, defaults filled in (for the fake tools)
    healthcheck.sh                      wrapper for HealthCheckProgram (slurmd gives it no PATH)
    pid/ log/ spool/<node>/ state/      daemon pid files, logs, slurmd spools, slurmctld state

Daemons are found and stopped by PID (pid files, checked against /proc/PID/cmdline holding this
run's slurm.conf), never by process name. Standard library plus PyYAML.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import shlex
import signal
import sys
import socket
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import yaml

try:
    import sshnodes  # sim/ is this module's directory (callers put it on sys.path)
except ImportError:  # pragma: no cover - imported by file path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sshnodes
import accounting  # noqa: E402  (sim/, as above)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RUN_ROOT = REPO / ".build" / "sim"
RUN_ENV = "GPUCLUSTER_SIM_RUN"
SPEC_ENV = "GPUCLUSTER_SIM_SPEC"
CLUSTER_ENV = "GPUCLUSTER_SIM_CLUSTER"
# Set only in the environment of the daemons this module starts (and so of their slurmstepd):
# lets stop() find a run's leftover step daemons without matching on process names.
DAEMON_MARK = "GPUCLUSTER_SIM_DAEMON"

# Ports: one block per cluster (slurmctld, then one per node), below Linux's ephemeral range.
PORT_LOW, PORT_HIGH = 17000, 32000
PORT_SLOT = 64
LOCK_FILE = Path(tempfile.gettempdir()) / "gpucluster-sim.lock"

MUNGE_RUN = Path("/run/munge")
MUNGE_KEY = Path("/etc/munge/munge.key")
SLURM_SBIN = Path("/usr/sbin")

MAX_NODES = 256
REAL_MEMORY_MB = 1000
SLURMD_TIMEOUT_S = 30

# ---------------------------------------------------------------------------------------------
# Spec
# ---------------------------------------------------------------------------------------------
TOP_KEYS = {
    "name": "cluster name (ClusterName)",
    "profile": "hardware profile name",
    "nodes": "{prefix, count, width, start}",
    "cpus_per_node": "CPUs slurmd advertises",
    "fabric": "{leaves, spines, rails, oversubscription, nic_gbps}",
    "tool_times": "seconds per fake tool run",
    "seed": "fake tool randomness",
    "unreachable": "node names whose slurmd is not started",
    "faults": "list of {kind, node, ...} for the fake tools",
    "health_check": "{program, interval}: Slurm HealthCheckProgram",
    "topology": "generate topology/tree from fabric (default true)",
    "transport": "how Ansible reaches the nodes: local (default) or ssh (sim/sshnodes.py)",
    "accounting": "true: MariaDB + slurmdbd for sacct / sacctmgr (sim/accounting.py; default false)",
}
REQUIRED_KEYS = ("name", "profile", "nodes")
NODES_KEYS = ("prefix", "count", "width", "start")
FABRIC_KEYS = ("leaves", "spines", "rails", "oversubscription", "nic_gbps")
HEALTH_KEYS = ("program", "interval")
# nic_gbps: None = the profile's rate (the fake tools check it against the Infiniband rates).
DEFAULT_FABRIC = {"leaves": 1, "spines": 1, "rails": 8, "oversubscription": 1.0, "nic_gbps": None}
DEFAULT_HEALTH_INTERVAL = 15
TRANSPORTS = ("local", "ssh")

_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_PREFIX_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9-]{0,30}[A-Za-z-])?$")
_PROFILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SpecError(ValueError):
    """The spec is unusable; the message is one line naming the file and the key."""


class SimError(RuntimeError):
    """Running the simulated cluster failed; the message is one line saying where to look."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and math.isfinite(value)


class Spec:
    """A validated cluster spec. ``data`` is the normalized mapping (defaults filled in)."""

    def __init__(self, data, path=None):
        self.data = data
        self.path = Path(path).resolve() if path else None

    # plain fields
    name = property(lambda self: self.data["name"])
    profile = property(lambda self: self.data["profile"])
    cpus_per_node = property(lambda self: self.data["cpus_per_node"])
    fabric = property(lambda self: self.data["fabric"])
    tool_times = property(lambda self: self.data["tool_times"])
    seed = property(lambda self: self.data["seed"])
    unreachable = property(lambda self: list(self.data["unreachable"]))
    faults = property(lambda self: self.data["faults"])
    health_check = property(lambda self: self.data["health_check"])
    topology = property(lambda self: self.data["topology"])
    transport = property(lambda self: self.data.get("transport", "local"))
    accounting = property(lambda self: self.data.get("accounting", False))

    @property
    def nodes(self):
        """All node names in order (gpu001, gpu002, ...)."""
        n = self.data["nodes"]
        return [self.node_name(i) for i in range(n["count"])]

    @property
    def reachable(self):
        """Nodes whose slurmd runs."""
        skip = set(self.data["unreachable"])
        return [node for node in self.nodes if node not in skip]

    def node_name(self, index):
        """Name of the node at 0-based ``index``."""
        n = self.data["nodes"]
        return "%s%0*d" % (n["prefix"], n["width"], n["start"] + index)

    def hostlist(self, first=0, last=None):
        """Slurm hostlist for nodes ``first..last`` (0-based, inclusive), e.g. ``gpu[001-016]``."""
        n = self.data["nodes"]
        last = n["count"] - 1 if last is None else last
        if first == last:
            return self.node_name(first)
        lo, hi = n["start"] + first, n["start"] + last
        return "%s[%0*d-%0*d]" % (n["prefix"], n["width"], lo, n["width"], hi)

    # fabric: nodes fill the leaves in order, ceil(count / leaves) per leaf (the last may hold fewer)
    def nodes_per_leaf(self):
        return math.ceil(self.data["nodes"]["count"] / self.fabric["leaves"])

    def leaf_index(self, node):
        """0-based leaf of ``node``."""
        return self.nodes.index(node) // self.nodes_per_leaf()

    def leaf_name(self, index):
        """Switch name of leaf ``index`` (0-based): leaf01, leaf02, ..."""
        return "leaf%0*d" % (max(2, len(str(self.fabric["leaves"]))), index + 1)

    def leaves(self):
        """[(leaf name, [nodes])] for every leaf, in order; a leaf may be empty."""
        per, nodes = self.nodes_per_leaf(), self.nodes
        return [(self.leaf_name(i), nodes[i * per:(i + 1) * per]) for i in range(self.fabric["leaves"])]

    def digest(self):
        return hashlib.sha256(json.dumps(self.data, sort_keys=True).encode()).hexdigest()[:16]


def load_spec(path):
    """Read and validate a spec file; raise SpecError (one line, naming the key) when unusable."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("%s: no such spec file" % path) from None
    except OSError as exc:
        raise SpecError("%s: cannot read: %s" % (path, exc.strerror)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d column %d)" % (mark.line + 1, mark.column + 1) if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError("%s: not valid YAML%s: %s" % (path, where, problem)) from None
    return validate_spec(data, path)


def validate_spec(data, path=None):
    """Validate a spec mapping; return a Spec with defaults filled in, or raise SpecError."""
    where = str(path) if path else "spec"

    def fail(key, message):
        raise SpecError("%s: %s: %s" % (where, key, message))

    def mapping(value, key, known):
        if not isinstance(value, dict):
            fail(key, "must be a mapping with keys %s, got %s" % (", ".join(known), _show(value)))
        for k in value:
            if k not in known:
                fail("%s.%s" % (key, k), "unknown key (known: %s)" % ", ".join(known))
        return value

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

    out = {}
    name = data["name"]
    if not isinstance(name, str) or not _NAME_RE.match(name):
        fail("name", "must be lower-case letters, digits, '-' or '_' (starting with a letter, at most 32), got %s"
             % _show(name))
    out["name"] = name
    profile = data["profile"]
    if not isinstance(profile, str) or not _PROFILE_RE.match(profile):
        fail("profile", "must be a profile name (letters, digits, '_', '-', '.'), got %s" % _show(profile))
    out["profile"] = profile

    nodes = mapping(data["nodes"], "nodes", NODES_KEYS)
    if "prefix" not in nodes or "count" not in nodes:
        fail("nodes.prefix" if "prefix" not in nodes else "nodes.count", "missing")
    prefix = nodes["prefix"]
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        fail("nodes.prefix", "must start with a letter, hold letters, digits or '-', and not end in a digit, got %s"
             % _show(prefix))
    count = integer(nodes["count"], "nodes.count", 1, MAX_NODES)
    start = integer(nodes.get("start", 1), "nodes.start", 0)
    width = integer(nodes.get("width", 3), "nodes.width", 1, 8)
    need = len(str(start + count - 1))
    if width < need:
        fail("nodes.width", "%d is too narrow for node number %d (needs %d)" % (width, start + count - 1, need))
    out["nodes"] = {"prefix": prefix, "count": count, "width": width, "start": start}

    out["cpus_per_node"] = integer(data.get("cpus_per_node", 2), "cpus_per_node", 1, 1024)

    fabric = dict(DEFAULT_FABRIC)
    fabric.update(mapping(data.get("fabric", {}) or {}, "fabric", FABRIC_KEYS))
    for key in ("leaves", "spines", "rails"):
        integer(fabric[key], "fabric.%s" % key, 1, 1024)
    if fabric["leaves"] > count:
        fail("fabric.leaves", "%d leaves for %d nodes: at most one leaf per node" % (fabric["leaves"], count))
    if not _is_number(fabric["oversubscription"]) or fabric["oversubscription"] <= 0:
        fail("fabric.oversubscription", "must be a number > 0, got %s" % _show(fabric["oversubscription"]))
    fabric["oversubscription"] = float(fabric["oversubscription"])
    if fabric["nic_gbps"] is not None and (not _is_number(fabric["nic_gbps"]) or fabric["nic_gbps"] <= 0):
        fail("fabric.nic_gbps", "must be a link rate in Gb/s (> 0) or null, got %s" % _show(fabric["nic_gbps"]))
    out["fabric"] = fabric

    times = data.get("tool_times", {}) or {}
    if not isinstance(times, dict):
        fail("tool_times", "must be a mapping of tool name to seconds, got %s" % _show(times))
    for tool, seconds in times.items():
        if not isinstance(tool, str) or not re.match(r"^[A-Za-z0-9_]+$", tool):
            fail("tool_times", "tool names are letters, digits and '_', got %s" % _show(tool))
        if not _is_number(seconds) or seconds < 0:
            fail("tool_times.%s" % tool, "must be a number of seconds >= 0, got %s" % _show(seconds))
    out["tool_times"] = {tool: float(seconds) for tool, seconds in times.items()}

    seed = data.get("seed", 0)
    if not _is_int(seed):
        fail("seed", "must be an integer, got %s" % _show(seed))
    out["seed"] = seed

    node_names = ["%s%0*d" % (prefix, width, start + i) for i in range(count)]
    known_nodes = set(node_names)
    span = "%s..%s" % (node_names[0], node_names[-1])
    unreachable = data.get("unreachable", []) or []
    if not isinstance(unreachable, list):
        fail("unreachable", "must be a list of node names, got %s" % _show(unreachable))
    for i, node in enumerate(unreachable):
        if node not in known_nodes:
            fail("unreachable[%d]" % i, "%s is not a node of this cluster (%s)" % (_show(node), span))
    if len(set(unreachable)) != len(unreachable):
        fail("unreachable", "lists a node twice")
    out["unreachable"] = list(unreachable)

    faults = data.get("faults", []) or []
    if not isinstance(faults, list):
        fail("faults", "must be a list of {kind, node, ...}, got %s" % _show(faults))
    for i, fault in enumerate(faults):
        if not isinstance(fault, dict):
            fail("faults[%d]" % i, "must be a mapping with kind and node, got %s" % _show(fault))
        if "kind" not in fault:
            fail("faults[%d].kind" % i, "missing")
        if not isinstance(fault["kind"], str) or not fault["kind"]:
            fail("faults[%d].kind" % i, "must be a non-empty string, got %s" % _show(fault["kind"]))
        # A degraded leaf uplink is named by its leaf; every other fault sits on a node.
        if "node" not in fault and not (fault["kind"] == "degraded_uplink" and "leaf" in fault):
            fail("faults[%d].node" % i, "missing")
        if "node" in fault and fault["node"] not in known_nodes:
            fail("faults[%d].node" % i, "%s is not a node of this cluster (%s)" % (_show(fault["node"]), span))
    out["faults"] = [dict(f) for f in faults]

    health = data.get("health_check")
    if health is not None:
        health = mapping(health, "health_check", HEALTH_KEYS)
        program = health.get("program")
        if not isinstance(program, str) or not program:
            fail("health_check.program", "must be a path to an executable, got %s" % _show(program))
        interval = integer(health.get("interval", DEFAULT_HEALTH_INTERVAL), "health_check.interval", 1, 86400)
        program_path = Path(program).expanduser()
        if not program_path.is_absolute() and path is not None:
            program_path = Path(path).resolve().parent / program_path  # relative to the spec file
        health = {"program": str(program_path), "interval": interval}
    out["health_check"] = health

    topology = data.get("topology", True)
    if not isinstance(topology, bool):
        fail("topology", "must be true or false, got %s" % _show(topology))
    out["topology"] = topology

    transport = data.get("transport", "local")
    if transport not in TRANSPORTS:
        fail("transport", "must be one of %s, got %s" % (", ".join(TRANSPORTS), _show(transport)))
    out["transport"] = transport
    acct = data.get("accounting", False)
    if not isinstance(acct, bool):
        fail("accounting", "must be true or false, got %s" % _show(acct))
    out["accounting"] = acct
    return Spec(out, path)


def _show(value):
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------
# Inventory
# ---------------------------------------------------------------------------------------------
def inventory(spec, run_dir=None):
    """An Ansible YAML inventory (as a dict) for the spec's nodes.

    Besides the hosts it sets what acceptance.yml needs to find the fake tools: the profile, the
    tools' environment (fake tools first on PATH, the node's name, this run's spec and state) and
    the stage settings that differ from a real cluster's defaults.
    """
    run_dir = Path(run_dir) if run_dir else default_run_dir(spec.name)
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    hosts = {}
    for node in spec.nodes:
        host = {"gpucluster_sim_node": node, "slurm_topology_leaf": spec.leaf_name(spec.leaf_index(node))}
        if spec.transport == "ssh":
            # Its own sshd's address; an unreachable node has none listening there: refused.
            host.update(sshnodes.host_vars(run_dir, spec.nodes, node))
        elif node in spec.unreachable:
            # A closed local port: Ansible reports the host UNREACHABLE at once.
            host.update({"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                         "ansible_ssh_common_args": "-o ConnectTimeout=2 -o ConnectionAttempts=1"})
        hosts[node] = host
    environment = {
        "PATH": "%s:%s" % (REPO / "sim" / "bin", os.environ.get("PATH", "/usr/bin:/bin")),
        "GPUCLUSTER_SIM_NODE": "{{ inventory_hostname }}",
        "GPUCLUSTER_SIM_SPEC": str(spec.path) if spec.path else str(run_dir / "spec.json"),
        "GPUCLUSTER_SIM_RUN": str(run_dir),
        "GPUCLUSTER_SIM_PYTHON": sys.executable,
        "SLURM_CONF": str(run_dir / "etc" / "slurm.conf"),
    }
    # Commands the controller runs (srun for the fabric stage): the same tools, the node comes
    # from SLURMD_NODENAME in each task.
    controller_environment = dict((k, v) for k, v in environment.items() if k != "GPUCLUSTER_SIM_NODE")
    node_vars = dict(local) if spec.transport == "local" else sshnodes.group_vars(run_dir)
    node_vars.update({
        "acceptance_environment": environment,
        "check_nccl_single_node_binary": "all_reduce_perf",
        "check_preflight_required_tools": ["nvidia-smi", "dcgmi", "ibstat", "all_reduce_perf"],
        # The fake sysfs counter tree of each node (written by the fake tools).
        "check_infiniband_sysfs_root": "%s/gpusim/sys/{{ inventory_hostname }}/class/infiniband" % run_dir,
        "check_infiniband_counter_interval": 0.2,
        # The reference workload on CPU with gloo: one rank per node, timed by CPU clock because
        # the simulated nodes share this machine's cores.
        "check_workload_python": sys.executable,
        "check_workload_master_addr": "127.0.0.1",
        "check_workload_ranks_per_node": 1,
        "check_workload_compute_clock": "cpu",
        "check_workload_environment": {"OMP_NUM_THREADS": "1"},
        "check_workload_judge_options": {"straggler_ratio": 1.5, "spread_warn": 1.5},
        # The SDC probe on the CPU (one thread, bit-reproducible), small and a fixed number of
        # iterations; the hook injects the spec's sdc / slow_gpu faults and the simulated clock.
        "check_sdc_python": sys.executable,
        "check_sdc_device": "cpu",
        "check_sdc_size": 48,
        "check_sdc_seconds": 0,
        "check_sdc_min_iterations": 20,
        "check_sdc_max_iterations": 20,
        "check_sdc_sample_s": 1.0,
        "check_sdc_sim_hook": "gpusim-sdc-hook",
        "check_sdc_timeout": 300,
        # The data loader probe: small synthetic shards per node, one worker, one pass; the
        # storage hook gives the simulated read bandwidth (slow_storage faults).
        "check_data_loader_python": sys.executable,
        "check_data_loader_generate_dir": "%s/loader/{{ inventory_hostname }}" % run_dir,
        "check_data_loader_samples": 256,
        "check_data_loader_sample_kb": 16,
        "check_data_loader_shard_samples": 32,
        "check_data_loader_gpus": 1,
        "check_data_loader_workers_per_gpu": 1,
        "check_data_loader_seconds": 0,
        "check_data_loader_sim_hook": "gpusim-storage-hook",
        "check_data_loader_consume_samples_per_s": 100000,
        # The checkpoint probe: an 8 MB shard and 8 MB of fio per path, a directory per node as its
        # NVMe and one shared by all as the shared file system; the storage hook gives the
        # simulated bandwidths (slow_storage faults) and splits the shared one among the writers.
        "check_checkpoint_python": sys.executable,
        "check_checkpoint_local_path": "%s/nvme-{{ inventory_hostname }}" % run_dir,
        "check_checkpoint_shared_path": "%s/shared-fs" % run_dir,
        "check_checkpoint_create_paths": True,
        "check_checkpoint_shard_mb": 8,
        "check_checkpoint_fio_size_mb": 8,
        "check_checkpoint_fio_iodepth": 8,
        "check_checkpoint_fio_timeout": 60,
        "check_checkpoint_timeout": 300,
        "check_checkpoint_sim_hook": "gpusim-storage-hook",
    })
    return {
        "all": {
            "vars": {"gpucluster_sim_cluster": spec.name, "gpucluster_sim_profile": spec.profile,
                     "acceptance_profile": spec.profile,
                     "acceptance_controller_environment": controller_environment,
                     # One process per node driving all 8 GPUs (-g 8) keeps the fake ranks few; the
                     # simulated Slurm has no GPU GRES for --gpus-per-node.
                     "check_fabric_binary": "all_reduce_perf",
                     "check_fabric_tasks_per_node": 1,
                     "check_fabric_gpus_per_process": 8,
                     "check_fabric_gpus_per_node_flag": False,
                     "check_fabric_timeout": 60},
            "children": {
                "slurm_controller": {"hosts": {"localhost": dict(local)}},
                "gpu_nodes": {"vars": node_vars, "hosts": hosts},
            },
        }
    }


def write_inventory(spec, out_dir, run_dir=None):
    """Write ``<out_dir>/hosts.yml``; return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "hosts.yml"
    source = spec.path.relative_to(REPO) if spec.path and spec.path.is_relative_to(REPO) else spec.path
    text = "---\n# Generated by `sim/clusterctl inventory %s`: do not edit, regenerate.\n" % (source or "SPEC")
    text += yaml.safe_dump(inventory(spec, run_dir), sort_keys=False, default_flow_style=False)
    _write(target, text)
    return target


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------
def proc_state(pid):
    """The /proc state letter of ``pid`` ('R', 'S', 'Z', ...) or None when it is gone."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except (OSError, ValueError):
        return None
    return stat[stat.rfind(")") + 2:].split(" ", 1)[0]


def alive(pid):
    """True when ``pid`` runs and is not a zombie (PID 1 reaps slowly here)."""
    return bool(pid) and proc_state(pid) not in (None, "Z", "X")


def _cmdline(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _is_daemon(pid, conf, daemon):
    """True when ``pid`` is ``daemon`` (slurmctld / slurmd) started with this run's ``conf``."""
    argv = _cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]) == daemon and str(conf) in argv


def _read_pid(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _marked_pids(run_dir):
    """PIDs whose environment carries this run's daemon mark (slurmstepd of this run's slurmds)."""
    mark = ("%s=%s" % (DAEMON_MARK, run_dir)).encode()
    found = []
    for pid in _all_pids():
        try:
            env = Path("/proc/%d/environ" % pid).read_bytes()
        except OSError:
            continue
        if mark in env.split(b"\0") and alive(pid):
            found.append(pid)
    return found


def _descendants(roots):
    children = {}
    for pid in _all_pids():
        try:
            stat = Path("/proc/%d/stat" % pid).read_text()
            ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            if child not in out:
                out.append(child)
                todo.append(child)
    return out


def _signal(pid, sig):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _wait_gone(pids, deadline):
    """Poll until every pid is gone or a zombie, or the deadline passes; return those still alive."""
    pending = [p for p in pids if alive(p)]
    delay = 0.02
    while pending and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 1.5, 0.2)
        pending = [p for p in pending if alive(p)]
    return pending


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _port_listening(port):
    """True when a TCP socket listens on ``port`` (read from /proc: no connection, no log noise)."""
    suffix = ":%04X" % port
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[1].endswith(suffix) and fields[3] == "0A":
                return True
    return False


def _write(path, text, mode=0o644):
    """Write atomically (readers never see half a file)."""
    path = Path(path)
    tmp = path.with_name(".%s.tmp" % path.name)
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)


def hostname():
    return socket.gethostname().split(".")[0]


# ---------------------------------------------------------------------------------------------
# The cluster
# ---------------------------------------------------------------------------------------------
def default_run_dir(name):
    """``$GPUCLUSTER_SIM_RUN`` when set, else ``<repo>/.build/sim/<name>``."""
    env = os.environ.get(RUN_ENV)
    return Path(env) if env else DEFAULT_RUN_ROOT / name


def _write_fake_sysfs(run_dir):
    """Give every node its fake InfiniBand counter tree before any tool runs (see gpusim/sysfs.py)."""
    from gpusim import model, sysfs  # sim/ is this module's directory
    from gpusim.spec import load as load_tool_spec
    tool_spec = load_tool_spec(str(run_dir / "spec.json"))
    for node in tool_spec.nodes:
        sysfs.write_tree(model.node_state(tool_spec, node), str(run_dir))


class SimCluster:
    """A simulated cluster's Slurm daemons. A context manager: leaving the block always stops them.

    >>> with SimCluster("sim/clusters/demo.yml") as cluster:
    ...     cluster.sinfo()          # {'gpu001': 'idle', ...}
    """

    def __init__(self, spec_path=None, run_dir=None, *, spec=None):
        if spec is None and spec_path is not None:
            spec = load_spec(spec_path)
        self.spec = spec
        if run_dir is None:
            if spec is None:
                raise SimError("SimCluster needs a spec or a run directory")
            run_dir = default_run_dir(spec.name)
        self.run_dir = Path(run_dir).resolve()
        self.etc = self.run_dir / "etc"
        self.conf = self.etc / "slurm.conf"
        self.state_file = self.run_dir / "state.json"
        self.env_file = self.run_dir / "env.sh"

    @classmethod
    def from_run_dir(cls, run_dir):
        """The cluster whose files are in ``run_dir`` (for stop / status / env without a spec)."""
        cluster = cls(run_dir=run_dir)
        state = cluster.state()
        if state and state.get("spec"):
            with contextlib.suppress(OSError, SpecError):
                cluster.spec = validate_spec(state["spec"], state.get("spec_path"))
        return cluster

    # -- context manager ------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- state ----------------------------------------------------------------------------------
    def state(self):
        """state.json as a dict, or {} when there is none."""
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def env(self):
        """Environment variables for Slurm clients and the fake tools of this cluster."""
        env = {"SLURM_CONF": str(self.conf), RUN_ENV: str(self.run_dir)}
        state = self.state()
        if state.get("spec_path"):
            env[SPEC_ENV] = state["spec_path"]
        elif self.spec is not None and self.spec.path:
            env[SPEC_ENV] = str(self.spec.path)
        name = state.get("name") or (self.spec.name if self.spec else None)
        if name:
            env[CLUSTER_ENV] = name
        return env

    def env_lines(self):
        return "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in self.env().items())

    def _client_env(self):
        env = dict(os.environ)
        env.pop(DAEMON_MARK, None)
        env.update(self.env())
        return env

    def run(self, args, check=False, timeout=60, **kwargs):
        """Run a command (srun, sbatch, ...) with SLURM_CONF of this cluster; text output."""
        env = self._client_env()
        env.update(kwargs.pop("env", {}) or {})
        return subprocess.run(args, env=env, capture_output=True, text=True, check=check, timeout=timeout, **kwargs)

    def scontrol(self, *args, check=True, timeout=30):
        """``scontrol ARGS``; returns the CompletedProcess, raises SimError on failure when ``check``."""
        proc = self.run(["scontrol", *args], timeout=timeout)
        if check and proc.returncode != 0:
            raise SimError("scontrol %s: rc=%d: %s" % (" ".join(args), proc.returncode, proc.stderr.strip()))
        return proc

    def sinfo(self, timeout=10):
        """{node: compact sinfo state} ('idle', 'unk*', 'down*', 'drain', 'alloc', ...)."""
        proc = self.run(["sinfo", "--noheader", "--Node", "--format=%N %t"], timeout=timeout)
        if proc.returncode != 0:
            raise SimError("sinfo: rc=%d: %s" % (proc.returncode, proc.stderr.strip()))
        states = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def _daemon_pids(self):
        """{'slurmctld': pid|None, 'slurmd': {node: pid|None}}: live daemons of this run, by pid file."""
        state = self.state()
        ctld = _read_pid(self.run_dir / "pid" / "slurmctld.pid") or state.get("slurmctld", {}).get("pid")
        if not (ctld and alive(ctld) and _is_daemon(ctld, self.conf, "slurmctld")):
            ctld = None
        slurmds = {}
        for node, info in (state.get("slurmd") or {}).items():
            pid = _read_pid(self.run_dir / "pid" / ("slurmd-%s.pid" % node)) or info.get("pid")
            slurmds[node] = pid if pid and alive(pid) and _is_daemon(pid, self.conf, "slurmd") else None
        return {"slurmctld": ctld, "slurmd": slurmds}

    def _stray_daemons(self):
        """Live slurmctld/slurmd processes started with this run's slurm.conf (pid files lost)."""
        found = []
        for pid in _all_pids():
            argv = _cmdline(pid)
            if argv and os.path.basename(argv[0]) in ("slurmctld", "slurmd") and str(self.conf) in argv \
                    and alive(pid):
                found.append(pid)
        return found

    def status(self):
        """Daemons alive and node states, as a JSON-able dict (``running``: all expected daemons up)."""
        state = self.state()
        pids = self._daemon_pids()
        out = {
            "cluster": state.get("name") or (self.spec.name if self.spec else None),
            "run_dir": str(self.run_dir),
            "slurm_conf": str(self.conf),
            "munge": munge_ok(),
            "slurmctld": {"pid": pids["slurmctld"], "alive": bool(pids["slurmctld"]),
                          "port": state.get("slurmctld", {}).get("port")},
            "slurmd": {},
            "nodes": {},
        }
        for node, info in (state.get("slurmd") or {}).items():
            out["slurmd"][node] = {"pid": pids["slurmd"].get(node), "alive": bool(pids["slurmd"].get(node)),
                                   "port": info.get("port"), "reachable": info.get("reachable", True)}
        expected = [n for n, i in out["slurmd"].items() if i["reachable"]]
        out["running"] = bool(state) and out["slurmctld"]["alive"] and all(out["slurmd"][n]["alive"] for n in expected)
        if state.get("accounting"):
            out["accounting"] = self._accounting().status(state["accounting"])
            out["running"] = out["running"] and all(i["alive"] for i in out["accounting"].values())
        ssh = self._ssh()
        if ssh:
            out["sshd"] = ssh.status()
            out["running"] = out["running"] and all(i["alive"] for i in out["sshd"].values() if i["reachable"])
        if out["slurmctld"]["alive"]:
            try:
                out["nodes"] = self.sinfo(timeout=5)
            except (SimError, subprocess.TimeoutExpired) as exc:
                out["sinfo_error"] = str(exc)
        return out

    # -- start ----------------------------------------------------------------------------------
    def start(self, health_check=None, topology=None, timeout=30.0, transport=None):
        """Start (or keep) the cluster; return state.json's dict. Idempotent.

        ``health_check``: {program, interval} overriding the spec's; ``topology``: bool overriding it;
        ``transport``: 'local' or 'ssh' overriding it (ssh: one sshd per node, sim/sshnodes.py).
        Running with the same configuration: starts only missing slurmds. Otherwise: stop, fresh start.
        """
        if self.spec is None:
            raise SimError("start needs a spec")
        if os.geteuid() != 0:
            raise SimError("the simulated cluster runs Slurm as root: run as root")
        for tool in ("slurmctld", "slurmd"):
            if not (SLURM_SBIN / tool).exists():
                raise SimError("%s is not installed: run tools/install-system-deps.sh" % (SLURM_SBIN / tool))
        spec = self.spec
        if health_check is not None or topology is not None or transport is not None:
            data = json.loads(json.dumps(spec.data))
            if health_check is not None:
                data["health_check"] = health_check or None
            if topology is not None:
                data["topology"] = bool(topology)
            if transport is not None:
                data["transport"] = transport
            spec = self.spec = validate_spec(data, spec.path)
        # slurmd makes unix sockets <spool>/<node>/<node>_<job>.<step> (at most 107 bytes).
        longest = max(len(n) for n in spec.nodes)
        if len(str(self.run_dir / "spool")) + 2 * longest + 24 > 107:
            raise SimError("run directory path too long for slurmd's sockets (%s): use a shorter --run-dir"
                           % self.run_dir)
        t0 = time.monotonic()
        deadline = t0 + timeout
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with _locked(LOCK_FILE):
            ensure_munge()
            state = self.state()
            if state and state.get("name") not in (None, spec.name):
                pids = self._daemon_pids()
                if pids["slurmctld"] or any(pids["slurmd"].values()):
                    raise SimError("%s holds running cluster %r: stop it first or use another run directory"
                                   % (self.run_dir, state.get("name")))
            # A database or slurmdbd that died: start afresh (slurmctld keeps records it could not send).
            acct_up = not spec.accounting or all(self._accounting().pids().values())
            if state and state.get("digest") == spec.digest() and self._daemon_pids()["slurmctld"] and acct_up:
                restarted = self._start_missing(state)
                self._wait_nodes(spec, deadline, fresh=False)
                state["restarted"] = restarted
            else:
                if state or self._stray_daemons():
                    self.stop()
                try:
                    state = self._fresh_start(spec, deadline)
                except BaseException:
                    with contextlib.suppress(Exception):
                        self.stop()  # a failed start leaves nothing running
                    raise
            state["start_seconds"] = round(time.monotonic() - t0, 3)
            return state

    def _fresh_start(self, spec, deadline):
        run = self.run_dir
        for sub in ("state", "spool", "pid", "log", "gpusim", "db"):  # a fresh start: nothing from the last run
            _rmtree(run / sub)
        for sub in ("etc", "state", "log", "pid"):
            (run / sub).mkdir(parents=True, exist_ok=True)
        for node in spec.nodes:
            (run / "spool" / node).mkdir(parents=True, exist_ok=True)
        ctld_port = self._pick_ports(spec)
        node_ports = {node: ctld_port + 1 + i for i, node in enumerate(spec.nodes)}
        self._write_config(spec, ctld_port)
        state = {
            "name": spec.name,
            "spec_path": str(spec.path) if spec.path else None,
            "spec": spec.data,
            "digest": spec.digest(),
            "run_dir": str(run),
            "slurm_conf": str(self.conf),
            "hostname": hostname(),
            "slurmctld": {"pid": None, "port": ctld_port},
            "slurmd": {node: {"pid": None, "port": node_ports[node], "reachable": node not in spec.unreachable}
                       for node in spec.nodes},
        }
        _write(self.state_file, json.dumps(state, indent=2) + "\n")
        _write(run / "spec.json", json.dumps(spec.data, indent=2) + "\n")
        _write_fake_sysfs(run)
        _write(self.env_file, "# Source me: Slurm and fake-tool settings of simulated cluster %s\n%s"
               % (spec.name, self.env_lines()))
        if spec.accounting:  # the database and slurmdbd first: slurmctld registers the cluster at start
            self._start_accounting(state, accounting.ports(ctld_port, len(spec.nodes)), deadline)

        self._spawn(["slurmctld", "-f", str(self.conf)])
        pid = self._wait_pidfile(run / "pid" / "slurmctld.pid", "slurmctld", deadline)
        state["slurmctld"]["pid"] = pid
        while not _port_listening(ctld_port):
            if not alive(pid):
                raise SimError("slurmctld exited at start: see %s" % (run / "log" / "slurmctld.log"))
            if time.monotonic() > deadline:
                raise SimError("slurmctld not listening on port %d: see %s" % (ctld_port, run / "log" / "slurmctld.log"))
            time.sleep(0.02)
        self._start_slurmds(state, spec.reachable, deadline)
        _write(self.state_file, json.dumps(state, indent=2) + "\n")
        if spec.transport == "ssh":
            ssh = sshnodes.SSHNodes(run, spec.nodes, spec.unreachable)
            state["ssh"] = ssh.state()  # in state.json first: stop finds what a failed start left
            _write(self.state_file, json.dumps(state, indent=2) + "\n")
            try:
                state["ssh"] = ssh.start(deadline)
            except sshnodes.SSHNodeError as exc:
                raise SimError("sshd: %s" % exc) from None
            _write(self.state_file, json.dumps(state, indent=2) + "\n")
        self._wait_nodes(spec, deadline, fresh=True)
        return state

    def _start_accounting(self, state, db_ports, deadline):
        def record(entry):
            state["accounting"] = entry
            _write(self.state_file, json.dumps(state, indent=2) + "\n")
        try:
            self._accounting().start(*db_ports, deadline, on_pid=record)
        except accounting.AccountingError as exc:
            raise SimError("accounting: %s" % exc) from None

    def _start_missing(self, state):
        pids = self._daemon_pids()["slurmd"]
        missing = [n for n, info in state["slurmd"].items() if info.get("reachable", True) and not pids.get(n)]
        if missing:
            self._start_slurmds(state, missing, time.monotonic() + 15)
            _write(self.state_file, json.dumps(state, indent=2) + "\n")
        ssh = self._ssh()
        if ssh:
            try:
                state["restarted_sshd"] = ssh.start_missing()
            except sshnodes.SSHNodeError as exc:
                raise SimError("sshd: %s" % exc) from None
            state["ssh"] = ssh.state()
            _write(self.state_file, json.dumps(state, indent=2) + "\n")
        return missing

    def _ssh(self):
        """The nodes' sshd (sim/sshnodes.py) when this run has them, else None."""
        state = self.state().get("ssh")
        return sshnodes.SSHNodes.from_state(self.run_dir, state) if state else None

    def _start_slurmds(self, state, nodes, deadline):
        for node in nodes:
            with contextlib.suppress(FileNotFoundError):
                (self.run_dir / "pid" / ("slurmd-%s.pid" % node)).unlink()
        parents = [self._spawn(["slurmd", "-f", str(self.conf), "-N", node], wait=False) for node in nodes]
        for proc in parents:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        for node in nodes:
            pid = self._wait_pidfile(self.run_dir / "pid" / ("slurmd-%s.pid" % node), "slurmd", deadline, node)
            state["slurmd"][node]["pid"] = pid

    def _spawn(self, argv, wait=True):
        """Start a self-daemonizing Slurm daemon; the parent exits at once (the daemon is PID 1's)."""
        env = self._client_env()
        env[DAEMON_MARK] = str(self.run_dir)
        proc = subprocess.Popen([str(SLURM_SBIN / argv[0]), *argv[1:]], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                cwd=str(self.run_dir))
        if wait:
            proc.wait(timeout=30)
        return proc

    def _wait_pidfile(self, path, daemon, deadline, node=None):
        log = self.run_dir / "log" / ("%s.log" % daemon if node is None else "slurmd-%s.log" % node)
        while True:
            pid = _read_pid(path)
            if pid and alive(pid) and _is_daemon(pid, self.conf, daemon):
                return pid
            if time.monotonic() > deadline:
                raise SimError("%s%s did not start (no live pid in %s): see %s"
                               % (daemon, " " + node if node else "", path, _log_hint(log)))
            time.sleep(0.01)

    def _wait_nodes(self, spec, deadline, fresh):
        """Poll sinfo until every reachable node is idle (fresh) or responding, unreachable ones known."""
        want = set(spec.reachable)
        last = {}
        while True:
            try:
                last = self.sinfo(timeout=5)
            except (SimError, subprocess.TimeoutExpired):
                last = last or {}
            else:
                if fresh:
                    # A HealthCheckProgram runs at slurmd start and may drain its node at once.
                    ready = all(last.get(n) in ("idle", "drain", "drained") for n in want)
                else:
                    ready = all(n in last and not last[n].endswith("*") and not last[n].startswith(("unk", "down"))
                                for n in want)
                if ready and set(spec.nodes) <= set(last):
                    return last
            if time.monotonic() > deadline:
                waiting = sorted(n for n in want if last.get(n) != "idle")
                raise SimError("nodes not ready: %s (states %s): see %s"
                               % (", ".join(waiting[:8]) or "?", ", ".join(sorted({last.get(n, "?") for n in waiting})),
                                  self.run_dir / "log"))
            time.sleep(0.05)

    def _pick_ports(self, spec):
        """First port of a free block (slurmctld + one per node): the previous one if still free."""
        need = 1 + spec.data["nodes"]["count"] + (accounting.EXTRA_PORTS if spec.accounting else 0)
        old = self.state().get("slurmctld", {}).get("port")
        candidates = []
        if old:
            candidates.append(old)
        slot = PORT_SLOT * math.ceil(need / PORT_SLOT)
        slots = (PORT_HIGH - PORT_LOW) // slot
        first = zlib.crc32(str(self.run_dir).encode()) % slots
        candidates += [PORT_LOW + ((first + i) % slots) * slot for i in range(slots)]
        for base in candidates:
            if PORT_LOW <= base and base + need <= PORT_HIGH and all(_port_free(p) for p in range(base, base + need)):
                return base
        raise SimError("no %d free consecutive ports in %d-%d" % (need, PORT_LOW, PORT_HIGH))

    def _accounting(self):
        return accounting.Accounting(self.run_dir, self.conf)

    def _write_config(self, spec, ctld_port):
        run, host = self.run_dir, hostname()
        count = spec.data["nodes"]["count"]
        lines = [
            "# Generated by sim/clusterctl for simulated cluster %s%s: do not edit."
            % (spec.name, " from %s" % spec.path if spec.path else ""),
            "ClusterName=%s" % spec.name,
            "SlurmctldHost=%s(127.0.0.1)" % host,
            "SlurmctldPort=%d" % ctld_port,
            "SlurmdPort=%d" % (ctld_port + 1),
            "SlurmUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "StateSaveLocation=%s/state" % run,
            "SlurmdSpoolDir=%s/spool/%%n" % run,
            "SlurmctldPidFile=%s/pid/slurmctld.pid" % run,
            "SlurmdPidFile=%s/pid/slurmd-%%n.pid" % run,
            "SlurmctldLogFile=%s/log/slurmctld.log" % run,
            "SlurmdLogFile=%s/log/slurmd-%%n.log" % run,
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "ReturnToService=1",
            "JobRequeue=0",
            # Nodes advertise what slurm.conf says, not this host's CPUs and memory.
            "SlurmdParameters=config_overrides",
            "SlurmdTimeout=%d" % SLURMD_TIMEOUT_S,
            "KillWait=5",
            "MailProg=/bin/true",
            *(accounting.slurm_conf_lines(accounting.ports(ctld_port, count)[1]) if spec.accounting
              else ["AccountingStorageType=accounting_storage/none"]),
            "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none",
        ]
        topo = self.etc / "topology.conf"
        if spec.topology:
            lines.append("TopologyPlugin=topology/tree")
            leaves = [(name, members) for name, members in spec.leaves() if members]
            topo_lines = ["# Generated by sim/clusterctl from the fabric of %s: do not edit." % spec.name]
            for name, members in leaves:
                first = spec.nodes.index(members[0])
                topo_lines.append("SwitchName=%s Nodes=%s" % (name, spec.hostlist(first, first + len(members) - 1)))
            topo_lines.append("SwitchName=spine Switches=%s" % ",".join(leaf for leaf, members in leaves))
            _write(topo, "\n".join(topo_lines) + "\n")
        else:
            with contextlib.suppress(FileNotFoundError):
                topo.unlink()
        if spec.health_check:
            wrapper = run / "healthcheck.sh"
            _write(wrapper, _health_wrapper(self, spec), mode=0o755)
            lines += ["HealthCheckProgram=%s" % wrapper, "HealthCheckInterval=%d" % spec.health_check["interval"],
                      "HealthCheckNodeState=ANY"]
        lines += [
            "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=[%d-%d] CPUs=%d RealMemory=%d State=UNKNOWN"
            % (spec.hostlist(), host, ctld_port + 1, ctld_port + count, spec.cpus_per_node, REAL_MEMORY_MB),
            "PartitionName=gpu Default=YES Nodes=ALL MaxTime=INFINITE State=UP",
        ]
        _write(self.conf, "\n".join(lines) + "\n")

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, all=False, timeout=1.0):  # noqa: A002 - mirrors the CLI flag
        """Stop this run's daemons by PID: SIGTERM, SIGKILL after ``timeout`` s. ``all`` also stops munge.

        Running jobs are cancelled first (up to 3 s for their steps to end). The short default
        timeout is deliberate: slurmctld lingers ~3 s on shutdown when a node is unreachable, and
        a fresh start throws its saved state away anyway.

        Returns {'stopped': [pids], 'killed': [pids], 'munge_stopped': bool, 'seconds': float}.
        """
        t0 = time.monotonic()
        ssh = self._ssh()
        # First the nodes' sshd, their sessions and what runs under them (collectors, tools).
        try:
            ssh_result = ssh.stop(timeout) if ssh else {"stopped": [], "killed": []}
        except sshnodes.SSHNodeError as exc:
            raise SimError("stopping the nodes' sshd: %s" % exc) from None
        pids = self._daemon_pids()
        daemons = [p for p in [pids["slurmctld"], *pids["slurmd"].values()] if p]
        daemons += [p for p in self._stray_daemons() if p not in daemons]
        if pids["slurmctld"]:
            self._cancel_jobs(t0 + 3.0)
        for pid in daemons:
            _signal(pid, signal.SIGTERM)
        left = _wait_gone(daemons, time.monotonic() + timeout)
        for pid in left:
            _signal(pid, signal.SIGKILL)
        _wait_gone(left, time.monotonic() + 5)
        # slurmstepd of this run (and what they run) that outlived their slurmd.
        strays = _marked_pids(self.run_dir)
        strays += [p for p in _descendants(strays) if p not in strays]
        for pid in strays:
            _signal(pid, signal.SIGKILL)
        still = _wait_gone(left + strays, time.monotonic() + 5)
        if still:
            raise SimError("could not stop pids %s" % ", ".join(map(str, still)))
        # After slurmctld (it sends its last records to slurmdbd): slurmdbd, then the database.
        state = self.state()
        if state.get("accounting") or (self.run_dir / "db").exists():
            try:
                acct = self._accounting().stop(timeout)
            except accounting.AccountingError as exc:
                raise SimError("accounting: %s" % exc) from None
            daemons += acct["stopped"]
            left += acct["killed"]
        if state:
            for info in (state.get("accounting") or {}).values():
                if isinstance(info, dict) and "pid" in info:
                    info["pid"] = None
            state["slurmctld"]["pid"] = None
            for info in state.get("slurmd", {}).values():
                info["pid"] = None
            for info in state.get("ssh", {}).get("nodes", {}).values():
                info["pid"] = None
            state["stopped"] = True
            _write(self.state_file, json.dumps(state, indent=2) + "\n")
        munge_stopped = stop_munge() if all else False
        return {"stopped": ssh_result["stopped"] + daemons, "killed": ssh_result["killed"] + left + strays,
                "munge_stopped": munge_stopped,
                "seconds": round(time.monotonic() - t0, 3)}

    def _step_pids(self):
        """This run's slurmstepd processes (they carry the daemon mark and rename themselves)."""
        return [p for p in _marked_pids(self.run_dir) if (_cmdline(p) or [""])[0].startswith("slurmstepd")]

    def _cancel_jobs(self, deadline):
        """Cancel every job so Slurm ends their tasks; wait (until deadline) for the tasks to go."""
        try:
            jobs = self.run(["squeue", "--noheader", "--format=%A"], timeout=5).stdout.split()
        except subprocess.TimeoutExpired:
            return
        if not jobs:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run(["scancel", *jobs], timeout=5)
        # Wait for the jobs' tasks (the steps' children) to end; the step daemons are swept after.
        while _descendants(self._step_pids()) and time.monotonic() < deadline:
            time.sleep(0.05)


def _health_wrapper(cluster, spec):
    env = cluster.env()
    env[SPEC_ENV] = str(spec.path) if spec.path else env.get(SPEC_ENV, "")
    lines = ["#!/bin/sh",
             "# Generated by sim/clusterctl: slurmd runs HealthCheckProgram with only SLURMD_NODENAME set.",
             "export PATH=%s" % shlex.quote(os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"))]
    lines += ["export %s=%s" % (k, shlex.quote(v)) for k, v in env.items() if v]
    lines.append('exec %s "$@"' % shlex.quote(spec.health_check["program"]))
    return "\n".join(lines) + "\n"


def _log_hint(log):
    try:
        tail = [line for line in Path(log).read_text(errors="replace").splitlines() if "error" in line.lower()]
    except OSError:
        return str(log)
    return "%s (%s)" % (log, tail[-1].strip()) if tail else str(log)


def _rmtree(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _locked(path):
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------------
# Munge (shared by every cluster on this host)
# ---------------------------------------------------------------------------------------------
def munge_ok():
    """True when a credential round-trips through munged."""
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5, check=False)
        if cred.returncode != 0:
            return False
        return subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_munge(timeout=10.0):
    """Start munged (as user munge) unless it already answers."""
    if munge_ok():
        return False
    if not Path("/usr/sbin/munged").exists():
        raise SimError("munged is not installed: run tools/install-system-deps.sh")
    if not MUNGE_KEY.exists():
        subprocess.run(["mungekey", "--create", "--keyfile", str(MUNGE_KEY)], check=True, capture_output=True)
        subprocess.run(["chown", "munge:munge", str(MUNGE_KEY)], check=True)
        MUNGE_KEY.chmod(0o400)
    subprocess.run(["install", "-d", "-o", "munge", "-g", "munge", "-m", "0755", str(MUNGE_RUN)], check=True)
    # --force: a socket or pid file left by a munged that died (e.g. a container restart).
    proc = subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force"],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    deadline = time.monotonic() + timeout
    while not munge_ok():
        if time.monotonic() > deadline:
            raise SimError("munged did not start (rc=%d): %s" % (proc.returncode, proc.stderr.strip()[:200]))
        time.sleep(0.05)
    return True


def stop_munge(timeout=10.0):
    """Stop munged by its pid file; True when one was stopped."""
    pid = _read_pid(MUNGE_RUN / "munged.pid")
    argv = _cmdline(pid) if pid else []
    if not (pid and alive(pid) and argv and os.path.basename(argv[0]) == "munged"):
        return False
    _signal(pid, signal.SIGTERM)
    if _wait_gone([pid], time.monotonic() + timeout):
        _signal(pid, signal.SIGKILL)
        _wait_gone([pid], time.monotonic() + 5)
    return True
