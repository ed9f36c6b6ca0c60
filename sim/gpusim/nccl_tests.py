# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake nccl-tests binaries (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf).

Output is that of nccl-tests 2.17 built with MPI=1 (src/util.cu, src/common.cu of NVIDIA/nccl-tests
v2.17.10): the version/starting/nThread header, ``#  Rank  0 Group  0 Pid 123456 on     gpu001
device  0 [0000:18:00] NVIDIA H100 80GB HBM3`` lines, the out-of-place/in-place table with
getFloatStr widths, ``# Out of bounds values : 0 OK``, ``# Avg bus bandwidth    : 123.456 ``,
``# Collective test concluded: all_reduce_perf``, then ``#`` and an empty line.

Run alone (no srun), one process drives ``-g`` GPUs. Under srun every task runs this fake; only
SLURM_PROCID 0 prints, listing every rank (block task placement, device = SLURM_LOCALID * g + i),
as an MPI build would. Bandwidths come from fabric.py. A participant with no_mpi makes every
process print its own single-process report (ranks numbered from 0, device 0: the MPI=0 symptom).
"""
from __future__ import annotations

import os
import random

from . import fabric, hardware, model, sysfs
from .common import Result
from .model import uplink_factor
from .nvidia_smi import nvlink_counter_key
from .runstate import RunState
from .slurmenv import layout_from_env

COLLECTIVE = {"all_reduce_perf": "all_reduce", "all_gather_perf": "all_gather",
              "reduce_scatter_perf": "reduce_scatter", "alltoall_perf": "alltoall"}
TYPES = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
         "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2}
ALL_TYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16")
OPS = ("sum", "prod", "max", "min", "avg")
TESTCHECK_LINE = 1189   # TESTCHECK(result) in main(), src/common.cu v2.17.10
# NCCLCHECK(ncclCommInitRank(...)) in the test's thread set-up, src/common.cu: the format is nccl-tests'
# (NCCLCHECK: "<host>: Test NCCL failure <file>:<line> '<error> / <last WARN>'"), the line number made up
# (no real capture of an MNNVL refusal was found).
NCCL_INIT_LINE = 1091
NCCL_SYSTEM_ERROR = "unhandled system error (run with NCCL_DEBUG=INFO for details)"
OPTIONS = {  # short, long -> name
    "t": "nthreads", "g": "ngpus", "b": "minbytes", "e": "maxbytes", "i": "stepbytes", "f": "stepfactor",
    "n": "iters", "m": "agg_iters", "w": "warmup_iters", "N": "run_cycles", "p": "parallel_init", "c": "check",
    "o": "op", "d": "datatype", "r": "root", "z": "blocking", "y": "stream_null", "T": "timeout", "G": "cudagraph",
    "C": "report_cputime", "S": "report_timestamps", "J": "output_file", "a": "average", "R": "local_register",
    "x": "cta_policy", "D": "device_implementation", "V": "device_cta_count", "M": "memory", "u": "unalign",
}
LONG = {v: k for k, v in OPTIONS.items()}


class UsageError(Exception):
    pass


def parsesize(value):
    """nccl-tests' parsesize: '8M' -> 8388608, '1G', '512K', '0.5G', '1048576'; None when invalid."""
    import re  # pylint: disable=import-outside-toplevel
    m = re.match(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*([A-Za-z]?)\s*$", str(value))
    if not m:
        return None
    units = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}.get(m.group(2).lower())
    if units is None:
        return None
    return int(float(m.group(1)) * units)


def parse_args(args):
    opts = {"ngpus": 1, "nthreads": 1, "minbytes": 32 * 1024 * 1024, "maxbytes": 32 * 1024 * 1024,
            "stepbytes": 1024 * 1024, "stepfactor": 1, "iters": 20, "agg_iters": 1, "warmup_iters": 1,
            "check": 1, "op": "sum", "datatype": "float", "cudagraph": 0, "blocking": 0, "parallel_init": 0,
            "run_cycles": 1, "root": 0}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, equals, val = a[2:].partition("=")
            if name not in LONG:
                raise UsageError("invalid option '%s'" % a)
            if not equals:
                i += 1
                if i >= len(args):
                    raise UsageError("option '%s' requires an argument" % a)
                val = args[i]
        elif a.startswith("-") and len(a) >= 2:
            if a[1] not in OPTIONS:
                if a[1] == "h":
                    raise UsageError("")
                raise UsageError("invalid option '%s'" % a[1])
            name = OPTIONS[a[1]]
            val = a[2:]
            if not val:
                i += 1
                if i >= len(args):
                    raise UsageError("option requires an argument -- '%s'" % a[1])
                val = args[i]
        else:
            i += 1
            continue
        if name in ("minbytes", "maxbytes", "stepbytes"):
            size = parsesize(val)
            if size is None or size < 0:
                raise UsageError("invalid size specified for '%s'" % {"stepbytes": "stepBytes"}.get(name, name))
            opts[name] = size
        elif name in ("op", "datatype", "output_file"):
            opts[name] = val
        else:
            try:
                opts[name] = int(val, 0)
            except ValueError:
                opts[name] = int(float(val))
        i += 1
    if opts["minbytes"] > opts["maxbytes"]:
        raise UsageError("invalid sizes for 'minbytes' and 'maxbytes': %d > %d" % (opts["minbytes"], opts["maxbytes"]))
    return opts


