# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller cost of the per-node acceptance stages, against a bare ``raw`` fan-out.

    .venv/bin/python bench/controller_cost.py                  # N = 16, 64, 256; 3 repeats; writes
                                                               # bench/results/controller_cost.md/.json
    .venv/bin/python bench/controller_cost.py --quick          # N = 4, 1 repeat, prints only
    .venv/bin/python bench/controller_cost.py --sizes 64,256 --repeat 3,1 --forks 16,50
    .venv/bin/python bench/controller_cost.py --modes bare,all --collection-root /tmp/patched

For each N an inventory of N local hosts (``ansible_connection: local``) is written to a temp dir.
Their ``acceptance_environment.PATH`` starts with a directory of stub tools (``nvidia-smi``,
``dcgmi``, ``ibstat``, ``dmesg``, ``all_reduce_perf``) that print, instantly, outputs captured once
at start from the simulated cluster's fake tools (``sim/bin``, spec ``sim/clusters/clean16.yml``,
node ``gpu001``); the infiniband counters are a copy of that node's fake sysfs tree. Tool time is
then ~0 and what is measured is the controller's cost.

Measured in the same run, for each N and each repeat (the runs are interleaved so that a burst of
load from other work hits all of them alike):

* ``bare``: ``ansible -i INV gpu_nodes -m ansible.builtin.raw -a true``;
* ``all``: ``ansible-playbook playbooks/acceptance.yml -i INV --tags <the six stages>`` (the six
  per-node stages, plus every ``always``-tagged task: the pre tasks and the cluster-wide verdict;
  each stage role validates its arguments once per play, in its own tagged phase);
* ``topology``: the same with ``--tags topology`` (one stage, plus the same ``always`` tasks).

Reported per host: wall ms (wall time / N) and CPU ms (user + system time of ansible and all its
children / N; less sensitive to other work on the machine). Per stage: ``all / 6`` (as the issue
defines it; it carries the fixed costs: start-up, pre tasks, cluster play) and the marginal
``(all - topology) / 5`` (the cost of adding one stage). The ratio is per-stage wall ms/host over the
bare fan-out's wall ms/host, the target being <= 3 at N = 256. Medians of the repeats, with the
min-max spread.

``--transport local,ssh,ssh-plain`` adds the SSH columns: the same inventories, but every host is
reached over real SSH with become (sim/sshnodes.py: one sshd per host on its own loopback address,
an unprivileged login user, sudo), as on a real cluster. ``ssh`` keeps ansible.cfg's pipelining and
Ansible's default ControlPersist (one connection per host, reused by every task); ``ssh-plain``
turns both off (a new SSH connection, key exchange and sudo for every task). Each run gets its own
ControlPath directory and its masters are closed after it, so no run inherits another's
connections. CPU is the controller's (ansible and its ssh clients); the nodes' side (sshd, sudo,
the collector) runs on the same CPUs and shows in the wall time only: sshd's session processes
exit without reaping theirs, so their time cannot be read back from the listeners. With an SSH
transport the results go to controller_cost_ssh.md/.json. Needs root, openssh-server and sudo.

``--collection-root DIR`` measures another copy of the collection (e.g. a patched one under /tmp):
its playbook and, through a temporary ``ansible_collections`` link, its roles and plugins.
Where the time goes and what changing it gains: bench/results/controller_cost.analysis.md.

Runtime on the 2-core development machine with the tree of 2026-11-29 (≈ 3 s CPU per host for the
six stages): N = 16 ≈ 1 min per repeat, 64 ≈ 4–5 min, 256 ≈ 20 min; hence ``--repeat 3,3,1``.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
SIM_SPEC = os.path.join(REPO, "sim", "clusters", "clean16.yml")
SIM_NODE = "gpu001"
STAGES = ("preflight", "topology", "gpu_health", "dcgm", "infiniband", "nccl_single_node")
PROFILE = "hgx_h100_sxm"
SIZES = (16, 64, 256)
QUICK_SIZES = (4,)
TARGET_RATIO = 3.0
TARGET_N = 256
MODES = ("bare", "all", "topology")
TRANSPORTS = ("local", "ssh", "ssh-plain")
TRANSPORT_LABELS = {
    "local": "local connection",
    "ssh": "SSH + sudo, pipelining + ControlPersist",
    "ssh-plain": "SSH + sudo, no pipelining, no ControlPersist",
}


