"""The fabric stage's launcher preflight: srun --mpi=list read from real Slurm output, a missing PMIx
plugin named as a launcher error, and what a 2-rank launch proves, judged from captured outputs."""
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_preflight as pre
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_judge import judge_run
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import Runner
from conftest import FIXTURES

SRUN = FIXTURES / "srun"
NCCL = FIXTURES / "nccl_tests"


def listing(name):
    return (SRUN / name).read_text()


def test_the_plugins_slurm_22_05_lists():
    parsed = pre.parse_mpi_list(listing("mpi_list_slurm_22.05.txt"))
    assert parsed["header"] and not parsed["errors"]
    assert parsed["plugins"] == ["pmix", "none", "cray_shasta", "pmi2"]
    assert parsed["versions"] == {"pmix": ["pmix_v4"]}
    assert pre.offered(parsed) == ["pmix", "none", "cray_shasta", "pmi2", "pmix_v4"]


def test_the_older_srun_prefixed_layout():
    parsed = pre.parse_mpi_list(listing("mpi_list_slurm_20.11_prefixed_handmade.txt"))
    assert parsed["plugins"] == ["none", "pmi2", "cray_shasta", "pmix", "pmix_v3"] and not parsed["errors"]


def test_an_unexpected_line_is_an_error_beside_the_plugins():
    text = "user@login:~$ srun --mpi=list\n" + listing("mpi_list_slurm_22.05.txt") + "Segmentation fault (core dumped)\n"
    parsed = pre.parse_mpi_list(text)
    assert parsed["plugins"] == ["pmix", "none", "cray_shasta", "pmi2"]
    assert len(parsed["errors"]) == 2 and "Segmentation fault" in parsed["errors"][1]


@pytest.mark.parametrize("requested", ["", "pmix", "pmix_v4", "pmi2"])
def test_an_offered_plugin_passes(requested):
    judged = pre.judge_mpi_list({"output": listing("mpi_list_slurm_22.05.txt"), "rc": 0}, requested)
    assert judged["status"] == "pass", judged
    assert "pmix_v4" in judged["sentence"]


def test_a_missing_pmix_plugin_is_a_launcher_error_naming_what_srun_offers():
    judged = pre.judge_mpi_list({"output": listing("mpi_list_slurm_22.05.txt"), "rc": 0}, "pmix_v5")
    assert judged["status"] == "error" and judged["component"] == "launcher"
    assert judged["sentence"].startswith("srun has no MPI plugin pmix_v5 (PMIx is missing)")
    assert "pmix, none, cray_shasta, pmi2; pmix versions: pmix_v4" in judged["sentence"]


def test_srun_without_a_configuration_is_the_scheduler():
    judged = pre.judge_mpi_list({"output": listing("mpi_list_no_configuration_slurm_22.05.txt"), "rc": 1}, "pmix")
    assert judged["status"] == "error" and judged["component"] == "scheduler"
    assert "Could not establish a configuration source" in judged["sentence"]


@pytest.mark.parametrize("record, words", [
    ({"output": "", "rc": 127, "error": "srun: cannot start: [Errno 2] No such file or directory: 'srun'"}, "could not start"),
    ({"output": "MPI plugin types are...\n", "rc": 0, "timed_out": True}, "hung"),
    ({"output": "garbage\n", "rc": 0}, "printed no MPI plugin"),
    ({"output": "", "rc": 0}, "printed no MPI plugin"),
])
def test_no_listing_is_a_launcher_error_never_a_pass(record, words):
    judged = pre.judge_mpi_list(record, "")
    assert judged["status"] == "error" and judged["component"] == "launcher" and words in judged["sentence"]


def opts(replay_dir, **extra):
    base = {"binary": "/opt/nccl-tests/build/all_reduce_perf", "args": ["-b", "8M"], "launcher": "srun", "mpi": "",
            "tasks_per_node": 8, "gpus_per_process": 1, "gpus_per_node": 8, "timeout": 900, "concurrency": 4,
            "replay_dir": str(replay_dir), "raw_dir": "", "max_busbw": None}
    base.update(extra)
    return base


