# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge one node's SDC probe run (parse_sdc_probe result): known answers and the compute floor.

Checks (a pass states what the output proved: GPUs, workloads, iterations):
- sdc.parse        output missing, unreadable lines, the probe's own errors, a run that did not
                   finish; reported beside the findings of the readable rest
- sdc.setup        the probe ran with deterministic settings on the GPUs (not on the CPU of a GPU
                   node: PyTorch without CUDA tests nothing); error otherwise
- sdc.coverage     every GPU the profile expects and every workload asked for, each with at least
                   the minimum iterations; fail when fewer GPUs or workloads were tested
- sdc.consistency  per GPU: its results bitwise identical to the other GPUs' of this node in every
                   iteration (duplicate compute; the odd one out among >= 3 is the suspect) and to
                   its own other iterations (intermittent corruption, reported with its rate);
                   named by GPU index, PCI bus id, workload and first iteration
- sdc.reference    per GPU: the sampled block of the first result within the tolerance of a
                   float64 CPU reference (catches an error every GPU shares)
- sdc.compute      per GPU and GEMM precision: achieved TFLOPS >= floor_fraction x the part's
                   dense peak (profile sdc.peak_tflops, with its source); a slow GPU's clocks,
                   power and clock-event reasons sampled during the run are in the message
The comparison with every other GPU of the cluster (same part and software) and with the peers'
throughput is in _judge_sdc_fleet, over all nodes' metrics.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, join_names, profile_get,
    warning_result)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import no_header_message
from ansible_collections.gpucluster.acceptance.plugins.module_utils._sdc_probe import dominant, parse_sdc_probe

TOOL = "sdc-probe"
EXTRA_WORKLOADS = ("reduce_fp32", "elementwise_fp32")
# Unit round-off of the result's precision (output rounding), of the accumulation, and of the
# products (TF32 rounds the fp32 inputs to a 10-bit mantissa inside the Tensor Core).
_ROUNDING = {
    "fp64": (2.0 ** -53, 2.0 ** -53, 0.0),
    "fp32": (2.0 ** -24, 2.0 ** -24, 0.0),
    "tf32": (2.0 ** -24, 2.0 ** -24, 2.0 ** -10),
    "bf16": (2.0 ** -8, 2.0 ** -24, 0.0),
    "fp16": (2.0 ** -11, 2.0 ** -24, 0.0),
}


def workload_precision(workload):
    """'gemm_bf16' -> 'bf16'; the reduction and elementwise kernels are fp32."""
    if workload.startswith("gemm_"):
        return workload[5:]
    return workload.rsplit("_", 1)[-1]


def reference_tolerance(workload, k, margin=8.0):
    """Largest error, relative to sum |a_i b_i|, a correct result of ``workload`` can have.

    Output rounding (2 u_out) plus the product rounding of TF32 plus accumulation over k terms
    (probabilistic sqrt(k) u_acc bound), times ``margin``. The inputs are rounded to the
    precision before the reference is computed, so their rounding is not an error."""
    precision = workload_precision(workload)
    if precision not in _ROUNDING:
        raise ValueError("no rounding model for %r" % (workload,))
    u_out, u_acc, u_prod = _ROUNDING[precision]
    if workload == "elementwise_fp32":
        # sin/cos within a few ulps; no accumulation.
        return margin * 4.0 * u_out
    k = max(int(k or 1), 1)
    return margin * (2.0 * u_out + u_prod + math.sqrt(k) * u_acc)


def gpu_name(result):
    bus = result.get("bus_id")
    return "GPU%s (%s)" % (result.get("gpu"), bus) if bus else "GPU%s" % result.get("gpu")