def _float_str(value, width):
    """nccl-tests getFloatStr."""
    power = 0
    val = 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*.1e" % (width, value)


def byte_counts(collective, size, word, nranks):
    """(size column, count column) of one row, as setupArgs/getCollByteCount compute them."""
    count = size // word
    align = max(1, 16 // word)
    if collective == "all_reduce":
        return count * word, count
    base = (count // nranks) // align * align
    if collective in ("all_gather", "reduce_scatter"):
        return base * nranks * word, base
    return base * nranks * word, base  # alltoall: send = recv = nranks * paramcount


def sizes(opts):
    out = []
    size = opts["minbytes"]
    while size <= opts["maxbytes"]:
        out.append(size)
        if opts["stepfactor"] > 1:
            size *= opts["stepfactor"]
        else:
            if opts["stepbytes"] <= 0:
                break
            size += opts["stepbytes"]
        if len(out) > 4096:
            break
    return out


def fake_pid(spec, node, local, job):
    return random.Random("pid|%s|%s|%s|%s" % (spec.seed, node, local, job)).randint(9000, 3999999)


class Proc:
    """One process of the run: where it runs and which devices (visible indices) it drives."""

    def __init__(self, procid, node, local, devices, pid):
        self.procid, self.node, self.local, self.devices, self.pid = procid, node, local, devices, pid


def _device_line(rank, pid, host, dev, g, hw):
    dom, bus = g.domain[-4:], g.bus
    return "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s:%s:00] %s\n" % (
        rank, 0, pid, host, dev, dom.lower(), bus.lower(), hw["gpu_name"])


def _mnnvl(spec, states, nodes):
    """The share of the NVLink rate a run across ``nodes`` gets over multi-node NVLink, or 0 (InfiniBand).

    Rack profiles only, unless NCCL_MNNVL_ENABLE=0 (NCCL's default, 2, uses it where it works; 1 where
    it does not is _mnnvl_refused): every
    GPU of every node registered in one clique (a misplaced or unregistered tray leaves the run on
    InfiniBand), no stopped IMEX daemon on a tray of the run (its peers' daemons still serve each
    other); half the rate where a tray's fabric reports its bandwidth degraded (an NVLink switch tray
    down); an nvlink_slow fault on a tray of the run (or its rack) scales it by its factor."""
    if spec.hw.get("fabric") != "rack" or os.environ.get("NCCL_MNNVL_ENABLE", "2") == "0":
        return 0
    infos = [states[n].fabric(g.slot) for n in nodes for g in states[n].visible_gpus]
    domains = set((i["state"], i["status"], str(i["cluster_uuid"]), i["clique_id"]) for i in infos)
    if len(domains) != 1 or list(domains)[0][:2] != ("Completed", "Success") or not list(domains)[0][3]:
        return 0
    if set(nodes) & set(f["node"] for f in spec.faults_for(kind="imex_down")):
        return 0
    racks = set(spec.node_index(n) // spec.rack_trays + 1 for n in nodes)
    slow = [f["factor"] for f in spec.faults_for(kind="nvlink_slow") if f["node"] in nodes or f["rack"] in racks]
    share = 0.5 if any(dict(i["health"]).get("Bandwidth") == "Degraded" for i in infos) else 1.0
    return share * min(slow + [1.0])


def _mnnvl_refused(spec, states, nodes, env):
    """NCCL_MNNVL_ENABLE=1 across trays that cannot use multi-node NVLink: NCCL refuses to start
    (init.cc: WARN "MNNVL is not supported on this system", ncclSystemError), no fallback."""
    return spec.hw.get("fabric") == "rack" and env.get("NCCL_MNNVL_ENABLE") == "1" and len(nodes) > 1 \
        and not _mnnvl(spec, states, nodes)


def _init_failure(head, me):
    """What a rank prints when ncclCommInitRank fails: rank 0 its header and device lines first."""
    lines = head.out.splitlines(True)
    devices = [i for i, line in enumerate(lines) if line.startswith("#  Rank")]
    text = "".join(lines[:devices[-1] + 1]) if devices and me.procid == 0 else ""
    text += "%s: Test NCCL failure common.cu:%d '%s / MNNVL is not supported on this system'\n" % (
        me.node, NCCL_INIT_LINE, NCCL_SYSTEM_ERROR)
    text += " .. %s pid %d: Test failure common.cu:%d\n" % (me.node, me.pid, TESTCHECK_LINE)
    return Result(text, "", 3)


def report(tool, opts, procs, states, spec, seed_key, wrong_cfg, this_proc):  # noqa: C901
    """Full stdout of the process that prints (rank 0), or its failure; returns a Result."""
    collective = COLLECTIVE[tool]
    hw = spec.hw
    g_per = opts["ngpus"] * opts["nthreads"]
    nranks = len(procs) * g_per
    lines = ["# nccl-tests version %s nccl-headers=%d nccl-library=%d\n" % (
        hw["nccl_tests"], hardware.nccl_version_code(hw["nccl"]), hardware.nccl_version_code(hw["nccl"])),
        "# Collective test starting: %s\n" % tool,
        "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d graph: %d\n" % (
            opts["nthreads"], opts["ngpus"], opts["minbytes"], opts["maxbytes"],
            opts["stepfactor"] if opts["stepfactor"] > 1 else opts["stepbytes"],
            "factor" if opts["stepfactor"] > 1 else "bytes", opts["warmup_iters"],
            opts["iters"], opts["agg_iters"], opts["check"], opts["cudagraph"])]
    if opts["blocking"]:
        lines.append("# Blocking Enabled: wait for completion and barrier after each collective \n")
    if opts["parallel_init"]:
        lines.append("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n")
    lines += ["#\n", "# Using devices\n"]
    # A process asked for more GPUs than its node has: it fails; an MPI peer blocks forever.
    for p in procs:
        visible = states[p.node].visible_gpus
        if p.devices and p.devices[-1] >= len(visible):
            if p is this_proc:
                err = ("Invalid number of GPUs: %d requested but only %d were found.\n"
                       "Please check the number of processes and GPUs per process.\n" % (p.devices[-1] + 1, len(visible)))
                out = "".join(lines) if p.procid == 0 else ""
                return Result(out + " .. %s pid %d: Test failure common.cu:%d\n" % (p.node, p.pid, TESTCHECK_LINE),
                              err, 5)
            return Result("".join(lines) if this_proc.procid == 0 else "", "", None)  # blocks in MPI_Gather
    for p in procs:
        visible = states[p.node].visible_gpus
        for i, dev in enumerate(p.devices):
            lines.append(_device_line(p.procid * g_per + i, p.pid, p.node, dev, visible[dev], hw))
    max_mem = (hw["memory_mib"] - hw["memory_reserved_mib"]) * 1048576
    gb = 1 << 30
    reserve = min(-(-max_mem // (16 * gb)) * gb, 4 * gb)
    mem_max = (max_mem - reserve - gb) // (3 if opts["check"] else 2)
    max_bytes = opts["maxbytes"]
    if max_bytes > mem_max:
        max_bytes = mem_max
        lines.append("#\n# Reducing maxBytes to %d due to memory limitation\n" % max_bytes)
    lines += ["#\n",
              "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
              % ("", "", "", "", ""),
              "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s\n"
              % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
                 "#wrong", ""),
              "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s\n"
              % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "")]

    # bandwidth scopes
    nodes = []
    for p in procs:
        if p.node not in nodes:
            nodes.append(p.node)
    intra = None
    for name in nodes:
        st = states[name]
        devs = sorted({d for p in procs if p.node == name for d in p.devices})
        slots = [st.visible_gpus[d].slot for d in devs]
        if len(slots) > 1:
            links = [st.link(a, b) for k, a in enumerate(slots) for b in slots[k + 1:]]
            peak = fabric.intra_peak(hw, collective, links, hw["nvlink"])
            intra = peak if intra is None else min(intra, peak)
    net = None
    if len(nodes) > 1:
        parts = [fabric.Participant(n, fabric.node_net_gbs([x.rate for x in states[n].nics if x.state == "Active"],
                                                           states[n].slow_factor * fabric.rails_share(
                                                               [x.data_factor * _gpu_link(states[n], x)
                                                                for x in states[n].nics
                                                                if x.state == "Active"])),
                                    states[n].leaf, uplink_factor(spec, states[n].leaf)) for n in nodes]
        net = fabric.network_peak(parts, spec.fabric["oversubscription"]) or 1.2  # no IB: NCCL falls back to sockets
        mnnvl = _mnnvl(spec, states, nodes)
        if mnnvl:  # the trays of one NVLink domain talk over NVLink, not InfiniBand
            net = hw["nvlink_busbw"][collective] * mnnvl
        if collective == "alltoall":
            per_node = max(sum(len(p.devices) for p in procs if p.node == n) for n in nodes)
            net = fabric.alltoall_net_peak(net, per_node, nranks)
    wrong_nodes = [n for n in nodes if states[n].wrong_results]

    types = ALL_TYPES if opts["datatype"] == "all" else (opts["datatype"],)
    ops = OPS if opts["op"] == "all" else (opts["op"],)
    if collective in ("all_gather", "alltoall"):
        ops = ("none",)
    errors = 0
    bw_sum, bw_n = 0.0, 0
    for typ in types:
        word = TYPES.get(typ, 4)
        for op in ops:
            for size in sizes(dict(opts, maxbytes=max_bytes)):
                size_col, count_col = byte_counts(collective, size, word, nranks)
                row = "%12d  %12d  %8s  %6s  %6s" % (size_col, count_col, typ, op, "%6d" % -1)
                for in_place in (0, 1):
                    t, algbw, busbw = fabric.measure(size_col, collective, nranks, intra, net, in_place,
                                                     spec.seed, key=seed_key + (typ, op))
                    if opts["check"]:
                        wrong = 0
                        if wrong_nodes and count_col:
                            wrong = wrong_cfg or max(1, count_col // 1024)
                            errors += len(procs)
                        row += "  %7s  %6s  %6s  %6g" % (
                            _float_str(t, 7), _float_str(algbw, 6), _float_str(busbw, 6), wrong)
                    else:
                        row += "  %7s  %6s  %6s    N/A" % (_float_str(t, 7), _float_str(algbw, 6), _float_str(busbw, 6))
                    bw_sum += busbw
                    bw_n += 1
                lines.append(row + "\n")
    avg = bw_sum / bw_n if bw_n else 0.0
    min_bw = os.environ.get("NCCL_TESTS_MIN_BW")
    check = float(min_bw) if min_bw else -1
    verdict = "" if check == -1 else ("FAILED" if avg < check * 0.9 else "OK")
    lines += ["# %-20s : %d %s\n" % ("Out of bounds values", errors, "FAILED" if errors else "OK"),
              "# %-20s : %g %s\n" % ("Avg bus bandwidth", avg, verdict),
              "#\n", "# Collective test concluded: %s\n" % tool, "#\n", "\n"]
    failed = bool(errors) or (check != -1 and avg < check * 0.9)
    return Result("".join(lines), "", 7 if failed else 0), failed


def run(node, tool, args, node_state_of, env=None):  # noqa: C901
    """Run the nccl-tests binary ``tool`` as this process; return a Result (code None = hang)."""
    env = os.environ if env is None else env
    spec = node.spec
    try:
        opts = parse_args(args)
    except UsageError as exc:
        msg = ("%s\n" % exc) if str(exc) else ""
        return Result(msg + "USAGE: %s \n\t[-t,--nthreads <num threads>] \n\t[-g,--ngpus <gpus per thread>] \n\t"
                      "[-b,--minbytes <min size in bytes>] \n\t[-e,--maxbytes <max size in bytes>] \n\t"
                      "[-i,--stepbytes <increment size>] \n\t[-f,--stepfactor <increment factor>] \n\t"
                      "[-n,--iters <iteration count>] \n\t[-m,--agg_iters <aggregated iteration count>] \n\t"
                      "[-w,--warmup_iters <warmup iteration count>] \n\t[-c,--check <0/1>] \n\t"
                      "[-d,--datatype <nccltype/all>] \n\t[-o,--op <sum/prod/min/max/avg/all>] \n\t"
                      "[-h,--help]\n" % tool, "", 0)
    g_per = opts["ngpus"] * opts["nthreads"]
    layout = layout_from_env(env, node.name)
    time_key = tool if tool in spec.tool_times else "all_reduce_perf"
    states = {node.name: node}

    def state(name):
        if name not in states:
            if not spec.has_node(name):
                return None
            states[name] = node_state_of(name)
        return states[name]

    if layout is None:
        me = Proc(0, node.name, 0, list(range(g_per)), fake_pid(spec, node.name, 0, env.get("SLURM_JOB_ID")))
        procs, mpi = [me], False
    else:
        job = "%s.%s" % (layout.job, layout.step)
        procs = [Proc(pid, name, local, [local * g_per + i for i in range(g_per)], fake_pid(spec, name, local, job))
                 for pid, (name, local) in enumerate(layout.procs)]
        for p in procs:
            if state(p.node) is None:
                return Result("", "%s: unknown node %s in SLURM_STEP_NODELIST\n" % (tool, p.node), 1, time_key)
        me = procs[layout.me]
        mpi = not any(states[n].no_mpi for n in layout.nodes)
        if not mpi:  # MPI=0 build: every process is a one-process run of its own, on device 0..g-1
            me = Proc(0, node.name, 0, list(range(g_per)), me.pid)
            procs = [me]
    if any(tool in states[p.node].hang for p in procs):
        # a hung peer (hang fault): every rank blocks in the first collective, rank 0 after the table header
        head = report(tool, opts, procs, states, spec, (), None, me)
        head = head[0] if isinstance(head, tuple) else head
        lines = head.out.splitlines(True)
        upto = [i for i, line in enumerate(lines) if line.startswith("#        (B)")]
        text = "".join(lines[:upto[0] + 1] if upto else lines)
        return Result(text if me.procid == 0 else "", "", None, None)
    if _mnnvl_refused(spec, states, sorted({p.node for p in procs}), env):
        head = report(tool, opts, procs, states, spec, (), None, me)
        result = _init_failure(head[0] if isinstance(head, tuple) else head, me)
        result.time_key = time_key
        return result
    shape = tuple(sorted({p.node for p in procs})) + (len(procs), g_per)
    wrong = None
    for n in {p.node for p in procs}:
        for f in states[n].wrong_results:
            wrong = f.get("count") or wrong
    _nvlink_traffic(node, env)
    if len({p.node for p in procs}) > 1:
        _ib_traffic(node, env)
        # intermittent slow faults: drawn once per run (its Slurm step), the same on every rank
        run = "%s.%s" % (layout.job, layout.step) if layout is not None else "-"
        states = dict((name, model.this_run(st, spec, run)) for name, st in states.items())
    result = report(tool, opts, procs, states, spec, shape, wrong, me)
    if isinstance(result, tuple):
        result, failed = result
        if me.procid != 0:
            # MPI=1: only rank 0 prints; every rank reports a failed check through TESTCHECK.
            result = Result("", "", result.code)
        if failed:
            result.out += " .. %s pid %d: Test failure common.cu:%d\n" % (me.node, me.pid, TESTCHECK_LINE)
    result.time_key = time_key
    return result


def _nvlink_traffic(node, env):
    """nvlink_errors: this run's traffic raised the faulty link's counter (nvidia-smi nvlink -e shows it)."""
    if not node.nvlink_errors:
        return
    state = RunState(env.get("GPUCLUSTER_SIM_RUN") or None, node.name)
    for f in node.nvlink_errors:
        state.bump(nvlink_counter_key(f["gpu"], f["link"], f["counter"]), f["per_run"])


def _ib_traffic(node, env):
    """link_flap during nccl: this multi-node run took the NIC's link down and up (its counters show it)."""
    flapping = [nic for nic in node.nics if nic.nccl_flaps_per_run]
    if not flapping:
        return
    run_dir = env.get("GPUCLUSTER_SIM_RUN") or None
    state = RunState(run_dir, node.name)
    for nic in flapping:
        state.bump("flaps:%s" % nic.name, nic.nccl_flaps_per_run)
    sysfs.write_tree(node, run_dir)


def _gpu_link(state, nic):
    """The rail's share its GPU's PCIe link lets through (GPUDirect RDMA: GPU memory -> NIC)."""
    gpu = state.gpu_by_slot(nic.index) if nic.index < len(state.gpus) else None
    return model.gpu_link_factor(gpu, nic.nominal) if gpu is not None and gpu.present else 1.0
