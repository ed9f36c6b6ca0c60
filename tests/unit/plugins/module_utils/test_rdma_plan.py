"""The RDMA pair stage's runs (_rdma_plan): rails, a round's tests and ports, the node-side driver
(run for real with the simulator's perftest), and what one pair's two outputs prove."""
import os
import subprocess
import sys
from pathlib import Path

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _rdma
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _rdma_plan as plan

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "perftest"
INFO = dict((n, {"nics": ["mlx5_%d" % i for i in range(8)], "ports": {}, "gpus": {"mlx5_3": 3}})
            for n in ("gpu001", "gpu002", "gpu003", "gpu004"))
OPTS = {"timeout": 20, "startup": 20, "base_port": 18515}


def test_rails_follow_the_profile_names_else_natural_order_and_skip_ports_not_active():
    ports = {"mlx5_10": {"state": "Active"}, "mlx5_2": {"state": "Active"}, "mlx5_1": {"state": "Down"}}
    assert plan.rail_nics({"ports": ports}, [], 8) == ["mlx5_2", "mlx5_10"]
    assert plan.rail_nics({"ports": ports}, ["mlx5_10", "mlx5_1"], 8) == ["mlx5_10"]
    assert plan.rail_nics({}, [], 2) == ["mlx5_0", "mlx5_1"]


def test_every_test_of_a_round_has_its_own_port_and_the_lower_node_serves():
    tests = plan.plan_tests(2, {0: [["gpu002", "gpu001"], ["gpu003", "gpu004"]], 3: [["gpu004", "gpu001"]]},
                            INFO, dict(OPTS, use_cuda=True))
    assert [t["port"] for t in tests] == [18515, 18516, 18517]
    assert [(t["server"], t["client"], t["rail"]) for t in tests] == [
        ("gpu001", "gpu002", 0), ("gpu003", "gpu004", 0), ("gpu001", "gpu004", 3)]
    last = tests[-1]
    assert last["key"] == "round2-rail3-gpu001-gpu004"
    assert last["argv"]["server"] == ["ib_write_bw", "-d", "mlx5_3", "-p", "18517", "--report_gbits", "-F",
                                      "--use_cuda=3"]
    assert last["argv"]["client"][-1] == "gpu001" and "--use_cuda=3" in last["argv"]["client"]


def test_a_group_of_three_is_two_pair_tests_in_two_steps_each_its_own_evidence():
    # The planner joins an odd node to a pair; perftest has two ends, and a NIC in two tests at once
    # would share its rate: the first node meets each other one, one step after the other.
    tests = plan.plan_tests(1, {2: [["gpu003", "gpu001", "gpu002"]], 4: [["gpu004", "gpu001"]]}, INFO, OPTS)
    assert [(t["server"], t["client"], t["rail"], t["step"]) for t in tests] == [
        ("gpu001", "gpu002", 2, 0), ("gpu001", "gpu003", 2, 1), ("gpu001", "gpu004", 4, 0)]
    assert tests[1]["group"] == ["gpu001", "gpu002", "gpu003"] and len(set(t["port"] for t in tests)) == 3
    ok = {"outcome": "ok", "gbits": 392.0}
    grouped = {(2, 0): [(["gpu001", "gpu002"], ok)], (2, 1): [(["gpu001", "gpu003"], dict(ok, gbits=196.0))],
               (4, 0): [(["gpu001", "gpu004"], {"outcome": "infra", "gbits": None})]}
    # each step's pairs are evidence of their own (gpu002 is cleared by its 392, gpu003 is low)
    assert _rdma._pair_results(grouped) == {
        2: [[{"group": ["gpu001", "gpu002"], "busbw": 392.0, "status": "ok"}],
            [{"group": ["gpu001", "gpu003"], "busbw": 196.0, "status": "ok"}]],
        4: [[]]}  # a test not measured (the step failed) is left out


def run_driver(node, tests, env):
    return subprocess.Popen(["bash", "-c", plan.DRIVER, "gpucluster-perftest"] + plan.driver_args(tests, OPTS),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(env, SLURMD_NODENAME=node))