def _explain(samples):
    """The clocks, power and clock-event reasons nvidia-smi showed for a GPU during the run."""
    if not samples or not samples.get("samples"):
        return "no nvidia-smi samples during the run"
    parts = []
    if is_number(samples.get("sm_mhz_median")):
        text = "SM clock median %s MHz" % fmt_num(samples["sm_mhz_median"])
        if is_number(samples.get("sm_mhz_max_clock")):
            text += " of max %s" % fmt_num(samples["sm_mhz_max_clock"])
        parts.append(text)
    if is_number(samples.get("power_w_max")):
        text = "power up to %s W" % fmt_num(samples["power_w_max"])
        if is_number(samples.get("power_limit_w")):
            text += " (limit %s W)" % fmt_num(samples["power_limit_w"])
        parts.append(text)
    if is_number(samples.get("temp_c_max")):
        parts.append("up to %s C" % fmt_num(samples["temp_c_max"]))
    reasons = samples.get("event_reasons")
    if reasons:
        try:
            value = int(str(reasons), 16) & ~0x1  # bit 0: idle, not a slowdown
        except ValueError:
            value = None
        parts.append("clock-event reasons %s" % reasons if value else "no clock-event reason active")
    return ", ".join(parts) + " (%d samples)" % samples["samples"]


def _setup_checks(header, profile, simulated):
    checks = []
    det = header.get("deterministic") or {}
    missing = [k for k in ("use_deterministic_algorithms",) if det.get(k) is not True]
    if header.get("device") == "cuda" and not det.get("cublas_workspace_config"):
        missing.append("CUBLAS_WORKSPACE_CONFIG")
    if missing:
        checks.append(check_result("sdc.setup", ERROR, "%s: the probe ran without deterministic settings (%s): "
                                   "its checksums cannot be compared" % (TOOL, ", ".join(missing)),
                                   {"deterministic": det}, "probe", tool=TOOL))
    if header.get("device") != "cuda" and not simulated and int(profile.get("gpus_per_node") or 0) > 0:
        checks.append(check_result("sdc.setup", ERROR, "%s ran on the CPU (PyTorch %s sees no CUDA device): no GPU "
                                   "was tested" % (TOOL, header.get("torch") or "?"),
                                   {"device": header.get("device")}, "pytorch", tool=TOOL))
    for warning in header.get("warnings") or []:
        # A simulation hook that could not be read would make a simulated fault pass unseen.
        status = ERROR if "hook" in warning else None
        checks.append(check_result("sdc.setup", status, "%s: %s" % (TOOL, warning), None, "probe", tool=TOOL)
                      if status else warning_result("sdc.setup", "%s: %s" % (TOOL, warning), tool=TOOL))
    return checks


def _coverage(parsed, profile, options):
    header = parsed["header"]
    listed = header.get("gpus") or []
    tested = sorted(set(r["gpu"] for r in parsed["results"]))
    want_gpus = int(profile.get("gpus_per_node") or 0)
    asked = list(header.get("workloads") or [])
    precisions = options.get("precisions") or profile_get(profile, "sdc.precisions") or []
    required = ["gemm_" + p for p in precisions] + ([] if options.get("no_extra") else list(EXTRA_WORKLOADS))
    missing_workloads = [w for w in required if w not in asked]
    min_iter = int(options.get("min_iterations") or 1)
    short = sorted(set("%s %s (%d)" % (gpu_name(r), r["workload"], r["iterations"])
                       for r in parsed["results"] if r["iterations"] < min_iter))
    by_gpu = {}
    for r in parsed["results"]:
        by_gpu.setdefault(r["gpu"], set()).add(r["workload"])
    incomplete = sorted("GPU%s" % g for g in tested if not set(asked) <= by_gpu.get(g, set()))
    iterations = min([r["iterations"] for r in parsed["results"]] or [0])
    metrics = {"gpus": len(tested), "expected_gpus": want_gpus, "workloads": asked,
               "iterations_min": iterations}
    problems = []
    if want_gpus and len(tested) < want_gpus:
        problems.append("tested %d of the %d GPUs (%s listed)" % (len(tested), want_gpus, len(listed)))
    if missing_workloads:
        problems.append("did not run %s" % ", ".join(missing_workloads))
    if incomplete:
        problems.append("no result for some workloads on %s" % join_names(incomplete))
    if short:
        problems.append("fewer than %d iterations: %s" % (min_iter, join_names(short)))
    if problems:
        return check_result("sdc.coverage", FAIL, "%s %s" % (TOOL, "; ".join(problems)), metrics, "probe", tool=TOOL)
    return check_result("sdc.coverage", PASS, "%s ran %s on %d GPUs, at least %d iterations each"
                        % (TOOL, ", ".join(asked), len(tested), iterations), metrics, tool=TOOL)


