# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Known-answer probe for silent data corruption and the compute floor, on every GPU of a node.

Every GPU computes the same deterministic workloads from fixed seeds (large GEMMs in the asked
precisions, a reduction, an elementwise kernel), over and over for the configured time, all GPUs
at once so the node is hot. Each result is reduced to a bitwise checksum: identical bits give
identical checksums, so the checksums can be compared between the GPUs of this node and, on the
controller, across every GPU of the cluster with the same part and software (duplicate compute:
the odd one out is the suspect). A sampled block of the first result of each workload is also
compared with a float64 CPU reference within a tolerance, which catches an error all GPUs share.
Achieved TFLOPS of the GEMMs are measured per GPU (CUDA events), and nvidia-smi is sampled during
the run so a slow GPU's clocks, power and clock-event reasons explain it.

Output: JSON lines (one object per line), judged by the sdc stage of gpucluster.acceptance:
  {"record": "header", ...}   versions, device, deterministic settings, the GPUs, warnings
  {"record": "result", ...}   one per GPU and workload: iterations, checksums, reference, TFLOPS
  {"record": "samples", ...}  one per GPU: clocks, power, temperature, clock-event reasons
  {"record": "error", ...}    something that went wrong, beside the results
  {"record": "done", ...}     last line: without it the probe did not finish
On a host without CUDA (--device cpu, or auto without a GPU) the same code runs on the CPU, one
thread, so the results are reproducible bit for bit; the GPUs are then those nvidia-smi lists.
--sim-hook names a command of the simulated cluster: it is honoured only on the CPU path and
only when the command says it is a simulation; the header then says "simulated": true.
"""

import argparse
import hashlib
import json
import math
import os
import random
import shlex
import statistics
import subprocess
import sys
import threading
import time
import warnings

PROBE_VERSION = 1
# The workloads a precision name selects; the GEMMs also give TFLOPS.
GEMMS = {"fp64": "float64", "fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}
EXTRA = ("reduce_fp32", "elementwise_fp32")
# Same-width integer views of each float type: the checksum reads the result's bits.
INT_VIEW = {"float64": "int64", "float32": "int32", "bfloat16": "int16", "float16": "int16"}
SMI_FIELDS = ("index", "pci.bus_id", "clocks.sm", "clocks.max.sm", "power.draw", "power.limit",
              "temperature.gpu", "clocks_event_reasons.active")
MAX_DISTINCT = 16


def emit(record):
    sys.stdout.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
    sys.stdout.flush()


def run_tool(argv, timeout):
    """(rc, stdout) of a short helper command; (None, reason) when it cannot run in time."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, "%s: %s" % (argv[0], exc)
    return proc.returncode, proc.stdout if proc.returncode == 0 else (proc.stderr or proc.stdout)


def list_gpus(smi, timeout):
    """[{index, bus_id, name, uuid}] from nvidia-smi, or (None, why)."""
    rc, out = run_tool([smi, "--query-gpu=index,pci.bus_id,name,uuid", "--format=csv,noheader"], timeout)
    if rc != 0:
        return None, "nvidia-smi --query-gpu failed: %s" % str(out).strip()[:200]
    gpus = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            gpus.append({"index": int(parts[0]), "bus_id": parts[1], "name": parts[2], "uuid": parts[3]})
    return gpus, None