def capture(tmp_path, mpi_list=None, launch=None, rc=None):
    """A past run's artifact directory holding the preflight's two outputs (what replay reads)."""
    folder = tmp_path / "raw" / "_fabric"
    folder.mkdir(parents=True)
    index = {}
    for key, text in ((pre.MPI_LIST_KEY, mpi_list), (pre.LAUNCH_KEY, launch)):
        if text is not None:
            (folder / (key + ".txt")).write_text("$ srun ...\n" + text)
            index[key] = {"rc": (rc or {}).get(key, 0), "complete": True}
    (tmp_path / "results.json").write_text(json.dumps({"raw": {"_fabric": index}}))
    return tmp_path


def preflight(tmp_path, **extra):
    options = opts(tmp_path, **extra)
    return pre.run_preflight(Runner(options), ["gpu002", "gpu001", "gpu003"], options, judge_run)


def test_a_launch_reporting_another_rank_count_is_a_launcher_error(tmp_path):
    # 16 ranks came back from a launch of 2 (one per node): the launcher did not do what it was asked.
    capture(tmp_path, listing("mpi_list_slurm_22.05.txt"), (NCCL / "all_reduce_h100_2node_no_version.txt").read_text())
    found = preflight(tmp_path, mpi="pmix")
    assert found["status"] == "error" and found["component"] == "launcher"
    assert "2 ranks launched, nccl-tests reported 16" in found["cause"]
    assert [s["step"] for s in found["steps"]] == ["mpi_list", "launch"]
    assert found["steps"][1]["status"] == "error" and found["steps"][0]["status"] == "pass"


def test_one_rank_runs_are_inconclusive_and_flagged_as_singletons(tmp_path):
    capture(tmp_path, listing("mpi_list_slurm_22.05.txt"), (NCCL / "mpi0_v100_error_column.txt").read_text())
    found = preflight(tmp_path)
    assert found["status"] == "skip" and found["singletons"] and found["component"] is None
    assert "independent one-rank runs" in found["message"] and "MPI singletons" in found["message"]


def test_a_missing_plugin_stops_before_the_launch(tmp_path):
    capture(tmp_path, listing("mpi_list_slurm_22.05.txt"), (NCCL / "all_reduce_h100_2node_no_version.txt").read_text())
    found = preflight(tmp_path, mpi="pmix_v5")
    assert found["status"] == "error" and [s["step"] for s in found["steps"]] == ["mpi_list"]
    assert found["message"].startswith("launcher preflight: srun has no MPI plugin pmix_v5")


def test_a_capture_without_the_preflight_is_not_judged(tmp_path):
    capture(tmp_path)
    found = preflight(tmp_path)
    assert found["status"] == "skip" and not found["singletons"]
    assert [s["status"] for s in found["steps"]] == ["skip", "skip"]
    assert "not in the captured outputs" in found["message"]


def test_mpirun_has_no_srun_plugin_list_to_check(tmp_path):
    capture(tmp_path, None, (NCCL / "mpi0_v100_error_column.txt").read_text())
    found = preflight(tmp_path, launcher="mpirun")
    assert [s["step"] for s in found["steps"]] == ["launch"]


def test_the_launch_is_one_rank_per_node_on_two_nodes_with_the_smaller_timeout():
    launch = pre.launch_opts(opts("", timeout=60, preflight_timeout=120, tasks_per_node=8, gpus_per_process=8))
    assert (launch["tasks_per_node"], launch["gpus_per_process"], launch["timeout"]) == (1, 1, 60.0)
    assert launch["args"] == pre.DEFAULT_ARGS


def test_an_unreadable_launch_proves_nothing_about_the_launcher_and_the_rounds_go_on(tmp_path):
    capture(tmp_path, listing("mpi_list_slurm_22.05.txt"), "# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n%%garbage%%\n")
    found = preflight(tmp_path)
    assert found["status"] == "skip" and found["component"] is None
    assert "the rounds judge the nodes" in found["message"]
