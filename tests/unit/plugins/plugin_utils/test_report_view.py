"""The report's view of a results.json: what each section shows, read from the key that holds it, and nothing defaulted."""
import copy

import pytest

import report_documents as docs
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report_view as view_of
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results


@pytest.fixture(scope="module")
def demo():
    document = docs.demo()
    assert _results.validate(document) == []
    return document


@pytest.fixture(scope="module")
def view(demo):
    return view_of.build_view(demo)


def test_the_header_is_the_verdict_as_written(demo, view):
    head = view["header"]
    verdict = demo["verdict"]
    assert head["state"] == "ok" and head["problems"] == []
    assert (head["status"], head["message"], head["nodes_total"], head["nodes_failed"]) == (
        verdict["status"], verdict["message"], verdict["nodes_total"], verdict["nodes_failed"]) == (
        "fail", verdict["message"], 16, 7)
    assert [f["node"] for f in head["failed"]] == verdict["failed_nodes"]
    failed = dict((f["node"], f["stages"]) for f in head["failed"])
    assert failed["gpu003"] == ["nccl_single_node", "topology"] and failed[docs.DEMO_SLOW] == ["fabric"]
    assert head["cluster_failed"] is True and head["cluster_problems"] == verdict["cluster_problems"]
    assert head["checks"] == len(demo["checks"]) == 622
    assert head["run"]["state"] == "complete" and 60 < head["run"]["seconds"] < 600


def test_the_verdict_is_not_folded_again_from_the_checks(demo):
    # A verdict the checks would contradict is still shown as written: the producer owns the verdict.
    document = docs.mutated(demo, lambda d: d["verdict"].update(status="pass", message="written by the producer"))
    head = view_of.build_view(document)["header"]
    assert head["status"] == "pass" and head["message"] == "written by the producer"


def test_node_rows_come_from_nodes_with_failed_nodes_first(demo, view):
    table = view["nodes"]
    assert table["state"] == "ok"
    names = [r["node"] for r in table["rows"]]
    assert sorted(names) == sorted(demo["nodes"]) and names[:7] == demo["verdict"]["failed_nodes"]
    row = dict((r["node"], r) for r in table["rows"])
    assert row[docs.DEMO_SLOW]["fabric"] == "pinned" and row[docs.DEMO_SLOW]["stages"]["fabric"] == "fail"
    assert row["gpu003"]["busbw_bad"] and round(row["gpu003"]["busbw"], 2) == 21.41
    assert row["gpu003"]["fabric"] is None  # it failed earlier stages: the fabric stage never took it
    assert table["stages"] == demo["stages"]
    assert table["cluster"]["stages"] == {"fabric": "fail"} and table["cluster"]["problems"] == demo["cluster"]["problems"]
    assert table["has_fabric"] and table["has_busbw"] and table["has_steps"] and not table["has_baseline"]
    ranks = [r for r in demo["workload"]["ranks"] if r["node"] == docs.DEMO_SLOW]
    assert row[docs.DEMO_SLOW]["steps"]["compute"] == max(r["compute_p50_ms"] for r in ranks)


def test_a_stage_that_ran_without_its_block_is_named_not_kept(view):
    # The demo run's single-node judge kept no curve: say so, draw nothing.
    assert view["curves"]["state"] == "not_kept" and "nccl.curves" in view["curves"]["text"]
    document = docs.mutated(docs.demo(), lambda d: d.pop("workload"))
    workload = view_of.build_view(document)["workload"]
    assert workload["state"] == "not_kept" and "workload.ranks" in workload["text"]
    assert "the workload stage ran (64 check(s))" in workload["text"]


def test_the_workload_view_of_the_demo_run(demo, view):
    workload = view["workload"]
    assert workload["state"] == "ok"
    assert [r["rank"] for r in sorted(workload["rows"], key=lambda r: r["rank"])] == \
        [r["rank"] for r in demo["workload"]["ranks"]] == list(range(16))
    assert workload["phases"] == ["compute", "sync", "step"]
    assert workload["flagged_nodes"] == []  # the demo has no workload fault
    first = [r for r in workload["rows"] if r["rank"] == 0][0]
    assert first["node"] == "gpu001" and first["values"][("compute", "50")] == demo["workload"]["ranks"][0]["compute_p50_ms"]


def test_a_run_without_fabric_or_workload_says_not_run():
    view = view_of.build_view(docs.preflight_only())
    for name in ("fabric", "rounds", "curves", "workload"):
        assert view[name]["state"] == "not_run", name
    assert view["nodes"]["state"] == "ok" and not view["nodes"]["has_fabric"]
    assert view["header"]["status"] == "pass"