class Sampler(threading.Thread):
    """nvidia-smi every few seconds while the workloads run: per GPU clocks, power, temperature."""

    def __init__(self, smi, every, timeout):
        super().__init__(daemon=True)
        self.smi, self.every, self.timeout = smi, every, timeout
        self.stop = threading.Event()
        self.rows = {}
        self.errors = []

    def sample(self):
        rc, out = run_tool([self.smi, "--query-gpu=" + ",".join(SMI_FIELDS), "--format=csv,noheader,nounits"],
                           self.timeout)
        if rc != 0:
            if len(self.errors) < 3:
                self.errors.append("nvidia-smi sample failed: %s" % str(out).strip()[:200])
            return
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == len(SMI_FIELDS) and parts[0].isdigit():
                self.rows.setdefault(int(parts[0]), []).append(parts)

    def run(self):
        while True:
            self.sample()
            if self.stop.wait(self.every):
                return

    def summary(self, index):
        def numbers(col):
            out = []
            for row in self.rows.get(index, []):
                try:
                    out.append(float(row[col]))
                except ValueError:
                    pass
            return out
        rows = self.rows.get(index, [])
        if not rows:
            return {"samples": 0}
        sm, power, temp = numbers(2), numbers(4), numbers(6)
        reasons = 0
        for row in rows:
            try:
                reasons |= int(row[7], 16)
            except ValueError:
                pass
        out = {"samples": len(rows), "bus_id": rows[-1][1], "event_reasons": "0x%016X" % reasons}
        if sm:
            out.update({"sm_mhz_min": min(sm), "sm_mhz_median": statistics.median(sm)})
        max_sm = numbers(3)
        if max_sm:
            out["sm_mhz_max_clock"] = max(max_sm)
        if power:
            out["power_w_max"] = max(power)
        limit = numbers(5)
        if limit:
            out["power_limit_w"] = min(limit)
        if temp:
            out["temp_c_max"] = max(temp)
        return out