def _defaults(role):
    with open(os.path.join(REPO, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def tool_invocations():
    """(tool, argv) of every tool call the six stages make, with the roles' default arguments."""
    health = _defaults("check_gpu_health")
    nccl = _defaults("check_nccl_single_node")
    dcgm = _defaults("check_dcgm")
    gpus = _profile_gpus()
    return [
        ("nvidia-smi", ["--query-gpu=index,name,pci.bus_id,uuid,driver_version,vbios_version,serial",
                        "--format=csv"]),
        ("nvidia-smi", ["-L"]),
        ("dcgmi", ["-v"]),
        ("ibstat", []),
        ("nvidia-smi", ["topo", "-m"]),
        ("nvidia-smi", ["-q"]),
        ("nvidia-smi", ["--query-gpu=" + ",".join(health["check_gpu_health_query_fields"]),
                        "--format=csv"]),
        ("dmesg", []),
        ("dcgmi", ["diag", "-r", str(dcgm["check_dcgm_level"]), "-j"]),
        ("all_reduce_perf", [str(a) for a in nccl["check_nccl_single_node_args"]] + ["-g", str(gpus)]),
    ]


def _profile_gpus():
    for name in (PROFILE + ".yml", PROFILE + ".yaml"):
        path = os.path.join(REPO, "profiles", name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                data = yaml.safe_load(handle) or {}
            if "gpus_per_node" in data:
                return int(data["gpus_per_node"])
    return 8


def _sh_quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def make_stubs(work, log=print):
    """Capture the fake tools' outputs once; write stub tools that print them and a sysfs tree."""
    outputs = os.path.join(work, "outputs")
    stubs = os.path.join(work, "stubs")
    sim_run = os.path.join(work, "simrun")
    for folder in (outputs, stubs, sim_run):
        os.makedirs(folder, exist_ok=True)
    env = dict(os.environ)
    env.update({
        "GPUCLUSTER_SIM_SPEC": SIM_SPEC,
        "GPUCLUSTER_SIM_NODE": SIM_NODE,
        "GPUCLUSTER_SIM_RUN": sim_run,
        "GPUCLUSTER_SIM_PYTHON": sys.executable,
    })
    cases = {}
    start = time.perf_counter()
    for index, (tool, argv) in enumerate(tool_invocations()):
        proc = subprocess.run([os.path.join(REPO, "sim", "bin", tool)] + argv, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        if proc.returncode != 0 or not proc.stdout:
            raise RuntimeError("fake %s %s: rc=%d, %d bytes of output"
                               % (tool, " ".join(argv), proc.returncode, len(proc.stdout)))
        path = os.path.join(outputs, "%02d-%s.txt" % (index, tool))
        with open(path, "wb") as handle:
            handle.write(proc.stdout)
        cases.setdefault(tool, []).append((" ".join(argv), path))
    for tool, entries in cases.items():
        lines = ["#!/bin/sh", "# Stub %s: prints an output captured from sim/bin/%s (bench/controller_cost.py)."
                 % (tool, tool), 'case "$*" in']
        for args, path in entries:
            lines.append("    %s) exec cat %s ;;" % (_sh_quote(args), _sh_quote(path)))
        lines.append('    *) echo "stub %s: no captured output for: $*" >&2; exit 2 ;;' % tool)
        lines.append("esac")
        stub = os.path.join(stubs, tool)
        with open(stub, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        os.chmod(stub, 0o755)
    # ibstat above (re)wrote the node's fake counter tree: keep a copy, read by grep in the stage.
    sysfs = os.path.join(work, "sysfs", "infiniband")
    shutil.copytree(os.path.join(sim_run, "gpusim", "sys", SIM_NODE, "class", "infiniband"), sysfs)
    shutil.rmtree(sim_run, ignore_errors=True)
    elapsed = time.perf_counter() - start
    log("captured %d tool outputs from the fake tools in %.1f s" % (len(tool_invocations()), elapsed))
    return stubs, sysfs


def host_names(count):
    width = max(3, len(str(count)))
    return ["gpu%0*d" % (width, i) for i in range(1, count + 1)]


def _sshnodes():
    sys.path.insert(0, os.path.join(REPO, "sim"))
    import sshnodes  # pylint: disable=import-outside-toplevel,import-error
    return sshnodes


def write_inventory(path, count, stubs, sysfs, transport="local", ssh_run=None):
    """N hosts in gpu_nodes, with the stub tools first on the collector's PATH.

    transport "local": local connections; "ssh" / "ssh-plain": the sshd of sim/sshnodes.py whose
    run directory is ``ssh_run`` (started for these host names).
    """
    hosts = {name: None for name in host_names(count)}
    inventory = {"all": {
        "vars": {"acceptance_profile": PROFILE},
        "children": {
            "controller": {"hosts": {"localhost": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable}}},
            "gpu_nodes": {
                "vars": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": sys.executable,
                    "acceptance_environment": {"PATH": stubs + ":/usr/local/bin:/usr/bin:/bin"},
                    "check_nccl_single_node_binary": "all_reduce_perf",
                    "check_preflight_required_tools": ["nvidia-smi", "dcgmi", "ibstat", "all_reduce_perf"],
                    "check_infiniband_sysfs_root": sysfs,
                    "check_infiniband_counter_interval": 0,
                },
                "hosts": hosts,
            },
        },
    }}
    if transport != "local":
        sshnodes = _sshnodes()
        group = inventory["all"]["children"]["gpu_nodes"]
        group["vars"].update(sshnodes.group_vars(ssh_run, python=sys.executable))
        addresses = sshnodes.addresses(ssh_run, list(hosts))
        group["hosts"] = {name: {"ansible_host": addresses[name]} for name in hosts}
        if transport == "ssh":
            group["vars"].update({"ansible_pipelining": True,  # ansible.cfg's, and Ansible's default ssh_args
                                  "ansible_ssh_args": "-C -o ControlMaster=auto -o ControlPersist=60s"})
        else:
            group["vars"].update({"ansible_pipelining": False,
                                  "ansible_ssh_args": "-o ControlMaster=no -o ControlPath=none"})
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(inventory, handle, default_flow_style=False, sort_keys=False)
    return path


def _collections_path(work, root):
    """ANSIBLE_COLLECTIONS_PATH for the collection at root (the repo's .build link for the repo)."""
    if os.path.realpath(root) == os.path.realpath(REPO):
        built = os.path.join(REPO, ".build", "collections")
        link = os.path.join(built, "ansible_collections", "gpucluster", "acceptance")
        if os.path.realpath(link) == os.path.realpath(REPO):
            return built
    base = os.path.join(work, "collections")
    link = os.path.join(base, "ansible_collections", "gpucluster", "acceptance")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.realpath(root), link)
    return base


def _bin(name):
    """An ansible CLI next to this interpreter (the venv's), else on PATH."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


def timed(cmd, env, cwd):
    """(wall s, CPU s of the command and all its children, rc, output tail)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode, proc.stdout.decode("utf-8", "replace")[-3000:]


def _end_sessions(nodes, control_dir, deadline_s=30):
    """Close this run's ControlPersist masters and wait until the nodes' sessions have ended."""
    if control_dir and os.path.isdir(control_dir):
        for name in os.listdir(control_dir):
            subprocess.run(["ssh", "-O", "exit", "-o", "ControlPath=" + os.path.join(control_dir, name), "node"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10, check=False)
    deadline = time.monotonic() + deadline_s
    listeners = set(p for p in nodes.pids().values() if p)
    while time.monotonic() < deadline:
        if not [p for p in nodes.processes() if p not in listeners]:
            return
        time.sleep(0.05)


def run_mode(mode, inventory, env, root):
    playbook = os.path.join(root, "playbooks", "acceptance.yml")
    if mode == "bare":
        cmd = [_bin("ansible"), "-i", inventory, "gpu_nodes", "-m", "ansible.builtin.raw", "-a", "true"]
    elif mode == "all":
        # The six stages by tag: plays added later (cluster-wide burn-ins) stay out of the figure.
        cmd = [_bin("ansible-playbook"), playbook, "-i", inventory, "--tags", ",".join(STAGES)]
    elif mode == "topology":
        cmd = [_bin("ansible-playbook"), playbook, "-i", inventory, "--tags", "topology"]
    else:
        raise ValueError(mode)
    return timed(cmd, env, root)


def _stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": values}


def run(sizes=SIZES, repeat=3, forks=(16,), modes=MODES, root=REPO, log=print, keep=False,
        transports=("local",)):
    """Measure every (N, forks, transport, mode) `repeat` times; returns the result dict (module doc).

    repeat: one count for every size, or a sequence with one count per size.
    """
    repeats = list(repeat) if isinstance(repeat, (list, tuple)) else [repeat] * len(sizes)
    if len(repeats) != len(sizes) or min(repeats) < 1:
        raise ValueError("repeat: one count >= 1, or one per size (%d sizes), got %r" % (len(sizes), repeat))
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="gpucluster-controller-cost-")
    cells = []
    failures = []
    try:
        stubs, sysfs = make_stubs(work, log=log)
        base_env = dict(os.environ)
        base_env.update({
            "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": _collections_path(work, root),
            "ANSIBLE_RETRY_FILES_ENABLED": "false",
            "ANSIBLE_NOCOLOR": "1",
        })
        for count, count_repeat in zip(sizes, repeats):
            nodes = None
            if any(t != "local" for t in transports):
                nodes = _sshnodes().SSHNodes(os.path.join(work, "ssh-%d" % count), host_names(count))
                begun = time.perf_counter()
                nodes.start()
                log("N=%-4d %d sshd started in %.2f s" % (count, count, time.perf_counter() - begun))
            try:
                inventories = dict((t, write_inventory(os.path.join(work, "hosts-%d-%s.yml" % (count, t)), count,
                                                       stubs, sysfs, t, nodes and nodes.run_dir))
                                   for t in transports)
                for nforks in forks:
                    cells += _measure(count, count_repeat, nforks, modes, transports, inventories, nodes,
                                      dict(base_env, ANSIBLE_FORKS=str(nforks)), work, root, failures, log)
            finally:
                if nodes is not None:
                    nodes.stop()
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    result = {
        "benchmark": "controller_cost",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "collection_root": os.path.realpath(root),
        "sizes": list(sizes), "repeat": repeats, "forks": list(forks), "modes": list(modes),
        "transports": list(transports),
        "stages": list(STAGES),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "ansible_core": _ansible_version(), "loadavg_at_end": list(os.getloadavg())},
        "cells": cells,
        "failures": failures,
        "target": {"ratio_max": TARGET_RATIO, "n": TARGET_N},
        "runtime_s": round(time.perf_counter() - started, 1),
    }
    result["target"].update(_target(cells))
    if keep:
        result["work_dir"] = work
    return result


def _measure(count, count_repeat, nforks, modes, transports, inventories, nodes, env, work, root, failures, log):
    """The cells of one (N, forks): every transport and mode, `count_repeat` times, interleaved."""
    samples = dict((t, dict((m, {"wall": [], "cpu": []}) for m in modes)) for t in transports)
    for rep in range(count_repeat):
        for transport in transports:
            for mode in modes:
                tag = "%d-%d-%s-%s-%d" % (count, nforks, transport, mode, rep)
                env["GPUCLUSTER_ARTIFACTS_DIR"] = os.path.join(work, "artifacts", tag)
                control_dir = None
                if transport != "local":
                    # A ControlPath directory per run: no run reuses another's connections.
                    control_dir = os.path.join(work, "cp", tag)
                    os.makedirs(control_dir)
                    env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = control_dir
                wall, cpu, rc, tail = run_mode(mode, inventories[transport], env, root)
                if transport != "local":
                    _end_sessions(nodes, control_dir)
                if rc != 0:
                    failures.append({"n": count, "forks": nforks, "transport": transport, "mode": mode,
                                     "repeat": rep, "rc": rc, "output_tail": tail})
                    log("WARNING: N=%d forks=%d %s %s exited %d:\n%s" % (count, nforks, transport, mode, rc, tail))
                samples[transport][mode]["wall"].append(wall)
                samples[transport][mode]["cpu"].append(cpu)
                log("N=%-4d forks=%-3d %-9s %-9s repeat %d: %7.2f s wall, %7.2f s CPU, %6.1f ms/host"
                    % (count, nforks, transport, mode, rep + 1, wall, cpu, 1000.0 * wall / count))
    return [_cell(count, nforks, samples[t], t) for t in transports]


def _ansible_version():
    try:
        from ansible.release import __version__  # pylint: disable=import-outside-toplevel
        return __version__
    except ImportError:  # pragma: no cover - the bench runs in the project venv
        return "unknown"


def _cell(count, nforks, samples, transport="local"):
    """Per-host figures (ms) of one (N, forks): medians and spread of each mode and the derived ones."""
    cell = {"n": count, "forks": nforks, "transport": transport, "modes": {}}
    per_host = {}
    for mode, data in samples.items():
        wall = [1000.0 * w / count for w in data["wall"]]
        cpu = [1000.0 * c / count for c in data["cpu"]]
        per_host[mode] = (wall, cpu)
        cell["modes"][mode] = {"wall_s": _stats(data["wall"]), "cpu_s": _stats(data["cpu"]),
                               "wall_ms_per_host": _stats(wall), "cpu_ms_per_host": _stats(cpu)}
    derived = {}
    if "all" in per_host:
        # Per repeat, so the spread is that of the derived figure.
        derived["stage_wall_ms_per_host"] = _stats([w / len(STAGES) for w in per_host["all"][0]])
        derived["stage_cpu_ms_per_host"] = _stats([c / len(STAGES) for c in per_host["all"][1]])
        if "topology" in per_host:
            derived["stage_marginal_wall_ms_per_host"] = _stats(
                [(a - t) / (len(STAGES) - 1) for a, t in zip(per_host["all"][0], per_host["topology"][0])])
            derived["stage_marginal_cpu_ms_per_host"] = _stats(
                [(a - t) / (len(STAGES) - 1) for a, t in zip(per_host["all"][1], per_host["topology"][1])])
        if "bare" in per_host:
            derived["ratio_stage_to_bare"] = _stats(
                [(a / len(STAGES)) / b for a, b in zip(per_host["all"][0], per_host["bare"][0])])
            derived["ratio_stage_to_bare_cpu"] = _stats(
                [(a / len(STAGES)) / b for a, b in zip(per_host["all"][1], per_host["bare"][1])])
    if "topology" in per_host and "bare" in per_host:
        derived["ratio_topology_to_bare"] = _stats(
            [t / b for t, b in zip(per_host["topology"][0], per_host["bare"][0])])
    cell["derived"] = derived
    return cell


def _target(cells):
    """The issue's target: per-stage wall ms/host <= 3x the bare fan-out's at N = 256 (forks 16)."""
    for cell in cells:
        if cell.get("transport", "local") == "local" and cell["n"] == TARGET_N and cell["forks"] == 16 \
                and "ratio_stage_to_bare" in cell["derived"]:
            ratio = cell["derived"]["ratio_stage_to_bare"]["median"]
            return {"ratio": round(ratio, 2), "met": ratio <= TARGET_RATIO}
    return {"ratio": None, "met": None}


def _fmt(stats, digits=1):
    if stats is None:
        return "-"
    text = "%.*f" % (digits, stats["median"])
    if len(stats["values"]) > 1:
        text += " (%.*f–%.*f)" % (digits, stats["min"], digits, stats["max"])
    return text


def render_table(result):
    """The Markdown results table (also printed)."""
    lines = [
        "| N | forks | bare raw ms/host | all six stages ms/host | per stage (all/6) ms/host "
        "| marginal stage ms/host | `--tags topology` ms/host | ratio per stage / bare | "
        "ratio (CPU) | CPU ms/host bare / all / topology |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for cell in result["cells"]:
        modes, derived = cell["modes"], cell["derived"]
        wall = dict((name, modes[name]["wall_ms_per_host"]) for name in modes)
        cpu = " / ".join("%.1f" % modes[m]["cpu_ms_per_host"]["median"] if m in modes else "-"
                         for m in ("bare", "all", "topology"))
        lines.append("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            cell["n"], cell["forks"], _fmt(wall.get("bare")), _fmt(wall.get("all")),
            _fmt(derived.get("stage_wall_ms_per_host")), _fmt(derived.get("stage_marginal_wall_ms_per_host")),
            _fmt(wall.get("topology")), _fmt(derived.get("ratio_stage_to_bare"), 2),
            _fmt(derived.get("ratio_stage_to_bare_cpu"), 2), cpu))
    return "\n".join(lines)


def render_ssh_table(result):
    """The transports side by side: per host, wall and the controller's CPU."""
    lines = [
        "| N | forks | transport | bare raw ms/host | all six stages ms/host | per stage (all/6) ms/host "
        "| per stage vs local | controller CPU ms/host bare / all |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    local = dict(((c["n"], c["forks"]), c) for c in result["cells"] if c.get("transport", "local") == "local")
    for cell in result["cells"]:
        modes, derived = cell["modes"], cell["derived"]
        stage = derived.get("stage_wall_ms_per_host")
        base = local.get((cell["n"], cell["forks"]), {}).get("derived", {}).get("stage_wall_ms_per_host")
        versus = "%.2f×" % (stage["median"] / base["median"]) if stage and base else "-"

        def pair(key, modes=modes):
            return " / ".join("%.1f" % modes[m][key]["median"] if key in modes.get(m, {}) else "-"
                              for m in ("bare", "all"))
        lines.append("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
            cell["n"], cell["forks"], TRANSPORT_LABELS.get(cell.get("transport", "local")),
            _fmt(modes.get("bare", {}).get("wall_ms_per_host")), _fmt(modes.get("all", {}).get("wall_ms_per_host")),
            _fmt(stage), versus, pair("cpu_ms_per_host")))
    return "\n".join(lines)


def render_ssh_markdown(result):
    text = [
        "# Controller cost of the per-node stages over SSH",
        "",
        "Generated by `bench/controller_cost.py --transport %s` on %s (ansible-core %s, Python %s, %s CPUs; "
        "load average at the end %s). Repeats per size: %s, interleaved (every transport and mode in turn); "
        "medians with the min–max spread in parentheses. The machine is shared with other work, so wall "
        "times are noisy; the CPU columns are the steadier figures."
        % (",".join(result["transports"]), result["date"], result["machine"]["ansible_core"],
           result["machine"]["python"], result["machine"]["cpus"],
           ", ".join("%.1f" % x for x in result["machine"]["loadavg_at_end"]),
           ", ".join("N=%d: %d" % (n, r) for n, r in zip(result["sizes"], result["repeat"]))),
        "",
        "The tools are stubs printing outputs captured from the simulated cluster (tool time ≈ 0), as in "
        "[controller_cost.md](controller_cost.md). *local*: `ansible_connection: local`. *SSH*: every host "
        "has its own real sshd on its own loopback address (sim/sshnodes.py); Ansible logs in as an "
        "unprivileged user and becomes root with sudo (`ansible_become: true`), as on a real cluster; "
        "*pipelining + ControlPersist* are ansible.cfg's and Ansible's defaults (one connection per host "
        "for the whole run), *no pipelining, no ControlPersist* makes a new connection (key exchange, "
        "login, sudo) for every task. The per-node stages run their collector like `raw` (no module), so "
        "pipelining changes nothing in them: the difference is ControlPersist's. The controller and the "
        "nodes share this machine's %s CPUs, so the "
        "nodes' work (sshd, sudo, the collector) also slows the controller down here, as it would not on a "
        "real cluster. *bare* = `ansible -m ansible.builtin.raw -a true`; *all* = "
        "`playbooks/acceptance.yml --tags` the six per-node stages; *per stage* = all / 6; *per stage vs "
        "local* = that over the local connection's per stage at the same N. *controller CPU*: ansible and "
        "all its children (the ssh clients too), not the nodes' side (sshd, sudo, the collector: sshd's "
        "session processes do not reap theirs, so that time cannot be read back), which shows in the "
        "wall times only."
        % result["machine"]["cpus"],
        "",
        render_ssh_table(result),
        "",
        "Bench runtime: %.0f s." % result["runtime_s"],
    ]
    if result["failures"]:
        text += ["", "**%d run(s) exited non-zero** (see the JSON for their output)." % len(result["failures"])]
    return "\n".join(text) + "\n"


def render_markdown(result):
    target = result["target"]
    verdict = ("not measured" if target["ratio"] is None else
               "%.2f× → %s" % (target["ratio"], "met" if target["met"] else "NOT met"))
    text = [
        "# Controller cost of the per-node stages",
        "",
        "Generated by `bench/controller_cost.py` on %s (ansible-core %s, Python %s, %s CPUs; "
        "load average at the end %s). Repeats per size: %s, interleaved; medians with the min–max "
        "spread in parentheses. The machine is shared with other work, so wall times are noisy: "
        "the CPU ms/host columns (ansible and all its children) are the steadier figure."
        % (result["date"], result["machine"]["ansible_core"], result["machine"]["python"],
           result["machine"]["cpus"], ", ".join("%.1f" % x for x in result["machine"]["loadavg_at_end"]),
           ", ".join("N=%d: %d" % (n, r) for n, r in zip(result["sizes"], result["repeat"]))),
        "",
        "Hosts are local (`ansible_connection: local`); the tools are stubs printing outputs captured "
        "from the simulated cluster (tool time ≈ 0). *bare* = `ansible -m ansible.builtin.raw -a true`; "
        "*all* = `playbooks/acceptance.yml --tags` the six stages (plus every `always` task: pre tasks "
        "and verdict; each stage role validates its arguments once per play); "
        "*per stage* = all / 6; *marginal stage* = (all − topology) / 5; *topology* = `--tags topology` "
        "(one stage plus the same `always` tasks). Ratio = per-stage wall ms/host / bare wall ms/host; "
        "ratio (CPU) = the same with CPU ms/host.",
        "",
        render_table(result),
        "",
        "Target (issue): per-node stages ≤ %.0f× the bare raw fan-out per host at N = %d: %s."
        % (target["ratio_max"], target["n"], verdict),
        "",
        "Bench runtime: %.0f s." % result["runtime_s"],
        "",
        "Where the time goes and what changing it gains: [controller_cost.analysis.md](controller_cost.analysis.md).",
    ]
    if result["failures"]:
        text += ["", "**%d run(s) exited non-zero** (see the JSON for their output)." % len(result["failures"])]
    return "\n".join(text) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--sizes", help="comma-separated host counts (default 16,64,256; quick: 4)")
    parser.add_argument("--repeat", help="runs per cell: one count, or one per size (e.g. 3,3,1); "
                                         "default 3 (quick: 1)")
    parser.add_argument("--forks", default="16", help="comma-separated fork counts (default 16, ansible.cfg's)")
    parser.add_argument("--quick", action="store_true", help="smoke run: N=4, 1 repeat, prints only")
    parser.add_argument("--out", help="write controller_cost.md/.json here "
                                      "(default bench/results; quick mode writes only with --out)")
    parser.add_argument("--collection-root", default=REPO,
                        help="measure the collection (and its playbook) at this path instead of the repo")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated runs per cell: bare, all, topology (default all three)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (inventories, stubs, artifacts)")
    parser.add_argument("--transport", default="local",
                        help="comma-separated: local, ssh (pipelining + ControlPersist), ssh-plain (neither); "
                             "default local. With ssh: writes controller_cost_ssh.md/.json")
    args = parser.parse_args(argv)
    transports = tuple(t for t in args.transport.split(",") if t)
    if not transports or set(transports) - set(TRANSPORTS):
        parser.error("--transport: one or more of %s" % ", ".join(TRANSPORTS))
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    repeat = [int(r) for r in args.repeat.split(",")] if args.repeat else [1 if args.quick else 3]
    if len(repeat) == 1:
        repeat = repeat * len(sizes)
    if len(repeat) != len(sizes) or min(repeat) < 1:
        parser.error("--repeat: one count >= 1, or one per size")
    forks = tuple(int(f) for f in args.forks.split(","))

    def log(message):
        print(message, file=sys.stderr, flush=True)

    # SIGTERM unwinds like Ctrl-C: the running ansible is killed and the temp dir removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    modes = tuple(m for m in args.modes.split(",") if m)
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error("unknown mode(s): %s" % ", ".join(sorted(unknown)))
    result = run(sizes=sizes, repeat=repeat, forks=forks, modes=modes, root=args.collection_root, log=log,
                 keep=args.keep, transports=transports)
    ssh = transports != ("local",)
    out = args.out or (None if args.quick else RESULTS)
    if out:
        name = "controller_cost_ssh" if ssh else "controller_cost"
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
            handle.write("\n")
        with open(os.path.join(out, name + ".md"), "w", encoding="utf-8") as handle:
            handle.write(render_ssh_markdown(result) if ssh else render_markdown(result))
    print(render_ssh_table(result) if ssh else render_table(result))
    target = result["target"]
    if target["ratio"] is not None:
        print("ratio per stage / bare at N=%d: %.2f (target <= %.0f: %s)"
              % (TARGET_N, target["ratio"], TARGET_RATIO, "met" if target["met"] else "NOT met"))
    failed = "; %d run(s) failed" % len(result["failures"]) if result["failures"] else ""
    print("runtime %.0f s%s" % (result["runtime_s"], failed))
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
