"""acceptance.yml over real SSH with become (spec ``transport: ssh``), as on a real cluster.

RUN_A of test_faults.py on 16 SSH nodes, with the nodes' Python pointed at nothing, must find the
same faults with the same messages as the same spec over local connections. A 4-node SSH cluster
then shows what only the SSH path has: a hung dcgmi killed at its timeout leaves nothing on the
node, an SSH session dropped mid-stage and a stopped sshd are transport errors of that node only,
and a node of the spec's ``unreachable`` list refuses the connection.
"""
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from harness import (SimRun, playbook_started, run_dirs, spec, ssh_nodes, validated_results, wait_for,
                     without_node_python)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_faults import RUN_A, SKIP, expected, faults  # noqa: E402  pylint: disable=wrong-import-position
from fault_matrix import write_host_vars  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration

HANG_TIMEOUT = 5
# gpu002's dcgmi hangs `dcgmi -v` in preflight too: short timeouts where the hang is not the point.
SHORT = '{"check_preflight_timeout": %d, "check_dcgm_timeouts": {"3": %d}}' % (HANG_TIMEOUT, HANG_TIMEOUT)


# The fake dmesg's boot time is this machine's (now - uptime): two runs may round it to either side
# of a second. Nothing else in a message may differ.
_BOOT = re.compile(r"since boot \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)")


def _key(checks):
    return sorted((c["node"], c["stage"], c["check"], c["status"], _BOOT.sub("since boot (T)", c["message"]),
                   str(c.get("component"))) for c in checks)


@pytest.fixture(scope="module")
def run_a_local(fault_matrix_local):
    return fault_matrix_local


@pytest.fixture(scope="module")
def run_a_ssh(tmp_path_factory):
    with SimRun(spec("fas", faults(RUN_A), transport="ssh"), tmp_path_factory.mktemp("fas")) as sim:
        # No Python for the per-node stages: a module task on a node would fail.
        without_node_python(sim.inventory)
        write_host_vars(sim.inventory)
        run = sim.acceptance("--skip-tags", SKIP)
        run.nodes = ssh_nodes(sim)
        run.left = {n: run.nodes.node_processes(n, sessions=False) for n in sorted(RUN_A)}
        yield run


def test_fault_matrix_over_ssh_finds_exactly_the_injected_faults(run_a_ssh):
    assert run_a_ssh.rc != 0, run_a_ssh.output[-3000:]
    assert "UNREACHABLE" not in run_a_ssh.output, run_a_ssh.output[-3000:]
    assert run_a_ssh.bad() == expected(RUN_A)
    assert run_a_ssh.junit_bad() == expected(RUN_A)


def test_fault_matrix_over_ssh_says_what_it_says_over_local_connections(run_a_ssh, run_a_local):
    assert run_a_local.bad() == expected(RUN_A)
    assert _key(run_a_ssh.results["checks"]) == _key(run_a_local.results["checks"])
    assert run_a_ssh.results["verdict"] == run_a_local.results["verdict"]


def test_fault_matrix_over_ssh_ran_every_tool_through_the_collector(run_a_ssh):
    for node in ("gpu001", "gpu016"):
        raw = run_a_ssh.results["raw"][node]
        assert {"nvidia-smi-topo", "nvidia-smi-q", "dcgmi-diag", "ibstat", "all_reduce_perf"} <= set(raw)
        assert all(r.get("rc", 0) == 0 for r in raw.values()), raw  # rc 0 is left out
    assert all(left == [] for left in run_a_ssh.left.values()), run_a_ssh.left


# ---------------------------------------------------------------------------------------------
# Four SSH nodes: gpu002's dcgmi hangs, gpu004 is in the spec's unreachable list.
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def four(tmp_path_factory):
    data = spec("fss", [{"kind": "hang", "node": "gpu002", "tool": "dcgmi"}], unreachable=["gpu004"], count=4,
                transport="ssh", fabric={"leaves": 1, "spines": 1, "rails": 8, "oversubscription": 1.0})
    with SimRun(data, tmp_path_factory.mktemp("fss")) as sim:
        without_node_python(sim.inventory)
        sim.nodes = ssh_nodes(sim)
        yield sim


def _tool_processes(nodes, node, tool):
    return [p for p in nodes.node_processes(node, sessions=False) if tool in _argv(p)]


