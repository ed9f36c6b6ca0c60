# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse + judge + report at scale: the controller's own work for N simulated nodes, no Ansible.

    .venv/bin/python bench/results_scale.py                        # N = 256, 1024, 4096; writes
                                                                   # bench/results/results_scale.md/.json
    .venv/bin/python bench/results_scale.py --sizes 64 --no-write  # a quick look
    .venv/bin/python bench/results_scale.py --template artifacts/<run-id>

What is timed is exactly what the collection does on the controller for every node and stage,
with the same functions: ``_stages.judge_stage`` (split, parse, judge, fold) for the six per-node
stages, ``_cluster.judge_cluster`` (peers, uniformity, GPU identity), the fabric stage
(``_fabric.fabric_stage``: the localisation planner, each group's output parsed and judged), the
workload judge (``_workload``) and the results contract (``_results.build_document``, ``validate``,
``dumps``) with its renderers (junit.xml, report.html, metrics.prom). Ansible's own per-task cost is
measured by bench/controller_cost.py.

Inputs are real outputs of the simulated cluster's fake tools: a template artifact directory
(by default one made at start by an acceptance run of sim/clusters/demo.yml on real Slurm, ~1 min),
whose nodes' raw outputs are copied to N nodes with the node names rewritten. Node i copies a
healthy template node, except every 64th node, which copies one of the template's faulty nodes in
turn (so ~1.6 % of nodes fail, as in a real acceptance). The fabric stage's group outputs are the
template's pair output rebuilt for each group's nodes, with the bandwidth columns scaled by the
slowest member (every 64th node is slow, factor 0.5); the workload log has 8 ranks per node.

Reported per N: seconds per phase, microseconds per node, results.json size, peak RSS; linear in N
means the per-node figures stay flat.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

from ansible_collections.gpucluster.acceptance.plugins.module_utils import (  # noqa: E402
    _cluster, _fabric, _fabric_runs, _run_state, _stages, _workload)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import (  # noqa: E402
    _html_report, _profiles, _prometheus, _report, _results)

STAGE_ORDER = ("preflight", "topology", "gpu_health", "dcgm", "infiniband", "nccl_single_node")
FAULT_EVERY = 64
RANKS_PER_NODE = 8
_ROW = re.compile(r"^(\s*\d+\s+\d+\s+\S+\s+\S+\s+-?\d+)((?:\s+\S+){8,})\s*$")


def make_template(work):
    """An artifact directory of a real acceptance run of the demo cluster (real Slurm, fake tools)."""
    import yaml
    from harness import SimRun
    with open(os.path.join(REPO, "sim", "clusters", "demo.yml")) as handle:
        data = yaml.safe_load(handle)
    data["name"] = "benchtpl"
    with SimRun(data, work) as sim:
        run = sim.acceptance()
    return str(run.dir), data


def load_template(directory):
    results = json.load(open(os.path.join(directory, "results.json")))
    nodes = {}
    for node, tools in sorted(results["raw"].items()):
        if node.startswith("_"):
            continue
        # The raw index may leave a path out where it is the convention: one helper knows where it is.
        nodes[node] = dict((tool, dict(entry, output=open(os.path.join(directory, _results.raw_path(node, tool, entry)),
                                                          errors="replace").read()))
                           for tool, entry in tools.items())
    bad = sorted(n for n in results["verdict"]["failed_nodes"] if n in nodes)
    good = sorted(n for n in nodes if n not in bad)
    # a pair of healthy nodes: the fastest round-1 pair of the template run
    fabric = results.get("fabric") or {}
    pairs = [g for r in fabric.get("rounds") or [] for g in r["groups"]
             if len(g["nodes"]) == 2 and isinstance(g.get("busbw"), (int, float))]
    pair = max(pairs, key=lambda g: g["busbw"])["raw"]
    pair_text = open(os.path.join(directory, "raw", "_fabric", pair + ".txt")).read().split("\n", 1)[1]
    # the launcher preflight (srun --mpi=list, a 2-rank launch) as the template run's tools printed it
    with open(os.path.join(directory, "raw", "_fabric", "preflight-mpi-list.txt")) as handle:
        mpi_list = handle.read().split("\n", 1)[1]
    with open(os.path.join(directory, "raw", "_fabric", "preflight-2-ranks.txt")) as handle:
        command, launch = handle.read().split("\n", 1)
    words = command.split()
    pair_text = {"pair": pair_text, "mpi-list": mpi_list, "launch": launch,
                 "launch-nodes": next(w for w in words if w.startswith("--nodelist=")).split("=", 1)[1].split(","), "launch-args": words[words.index("-b"):]}
    return nodes, good, bad, pair_text, results


def node_names(count):
    width = max(3, len(str(count)))
    return ["gpu%0*d" % (width, i + 1) for i in range(count)]


def rename(text, old, new):
    return re.sub(r"\b%s\b" % re.escape(old), new, text)


def stage_options(profile):
    """The options the stage roles hand their judges (roles/check_*/tasks/main.yml defaults)."""
    return {"preflight": {"required_tools": ["nvidia-smi", "dcgmi", "ibstat"], "expected_driver": ""},
            "dcgm": {"level": 3}}


def scale_rows(text, factor):
    out = []
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            cells = match.group(2).split()
            # time algbw busbw #wrong (out-of-place), the same in-place
            for i in (0, 4):
                cells[i] = "%.2f" % (float(cells[i]) / factor)
                cells[i + 1] = "%.2f" % (float(cells[i + 1]) * factor)
                cells[i + 2] = "%.2f" % (float(cells[i + 2]) * factor)
            line = match.group(1) + "".join(" %8s" % c for c in cells)
        elif line.startswith("# Avg bus bandwidth"):
            value = float(line.split(":")[1])
            line = "# Avg bus bandwidth    : %.3f " % (value * factor)
        out.append(line)
    return "\n".join(out) + "\n"


def group_output(pair_text, group, factor):
    """The template pair run's output for another group: its rank lines, scaled bandwidth."""
    head, _sep, rest = pair_text.partition("# Using devices\n")
    ranks, _sep, table = rest.partition("#\n#  ")
    template = [l for l in ranks.splitlines() if l.startswith("#  Rank")][:8]
    lines = []
    for n, node in enumerate(group):
        for g, line in enumerate(template):
            line = re.sub(r"Rank\s+\d+", "Rank %2d" % (n * 8 + g), line)
            line = re.sub(r"on\s+\S+ device", "on %10s device" % node, line)
            lines.append(line)
    return head + "# Using devices\n" + "\n".join(lines) + "\n#\n#  " + scale_rows(table, factor)


def workload_log(template_lines, nodes):
    """8 ranks per node, each with the template rank's steps."""
    world = len(nodes) * RANKS_PER_NODE
    out = []
    for n, node in enumerate(nodes):
        for line in template_lines:
            if " rank=" not in line:
                out.append(re.sub(r"node=\S+", "node=%s" % node, line))
                continue
            for local in range(RANKS_PER_NODE):
                text = re.sub(r"\brank=\d+", "rank=%d" % (n * RANKS_PER_NODE + local), line)
                text = re.sub(r"\blocal_rank=\d+", "local_rank=%d" % local, text)
                text = re.sub(r"\bgpu=\d+", "gpu=%d" % local, text)
                text = re.sub(r"\bworld=\d+", "world=%d" % world, text)
                out.append(re.sub(r"node=\S+", "node=%s" % node, text))
    return "\n".join(out)


def bench_one(count, template, profile):
    nodes_tpl, good, bad, pair_text, tpl_results = template
    names = node_names(count)
    source = {}
    for i, name in enumerate(names):
        source[name] = bad[(i // FAULT_EVERY) % len(bad)] if bad and i % FAULT_EVERY == FAULT_EVERY - 1 \
            else good[i % len(good)]
    slow = set(n for i, n in enumerate(names) if i % FAULT_EVERY == FAULT_EVERY // 2)
    options = stage_options(profile)
    times = {}
    run_id = "bench-%d" % count

    # -- per-node stages: split, parse, judge, fold ------------------------------------
    # As on a cluster, a node's outputs exist while its stage is judged: the callback writes them
    # under raw/ and the node's fact keeps their index (_run_state.without_outputs). Making each
    # node's copy of the template is not timed.
    checks, states, raw = [], {}, {}
    elapsed = 0.0
    for name in names:
        tpl = source[name]
        records = dict((tool, {"output": rename(r["output"], tpl, name), "rc": r.get("rc", 0),
                               "seconds": r.get("seconds"), "complete": r.get("complete", True)})
                       for tool, r in nodes_tpl[tpl].items())
        start = time.perf_counter()
        state = {}
        for stage in STAGE_ORDER:
            tools = _stages.STAGES[stage][0]
            collected = {"tools": dict((t, records[t]) for t in tools if t in records), "errors": []}
            state = _stages.judge_stage(state, stage, collected, profile, options.get(stage, {}), node=name,
                                        run_id=run_id)
            state, _outputs = _run_state.without_outputs(state)
            checks.extend(state["last"]["checks"])
        states[name] = state
        raw[name] = dict((tool, {"path": "raw/%s/%s.txt" % (name, tool), "rc": r["rc"], "seconds": r["seconds"],
                                 "complete": r["complete"]}) for tool, r in records.items() if tool != "workload")
        elapsed += time.perf_counter() - start
    times["per_node_stages"] = elapsed

    # -- cluster-wide checks -------------------------------------------------------------
    start = time.perf_counter()
    for result in _cluster.judge_cluster(states, profile):
        checks.extend(result["checks"])
    times["cluster"] = time.perf_counter() - start

    # -- fabric: the planner and every group's output parsed and judged ------------------
    passed = _run_state.passed_nodes(states, names)
    per_leaf = max(1, count // 8)
    topology = dict((n, {"leaf": "leaf%02d" % (i // per_leaf + 1)}) for i, n in enumerate(names))

    def fake_run(argv, timeout, env=None, guard=None):
        if "--mpi=list" in argv:
            return {"output": pair_text["mpi-list"], "rc": 0, "seconds": 0.1, "timed_out": False, "error": None}
        group = argv[1].split("=", 1)[1].split(",")
        if list(argv[-len(pair_text["launch-args"]):]) == pair_text["launch-args"]:  # the 2-rank launch
            text = pair_text["launch"]
            for old, new in zip(pair_text["launch-nodes"], group):
                text = rename(text, old, new)
            return {"output": text, "rc": 0, "seconds": 0.5, "timed_out": False, "error": None}
        factor = 0.5 if slow.intersection(group) else 1.0
        return {"output": group_output(pair_text["pair"], group, factor), "rc": 0, "seconds": 12.0, "timed_out": False,
                "error": None}
    opts = {"binary": "all_reduce_perf", "args": ["-b", "8M", "-e", "8G", "-f", "2"], "launcher": "srun",
            "launcher_args": [], "mpi": "", "tasks_per_node": 1, "gpus_per_process": 8, "gpus_per_node": 8,
            "gpus_per_node_flag": False, "timeout": 900, "concurrency": 64, "mode": "adaptive", "max_rounds": None,
            "seed": 0, "floor": 300.0, "full_allocation": True, "localize": {}, "max_busbw": None}
    real_run, _fabric_runs.run_one = _fabric_runs.run_one, fake_run
    try:
        start = time.perf_counter()
        fabric = _fabric.fabric_stage(passed, topology, opts)
        times["fabric"] = time.perf_counter() - start
    finally:
        _fabric_runs.run_one = real_run
    checks.extend(fabric["checks"])
    broken = [c for c in fabric["checks"] if c["status"] == "error"]
    if broken or not fabric["document"].get("rounds"):  # a bench of a stage that did not run measures nothing
        raise SystemExit("the bench's fabric stage did not run its rounds: %s"
                         % (broken[0]["message"] if broken else "no round"))
    raw["_fabric"] = dict((key, {"path": "raw/_fabric/%s.txt" % key, "rc": r["rc"], "seconds": r["seconds"],
                                 "complete": r["complete"]}) for key, r in fabric["raw"].items())

    # -- workload: one log of 8 ranks per node, judged once ------------------------------
    tpl_lines = nodes_tpl[good[0]].get("workload", {}).get("output", "").splitlines()
    tpl_lines = [rename(l, good[0], "NODE") for l in tpl_lines]
    log = workload_log(tpl_lines, names)
    start = time.perf_counter()
    parsed = _workload.parse_workload_log(log)
    if any("not parsed" in e for e in parsed.get("errors") or []):  # a bench of a refused log measures nothing
        raise SystemExit("the bench's workload log was not parsed: %s" % parsed["errors"][0])
    judged = _workload.judge_workload(parsed, count * RANKS_PER_NODE,
                                      {"nodes": names, "ranks_per_node": RANKS_PER_NODE, "rc": 0})
    for check in judged:
        check["stage"] = "workload"
    checks.extend(judged)
    times["workload"] = time.perf_counter() - start

    # -- the results contract and its renderers -------------------------------------------
    run = {"id": run_id, "playbook": "acceptance.yml", "started": datetime.datetime.now().isoformat(),
           "finished": datetime.datetime.now().isoformat(), "profile": profile.get("name")}
    start = time.perf_counter()
    document = _results.build_document(run, checks, names, raw, {"fabric": fabric["document"]})
    times["build"] = time.perf_counter() - start
    start = time.perf_counter()
    problems = _results.validate(document)
    times["validate"] = time.perf_counter() - start
    if problems:
        raise SystemExit("the bench's document is not valid: %s" % problems[:5])
    start = time.perf_counter()
    text = _results.dumps(document)
    times["dumps"] = time.perf_counter() - start
    start = time.perf_counter()
    junit = _report.junit_xml(document)
    times["junit"] = time.perf_counter() - start
    start = time.perf_counter()
    html = _html_report.render_html(document, None)
    times["html"] = time.perf_counter() - start
    start = time.perf_counter()
    prom = _prometheus.render_textfile(document)
    times["prometheus"] = time.perf_counter() - start
    total = sum(times.values())
    return {"nodes": count, "checks": len(document["checks"]), "failed_nodes": document["verdict"]["nodes_failed"],
            "pinned": document["fabric"]["pinned"]["nodes"][:5], "fabric_rounds": len(document["fabric"]["rounds"]),
            "seconds": dict((k, round(v, 3)) for k, v in times.items()), "total_seconds": round(total, 2),
            "us_per_node": round(total / count * 1e6), "results_json_mb": round(len(text.encode()) / 1e6, 2),
            "junit_mb": round(len(junit.encode()) / 1e6, 2), "report_html_mb": round(len(html.encode()) / 1e6, 2),
            "metrics_prom_mb": round(len(prom.encode()) / 1e6, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)}


def markdown(rows, meta):
    lines = ["# Parse + judge + report at scale (bench/results_scale.py)", "",
             "%s; Python %s; template %s." % (meta["machine"], meta["python"], meta["template"]), "",
             "| N nodes | checks | total s | µs/node | per-node stages s | fabric s | workload s | "
             "document + validate + dumps s | junit + html + prom s | results.json MB | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["seconds"]
        lines.append("| %d | %d | %.1f | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d |" % (
            r["nodes"], r["checks"], r["total_seconds"], r["us_per_node"], s["per_node_stages"], s["fabric"],
            s["workload"], s["build"] + s["validate"] + s["dumps"], s["junit"] + s["html"] + s["prometheus"],
            r["results_json_mb"], r["peak_rss_mb"]))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="256,1024,4096")
    parser.add_argument("--template", help="an acceptance artifact directory to copy outputs from")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="gcbench-")
    try:
        template_dir = args.template
        if not template_dir:
            template_dir, _spec = make_template(work)
        template = load_template(template_dir)
        profile = _profiles.load_profile(template[4]["run"].get("profile") or "hgx_h100_sxm")
        rows = []
        for count in [int(s) for s in args.sizes.split(",") if s.strip()]:
            row = bench_one(count, template, profile)
            rows.append(row)
            print(json.dumps(row), flush=True)
        meta = {"machine": "%s, %d CPUs" % (platform.machine(), os.cpu_count() or 0),
                "python": platform.python_version(),
                "template": "a real acceptance run of sim/clusters/demo.yml" if not args.template else args.template,
                "date": datetime.date.today().isoformat()}
        if not args.no_write:
            out = os.path.join(REPO, "bench", "results")
            with open(os.path.join(out, "results_scale.json"), "w") as handle:
                json.dump({"meta": meta, "rows": rows}, handle, indent=1, sort_keys=True)
            with open(os.path.join(out, "results_scale.md"), "w") as handle:
                handle.write(markdown(rows, meta))
        print(markdown(rows, meta))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
