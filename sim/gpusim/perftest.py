# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``ib_write_bw`` / ``ib_read_bw`` (perftest): a server and a client that really meet.

The server (no host argument) prints perftest's "Waiting for client to connect..." banner and
listens on TCP ``-p`` (default 18515) as perftest's out-of-band exchange does; the client (a host
argument) connects to it, or fails as perftest does (``Couldn't connect to HOST:PORT``) when no
server listens yet. Both then print the same result, computed from the two HCAs: the lower line
rate of the two ports, times an efficiency rising with the message size, times the ``nic_slow``
factors of both NICs, times the GPUDirect factor (``--use_cuda=N``: the GPU's PCIe relation to the
NIC, PIX 1.0, NODE 0.75, SYS 0.5), with a seeded +-0.4 % noise. The names of the simulated nodes
resolve to the node's own loopback address (node_address); a server waits until it is killed.

Layout (perftest 23.x as MLNX_OFED ships it; perftest_parameters.h RESULT_LINE, RESULT_FMT_G,
REPORT_FMT, BASIC_ADDR_FMT and RDMA_FMT; the IB header of linux-rdma/perftest#132, the CUDA lines
of #241): tab-separated key columns, `` local address: LID 0x02 QPN 0x0032 PSN 0x5f2841 RKey
0x002440 VAddr 0x007f2e5f64b000``, one result row per message size (``-a``: 2 B .. 8 MiB).
Errors as perftest prints them: ``IB device X not found`` / ``Unable to find the Infiniband/RoCE
device``, `` Port number 1 state is Down`` / `` Couldn't set the link layer``, ``Couldn't listen to
port P``. Docs: docs/simulated-cluster-tools.md.
"""
from __future__ import annotations

import json
import os
import random
import socket
import sys
import time

from . import model, sysfs
from .common import Result
from .runstate import RunState

PROGRAMS = {"ib_write_bw": ("RDMA_Write", "write"), "ib_read_bw": ("RDMA_Read", "read")}
DEFAULT_PORT = 18515
DEFAULT_SIZE = 65536
DEFAULT_ITERS = 5000
RULE = "-" * 87
HEADER_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
HEADER_M = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
BANNER = "\n************************************\n* Waiting for client to connect... *\n************************************\n"
MIB = 1048576
NOISE = 0.004
GPUDIRECT = {"PIX": 1.0, "NODE": 0.75, "SYS": 0.5}
# A run during which the link went down and came back (link_flap) loses this share of its bandwidth.
FLAP_COST = 0.985
_VALUE_OPTS = {"-d", "--ib-dev", "-p", "--port", "-i", "--ib-port", "-s", "--size", "-n", "--iters", "-q", "--qp",
               "-D", "--duration", "-x", "--gid-index", "-m", "--mtu", "-t", "--tx-depth", "-I", "--inline_size",
               "--use_cuda"}
_FLAGS = {"-F", "--CPU-freq", "--report_gbits", "-R", "--rdma_cm", "-a", "--all", "-b", "--bidirectional",
          "--use_cuda_dmabuf", "--report-both", "-h", "--help"}


class Usage(ValueError):
    """An argument perftest would reject."""


def parse_args(args):
    """{option: value} and the server name (None on the server side)."""
    opts, server = {}, None
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in _VALUE_OPTS:
            if not eq:
                i += 1
                if i >= len(args):
                    raise Usage("option requires an argument -- '%s'" % name.lstrip("-"))
                value = args[i]
            opts[name] = value
        elif arg in _FLAGS:
            opts[arg] = True
        elif arg.startswith("-"):
            raise Usage("unrecognized option '%s'" % arg)
        elif server is None:
            server = arg
        else:
            raise Usage("too many arguments: %s" % arg)
        i += 1
    return opts, server


def _get(opts, *names, default=None):
    for name in names:
        if name in opts:
            return opts[name]
    return default


def _int(opts, default, *names):
    value = _get(opts, *names, default=default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Usage("invalid number %r for %s" % (value, names[0])) from None


class Side:
    """One end of the test: the node, its HCA and (with --use_cuda) the GPU its buffer is on."""

    def __init__(self, node, nic, gpu=None):
        self.node, self.nic, self.gpu = node, nic, gpu

    def info(self):
        # an intermittent nic_slow fault: drawn once per run (the Slurm step both sides run in)
        run = "%s.%s" % (os.environ.get("SLURM_JOB_ID", "-"), os.environ.get("SLURM_STEP_ID", "-"))
        flaky = model.flaky_factor(self.node.spec, self.node.name, self.nic.name, getattr(self.nic, "flaky", []), run)
        return {"node": self.node.name, "nic": self.nic.name, "rate": self.nic.rate,
                "data_factor": self.nic.data_factor * flaky, "gpudirect": self.gpudirect(), "lid": self.nic.lid,
                "flaps": self.nic.flaps_per_run}

    def gpudirect(self):
        if self.gpu is None:
            return 1.0
        if self.gpu.slot == self.nic.index:
            relation = GPUDIRECT["PIX"]
        else:
            relation = GPUDIRECT["NODE"] if self.gpu.numa == self.nic.numa else GPUDIRECT["SYS"]
        # The buffer crosses the GPU's own PCIe link: a downtrained one caps the transfer.
        return min(relation, model.gpu_link_factor(self.gpu, self.nic.nominal))


def efficiency(size):
    """Share of the line rate one QP's RDMA writes reach at ``size`` bytes (0.98 at 64 KiB)."""
    return 0.99 * size / (size + 700.0)


def bandwidth(local, remote, size, seed, key):
    """Gb/s measured between two ends (the same number on both sides)."""
    rate = min(local["rate"], remote["rate"])
    value = rate * efficiency(size) * local["data_factor"] * remote["data_factor"]
    value *= min(local["gpudirect"], remote["gpudirect"])
    if local.get("flaps") or remote.get("flaps"):
        value *= FLAP_COST  # the link was down for a moment during the run
    noise = random.Random("perftest|%s|%s|%d" % (seed, key, size)).uniform(-NOISE, NOISE)
    return value * (1.0 + noise)


def _sizes(opts):
    if "-a" in opts or "--all" in opts:
        return [2 ** k for k in range(1, 24)]
    return [_int(opts, DEFAULT_SIZE, "-s", "--size")]


def _cuda_lines(node, gpu, size):
    r = random.Random("cuda|%s|%s" % (node.name, gpu.slot))
    addr = 0x7F0000000000 + r.randrange(0, 0xFFFFFF) * 0x200000
    lines = ["initializing CUDA", "Listing all CUDA devices in system:"]
    lines += ["CUDA device %d: PCIe address is %s:00" % (g.index, g.bus.upper()) for g in node.visible_gpus]
    lines += ["", "Picking device No. %d" % gpu.index,
              "[pid = %d, dev = %d] device name = [%s]" % (os.getpid(), gpu.index, node.hw["gpu_name"]),
              "creating CUDA Ctx", "making it the current CUDA Ctx",
              "cuMemAlloc() of a %d bytes GPU buffer" % (size * 2),
              "allocated GPU buffer address at %016x pointer=%#x" % (addr, addr)]
    return "\n".join(lines) + "\n"


def _header(title, nic, opts, client):
    qps = _int(opts, 1, "-q", "--qp")
    lines = [RULE, "                    %s BW Test" % title,
             " Dual-port       : OFF\t\tDevice         : %s" % nic.name,
             " Number of qps   : %d\t\tTransport type : IB" % qps,
             " Connection type : RC\t\tUsing SRQ      : OFF",
             " PCIe relax order: ON", " ibv_wr* API     : ON"]
    if client:
        lines.append(" TX depth        : 128")
    lines += [" CQ Moderation   : 100", " Mtu             : 4096[B]", " Link type       : IB",
              " Max inline data : 0[B]", " rdma_cm QPs\t : %s" % ("ON" if _get(opts, "-R", "--rdma_cm") else "OFF"),
              " Data ex. method : %s" % ("rdma_cm" if _get(opts, "-R", "--rdma_cm") else "Ethernet"), RULE]
    return "\n".join(lines) + "\n"


def _address(side, info, port):
    """One end's queue pair as perftest prints it (the same numbers in both ends' outputs)."""
    r = random.Random("qp|%s|%s|%s" % (info.get("node"), info.get("nic"), port))
    return " %s address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x\n" % (
        side, int(info.get("lid") or 0), r.randrange(0x20, 0x3FFF), r.randrange(0, 0xFFFFFF), r.randrange(0x1000, 0x3FFFFF),
        0x7F0000000000 + r.randrange(0, 0xFFFFFF) * 0x1000)


def report_row(size, iterations, peak, average, msg_rate):
    """One result row as perftest's REPORT_FMT prints it (23.x: tabs before the message rate)."""
    return " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f" % (size, iterations, peak, average, msg_rate)


def _rows(local, remote, opts, seed, key):
    gbits = bool(_get(opts, "--report_gbits"))
    iters = _int(opts, DEFAULT_ITERS, "-n", "--iters")
    out = [RULE, HEADER_G if gbits else HEADER_M]
    for size in _sizes(opts):
        gbs = bandwidth(local, remote, size, seed, key)
        peak = gbs * 1.0015
        rate = gbs * 1e9 / 8.0 / size / 1e6
        shown = (peak, gbs) if gbits else (peak * 1e9 / 8.0 / MIB, gbs * 1e9 / 8.0 / MIB)
        out.append(report_row(size, iters, shown[0], shown[1], rate))
    out.append(RULE)
    return "\n".join(out) + "\n"


def node_address(spec, node_name):
    """The loopback address a simulated node's perftest server listens on and its clients reach.

    In a cluster's run, the node's address in the cluster's own block of 127.0.0.0/8 (the one its
    sshd listens on, sim/sshnodes.py): the RDMA stages of clusters running side by side (parallel
    tests) use the same ports (check_rdma_base_port + i) without meeting. 127.0.0.1 outside a run
    and for clusters larger than a block."""
    run_dir = os.environ.get("GPUCLUSTER_SIM_RUN")
    if not run_dir:
        return "127.0.0.1"
    import sshnodes  # sim/, on sys.path for gpusim (sim/bin/gpusim); pylint: disable=import-outside-toplevel
    if len(spec.nodes) > sshnodes.BLOCK_SIZE - 2:
        return "127.0.0.1"
    return sshnodes.addresses(run_dir, spec.nodes)[node_name]


def resolve(spec, host):
    """The address a client connects to: a simulated node's own (node_address)."""
    if spec.has_node(host):
        return node_address(spec, host)
    return socket.gethostbyname(host)


def _open_nic(node, opts, tool):
    device = _get(opts, "-d", "--ib-dev") or (node.nics[0].name if node.nics else "")
    nic = next((n for n in node.nics if n.name == device), None)
    if nic is None:
        return None, Result("", "IB device %s not found\n Unable to find the Infiniband/RoCE device\n" % device, 1, tool)
    if nic.state != "Active":
        return None, Result("", " Port number 1 state is %s\n Couldn't set the link layer\n Couldn't get context for "
                            "the device\n" % nic.state, 1, tool)
    return nic, None


def _gpu(node, opts):
    value = _get(opts, "--use_cuda")
    if value is None:
        return None
    try:
        index = int(value)
    except ValueError:
        raise Usage("invalid CUDA device %r" % value) from None
    gpus = node.visible_gpus
    if not 0 <= index < len(gpus):
        raise Usage("CUDA device %d not found (%d devices)" % (index, len(gpus)))
    return gpus[index]


def run(node, tool, args, spec, out=None):
    """Run ``tool ARGS`` on ``node``: prints as it goes (the server's banner before it waits);
    returns the exit status. ``out``: where to write (sys.stdout)."""
    out = out or sys.stdout
    title, _verb = PROGRAMS[tool]
    try:
        opts, server = parse_args(args)
        gpu = _gpu(node, opts)
        port = _int(opts, DEFAULT_PORT, "-p", "--port")
        size = max(_sizes(opts))
    except Usage as exc:
        sys.stderr.write("%s: %s\n Invalid Command or flag.\n" % (tool, exc))
        return 1
    nic, failure = _open_nic(node, opts, tool)
    if failure is not None:
        sys.stderr.write(failure.err)
        return failure.code
    me = Side(node, nic, gpu).info()
    prologue = "Perftest doesn't supports CUDA tests with inline messages: inline size set to 0\n" if gpu else ""
    if server is None:
        return _serve(node, tool, opts, port, me, gpu, size, prologue, title, spec, out)
    return _connect(node, tool, opts, server, port, me, gpu, size, prologue, title, spec, out)


def _flapped(node, me):
    """link_flap: this run's traffic took the link down and up again (its counters show it)."""
    if not me.get("flaps"):
        return
    run_dir = os.environ.get("GPUCLUSTER_SIM_RUN") or None
    RunState(run_dir, node.name).bump("flaps:%s" % me["nic"], me["flaps"])
    sysfs.write_tree(node, run_dir)


def _write(out, text):
    out.write(text)
    out.flush()


def _serve(node, tool, opts, port, me, gpu, size, prologue, title, spec, out):  # pylint: disable=too-many-arguments
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((node_address(spec, node.name), port))
        listener.listen(1)
    except OSError:
        _write(out, prologue + BANNER)
        sys.stderr.write("Couldn't listen to port %d\n Unable to open file descriptor for socket connection"
                         " Unable to init the socket connection\n" % port)
        return 1
    _write(out, prologue + BANNER)
    conn, _addr = listener.accept()  # waits until a client comes, or the server is killed
    with conn:
        lines = conn.makefile("r")
        remote = json.loads(lines.readline() or "{}")
        conn.sendall((json.dumps(me) + "\n").encode())
        lines.readline()  # the client's "done": the test ran (perftest's closing handshake)
        key = "%s|%s|%s|%s|%d" % (remote.get("node"), remote.get("nic"), me["node"], me["nic"], port)
        text = (_cuda_lines(node, gpu, size) if gpu else "") + _header(title, node_nic(node, me), opts, False)
        text += _address("local", me, port) + _address("remote", remote, port)
        _write(out, text + _rows(remote, me, opts, spec.seed, key))
    listener.close()
    _flapped(node, me)
    return 0


def node_nic(node, info):
    return next(n for n in node.nics if n.name == info["nic"])


def _connect(node, tool, opts, server, port, me, gpu, size, prologue, title, spec, out):  # pylint: disable=too-many-arguments
    delay = float(spec.tool_times.get("perftest", 0.0)) + float(node.tool_delay.get("perftest", 0.0))
    text = prologue + (_cuda_lines(node, gpu, size) if gpu else "")
    try:
        address = resolve(spec, server)
        conn = socket.create_connection((address, port), timeout=30)
    except OSError:
        _write(out, text)
        sys.stderr.write("Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection Unable to "
                         "init the socket connection\n" % (server, port))
        return 1
    with conn:
        conn.sendall((json.dumps(me) + "\n").encode())
        remote = json.loads(conn.makefile("r").readline() or "{}")
        if delay > 0:  # the test's duration (tool_times.perftest plus slow_tool seconds)
            time.sleep(delay)
        conn.sendall(b"done\n")
    key = "%s|%s|%s|%s|%d" % (me["node"], me["nic"], remote.get("node"), remote.get("nic"), port)
    text += _header(title, node_nic(node, me), opts, True)
    text += _address("local", me, port) + _address("remote", remote, port)
    _write(out, text + _rows(me, remote, opts, spec.seed, key))
    _flapped(node, me)
    return 0
