"""The report's view of the fabric block (_report_fabric): the heatmap's nodes, marks and pairs, and the
localisation rounds, read from the keys that hold them, nothing defaulted."""
import report_documents as docs
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report_view as view_of
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._report_fabric import MARK_SOLID

# The demo document (validated) and its view: the fixtures of the whole view's tests, not a copy.
from test_report_view import demo, view  # noqa: F401  pylint: disable=unused-import


def test_the_fabric_view_reads_matrix_nodes_and_pinned(demo, view):
    fabric = view["fabric"]
    assert fabric["state"] == "ok" and fabric["problems"] == []
    assert sorted(fabric["names"]) == sorted(demo["fabric"]["nodes"]) and len(fabric["names"]) == 11
    assert fabric["pinned"] == [docs.DEMO_SLOW] == demo["fabric"]["pinned"]["nodes"]
    assert fabric["marks"] == {docs.DEMO_SLOW: MARK_SOLID}
    tested = dict((k, v) for k, v in fabric["pairs"].items() if v is not None)
    assert len(tested) == 6  # the 2-node groups of the two rounds; the 3-node group is no pair
    assert sorted(k for k, v in tested.items() if v < 200) == [("gpu001", docs.DEMO_SLOW), (docs.DEMO_SLOW, "gpu016")]
    # no reference recorded: the heatmap colours by the median of the pairs, and says so
    assert demo["fabric"]["reference"] is None and fabric["reference_source"] == "the median of the pairs"
    assert 340 < fabric["reference"] < 350
    leaves = [fabric["leaf"][n] for n in fabric["names"]]
    assert leaves == sorted(leaves)  # ordered by leaf, then name


def test_the_rounds_view_has_every_group(demo, view):
    rounds = view["rounds"]
    assert rounds["state"] == "ok"
    assert [len(r["groups"]) for r in rounds["rounds"]] == [len(r["groups"]) for r in demo["fabric"]["rounds"]] == [5, 2]
    assert rounds["status_counts"] == {"pass": 5, "low": 2}
    low = [g for r in rounds["rounds"] for g in r["groups"] if g["status"] == "low"]
    assert all(docs.DEMO_SLOW in g["nodes"] for g in low)
    assert all(g["raw"].startswith("raw/_fabric/") and (docs.DEMO_DIR / g["raw"]).is_file() for g in low)


def test_a_fabric_stage_that_ended_on_a_scheduler_error():
    document = docs.scheduler_error()
    view = view_of.build_view(document)
    fabric = view["fabric"]
    assert fabric["state"] == "ok" and fabric["status"] == "error"
    assert fabric["error"]["component"] == "scheduler" and "Unable to contact slurm controller" in fabric["error"]["message"]
    assert fabric["pinned"] == [] and fabric["marks"] == {}  # nobody is blamed
    assert all(v is None for v in fabric["pairs"].values()) and len(fabric["names"]) == 4
    assert view["rounds"]["status_counts"] == {"error": 2}
    assert view["header"]["cluster_failed"] is True


def test_a_replay_with_groups_that_are_not_replayable():
    view = view_of.build_view(docs.replay_not_replayable())
    assert view["header"]["run"]["replay_of"].endswith("live")
    assert view["rounds"]["status_counts"] == {"pass": 1, "not_replayable": 2}
    groups = [g for r in view["rounds"]["rounds"] for g in r["groups"] if g["status"] == "not_replayable"]
    assert all(g["busbw"] is None and g["nodes"] == ["gpu003", "gpu004"] for g in groups)
    assert view["fabric"]["verdict_counts"] == {"cleared": 2, "untested": 2}


def test_contradictions_between_verdict_pinned_and_nodes_are_listed(demo):
    def change(d):
        d["fabric"]["pinned"]["nodes"] = ["gpu001"]
        d["verdict"]["nodes_failed"] = 3
    view = view_of.build_view(docs.mutated(demo, change))
    assert "fabric/pinned/nodes names gpu001, whose fabric/nodes verdict is cleared" in view["fabric"]["problems"]
    assert "fabric/nodes/gpu012 is pinned but fabric/pinned/nodes does not list it" in view["fabric"]["problems"]
    # both are outlined: what fabric.pinned lists and the pinned verdict; the page lists the contradiction
    assert view["fabric"]["pinned"] == ["gpu001", "gpu012"]
    assert "verdict/nodes_failed is 3 but verdict/failed_nodes lists 7 node(s)" in view["header"]["problems"]


def _fabric_document_from_the_localiser():
    """The fabric block as the producer writes it (_fabric_document._document) from a real localiser run
    with an intermittent node (unstable samples) and a whole slow leaf."""
    import types
    from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric_document, _localize
    nodes = ["gpu%03d" % i for i in range(1, 17)]
    topology = dict((n, {"leaf": "leaf%02d" % (i // 4 + 1)}) for i, n in enumerate(nodes))
    slow_leaf = [n for n in nodes if topology[n]["leaf"] == "leaf03"]
    flaky = "gpu002"

    def answer(groups):
        out = []
        for group in groups:
            if any(n in slow_leaf for n in group):
                out.append({"group": group, "busbw": 180.0, "status": "ok"})
            elif flaky in group:
                out.append({"group": group, "busbw": 362.0, "status": "ok", "samples": [366.0, 150.0, 365.0, 362.0]})
            else:
                out.append({"group": group, "busbw": 368.0, "status": "ok", "samples": [367.0, 368.0, 369.0, 366.0]})
        return out
    state = _localize.localize(nodes, topology, answer, config={"floor": 300.0})
    rounds = {}
    for test in state["tests"]:
        rounds.setdefault(test["round"], []).append(
            {"nodes": test["group"], "busbw": test["busbw"], "key": "round%d-%s" % (test["round"], "-".join(test["group"])),
             "outcome": "ok", "note": ""})
    fabric = types.SimpleNamespace(rounds=[{"round": r, "groups": g} for r, g in sorted(rounds.items())],
                                   infra_nodes={}, opts={})
    block = _fabric_document._document(fabric, state, None, "fail", None, 300.0)
    block["preflight"] = None
    checks = [docs.check("fabric", n, "pair_bandwidth", "fail" if state["nodes"][n]["verdict"] != "cleared" else "pass")
              for n in nodes]
    return docs.build(checks, nodes, {"fabric": block}), slow_leaf, flaky


def test_intermittent_unstable_and_leaf_faults_pass_the_schema_and_reach_the_report():
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report_page
    document, slow_leaf, flaky = _fabric_document_from_the_localiser()
    fabric = document["fabric"]
    assert fabric["leaf_faults"] == ["leaf03"]
    assert fabric["intermittent"]["nodes"] == [flaky]
    assert any(g["status"] == "unstable" for r in fabric["rounds"] for g in r["groups"])
    view = view_of.build_view(document)
    counts = view["fabric"]["verdict_counts"]
    assert counts["leaf"] == len(slow_leaf) and counts["intermittent"] == 1
    assert view["rounds"]["status_counts"]["unstable"] >= 1
    page = _report_page.render_html(document)
    assert "LEAF FAULT" in page and "INTERMITTENT" in page and "leaf-level fault of leaf03" in page