def node_expected(results):
    """{workload: (checksum, GPUs agreeing, GPUs)}: the checksum a strict majority (>= 3 GPUs) of
    the node's GPUs gave most often; None where no such majority exists."""
    votes = {}
    for r in results:
        key, _count = dominant(r["checksums"])
        votes.setdefault(r["workload"], {}).setdefault(key, 0)
        votes[r["workload"]][key] += 1
    out = {}
    for workload, counts in votes.items():
        total = sum(counts.values())
        key, agree = max(sorted(counts.items()), key=lambda kv: kv[1])
        out[workload] = (key if total >= 3 and agree * 2 > total else None, agree, total)
    return out


def _consistency(parsed, simulated):
    expected = node_expected(parsed["results"])
    suspects = {}
    for r in parsed["results"]:
        want = expected[r["workload"]][0]
        own, own_count = dominant(r["checksums"])
        reference = want if want is not None else own
        good = r["checksums"].get(reference, [0, 0, 0])[0]
        bad = r["iterations"] - good
        if bad <= 0:
            continue
        firsts = [v[1] for k, v in r["checksums"].items() if k != reference]
        first = min(firsts) if firsts else None
        if want is not None and own != want:
            what = "differ from the result of the other %d GPUs" % (expected[r["workload"]][1])
        elif want is not None:
            what = "differ from the result of the other GPUs"
        else:
            what = "differ from the GPU's own other results"
        suspects.setdefault(r["gpu"], {"name": gpu_name(r), "bus_id": r.get("bus_id"), "workloads": []})
        suspects[r["gpu"]]["workloads"].append({
            "workload": r["workload"], "bad": bad, "iterations": r["iterations"],
            "rate": round(float(bad) / r["iterations"], 4) if r["iterations"] else None,
            "first_iteration": first, "what": what})
    checks = []
    sim = " (simulated corruption)" if simulated else ""
    for gpu in sorted(suspects):
        s = suspects[gpu]
        parts = []
        for w in s["workloads"]:
            kind = "in every iteration" if w["bad"] == w["iterations"] else "intermittently, rate %s" % fmt_num(w["rate"])
            parts.append("%s: %d of %d results %s (%s, first at iteration %s)"
                         % (w["workload"], w["bad"], w["iterations"], w["what"], kind, w["first_iteration"]))
        checks.append(check_result(
            "sdc.consistency", FAIL, "%s computed wrong values without an error%s: %s" % (s["name"], sim, "; ".join(parts)),
            {"gpu": gpu, "bus_id": s["bus_id"], "workloads": s["workloads"]}, s["name"], tool=TOOL))
    undecided = sorted(w for w, (key, _agree, total) in expected.items() if key is None)
    clean = sorted(set(r["gpu"] for r in parsed["results"]) - set(suspects))
    if clean:
        gpus = len(clean)
        iterations = sum(r["iterations"] for r in parsed["results"] if r["gpu"] in set(clean))
        text = "%d GPUs, %d results: every result bitwise identical %s" % (
            gpus, iterations, "across the node's GPUs and iterations" if not undecided
            else "across iterations (%s: too few GPUs to compare on the node, compared across the cluster)"
            % ", ".join(undecided))
        checks.append(check_result("sdc.consistency", PASS, text, {"gpus": gpus, "results": iterations}, tool=TOOL))
    return checks, sorted(s["bus_id"] or s["name"] for s in suspects.values())


def _sci(value):
    return "%.3g" % value if is_number(value) else str(value)


