"""_fabric_runs.Runner: every group leaves a record, whatever went wrong while it ran."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import Runner
from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import directory_problem


def test_a_group_whose_run_raised_is_an_error_record_not_a_hole(tmp_path):
    runner = Runner({"timeout": "not seconds", "concurrency": 2})
    records = runner.run([("k1", ["n1", "n2"], ["true"]), ("k2", ["n3", "n4"], ["true"])])
    assert [r["key"] for r in records] == ["k1", "k2"]
    assert all("ValueError" in r["error"] and r["error"].startswith("true: ") for r in records)


def test_an_output_that_cannot_go_to_disk_stays_in_the_result(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    runner = Runner({"timeout": 30, "concurrency": 1, "raw_dir": str(blocker / "raw")})
    (record,) = runner.run([("k1", ["n1"], ["echo", "hello"])])
    assert record["rc"] == 0 and record["error"] is None
    assert runner.raw["k1"]["output"] == "$ echo hello\nhello\n"


def test_directory_problem_says_why_a_folder_cannot_hold_the_run(tmp_path):
    assert directory_problem(str(tmp_path / "new" / "raw")) is None and (tmp_path / "new" / "raw").is_dir()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert directory_problem(str(blocker)) == "%s cannot be a directory for the run's files: File exists" % blocker


def test_an_argument_no_program_can_take_is_a_start_error():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import run_one
    record = run_one(["echo", "a\x00b"], 5)
    assert record["rc"] == 127 and record["error"] == "echo: cannot start: embedded null byte"
