# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every tool parser on large inputs: is it linear, and does 20 MB finish in 2 s?

A parser runs on the controller (replays, the srun transport, the callback) with no timeout of its
own: one quadratic pattern on a garbled line stalls a whole run. For each parser this feeds
  - "repeated": a real output (tests/fixtures) repeated to 1, 5 and 20 MB (many sections, as a
    long capture or a concatenated log looks);
  - "one line": the same bytes with every newline turned into a space (a capture that lost its
    line breaks, or a tool that printed one huge line), 1, 5 and 20 MB;
and records the CPU seconds of the parse (best of --repeat) and the ratio 20 MB / 5 MB (4.0 is
linear). Writes bench/results/parsers.md.

    .venv/bin/python bench/parser_scale.py [--sizes 1,5,20] [--repeat 1] [--no-write]
"""
import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / ".build" / "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpucluster.acceptance.plugins.module_utils import (  # noqa: E402
    _checkpoint_probe, _dcgm_diag, _ib_counters, _ibnetdiscover, _ibstat, _judge_loader, _nccl_tests, _nvidia_smi,
    _nvidia_smi_csv, _nvidia_topo, _nvlink_errors, _perftest, _sacct, _sdc_probe, _sections, _slurm_topology,
    _workload_log, _xid_log)

FIX = REPO / "tests" / "fixtures"
# (name, parser, a real output it reads)
PARSERS = (
    ("nvidia-smi -q", _nvidia_smi.parse_nvidia_smi_q, FIX / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt"),
    ("nvidia-smi --query-gpu", _nvidia_smi_csv.parse_nvidia_smi_csv, FIX / "nvidia_smi" / "csv_h100_8gpu_units_handmade.csv"),
    ("nvidia-smi topo -m", _nvidia_topo.parse_nvidia_topo, FIX / "nvidia_topo" / "a100_pcie_2gpu_mlx5_numa.txt"),
    ("nvidia-smi nvlink -e", _nvlink_errors.parse_nvlink_errors, FIX / "nvidia_smi" / "nvlink_e_h100_1gpu.txt"),
    ("dcgmi diag", _dcgm_diag.parse_dcgm_diag, FIX / "dcgm_diag" / "text_4x_r3_pass_docs.txt"),
    ("ibstat", _ibstat.parse_ibstat, FIX / "ibstat" / "gpud_h100_ib_active_bond_spaces.txt"),
    ("perfquery / sysfs counters", _ib_counters.parse_ib_counters, FIX / "ib_counters" / "infiniband_diags_16_perfquery_x.txt"),
    ("ibnetdiscover", _ibnetdiscover.parse_ibnetdiscover, FIX / "ibnetdiscover" / "topograph_example_ndr_full.txt"),
    ("nccl-tests", _nccl_tests.parse_nccl_tests, FIX / "nccl_tests" / "all_reduce_h100_2node_no_version.txt"),
    ("perftest", _perftest.parse_perftest, FIX / "perftest" / "perftest_273_write_postlist_gbits.txt"),
    ("kernel log (Xid)", _xid_log.parse_xid_log, FIX / "xid_log" / "mixed_variants_gpud_tests.log"),
    ("slurm topology.conf", _slurm_topology.parse_slurm_topology, FIX / "slurm_topology" / "guide_binary_tree.conf"),
    ("sacct", _sacct.parse_sacct, FIX / "accounting" / "sacct_X_D.psv"),
    ("workload log", _workload_log.parse_workload_log, FIX / "workload" / "clean_2x2.txt"),
    ("SDC probe records", _sdc_probe.parse_sdc_probe, FIX / "sdc" / "gpu001.jsonl"),
    ("loader probe records", _judge_loader.parse_loader_probe, FIX / "loader" / "gpu001.jsonl"),
    ("checkpoint probe records", _checkpoint_probe.parse_checkpoint_probe, FIX / "checkpoint" / "gpu001.jsonl"),
    ("collector sections", _sections.parse_sections, None),
)
MB = 1000 * 1000


def _sections_sample():
    return "==> gpucluster-begin dmesg <==\n[ 1.0] NVRM: loading\n\n==> gpucluster-end dmesg rc=0 seconds=0.1 <==\n"


def _grow(sample, size, one_line):
    text = sample if sample.endswith("\n") else sample + "\n"
    body = (text * (size // len(text) + 1))[:size]
    return body.replace("\n", " ") if one_line else body


def _cpu(parser, text, repeat):
    best = None
    for dummy in range(repeat):
        start = time.process_time()
        parser(text)
        took = time.process_time() - start
        best = took if best is None else min(best, took)
    return best


def measure(sizes, repeat):
    rows = []
    for name, parser, path in PARSERS:
        sample = path.read_text() if path else _sections_sample()
        cap = getattr(parser, "limit_mb", None)
        for shape, one_line in (("repeated", False), ("one line", True)):
            times = dict((size, _cpu(parser, _grow(sample, int(size * MB), one_line), repeat)) for size in sizes)
            if cap:  # the most it ever reads: just below its cap
                times["cap"] = _cpu(parser, _grow(sample, int(cap * MB) - 1, one_line), repeat)
            rows.append((name, shape, times, cap))
            print("%-28s %-9s %s" % (name, shape, "  ".join("%s %.2f s" % (s, t) for s, t in times.items())),
                  flush=True)
    return rows


def _growth(times, sizes, cap):
    """Seconds per MB at the largest size read whole over that at the smallest (1.0: linear)."""
    read = [s for s in sorted(sizes) if not cap or s <= cap]
    if len(read) < 2 or times[read[0]] < 0.005:
        return "-"
    return "%.2f" % ((times[read[-1]] / read[-1]) / (times[read[0]] / read[0]))


def markdown(rows, sizes):
    head = "| parser | input | cap MB | " + " | ".join("%g MB (s)" % s for s in sizes) + \
        " | just below the cap (s) | growth of s/MB |"
    lines = [head, "|" + "---|" * (5 + len(sizes))]
    for name, shape, times, cap in rows:
        cells = ["%.2f%s" % (times[s], " (refused)" if cap and s > cap else "") for s in sizes]
        worst = max([times[s] for s in sizes] + [times.get("cap", 0)])
        flag = " **over 2 s**" if worst > 2.0 else ""
        lines.append("| %s | %s | %s | %s | %s | %s |%s" % (
            name, shape, "%g" % cap if cap else "-", " | ".join(cells),
            "%.2f" % times["cap"] if "cap" in times else "-", _growth(times, sizes, cap), flag))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="1,5,20", help="MB, comma-separated")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    rows = measure(sizes, args.repeat)
    table = markdown(rows, sizes)
    print(table)
    if not args.no_write:
        out = REPO / "bench" / "results" / "parsers.md"
        note = ("# Parsers on large inputs (`bench/parser_scale.py`)\n\nCPU seconds of one parse, %s, "
                "%d core(s), Python %s. \"repeated\": a real output repeated to the size; \"one line\": the same "
                "bytes without line breaks. Above its cap a parser refuses the input at once with an error naming "
                "the size; \"just below the cap\" is the most it ever reads. The last column is the seconds per "
                "MB at the largest size it reads whole over those at the smallest (1.0 is linear).\n\n"
                % (time.strftime("%Y-%m-%d"), os.cpu_count(), sys.version.split()[0]))
        out.write_text(note + table)
    return 1 if any(max(t.values()) > 2.0 for _n, _s, t, _c in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
