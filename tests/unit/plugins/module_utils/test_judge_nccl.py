"""judge_nccl_single_node / judge_nccl_pair over real nccl-tests outputs."""
import copy

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl import (
    judge_nccl_pair, judge_nccl_single_node)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_uniformity import (
    judge_peers)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import (
    parse_nccl_tests)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES


def _nccl(name):
    return parse_nccl_tests((FIXTURES / "nccl_tests" / name).read_text())


def _by_check(results):
    out = {}
    for result in results:
        out.setdefault(result["check"], []).append(result)
    return out


@pytest.fixture(scope="module")
def h100():
    return load_profile("hgx_h100_sxm")


def test_two_h100_nodes_meet_the_pair_floor(h100):
    results = judge_nccl_pair(_nccl("all_reduce_h100_2node_no_version.txt"), h100)
    by = _by_check(results)
    assert set(r["status"] for r in results) == {"pass"}
    assert by["nccl.ranks"][0]["message"] == "nccl-tests ran on 16 ranks"
    assert by["nccl.busbw"][0]["message"].startswith("nccl-tests 2-node busbw 321 GB/s")
    assert by["nccl.busbw"][0]["message"].endswith("meets the 300 GB/s floor")


def test_same_run_judged_as_single_node_fails_ranks_and_floor(h100):
    results = judge_nccl_single_node(_nccl("all_reduce_h100_2node_no_version.txt"), h100)
    failed = dict((r["check"], r["message"]) for r in results if r["status"] == "fail")
    assert failed["nccl.ranks"] == "nccl-tests ran on 16 ranks, expected 8 (one per GPU)"
    assert failed["nccl.busbw"] == ("nccl-tests single-node busbw 321 GB/s (messages of 1 GiB and "
                                    "up) is below the 360 GB/s floor")


def test_raised_floor_from_overrides(h100):
    profile = copy.deepcopy(h100)
    profile["nccl"]["multi_node_pair_busbw_min"] = 340
    results = judge_nccl_pair(_nccl("all_reduce_h100_2node_no_version.txt"), profile)
    assert [r["status"] for r in results if r["check"] == "nccl.busbw"] == ["fail"]


def test_wrong_values_and_oob_fail(h100):
    results = judge_nccl_single_node(_nccl("all_reduce_gh200_wrong_oob_failed.txt"), h100)
    by = _by_check(results)
    messages = [r["message"] for r in by["nccl.correctness"]]
    assert messages == [
        "all_reduce_perf found 128 wrong values in 1 message sizes (1 MiB): data corruption on a "
        "GPU or link",
        "all_reduce_perf reports 4 out-of-bounds values",
    ]
    assert all(r["status"] == "fail" for r in by["nccl.correctness"])
    assert not any(r["status"] == "pass" for r in results)


def test_mpi0_independent_runs(h100):
    results = judge_nccl_single_node(_nccl("mpi0_h800_two_processes_interleaved.txt"), h100)
    ranks = [r for r in results if r["check"] == "nccl.ranks" and r["status"] == "fail"]
    assert any("2 independent runs" in r["message"] for r in ranks)


def test_test_failure_is_fail_and_not_also_unreadable(h100):
    results = judge_nccl_single_node(_nccl("all_reduce_gh200_abort_before_table.txt"), h100)
    by = _by_check(results)
    assert by["nccl.run"][0]["status"] == "fail"
    assert by["nccl.run"][0]["message"].startswith("all_reduce_perf failed: line 14: gpu-1-1: "
                                                   "Test CUDA failure")
    # it failed before its table: that is the finding, not an unreadable output
    assert not [r for r in by.get("nccl.parse", []) if "no data rows" in r["message"]]
    assert [r["status"] for r in by.get("nccl.busbw", [])] in ([], ["skip"])   # never judged


# ------------------------------------------------------------------------------ error inputs

@pytest.mark.parametrize("name", ["all_reduce_h100_truncated_in_table.txt",
                                  "reduce_scatter_zero_sizes_fragment.txt"])
def test_unreadable_output_is_error_never_pass(name, h100):
    results = judge_nccl_pair(_nccl(name), h100)
    assert "pass" not in [r["status"] for r in results]
    (parse,) = [r for r in results if r["check"] == "nccl.parse"]
    assert parse["status"] == "error"
    assert parse["message"].startswith("nccl-tests: output unreadable: ")


def test_empty_and_missing(h100):
    results = judge_nccl_single_node(parse_nccl_tests(""), h100)
    assert [r["status"] for r in results] == ["error"]
    assert judge_nccl_single_node(None, h100)[0]["message"] == \
        "nccl-tests: no output was collected"


def test_peer_comparison_of_node_results(h100):
    # Per-node single-node busbw as the collector would gather it; one node far below its peers
    # while still above the absolute floor.
    busbw = dict(("gpu%03d" % i, 478.0 + (i % 4)) for i in range(1, 16))
    busbw["gpu016"] = 371.0
    results = dict((r["component"], r) for r in judge_peers(
        busbw, "nccl.peers", "single-node busbw", "GB/s", k=h100["peers"]["k"],
        min_rel_drop=h100["peers"]["min_rel_drop"], min_nodes=h100["peers"]["min_nodes"]))
    assert results["gpu016"]["status"] == "fail"
    assert results["gpu016"]["message"] == \
        "gpu016 single-node busbw 371 GB/s is 23 % below the cluster median 480 GB/s"
    assert sum(1 for r in results.values() if r["status"] == "pass") == 15


def test_independent_runs_have_no_single_node_busbw(h100):
    # nccl-tests#306: two MPI=0 processes, their tables interleaved; an average of both is nobody's
    text = (FIXTURES / "captured" / "h20_8gpu_mpi0_two_processes_interleaved_issue306" / "all_reduce_perf.txt").read_text()
    by = _by_check(judge_nccl_single_node(parse_nccl_tests(text), h100))
    assert by["nccl.ranks"][0]["status"] == "fail" and "independent runs" in by["nccl.ranks"][0]["message"]
    assert [r["status"] for r in by["nccl.busbw"]] == ["skip"]


def test_a_run_over_two_hosts_is_no_single_node_run_even_with_the_right_rank_count(h100):
    # nccl-tests#293: rank 0 on test1, rank 1 on test2, on a 2-GPU profile
    text = (FIXTURES / "captured" / "a100pcie_2gpu_topo_and_two_host_nccl_prompt_issue293" / "all_reduce_perf.txt").read_text()
    two = dict(h100, gpus_per_node=2)
    by = _by_check(judge_nccl_single_node(parse_nccl_tests(text), two))
    (ranks,) = by["nccl.ranks"]
    assert ranks["status"] == "fail" and "ran across 2 hosts (test1 and test2)" in ranks["message"]
    assert [r["status"] for r in by["nccl.busbw"]] == ["skip"]