def test_the_driver_runs_its_node_s_ends_and_the_client_waits_for_its_server(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text('{"name": "drv", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 4}, '
                    '"faults": [{"kind": "nic_slow", "node": "gpu002", "nic": "mlx5_3", "factor": 0.5}]}')
    env = dict(os.environ, GPUCLUSTER_SIM_SPEC=str(spec), GPUCLUSTER_SIM_PYTHON=sys.executable,
               PATH="%s:%s" % (REPO / "sim" / "bin", os.environ["PATH"]))
    port = 20000 + os.getpid() % 20000
    tests = plan.plan_tests(1, {3: [["gpu001", "gpu002"]], 5: [["gpu001", "gpu002"]]}, INFO, dict(OPTS, base_port=port))
    # The client's node first: its clients find no server and try again until the server listens.
    client = run_driver("gpu002", tests, env)
    server = run_driver("gpu001", tests, env)
    sections = {}
    for proc in (client, server):
        out = proc.communicate(timeout=120)[0]
        assert proc.returncode == 0, out
        found, outside = plan.split_sections(out)
        assert outside == []
        sections.update(found)
    assert sorted(sections) == sorted((t["key"], r) for t in tests for r in ("server", "client"))
    judged = [plan.judge_test(t, sections[(t["key"], "server")], sections[(t["key"], "client")], OPTS) for t in tests]
    assert [j["outcome"] for j in judged] == ["ok", "ok"]
    assert judged[0]["gbits"] / judged[1]["gbits"] < 0.55  # mlx5_3 of gpu002 is slow, mlx5_5 is not


TEST = plan.plan_tests(1, {3: [["gpu001", "gpu002"]]}, INFO, OPTS)[0]
WAITING = "\n************************************\n* Waiting for client to connect... *\n************************************\n"


def test_a_server_no_client_can_reach_ends_when_every_client_has_given_up(tmp_path):
    # gpu002's mlx5_3 is down: its client is refused at once and never connects. Its server on gpu001
    # is ended once every client has given up (server_wait, not its own timeout), and says so. The
    # other rail's test is still connected at that moment (perftest takes longer than server_wait
    # here) and is left to finish. The judge names the NIC, not a hang.
    opts = dict(OPTS, timeout=3600, startup=3, base_port=20000 + (os.getpid() + 7) % 20000)
    wait = plan.server_wait(opts)
    assert wait == 2 * 3 + plan.LAUNCH_SKEW
    spec = tmp_path / "spec.json"
    spec.write_text('{"name": "drv", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 4}, '
                    '"tool_times": {"perftest": %d}, '
                    '"faults": [{"kind": "nic_down", "node": "gpu002", "nic": "mlx5_3"}]}' % (wait + 2))
    env = dict(os.environ, GPUCLUSTER_SIM_SPEC=str(spec), GPUCLUSTER_SIM_PYTHON=sys.executable,
               PATH="%s:%s" % (REPO / "sim" / "bin", os.environ["PATH"]))
    tests = plan.plan_tests(1, {3: [["gpu001", "gpu002"]], 5: [["gpu001", "gpu002"]]}, INFO, opts)
    words = plan.driver_args(tests, opts)
    assert words[1:9] == ["gpu001", "server", tests[0]["key"], "3600", "3", str(wait), str(tests[0]["port"]),
                          str(len(tests[0]["argv"]["server"]))]
    procs = [subprocess.Popen(["bash", "-c", plan.DRIVER, "gpucluster-perftest"] + words, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=dict(env, SLURMD_NODENAME=node))
             for node in ("gpu001", "gpu002")]  # servers first: the clients' 3 s window is not a race
    sections = {}
    for proc in procs:
        out = proc.communicate(timeout=600)[0]  # a server left to its own timeout would take an hour
        assert proc.returncode == 0, out
        sections.update(plan.split_sections(out)[0])
    down, other = tests
    server = sections[(down["key"], "server")]
    assert server["rc"] == 124
    assert server["output"].endswith("gpucluster-perftest: no client connected to port %d within %ds: server ended\n"
                                     % (down["port"], wait))
    judged = plan.judge_test(down, server, sections[(down["key"], "client")], opts)
    assert (judged["outcome"], judged["component"]) == ("nic", "gpu002 mlx5_3")
    assert sections[(other["key"], "server")]["rc"] == 0
    assert plan.judge_test(other, sections[(other["key"], "server")], sections[(other["key"], "client")],
                           opts)["outcome"] == "ok"
    # with rdma_cm there is no TCP connection to look for: the server is left to its own timeout
    assert plan.server_wait(dict(opts, rdma_cm=True)) == 0
    assert plan.driver_args(tests, dict(opts, rdma_cm=True))[6] == "0"


def test_a_client_that_failed_before_connecting_is_not_a_hang():
    ended = WAITING + "gpucluster-perftest: no client connected to port 18515 within 40s: server ended\n"
    judged = plan.judge_test(TEST, {"output": ended, "rc": 124}, {"output": "Segmentation fault\n", "rc": 139}, OPTS)
    assert judged["outcome"] == "invalid"
    hung = plan.judge_test(TEST, {"output": WAITING, "rc": 124}, {"output": "Segmentation fault\n", "rc": 139}, OPTS)
    assert hung["outcome"] == "timeout"


def test_outcomes_name_what_failed_and_only_hardware_is_a_finding():
    good = (FIXTURES / "nvidia_gpu_operator_write_bw_a_gbits_roce.txt").read_text()
    ok = plan.judge_test(TEST, {"output": WAITING + good, "rc": 0}, {"output": good, "rc": 0}, OPTS)
    assert ok["outcome"] == "ok" and ok["gbits"] == 92.39
    assert "gpu001 mlx5_3 \u2194 gpu002 mlx5_3 (rail 3)" in ok["sentence"]
    down = plan.judge_test(TEST, {"output": " Port number 1 state is Down\n Couldn't set the link layer\n", "rc": 1},
                           {"output": "Couldn't connect to gpu001:18515\n", "rc": 1}, OPTS)
    assert (down["outcome"], down["side"], down["component"]) == ("nic", "gpu001", "gpu001 mlx5_3")
    never = plan.judge_test(TEST, {"output": WAITING, "rc": 124},
                            {"output": (FIXTURES / "perftest_228_client_couldnt_connect.txt").read_text(), "rc": 1}, OPTS)
    assert never["outcome"] == "connect" and "TCP" in never["component"] and "server waiting" in never["sentence"]
    missing = plan.judge_test(TEST, None, {"output": good, "rc": 0}, OPTS)
    assert (missing["outcome"], missing["component"]) == ("infra", "launcher")
    launcher = plan.judge_test(TEST, {"output": "bash: line 1: ib_write_bw: command not found\n", "rc": 124},
                               {"output": "bash: line 1: ib_write_bw: command not found\n", "rc": 127}, OPTS)
    assert launcher["outcome"] == "infra"
    hung = plan.judge_test(TEST, {"output": WAITING, "rc": 124}, {"output": good.split(" #bytes")[0], "rc": 124}, OPTS)
    assert hung["outcome"] == "timeout"
    garbled = plan.judge_test(TEST, {"output": WAITING, "rc": 0}, {"output": "Segmentation fault\n", "rc": 0}, OPTS)
    assert garbled["outcome"] == "invalid" and garbled["component"] == "perftest"


def test_sections_keep_a_prompt_outside_and_the_outputs_whole():
    text = "stray prompt$\n@@@ gpucluster-perftest k1 server rc=0\nA\nB\n@@@ gpucluster-perftest k1 client rc=\n"
    sections, outside = plan.split_sections(text)
    assert outside == ["stray prompt$"]
    assert sections[("k1", "server")] == {"output": "A\nB\n", "rc": 0}
    assert sections[("k1", "client")] == {"output": "", "rc": None}


def test_fewer_than_two_nodes_is_a_skip_or_an_error_with_a_complete_rdma_block():
    import json  # pylint: disable=import-outside-toplevel
    import jsonschema  # pylint: disable=import-outside-toplevel
    schema = json.loads((REPO / "schemas" / "results.schema.json").read_text())
    rdma = dict(schema["$defs"]["rdma"], **{"$defs": schema["$defs"]})
    for nodes, status in ((["gpu001"], "skip"), ([], "error")):
        result = _rdma.rdma_stage(nodes, INFO, {}, OPTS)
        assert [c["status"] for c in result["checks"]] == [status]
        jsonschema.validate(result["document"], rdma)
        assert (result["document"]["error"] is None) == bool(nodes)


COUNTERS = (REPO / "tests" / "fixtures" / "ib_counters" / "gpud_h100_sysfs_grep_counters_hw_counters.txt").read_text()
LIMITS = {"link_downed": 0, "link_error_recovery": 0, "symbol_error": 0}


def snapshot(text, rc=0):
    return {"output": text, "rc": rc}


def test_counters_that_rose_under_perftest_fail_that_port_in_the_rdma_stage():
    # a real `grep -H . /sys/class/infiniband/*/ports/*/counters/*` (mlx5_1 has link_downed 255 already)
    after = COUNTERS.replace("mlx5_1/ports/1/counters/link_downed:255", "mlx5_1/ports/1/counters/link_downed:256")
    info = {"gpu003": {"nics": ["mlx5_0", "mlx5_1"], "ports": {}, "gpus": {}},
            "gpu004": {"nics": ["mlx5_0", "mlx5_1"], "ports": {}, "gpus": {}}}
    snaps = {("round1", "gpu003"): {"before": snapshot(COUNTERS), "after": snapshot(after)},
             ("round1-step2", "gpu003"): {"before": snapshot(after), "after": snapshot(after)},
             ("round1", "gpu004"): {"before": snapshot(COUNTERS), "after": snapshot(COUNTERS)}}
    checks, failed = _rdma._counter_checks(snaps, info, {"counter_limits": LIMITS})
    assert failed == {"gpu003"}
    by_node = dict((c["node"], c) for c in checks)
    bad = by_node["gpu003"]
    assert (bad["status"], bad["check"], bad["component"], bad["stage"]) == ("fail", "ib.counters", "mlx5_1 port 1", "rdma")
    assert bad["message"] == "mlx5_1 port 1 link_downed rose by 1 during perftest round 1 (limit 0)"
    assert bad["evidence"] == ["before: /sys/class/infiniband/mlx5_1/ports/1/counters/link_downed:255",
                               "after: /sys/class/infiniband/mlx5_1/ports/1/counters/link_downed:256"]
    assert bad["raw"] == ["round1.counters-gpu003.before", "round1.counters-gpu003.after"]
    assert by_node["gpu004"]["status"] == "pass" and "during the RDMA pair tests" in by_node["gpu004"]["message"]


def test_a_missing_or_garbled_snapshot_is_an_error_beside_the_findings():
    info = {"gpu003": {"nics": ["mlx5_0", "mlx5_1"], "ports": {}, "gpus": {}}}
    garbled = COUNTERS + "root@gpu003:~# \x1b[0m\n"
    snaps = {("round1", "gpu003"): {"before": snapshot(COUNTERS)},
             ("round2", "gpu003"): {"before": snapshot(COUNTERS), "after": snapshot(garbled)}}
    checks, failed = _rdma._counter_checks(snaps, info, {"counter_limits": LIMITS})
    assert failed == {"gpu003"}
    assert [(c["status"], c["message"]) for c in checks] == [
        ("error", "the after counter snapshot of perftest round 1 is missing")]
    # a stray prompt line is dropped with a warning: the counters are still compared
    checks, failed = _rdma._counter_checks({("round2", "gpu003"): snaps[("round2", "gpu003")]}, info,
                                           {"counter_limits": LIMITS})
    assert [c["status"] for c in checks] == ["pass"] and not failed


def test_the_driver_reads_the_node_s_counters_before_and_after_its_tests(tmp_path):
    root = tmp_path / "sys-@node@"
    real = tmp_path / "sys-gpu001" / "mlx5_0" / "ports" / "1" / "counters"
    real.mkdir(parents=True)
    (real / "link_downed").write_text("0\n")
    args = plan.driver_args([], dict(OPTS, counters_root=str(root)))
    out = subprocess.run(["bash", "-c", plan.DRIVER, "gpucluster-perftest"] + args, capture_output=True, text=True,
                         env=dict(os.environ, SLURMD_NODENAME="gpu001"), timeout=60, check=True).stdout
    sections, outside = plan.split_sections(out)
    assert outside == []
    assert sections[("counters-gpu001", "before")] == {
        "output": "%s/mlx5_0/ports/1/counters/link_downed:0\n" % (tmp_path / "sys-gpu001"), "rc": 0}
    assert sections[("counters-gpu001", "after")]["rc"] == 0