def test_workload_ranks_and_curves_as_the_builder_copies_them():
    document = docs.workload_and_curves()
    view = view_of.build_view(document)
    workload, curves = view["workload"], view["curves"]
    assert workload["state"] == "ok" and len(workload["rows"]) == len(document["workload"]["ranks"]) == 6
    assert workload["phases"] == ["compute", "sync"]
    assert workload["flagged_nodes"] == ["gpu003"]
    assert [r["rank"] for r in workload["rows"] if r["flagged"]] == [4]
    assert workload["rows"][0]["values"][("compute", "99")] == pytest.approx(9.6)
    assert workload["per_node"]["gpu003"] == {"compute": 16.0, "sync": 1.0, "flagged": True, "ranks": 2}
    assert curves["state"] == "ok" and sorted(curves["lines"]) == ["gpu001", "gpu002", "gpu003"]
    assert curves["slow"] == ["gpu003"]  # its nccl_single_node stage failed (nodes.gpu003.stages)
    assert curves["sizes"][0] == docs.CURVE_SIZES[0] and len(curves["median"]) == len(docs.CURVE_SIZES)
    table = view["nodes"]
    assert table["has_steps"] and dict((r["node"], r["steps"]["compute"]) for r in table["rows"])["gpu003"] == 16.0


def test_units_of_the_rank_keys():
    document = docs.workload_and_curves()
    document["workload"]["unit"] = "s"
    document["workload"]["ranks"][0].update({"compute_p50": 0.02, "sync_p50_us": 500.0})
    del document["workload"]["ranks"][0]["compute_p50_ms"]
    row = [r for r in view_of.build_view(document)["workload"]["rows"] if r["rank"] == 0][0]
    assert row["values"][("compute", "50")] == pytest.approx(20.0) and row["values"][("sync", "50")] == pytest.approx(0.5)
    del document["workload"]["unit"]
    section = view_of.build_view(document)["workload"]
    assert section["state"] == "error" and "workload/ranks/0/compute_p50: a time without a unit" in section["problems"][0]


@pytest.mark.parametrize("change, section, problem", [
    # the mismatch that left the page empty: a renderer or producer using other names than the schema
    (lambda d: d["fabric"].update(pairwise=d["fabric"].pop("matrix")), "fabric",
     "fabric/matrix: missing (the results schema requires it)"),
    (lambda d: d["fabric"]["matrix"].update(gpu001="fast"), "fabric", "fabric/matrix/gpu001: expected object, got a string"),
    (lambda d: d["fabric"]["nodes"]["gpu001"].update(verdict="slow"), "fabric", "fabric/nodes/gpu001/verdict: 'slow' is none of"),
    (lambda d: d["fabric"]["rounds"][1]["groups"][0].update(status="fail"), "rounds",
     "fabric/rounds/1/groups/0/status: 'fail' is none of"),
    (lambda d: d["fabric"]["rounds"][0].pop("groups"), "rounds", "fabric/rounds/0/groups: missing"),
    (lambda d: d.update(nccl={"curves": {"gpu001": [[0, 1.0]]}}), "curves", "nccl/curves/gpu001/0: expected [bytes > 0"),
    (lambda d: d.update(workload={"ranks": [{"node": "gpu001"}]}), "workload", "workload/ranks/0/rank: missing"),
    (lambda d: d.update(workload={"ranks": [{"rank": 1}, {"rank": 1}]}), "workload", "workload/ranks/1: rank 1 appears twice"),
    (lambda d: d["nodes"]["gpu001"].update(status="green"), "nodes", "nodes/gpu001/status: 'green' is none of"),
    (lambda d: d.update(verdict="fail"), "header", "verdict: expected object, got a string"),
])
def test_a_malformed_part_is_an_error_of_its_section_only(demo, change, section, problem):
    view = view_of.build_view(docs.mutated(demo, change))
    assert view[section]["state"] == "error"
    assert any(problem in p for p in view[section]["problems"]), view[section]["problems"]
    others = [name for name in ("fabric", "rounds", "curves", "workload") if name != section and section != "header"]
    assert all(view[name]["state"] != "error" for name in others if not (section == "fabric" and name == "rounds"))


def test_the_view_does_not_change_the_document(demo):
    before = copy.deepcopy(demo)
    view_of.build_view(demo)
    assert demo == before


def test_not_a_document():
    with pytest.raises(view_of.Problem, match="expected an object, got an array"):
        view_of.build_view([])
