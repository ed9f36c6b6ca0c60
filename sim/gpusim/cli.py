# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Entry point of the fake tools: ``gpusim <tool> ARGS`` (what sim/bin/<tool> runs).

Environment: $GPUCLUSTER_SIM_SPEC (the cluster spec), $SLURMD_NODENAME or $GPUCLUSTER_SIM_NODE
(which node this is), $GPUCLUSTER_SIM_RUN (run directory for counters; optional). Without a spec
or a node of the spec the tool fails as the real one does on a host without the device.
``gpusim --check-spec SPEC`` validates a spec and prints one line per node with its faults.
"""
from __future__ import annotations

import os
import signal
import sys
import time

from .common import Result
from .spec import TOOLS, SpecError, load

# Each call imports only its own tool's module: a call is a process, and importing every renderer
# costs more than most tools' whole run (a 16-node acceptance run makes thousands of calls).
NCCL_TOOLS = tuple(t for t in TOOLS if t.endswith("_perf"))  # nccl_tests.COLLECTIVE's programs
PERFTEST_TOOLS = tuple(t for t in TOOLS if t.startswith("ib_") and t.endswith("_bw"))  # perftest.PROGRAMS


def no_device(tool):
    """What ``tool`` prints on a host without the GPU/HCA (or the simulator's environment)."""
    pid = os.getpid()
    if tool == "nvidia-smi":
        from .nvidia_smi import NO_DRIVER  # pylint: disable=import-outside-toplevel
        return Result(NO_DRIVER, "", 9)
    if tool == "nvidia-imex-ctl":
        return Result("", "nvidia-imex-ctl: cannot connect to the IMEX daemon on this node\n", 1)
    if tool == "nvbandwidth":
        return Result("", "[CUDA_ERROR_NO_DEVICE] no CUDA-capable device is detected\n", 1)
    if tool == "dcgmi":
        from .dcgmi import CONNECT_ERROR  # pylint: disable=import-outside-toplevel
        return Result(CONNECT_ERROR, "", 235)
    if tool == "ibstat":
        return Result("", "ibpanic: [%d] main: can't list IB device names: No such file or directory\n" % pid, 255)
    if tool in PERFTEST_TOOLS:
        return Result("", "No IB devices found\n Unable to find the Infiniband/RoCE device\n", 1)
    if tool in ("perfquery", "ibnetdiscover"):
        return Result("", "ibwarn: [%d] mad_rpc_open_port: can't open UMAD port ((null):0)\n"
                      "%s: iberror: failed: Failed to open '(null)' port '0'\n" % (pid, tool), 255)
    if tool == "dmesg":
        return Result("", "", 0)
    if tool in NCCL_TOOLS:
        from .nccl_tests import TESTCHECK_LINE  # pylint: disable=import-outside-toplevel
        host = os.uname().nodename.split(".")[0]
        return Result("%s: Test CUDA failure common.cu:891 'no CUDA-capable device is detected'\n"
                      " .. %s pid %d: Test failure common.cu:%d\n" % (host, host, pid, TESTCHECK_LINE),
                      "", 2)
    return Result("", "%s: no device\n" % tool, 1)


def _emit(result):
    if result.out:
        sys.stdout.write(result.out)
        sys.stdout.flush()
    if result.err:
        sys.stderr.write(result.err)
        sys.stderr.flush()


def hang():
    """Sleep until a signal ends the process (SIGTERM/SIGKILL/SIGINT keep their default effect)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        time.sleep(3600)


def check_spec(path):
    try:
        spec = load(path)
    except SpecError as exc:
        sys.stderr.write("gpusim: %s\n" % exc)
        return 2
    for name in spec.nodes:
        faults = []
        for f in spec.faults_for(name):
            params = ["%s=%s" % (k, v) for k, v in sorted(f.items()) if k not in ("kind", "node") and v is not None]
            faults.append("%s(%s)" % (f["kind"], ", ".join(params)))
        sys.stdout.write("%s %s leaf=%s%s\n" % (name, spec.profile_name, spec.leaf_name(spec.leaf_index(name)),
                                                (" " + " ".join(faults)) if faults else ""))
    for f in spec.faults_for(kind="degraded_uplink"):
        sys.stdout.write("fabric degraded_uplink(leaf=%s, factor=%s)\n" % (f["leaf"], f["factor"]))
    return 0


def sdc_hook(node, spec):
    """What the SDC probe of the simulated cluster injects on ``node`` (JSON, see the probe's
    --sim-hook): per GPU bus id the sdc probability and workloads and the slow_gpu factor, and the
    part's dense peak TFLOPS from the collection's hardware profile (one truth for the peaks)."""
    import json  # pylint: disable=import-outside-toplevel
    import yaml  # pylint: disable=import-outside-toplevel
    repo = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..")
    path = os.path.join(repo, "profiles", "%s.yml" % spec.profile_name)
    peak = {}
    if os.path.exists(path):
        with open(path) as handle:
            peak = ((yaml.safe_load(handle) or {}).get("sdc") or {}).get("peak_tflops") or {}
    gpus = {}
    for gpu in node.gpus:
        if gpu.present and gpu.throttle:
            # A throttled GPU computes at its forced-down clock (the probe's nvidia-smi samples
            # show the clock and the clock-event reasons).
            gpus.setdefault(gpu.bus_id, {})["throughput_factor"] = float(gpu.sm_mhz) / node.hw["max_sm_mhz"]
    for f in spec.faults_for(node.name):
        if f["kind"] not in ("sdc", "slow_gpu"):
            continue
        gpu = node.gpus[f["gpu"]]
        entry = gpus.setdefault(gpu.bus_id, {})
        if f["kind"] == "sdc":
            entry["sdc_probability"] = f["probability"]
            entry["sdc_workloads"] = f["workloads"]
        else:
            entry["throughput_factor"] = entry.get("throughput_factor", 1.0) * f["factor"]
    data = {"simulated": True, "node": node.name, "seed": spec.seed, "gpus": gpus,
            "peak_tflops": dict((k, v) for k, v in peak.items() if isinstance(v, (int, float))),
            "efficiency": 0.7}
    return Result(json.dumps(data, sort_keys=True) + "\n", "", 0)


# Nominal read bandwidth of a simulated node's local NVMe (bytes/s): a PCIe Gen4 NVMe array; it
# writes checkpoints at the same rate.
STORAGE_READ_BYTES_PER_S = 2.0e9
STORAGE_WRITE_BYTES_PER_S = 2.0e9
# The simulated shared file system: what all its clients together write (read) per second, and
# what one client (node) reaches at most. Nodes writing at the same time split the aggregate.
SHARED_WRITE_BYTES_PER_S = 4.0e9
SHARED_READ_BYTES_PER_S = 4.0e9
SHARED_CLIENT_BYTES_PER_S = 2.0e9
# Seconds the checkpoint probe waits for the nodes of its group to say whether they write.
WRITERS_BARRIER_S = 30


def storage_hook(node, spec, run_dir=None):
    """The storage probes' simulated storage on ``node`` (slow_storage faults by their path).

    read_bytes_per_s: the data loader probe's reads (node-local). checkpoint: the checkpoint
    probe's model - local NVMe write/read bytes/s, the shared file system's aggregate and
    per-client bytes/s, this node's shared factor, and the folder where the nodes writing the
    shared path at once leave a file each (in $GPUCLUSTER_SIM_RUN; see the probe's --group).
    """
    import json  # pylint: disable=import-outside-toplevel
    local = shared = 1.0
    for f in spec.faults_for(node.name, kind="slow_storage"):
        if f.get("path", "local") in ("local", "all"):
            local *= f["factor"]
        if f.get("path", "local") in ("shared", "all"):
            shared *= f["factor"]
    checkpoint = {"local_write_bytes_per_s": STORAGE_WRITE_BYTES_PER_S * local,
                  "local_read_bytes_per_s": STORAGE_READ_BYTES_PER_S * local,
                  "shared_write_bytes_per_s": SHARED_WRITE_BYTES_PER_S, "shared_read_bytes_per_s": SHARED_READ_BYTES_PER_S,
                  "shared_client_bytes_per_s": SHARED_CLIENT_BYTES_PER_S, "shared_factor": shared,
                  "writers_dir": os.path.join(run_dir, "gpusim", "checkpoint-writers") if run_dir else None,
                  "barrier_s": WRITERS_BARRIER_S}
    data = {"simulated": True, "node": node.name, "read_bytes_per_s": STORAGE_READ_BYTES_PER_S * local,
            "shared_bytes_per_s": None, "checkpoint": checkpoint}
    return Result(json.dumps(data, sort_keys=True) + "\n", "", 0)


CALLS_LOG = "calls.log"


def record_call(tool, args, env=None):
    """One line per call in <run>/gpusim/calls.log: node, tool, arguments (tab-separated), so a test
    can count what ran where (a resumed run must not run a finished stage again). One O_APPEND
    write below PIPE_BUF: concurrent calls never interleave a line."""
    env = os.environ if env is None else env
    run_dir = env.get("GPUCLUSTER_SIM_RUN")
    if not run_dir:
        return
    node = env.get("SLURMD_NODENAME") or env.get("GPUCLUSTER_SIM_NODE") or "-"
    line = ("%s\t%s\t%s" % (node, tool, " ".join(args)))[:4000].replace("\n", " ") + "\n"
    path = os.path.join(run_dir, "gpusim", CALLS_LOG)
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the first call since the tools' state was thrown away
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return  # a run directory that cannot be written: the call is not counted, the tool still runs
    try:
        os.write(fd, line.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def run_tool(tool, args, env=None):
    """Compute the Result of ``tool ARGS`` in ``env`` (no sleeping, no printing)."""
    env = os.environ if env is None else env
    node_name = env.get("SLURMD_NODENAME") or env.get("GPUCLUSTER_SIM_NODE")
    spec_path = env.get("GPUCLUSTER_SIM_SPEC")
    run_dir = env.get("GPUCLUSTER_SIM_RUN") or None
    if not node_name or not spec_path:
        return no_device(tool), None
    fallback = os.path.join(run_dir, "spec.json") if run_dir else None
    try:
        spec = load(spec_path, fallback_json=fallback, cache_dir=os.path.join(run_dir, "gpusim") if run_dir else None)
    except SpecError as exc:
        return Result("", "%s: simulated cluster spec error: %s\n" % (tool, exc), 2), None
    if not spec.has_node(node_name):
        return no_device(tool), None
    from . import model  # pylint: disable=import-outside-toplevel
    from .runstate import RunState  # pylint: disable=import-outside-toplevel
    node = model.node_state(spec, node_name)
    state = RunState(run_dir, node_name)
    node.now = time.time()
    node.boot = model.boot_epoch(spec, node_name, state)

    def other(name):
        st = model.node_state(spec, name)
        st.now, st.boot = node.now, model.boot_epoch(spec, name, RunState(run_dir, name))
        return st

    if tool in node.hang:
        return Result(code=None), spec  # hang fault: block until killed
    result = _render(tool, args, node, spec, run_dir, other, env)
    if result.time_key:
        result.extra_delay = node.tool_delay.get(result.time_key, 0.0)
        result.release_file = node.tool_release.get(result.time_key)
    return result, spec


def _render(tool, args, node, spec, run_dir, other, env):  # pylint: disable=too-many-arguments
    """The Result of one tool on ``node``, its module imported only now (see NCCL_TOOLS)."""
    # pylint: disable=import-outside-toplevel
    if tool == "nvidia-smi":
        from . import nvidia_smi
        result = nvidia_smi.run(node, args)
        result.time_key = result.time_key or "nvidia_smi"
        return result
    if tool == "nvidia-imex-ctl":
        from . import imex
        return imex.run(node, args)
    if tool == "nvbandwidth":
        from . import nvbandwidth
        return nvbandwidth.run(node, args)
    if tool == "dcgmi":
        from . import dcgmi
        return dcgmi.run(node, args)
    if tool == "ibstat":
        from . import ibstat, sysfs
        result = ibstat.run(node, args)
        sysfs.write_tree(node, run_dir)
        return result
    if tool == "perfquery":
        from . import perfquery, sysfs
        result = perfquery.run(node, args, run_dir, other)
        sysfs.write_tree(node, run_dir)
        return result
    if tool == "ibnetdiscover":
        from . import ibnetdiscover
        return ibnetdiscover.run(node, args, other)
    if tool == "dmesg":
        from . import dmesg
        return dmesg.run(node, args)
    if tool == "journalctl":
        from . import dmesg
        return dmesg.journalctl(node, args)
    if tool in NCCL_TOOLS:
        from . import nccl_tests
        return nccl_tests.run(node, tool, args, other, env)
    if tool in PERFTEST_TOOLS:
        from . import perftest
        # Server and client print as they go (the server's banner before it waits for its client).
        result = Result(code=0)
        result.live = lambda: perftest.run(node, tool, args, spec)
        return result
    if tool == "sdc-hook":
        return sdc_hook(node, spec)
    if tool == "storage-hook":
        return storage_hook(node, spec, run_dir)
    return Result("", "gpusim: unknown tool %r (tools: %s)\n" % (tool, ", ".join(TOOLS)), 2)


def _slow_tool_wait(seconds, release_file):
    """A slow_tool fault: ``seconds`` more, or until ``release_file`` exists (at most ``seconds``)."""
    if seconds <= 0:
        return
    if not release_file:
        time.sleep(seconds)
        return
    deadline = time.monotonic() + seconds
    while not os.path.exists(release_file) and time.monotonic() < deadline:
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.stderr.write("usage: gpusim TOOL [ARGS...] | gpusim --check-spec SPEC  (tools: %s)\n" % ", ".join(TOOLS))
        return 2
    if argv[0] == "--check-spec":
        if len(argv) != 2:
            sys.stderr.write("usage: gpusim --check-spec SPEC\n")
            return 2
        return check_spec(argv[1])
    tool, args = argv[0], argv[1:]
    record_call(tool, args)
    try:
        result, spec = run_tool(tool, args)
        if getattr(result, "live", None) is not None:
            return result.live()
        if spec is not None and result.time_key:
            delay = spec.tool_times.get(result.time_key, 0.0)
            if delay > 0:
                time.sleep(delay)
            _slow_tool_wait(result.extra_delay, result.release_file)
        if result.code is None:  # hang fault, or an MPI peer failed: block until killed, as the real one
            _emit(result)
            hang()
        _emit(result)
        return result.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 141
