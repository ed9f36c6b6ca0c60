"""Counter snapshots around the fabric stage: srun's interleaved, labelled task output split per node,
and what a flap, a missing node and a broken step become."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_counters as fc

ROOT = "/sys/class/infiniband"
LIMITS = {"link_downed": 0, "link_error_recovery": 0, "symbol_error": 0}


def snapshot(downed_b=0):
    # Lines as srun --label forwards them: tasks interleaved, a task's line before its header.
    return "\n".join([
        "$ srun --nodelist=gpu001,gpu002 ...",
        " 1: %s/mlx5_0/ports/1/counters/link_downed:%d" % (ROOT, downed_b),
        " 0: ### node gpu001",
        " 1: ### node gpu002",
        " 0: %s/mlx5_0/ports/1/counters/link_downed:0" % ROOT,
        " 1: %s/mlx5_0/ports/1/counters/link_error_recovery:0" % ROOT,
        " 0: %s/mlx5_0/ports/1/counters/link_error_recovery:0" % ROOT,
    ]) + "\n"


def test_interleaved_task_lines_go_to_their_node():
    split = fc.split_by_node(snapshot(3))
    assert sorted(split) == ["gpu001", "gpu002"]
    assert "link_downed:3" in split["gpu002"] and "link_downed:3" not in split["gpu001"]
    assert split["gpu001"].count("counters/") == 2


def test_a_flap_during_the_stage_fails_that_node_only():
    checks, failed = fc.counter_checks(["gpu001", "gpu002"], {"output": snapshot(0), "rc": 0},
                                       {"output": snapshot(2), "rc": 0}, LIMITS)
    assert failed == ["gpu002"]
    (bad,) = [c for c in checks if c["status"] == "fail"]
    assert bad["node"] == "gpu002" and bad["component"] == "mlx5_0 port 1"
    assert bad["message"] == "mlx5_0 port 1 link_downed rose by 2 during the fabric stage (limit 0)"
    assert [c["message"] for c in checks if c["node"] == "gpu001"] == [
        "gpu001: no error counter rose above its limit on 1 ports during the fabric stage"]


def test_a_node_the_step_did_not_reach_is_a_launcher_error_blaming_no_node():
    after = "\n".join(l for l in snapshot(0).splitlines() if not l.startswith(" 1:")) + "\n"
    checks, failed = fc.counter_checks(["gpu001", "gpu002"], {"output": snapshot(0), "rc": 0},
                                       {"output": after, "rc": 0}, LIMITS)
    (error,) = [c for c in checks if c["status"] == "error"]
    assert error["node"] is None and error["component"] == "launcher" and failed == []
    assert "printed nothing for gpu002" in error["message"]
    assert [c["node"] for c in checks if c["status"] == "pass"] == ["gpu001"]


def test_a_root_without_counters_on_every_node_is_one_configuration_error():
    text = " 0: ### node gpu001\n 1: ### node gpu002\n 0: grep: /nowhere/*/ports/*/counters/*: No such file\n"
    checks, failed = fc.counter_checks(["gpu001", "gpu002"], {"output": text, "rc": 0}, {"output": text, "rc": 0}, LIMITS)
    assert failed == [] and [(c["node"], c["status"], c["component"]) for c in checks] == [(None, "error", "counters")]


def test_an_unexplained_exit_status_of_the_step_is_the_launcher():
    checks, failed = fc.counter_checks(["gpu001"], {"output": "boom\n", "rc": 3}, {"output": "", "rc": 0}, LIMITS)
    assert failed == [] and checks[0]["component"] == "launcher" and "exited with status 3: boom" in checks[0]["message"]


def test_a_broken_step_blames_no_node_and_a_capture_without_it_is_not_judged():
    broken = {"output": "srun: error: Unable to allocate resources: Invalid partition name specified\n", "rc": 1}
    checks, failed = fc.counter_checks(["gpu001"], broken, broken, LIMITS)
    assert failed == [] and [(c["node"], c["status"], c["component"]) for c in checks] == [(None, "error", "scheduler")]
    checks, failed = fc.counter_checks(["gpu001"], {"missing": True}, {"missing": True}, LIMITS)
    assert failed == [] and checks[0]["status"] == "skip" and "not in the captured outputs" in checks[0]["message"]


def test_the_root_reaches_the_shell_as_an_argument():
    argv = fc.snapshot_argv(["gpu001"], {"counters_root": "/x; touch /tmp/pwned", "launcher_args": []})
    assert argv[-1] == "/x; touch /tmp/pwned" and argv[-2] == "sh" and "/x" not in argv[-3]
    assert fc.snapshot_argv(["gpu001"], {"counters_root": "/sys/class/infiniband/"})[-1] == "/sys/class/infiniband"


def test_the_node_name_goes_into_the_root_whole_whatever_it_holds(tmp_path):
    """The snapshot's sh puts the node's name in for @node@ without sed: '/', '&' and '\\' stay."""
    import subprocess
    node = "a&b\\c"
    root = tmp_path / node / "mlx5_0" / "ports" / "1" / "counters"
    root.mkdir(parents=True)
    (root / "symbol_error").write_text("7\n")
    argv = fc.snapshot_argv(["x"], {"counters_root": str(tmp_path / "@node@")})
    shell = argv[argv.index("sh"):]
    proc = subprocess.run(shell, env={"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": node}, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.stdout.splitlines() == ["### node %s" % node, "%s/symbol_error:7" % root]