def _chain(pid, last):
    """pid and its ancestors up to ``last``."""
    chain = [pid]
    while pid != last and pid > 1:
        pid = int(Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


def _argv(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_unreachable_node_refuses_ssh_and_the_others_go_on(four):
    run = four.acceptance("--tags", "preflight", "-e", SHORT)
    checks = run.bad_checks("gpu004")
    assert checks and all(c["status"] == "error" and c["component"] == "transport" for c in checks), checks
    assert "unreachable" in checks[0]["message"] and "Connection refused" in checks[0]["message"]
    passed = [c for c in run.results["checks"] if c["node"] == "gpu001" and c["stage"] == "preflight"]
    assert passed and all(c["status"] == "pass" for c in passed)


def test_hung_dcgmi_over_ssh_is_an_error_at_its_timeout_and_leaves_nothing_on_the_node(four):
    run = four.acceptance("--tags", "preflight,dcgm", "-e", SHORT)
    (check,) = [c for c in run.bad_checks("gpu002") if c["stage"] == "dcgm"]
    assert check["status"] == "error" and "timed out" in check["message"], check
    raw = run.results["raw"]["gpu002"]["dcgmi-diag"]
    assert raw["rc"] in (124, 137) and raw["seconds"] < HANG_TIMEOUT + 10
    assert run.bad() == {("gpu002", "preflight"), ("gpu002", "dcgm"), ("gpu004", "preflight")}
    # The node's own process list: under its sshd, the login user's, or carrying its name.
    wait_for(lambda: four.nodes.node_processes("gpu002", sessions=False) == [], 30,
             "gpu002 to have no process but sshd's own sessions")
    assert _tool_processes(four.nodes, "gpu002", "dcgmi") == []


def test_ssh_session_dropped_mid_stage_is_a_transport_error_of_that_node_only(four):
    proc = playbook_started(four.inventory, four.artifacts, "--tags", "preflight,topology,gpu_health",
                            "-e", '{"check_preflight_timeout": 300}')
    try:
        # The fake dcgmi itself (the collector's bash and coreutils timeout name it too).
        (hung,) = wait_for(lambda: _tool_processes(four.nodes, "gpu002", "gpusim dcgmi -v"), 120,
                           "gpu002's dcgmi -v to hang")
        session = four.nodes.session_process(hung)
        sys.stderr.write("dropping gpu002's session: %s\n" % " <- ".join(
            "%d %s" % (p, _argv(p)[:60]) for p in _chain(hung, session)))
        assert session, "no sshd session process above dcgmi (pid %d)" % hung
        os.kill(session, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    results = validated_results(run_dirs(four.artifacts)[-1] / "results.json")
    bad = [c for c in results["checks"] if c["node"] == "gpu002" and c["status"] in ("fail", "error")]
    assert bad and all(c["component"] == "transport" and "unreachable" in c["message"] for c in bad), bad
    for node in ("gpu001", "gpu003"):
        stages = {c["stage"] for c in results["checks"] if c["node"] == node and c["status"] == "pass"}
        assert {"preflight", "topology", "gpu_health"} <= stages, (node, stages, out[-2000:])
    # The hung tool went with its session: the collector's watchdog saw sshd's session end.
    wait_for(lambda: four.nodes.node_processes("gpu002", sessions=False) == [], 30,
             "gpu002 to have no process left after its session dropped")


def test_a_stopped_sshd_is_a_transport_error_and_start_brings_it_back(four):
    four.nodes.stop_node("gpu003")
    assert four.nodes.node_processes("gpu003") == []
    run = four.acceptance("--tags", "preflight", "-e", SHORT)
    checks = run.bad_checks("gpu003")
    assert checks and checks[0]["component"] == "transport" and "Connection refused" in checks[0]["message"], checks
    assert run.bad() == {("gpu002", "preflight"), ("gpu003", "preflight"), ("gpu004", "preflight")}
    state = four.cluster.start()
    assert state["restarted_sshd"] == ["gpu003"]
    again = four.acceptance("--tags", "preflight", "-e", SHORT)
    assert ("gpu003", "preflight") not in again.bad() and ("gpu001", "preflight") not in again.bad()


def test_a_playbook_killed_outright_leaves_nothing_on_the_ssh_node(four):
    # dcgmi -v hangs in preflight (its timeout is 300 s here): kill ansible-playbook itself.
    proc = playbook_started(four.inventory, four.artifacts, "--tags", "preflight",
                            "-e", '{"check_preflight_timeout": 300}')
    try:
        wait_for(lambda: _tool_processes(four.nodes, "gpu002", "gpusim dcgmi -v"), 120, "gpu002's dcgmi -v to hang")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        # its worker ends the ssh client, the node hangs up on the collector, the tool goes
        wait_for(lambda: four.nodes.node_processes("gpu002", sessions=False) == [], 60,
                 "gpu002 to have no process left after ansible-playbook was killed")
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_collect_task_past_its_own_timeout_leaves_nothing_on_the_ssh_node(four):
    # The task's timeout (5 tools x 60 s + margin = 15 s) fires long before the tool's own 60 s.
    run = four.acceptance("--tags", "preflight", "-e", '{"check_preflight_timeout": 60, "collect_task_margin": -285}')
    checks = [c for c in run.bad_checks("gpu002") if c["stage"] == "preflight"]
    assert checks and all(c["status"] == "error" for c in checks), checks
    wait_for(lambda: four.nodes.node_processes("gpu002", sessions=False) == [], 30,
             "gpu002 to have no process left after its task timed out")