def _reference(parsed, margin):
    bad, ok, missing = {}, 0, []
    for r in parsed["results"]:
        ref = r.get("reference")
        if not ref:
            missing.append("%s %s" % (gpu_name(r), r["workload"]))
            continue
        err = ref.get("max_rel_err")
        tol = reference_tolerance(r["workload"], ref.get("k"), margin)
        if not is_number(err):
            bad.setdefault(r["gpu"], (r, []))[1].append("%s not finite (%s)" % (r["workload"], err))
        elif err > tol:
            bad.setdefault(r["gpu"], (r, []))[1].append("%s error %s > tolerance %s" % (r["workload"], _sci(err), _sci(tol)))
        else:
            ok += 1
    checks = []
    for gpu in sorted(bad):
        r, parts = bad[gpu]
        checks.append(check_result(
            "sdc.reference", FAIL, "%s differs from the float64 CPU reference (sampled block of iteration %s): %s"
            % (gpu_name(r), (r.get("reference") or {}).get("iteration", 0), "; ".join(parts)),
            {"gpu": gpu, "bus_id": r.get("bus_id"), "workloads": parts}, gpu_name(r), tool=TOOL))
    if missing:
        checks.append(check_result("sdc.reference", ERROR, "%s: no reference comparison for %s"
                                   % (TOOL, join_names(missing)), None, "probe", tool=TOOL))
    if ok and not bad:
        checks.append(check_result("sdc.reference", PASS, "%d results within tolerance of the float64 CPU reference"
                                   % ok, {"results": ok}, tool=TOOL))
    return checks


def _compute(parsed, profile, simulated, device):
    peaks = profile_get(profile, "sdc.peak_tflops") or {}
    fraction = float(profile_get(profile, "sdc.floor_fraction", 0.6))
    source = profile_get(profile, "sdc.peak_source") or "the hardware profile"
    if device != "cuda" and not simulated:
        return [check_result("sdc.compute", SKIP, "compute floor not judged: the probe ran on the CPU", None, tool=TOOL)]
    clock = " (simulated device clock)" if simulated else ""
    ceiling = float(profile_get(profile, "plausibility.tflops_over_peak", 2.0))
    slow, ok, no_peak, unmeasured, implausible = {}, [], set(), [], []
    for r in parsed["results"]:
        if not r["workload"].startswith("gemm_"):
            continue
        precision = workload_precision(r["workload"])
        peak = peaks.get(precision)
        if not is_number(peak) or peak <= 0:
            no_peak.add(precision)
            continue
        value = r.get("tflops")
        if not is_number(value):
            unmeasured.append("%s %s" % (gpu_name(r), r["workload"]))
        elif value <= 0 or value > ceiling * peak:
            implausible.append("%s %s %s TFLOPS" % (gpu_name(r), r["workload"], _sci(value)))
        elif value < fraction * peak:
            slow.setdefault(r["gpu"], (r, []))[1].append((precision, value, peak))
        else:
            ok.append(value / peak)
    checks = []
    for gpu in sorted(slow):
        r, rows = slow[gpu]
        parts = ["%s %s TFLOPS < %s (%d %% of %s)" % (p, fmt_num(v), fmt_num(fraction * peak), int(round(v / peak * 100)),
                                                      fmt_num(peak)) for p, v, peak in rows]
        checks.append(check_result(
            "sdc.compute", FAIL, "%s below the compute floor of %d %% of the dense peak%s: %s; %s. Peaks: %s"
            % (gpu_name(r), int(round(fraction * 100)), clock, ", ".join(parts),
               _explain(parsed["samples"].get(gpu)), source),
            {"gpu": gpu, "bus_id": r.get("bus_id"), "floor_fraction": fraction,
             "tflops": dict((p, v) for p, v, _peak in rows)}, gpu_name(r), tool=TOOL))
    if unmeasured:
        checks.append(check_result("sdc.compute", ERROR, "%s measured no throughput for %s"
                                   % (TOOL, join_names(unmeasured)), None, "probe", tool=TOOL))
    if implausible:  # a clock that jumped measures nothing: neither a slow GPU nor a pass
        checks.append(check_result("sdc.compute", ERROR, "%s: not a plausible reading (at most %g x the dense peak, "
                                   "plausibility.tflops_over_peak): %s" % (TOOL, ceiling, join_names(implausible)),
                                   None, "probe", tool=TOOL))
    if no_peak:
        checks.append(check_result("sdc.compute", SKIP, "compute floor not judged for %s: the profile has no peak"
                                   % ", ".join(sorted(no_peak)), None, tool=TOOL))
    if ok and not slow and not implausible:
        checks.append(check_result("sdc.compute", PASS, "%d GEMM results at %d-%d %% of the dense peak%s (floor %d %%)"
                                   % (len(ok), int(min(ok) * 100), int(max(ok) * 100), clock, int(round(fraction * 100))),
                                   {"results": len(ok)}, tool=TOOL))
    return checks