class SimHook:
    """What the simulated cluster injects on this node: sdc (per GPU) and slow_gpu, and the
    part's peak throughput for the simulated device clock. Nothing on a real GPU."""

    def __init__(self, data):
        self.gpus = dict((str(k).upper(), v) for k, v in (data.get("gpus") or {}).items())
        self.seed = str(data.get("seed", 0))
        self.node = str(data.get("node", ""))
        self.peak = data.get("peak_tflops") or {}
        self.efficiency = float(data.get("efficiency", 0.7))

    def fault(self, bus_id):
        return self.gpus.get(str(bus_id).upper()) or {}

    def rng(self, *parts):
        digest = hashlib.sha256("/".join([self.seed, self.node] + [str(p) for p in parts]).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def corrupt(self, bus_id, workload, iteration):
        fault = self.fault(bus_id)
        p = float(fault.get("sdc_probability") or 0.0)
        only = fault.get("sdc_workloads") or []
        if p <= 0 or (only and workload not in only):
            return None
        r = self.rng("sdc", bus_id, workload, iteration)
        return r if r.random() < p else None

    def device_seconds(self, bus_id, precision, flops):
        """Simulated GEMM time: the part's peak x efficiency x the slow_gpu factor, 0.5 % jitter."""
        peak = self.peak.get(precision)
        if not peak:
            return None
        factor = float(self.fault(bus_id).get("throughput_factor") or 1.0)
        jitter = 1.0 + (self.rng("clock", bus_id, precision).random() - 0.5) * 0.01
        return flops / (peak * 1e12 * self.efficiency * factor * jitter)


def load_hook(command, timeout):
    rc, out = run_tool(shlex.split(command), timeout)
    if rc != 0:
        return None, "simulation hook %s failed: %s" % (command, str(out).strip()[:200])
    try:
        data = json.loads(out)
    except ValueError as exc:
        return None, "simulation hook %s printed no JSON: %s" % (command, exc)
    if not isinstance(data, dict) or data.get("simulated") is not True:
        return None, "simulation hook %s did not say it is a simulation: ignored" % command
    return SimHook(data), None


def checksum(torch, out):
    """Bitwise checksum: the sum and a position-weighted sum of the result's bits as integers.

    Integer sums are exact and independent of order, so equal bits give equal checksums on any
    device; the weights make a swap of two elements visible."""
    ints = out.contiguous().view(getattr(torch, INT_VIEW[str(out.dtype).replace("torch.", "")])).flatten()
    wide = ints.to(torch.int64)
    weights = torch.arange(1, wide.numel() + 1, device=wide.device, dtype=torch.int64) % 65521 + 1
    plain = int(wide.sum().item()) & 0xFFFFFFFFFFFFFFFF
    weighted = int((wide * weights).sum().item()) & 0xFFFFFFFFFFFFFFFF
    return "%016x%016x" % (plain, weighted)


def flip_bit(torch, out, rng):
    """A silent corruption: one mantissa bit of one element (the simulation hook only)."""
    int_dtype = getattr(torch, INT_VIEW[str(out.dtype).replace("torch.", "")])
    flat = out.view(int_dtype).view(-1)
    k = rng.randrange(flat.numel())
    bits = {torch.int64: 52, torch.int32: 23, torch.int16: 7}[int_dtype]
    bit = rng.randrange(max(1, bits - 8), bits)
    flat[k] = flat[k] ^ (1 << bit)
    return k


class Workload:
    """One deterministic computation: inputs from a fixed seed, the same on every GPU."""

    def __init__(self, torch, name, size, seed, sample):
        self.torch, self.name, self.size, self.sample = torch, name, size, sample
        self.rounded = None
        self.precision = name[5:] if name.startswith("gemm_") else "fp32"
        self.dtype = getattr(torch, GEMMS[self.precision]) if name.startswith("gemm_") else torch.float32
        gen = torch.Generator().manual_seed(seed + sum(ord(c) for c in name))
        if name.startswith("gemm_"):
            self.a = torch.rand((size, size), generator=gen, dtype=torch.float64) * 2 - 1
            self.b = torch.rand((size, size), generator=gen, dtype=torch.float64) * 2 - 1
            self.flops = 2.0 * size ** 3
        else:
            n = size * size
            self.a = torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1
            self.b = torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1
            self.flops = None

    def inputs(self, device):
        return self.a.to(self.dtype).to(device), self.b.to(self.dtype).to(device)

    def compute(self, a, b):
        torch = self.torch
        if self.name.startswith("gemm_"):
            torch.backends.cuda.matmul.allow_tf32 = self.precision == "tf32"
            return torch.matmul(a, b)
        if self.name == "reduce_fp32":
            # A fixed-shape reduction (rows), deterministic on a given device type.
            return a.view(self.size, self.size).sum(dim=1)
        return torch.sin(a) * b + torch.cos(b)

    def reference_error(self, out):
        """Max error of a sampled block against float64 on the CPU, relative to sum |a||b|.

        The judge sets the tolerance (it knows the precision and the size); the inputs are
        rounded to the workload's precision first, so only the computation's own rounding counts."""
        torch = self.torch
        got = out.detach().to("cpu", torch.float64)
        k = self.size
        rows = list(range(0, k, max(1, k // self.sample)))[:self.sample]
        if self.rounded is None:  # once per workload, not once per GPU
            self.rounded = (self.a.to(self.dtype).to(torch.float64), self.b.to(self.dtype).to(torch.float64))
        a, b = self.rounded
        if self.name.startswith("gemm_"):
            want = a[rows] @ b[:, rows]
            have = got[rows][:, rows]
            scale = a[rows].abs() @ b[:, rows].abs()
        elif self.name == "reduce_fp32":
            a = a.view(k, k)
            want = a[rows].sum(dim=1)
            have = got[rows]
            scale = a[rows].abs().sum(dim=1)
        else:
            idx = list(range(0, a.numel(), max(1, a.numel() // (self.sample * self.sample))))
            want = torch.sin(a[idx]) * b[idx] + torch.cos(b[idx])
            have = got[idx]
            scale = a[idx].abs() * 0 + 2.0  # |sin(a) b| + |cos(b)| <= 2 for inputs in [-1, 1]
        err = ((have - want).abs() / scale.clamp(min=1e-30)).max().item()
        return err, len(rows) if self.name != "elementwise_fp32" else len(idx)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    p.add_argument("--precisions", default="fp32,tf32,bf16", help="GEMM precisions, comma-separated")
    p.add_argument("--no-extra", action="store_true", help="GEMMs only (no reduction, elementwise)")
    p.add_argument("--size", type=int, default=8192, help="GEMM edge (n x n); reduction/elementwise n*n")
    p.add_argument("--seconds", type=float, default=60.0, help="time to keep repeating the workloads")
    p.add_argument("--iterations", type=int, default=3, help="at least this many iterations")
    p.add_argument("--max-iterations", type=int, default=0, help="stop after this many (0: no cap)")
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--reference-sample", type=int, default=64, help="rows/columns of the CPU reference block")
    p.add_argument("--sample-seconds", type=float, default=2.0, help="nvidia-smi sampling period (0: off)")
    p.add_argument("--nvidia-smi", default="nvidia-smi")
    p.add_argument("--tool-timeout", type=float, default=30.0, help="timeout of each nvidia-smi call")
    p.add_argument("--sim-hook", default="", help="simulated cluster only: command printing this node's faults")
    return p.parse_args(argv)


def deterministic(torch):
    """Deterministic eager kernels (torch.use_deterministic_algorithms's flag, which the header reads
    back). The public call also configures the graph compiler, importing it (about a second of CPU,
    as much again as importing torch); the probe runs eager operations only, so where this torch
    has the eager setter alone, that is what is set."""
    setter = getattr(getattr(torch, "_C", None), "_set_deterministic_algorithms", None)
    if setter is None:
        torch.use_deterministic_algorithms(True)
        return
    setter(True)


def setup(args, torch, header):
    """Devices and GPU list; deterministic settings, recorded in the header."""
    cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        return None, "--device cuda but PyTorch sees no CUDA device"
    use_cuda = cuda and args.device != "cpu"
    deterministic(torch)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    # Half-precision GEMMs accumulate in fp32 throughout (no reduced-precision split-K sums).
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    header["deterministic"] = {
        "use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "tf32_outside_tf32_workload": False,
        "reduced_precision_reduction": False,
        "cpu_threads": None,
    }
    gpus, why = list_gpus(args.nvidia_smi, args.tool_timeout)
    if use_cuda:
        count = torch.cuda.device_count()
        header["cuda_devices"] = count
        if gpus is None or len(gpus) != count:
            header["warnings"].append("nvidia-smi lists %s GPUs, PyTorch %d: named by CUDA index"
                                      % ("no" if gpus is None else len(gpus), count))
            gpus = [{"index": i, "bus_id": None, "name": torch.cuda.get_device_name(i), "uuid": None}
                    for i in range(count)]
        for gpu in gpus:
            gpu["device"] = "cuda:%d" % gpu["index"]
        header["device"] = "cuda"
    else:
        torch.set_num_threads(1)
        header["deterministic"]["cpu_threads"] = 1
        header["device"] = "cpu"
        if gpus is None:
            header["warnings"].append(why)
            gpus = [{"index": 0, "bus_id": None, "name": "cpu", "uuid": None}]
        for gpu in gpus:
            gpu["device"] = "cpu"
    return gpus, None


def run(args):
    # cuBLAS reproducibility needs a fixed workspace before CUDA starts (torch's docs).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # torch index == nvidia-smi index
    started = time.monotonic()
    header = {"record": "header", "probe": "gpucluster-sdc", "version": PROBE_VERSION, "warnings": [],
              "simulated": False, "python": sys.version.split()[0], "host": os.uname().nodename,
              "size": args.size, "seed": args.seed}
    # Python warnings (PyTorch's, e.g. about NumPy) go into the header, not between the records.
    caught = header["python_warnings"] = []

    def keep(message, category, filename, lineno, file=None, line=None):
        if len(caught) < 10:
            caught.append("%s: %s" % (category.__name__, str(message)[:200]))
    warnings.showwarning = keep
    try:
        import torch
    except ImportError as exc:
        header["warnings"].append("PyTorch is not importable: %s" % exc)
        emit(header)
        emit({"record": "error", "message": "PyTorch is not importable: %s" % exc})
        return 3
    header["torch"] = torch.__version__
    header["cuda_runtime"] = torch.version.cuda
    gpus, why = setup(args, torch, header)
    if gpus is None:
        emit(header)
        emit({"record": "error", "message": why})
        return 3
    hook = None
    if args.sim_hook:
        if header["device"] == "cuda":
            header["warnings"].append("simulation hook ignored on a real GPU")
        else:
            hook, why = load_hook(args.sim_hook, args.tool_timeout)
            if why:
                header["warnings"].append(why)
            header["simulated"] = hook is not None
    header["clock"] = "simulated" if hook else ("cuda_events" if header["device"] == "cuda" else "wall")
    header["driver"] = None
    rc, out = run_tool([args.nvidia_smi, "--query-gpu=driver_version", "--format=csv,noheader"], args.tool_timeout)
    if rc == 0 and out.strip():
        header["driver"] = out.splitlines()[0].strip()
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    unknown = [p for p in precisions if p not in GEMMS]
    if unknown:
        emit(header)
        emit({"record": "error", "message": "unknown precision %s (known: %s)" % (", ".join(unknown), ", ".join(GEMMS))})
        return 2
    names = ["gemm_" + p for p in precisions] + ([] if args.no_extra else list(EXTRA))
    header["workloads"] = names
    header["gpus"] = [dict((k, g[k]) for k in ("index", "bus_id", "name", "uuid")) for g in gpus]
    emit(header)

    sampler = None
    if args.sample_seconds > 0 and gpus and gpus[0].get("bus_id"):
        sampler = Sampler(args.nvidia_smi, args.sample_seconds, args.tool_timeout)
        sampler.start()
    workloads = [Workload(torch, n, args.size, args.seed, args.reference_sample) for n in names]
    results = dict(((g["index"], w.name), {"iterations": 0, "checksums": {}, "other": 0, "device_s": 0.0,
                                           "reference": None}) for g in gpus for w in workloads)
    inputs = {}
    for w in workloads:
        for g in gpus:
            inputs[(g["index"], w.name)] = w.inputs(g["device"])
    iteration = 0
    try:
        while True:
            for w in workloads:
                outs, events = {}, {}
                for g in gpus:  # launch on every GPU first: on CUDA they run at once
                    a, b = inputs[(g["index"], w.name)]
                    t0 = time.perf_counter()
                    if header["device"] == "cuda":
                        with torch.cuda.device(g["index"]):
                            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            start.record()
                            outs[g["index"]] = w.compute(a, b)
                            end.record()
                            events[g["index"]] = (start, end)
                    else:
                        outs[g["index"]] = w.compute(a, b)
                        events[g["index"]] = time.perf_counter() - t0
                for g in gpus:
                    out, r = outs[g["index"]], results[(g["index"], w.name)]
                    if header["device"] == "cuda":
                        start, end = events[g["index"]]
                        end.synchronize()
                        seconds = start.elapsed_time(end) / 1000.0
                    else:
                        seconds = events[g["index"]]
                    if hook and w.flops:
                        simulated = hook.device_seconds(g["bus_id"], w.precision, w.flops)
                        seconds = simulated if simulated is not None else seconds
                    r["device_s"] += seconds
                    bad = hook.corrupt(g["bus_id"], w.name, iteration) if hook else None
                    if bad is not None:
                        flip_bit(torch, out, bad)
                    if iteration == 0:
                        err, sampled = w.reference_error(out)
                        r["reference"] = {"max_rel_err": err if math.isfinite(err) else "non-finite",
                                          "iteration": 0, "sampled": sampled, "k": w.size}
                    total = checksum(torch, out)
                    seen = r["checksums"].get(total)
                    if seen is not None:
                        seen[0] += 1
                        seen[2] = iteration
                    elif len(r["checksums"]) < MAX_DISTINCT:
                        r["checksums"][total] = [1, iteration, iteration]
                    else:
                        r["other"] += 1
                    r["iterations"] += 1
            iteration += 1
            elapsed = time.monotonic() - started
            if args.max_iterations and iteration >= args.max_iterations:
                break
            if iteration >= args.iterations and elapsed >= args.seconds:
                break
    except Exception as exc:  # an out-of-memory or a CUDA error is a result too: report, then stop
        emit({"record": "error", "message": "%s at iteration %d: %s" % (type(exc).__name__, iteration, exc)})
    if sampler:
        sampler.stop.set()
        sampler.join(args.tool_timeout + 1)
    for g in gpus:
        for w in workloads:
            r = results[(g["index"], w.name)]
            record = {"record": "result", "gpu": g["index"], "bus_id": g["bus_id"], "workload": w.name,
                      "iterations": r["iterations"], "checksums": r["checksums"], "other": r["other"],
                      "reference": r["reference"], "device_seconds": round(r["device_s"], 6)}
            if w.flops and r["device_s"] > 0:
                record["tflops"] = round(w.flops * r["iterations"] / r["device_s"] / 1e12, 4)
            emit(record)
        if sampler:
            emit(dict(sampler.summary(g["index"]), record="samples", gpu=g["index"]))
    for message in (sampler.errors if sampler else []):
        emit({"record": "error", "message": message})
    emit({"record": "done", "iterations": iteration, "seconds": round(time.monotonic() - started, 3)})
    return 0


def main(argv=None):
    try:
        return run(parse_args(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
