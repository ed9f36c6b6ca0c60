"""A run killed outright: its directory says it is incomplete, keeps what it collected, and no tool
is left running on any node."""
import json
import os
import signal

import pytest

from harness import SimRun, playbook_started, run_dirs, spec, validated_results, wait_for

pytestmark = pytest.mark.integration


def _processes_of(run_dir, node=None):
    """'pid cmdline' of live processes started for this simulated cluster (its spec in their
    environment), or only those the collector started for NODE."""
    marker = str(run_dir).encode()
    node_marker = b"\0GPUCLUSTER_SIM_NODE=%s\0" % node.encode() if node else b""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as handle:
                environ = handle.read()
            with open("/proc/%s/stat" % pid) as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in environ and node_marker in b"\0" + environ + b"\0" and state not in ("Z", "X") and "slurm" not in argv.split(" ")[0]:
            found.append("%s %s" % (pid, argv.strip()))
    return found


def _workers_of(inventory):
    """ansible-playbook processes (the killed one's forked workers) still running this inventory."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and any(a.endswith(b"ansible-playbook") for a in argv) \
                and str(inventory).encode() in b" ".join(argv):
            found.append(pid)
    return found


def _hung_tool(run_dir):
    """gpu002's fake dcgmi diag process itself (not the shell or collector about to start it, and
    not another node's, which ends on its own: seeing one of those, the run was killed while gpu002
    was still in an earlier stage when the machine was loaded)."""
    return [p for p in _processes_of(run_dir, "gpu002") if "gpusim dcgmi diag" in p]


def test_sigkill_leaves_an_incomplete_directory_with_its_outputs_and_no_tool_running(tmp_path):
    faults = [{"kind": "hang", "node": "gpu002", "tool": "dcgmi"}]
    with SimRun(spec("killed", count=4, faults=faults), tmp_path) as sim:
        # (the hang fault also holds dcgmi -v in preflight: a short preflight timeout gets past it)
        proc = playbook_started(sim.inventory, sim.artifacts, "--skip-tags", "fabric,workload",
                                "-e", "check_preflight_timeout=5")
        try:
            # gpu002's dcgmi diag hangs (its timeout is an hour): the run is in the dcgm stage, and
            # (each node at its own pace) the other nodes go on to the end of their per-node stages.
            wait_for(lambda: _hung_tool(sim.run_dir), 300, "the hung dcgmi diag on gpu002")
            wait_for(lambda: run_dirs(sim.artifacts) and all(
                (run_dirs(sim.artifacts)[-1] / "raw" / node / "all_reduce_perf.txt").exists()
                for node in ("gpu001", "gpu003", "gpu004")), 300, "the other nodes' per-node stages")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            # Nobody is left to read the tool's output: the collector's watchdog kills its group.
            try:
                wait_for(lambda: not _processes_of(sim.run_dir), 60,
                         "every tool and collector of the killed run to be gone")
            except AssertionError as exc:
                raise AssertionError("%s; still running:\n  %s" % (exc, "\n  ".join(
                    p[:60] + " ... " + p[-200:] for p in _processes_of(sim.run_dir))))
            # and the forked Ansible workers do not wait forever for a reader of their results
            wait_for(lambda: not _workers_of(sim.inventory), 60, "the killed run's Ansible workers to exit")
        finally:
            if proc.poll() is None:
                proc.kill()
        (run,) = run_dirs(sim.artifacts)
        mark = json.loads((run / "INCOMPLETE").read_text())
        assert mark["run_id"] == run.name and mark["playbook"] == "acceptance.yml"
        assert not (run / "COMPLETE").exists()
        # Everything the finished stages collected is there, for every node.
        for node in ("gpu001", "gpu002", "gpu003", "gpu004"):
            for tool in ("ibstat-versions", "nvidia-smi-topo", "nvidia-smi-q", "dmesg"):
                assert (run / "raw" / node / (tool + ".txt")).stat().st_size > 0, (node, tool)
        for node in ("gpu001", "gpu003", "gpu004"):
            for tool in ("dcgmi-diag", "sdc-probe", "ibstat", "all_reduce_perf"):
                assert (run / "raw" / node / (tool + ".txt")).stat().st_size > 0, (node, tool)
        # The results so far, written as each stage had every node's results: valid, and saying
        # the run went on.
        results = validated_results(run / "results.json")
        assert results["run"]["state"] == "running"
        # ... and never a pass (a running document has no verdict yet: test_results.py)
        assert results["verdict"]["status"] == "fail"
        assert {"preflight", "topology", "gpu_health"} <= set(results["stages"])
        assert not list(run.glob("**/*.tmp")) and not list(run.glob("**/.*.tmp"))