def fleet_metrics(parsed, suspects):
    """What the cluster-wide comparison needs: part, software, per GPU the dominant checksum and
    TFLOPS per workload (compact: thousands of nodes)."""
    header = parsed["header"] or {}
    names = sorted(set(g.get("name") for g in header.get("gpus") or [] if g.get("name")))
    gpus = {}
    for r in parsed["results"]:
        entry = gpus.setdefault(r.get("bus_id") or "GPU%s" % r["gpu"], {"index": r["gpu"], "checksum": {}, "tflops": {}})
        entry["checksum"][r["workload"]] = dominant(r["checksums"])[0]
        if is_number(r.get("tflops")):
            entry["tflops"][r["workload"]] = r["tflops"]
    return {"part": "/".join(names) or None,
            "software": "driver %s, torch %s, CUDA %s, %s" % (
                header.get("driver"), header.get("torch"), header.get("cuda_runtime"), header.get("device")),
            "simulated": bool(header.get("simulated")), "size": header.get("size"), "seed": header.get("seed"),
            "gpus": gpus, "suspects": suspects}


def judge_sdc(parsed, profile=None, options=None):
    """(checks, metrics) of one node's probe run."""
    profile = profile or {}
    options = options or {}
    checks = []
    if parsed["errors"]:
        checks.append(check_result("sdc.parse", ERROR, "%s output: %d unreadable line(s): %s"
                                   % (TOOL, len(parsed["errors"]), "; ".join(parsed["errors"][:3])),
                                   {"errors": parsed["errors"]}, "probe", tool=TOOL))
    if parsed["other"]:
        # Libraries print to stderr (PyTorch's C++ warnings): shown, but not a finding.
        checks.append(warning_result("sdc.parse", "%s output has %d line(s) that are no probe record: %s"
                                     % (TOOL, len(parsed["other"]), "; ".join(parsed["other"][:2])),
                                     {"lines": parsed["other"]}, tool=TOOL))
    for message in parsed["probe_errors"]:
        checks.append(check_result("sdc.parse", ERROR, "%s reported: %s" % (TOOL, message), None, "probe", tool=TOOL))
    header = parsed["header"]
    if header is None:
        # Whatever else it printed (a traceback is "no probe record", a warning): nothing was tested.
        checks.append(check_result("sdc.parse", ERROR, no_header_message(TOOL, parsed), None, "probe", tool=TOOL))
        return checks, {}
    if parsed["done"] is None:
        checks.append(check_result("sdc.parse", ERROR, "%s did not finish (no 'done' record: killed, timed out or "
                                   "crashed); the results it printed are judged" % TOOL, None, "probe", tool=TOOL))
    simulated = bool(header.get("simulated"))
    checks.extend(_setup_checks(header, profile, simulated))
    if not parsed["results"]:
        # No result is nothing tested, not a GPU that failed a test.
        checks.append(check_result("sdc.coverage", ERROR, "%s reported no results: nothing was tested" % TOOL,
                                   None, "probe", tool=TOOL))
        return checks, {}
    checks.append(_coverage(parsed, profile, options))
    consistency, suspects = _consistency(parsed, simulated)
    checks.extend(consistency)
    margin = float(options.get("reference_margin") or profile_get(profile, "sdc.reference_margin", 8.0))
    checks.extend(_reference(parsed, margin))
    checks.extend(_compute(parsed, profile, simulated, header.get("device")))
    return checks, {"sdc": fleet_metrics(parsed, suspects)}


def judge_sdc_stage(outputs, profile, options):
    """The sdc stage's judge (see _stages.STAGES): one tool, the probe."""
    text = outputs.get(TOOL)
    if text is None:
        return [check_result("sdc.parse", SKIP, "%s: not in the replayed set" % TOOL, None, tool=TOOL)], {}
    if not str(text).strip():
        return [check_result("sdc.parse", ERROR, "%s printed nothing" % TOOL, None, "probe", tool=TOOL)], {}
    return judge_sdc(parse_sdc_probe(text), profile, options)
