"""make demo, the cluster stopped, then a replay of its artifact directory: the same verdict.

tools/demo.sh (what `make demo` runs) starts the 16-node demo cluster on real Slurm, runs
acceptance.yml, and stops the cluster when it exits. Re-judging its artifact directory with no
cluster running (nothing can launch: a live srun would fail) must give the same failed
(node, stage) pairs, the same pinned nodes and uplinks, the same summary counts and the same
final message.
"""
import os
import re

import pytest

from harness import playbook, validated_results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report_view

pytestmark = pytest.mark.integration


def _final_message(output):
    found = re.findall(r"\[ERROR\]: Task failed: Action failed: (.*)", output)
    return found[-1].strip() if found else None


def _summary(output):
    return [line for line in output.splitlines() if line.startswith("gpucluster.acceptance verdict:")]


@pytest.fixture(scope="module")
def demo(demo_run):
    """The session's demo run (tests/conftest.py: tools/demo.sh once, its cluster stopped after)."""
    work, run, log, _rc = demo_run
    return work, run, log


def _failed_pairs(results):
    return sorted(set((c["node"] or "(cluster)", c["stage"]) for c in results["checks"] if c["status"] in ("fail", "error")))


def test_replaying_the_demo_gives_the_same_verdict_without_a_cluster(demo, tmp_path):
    work, live_dir, live_log = demo
    live = validated_results(live_dir / "results.json")
    replay = playbook(work / "inventory" / "hosts.yml", tmp_path / "artifacts",
                      "-e", "acceptance_replay_dir=%s" % live_dir)
    assert replay.rc == 2 and replay.results["run"]["replay_of"] == str(live_dir)
    assert _failed_pairs(replay.results) == _failed_pairs(live)
    assert replay.results["fabric"]["pinned"] == live["fabric"]["pinned"]
    assert replay.results["fabric"]["pinned"]["nodes"] == ["gpu012"]
    assert replay.results["verdict"] == live["verdict"]
    assert _summary(replay.output) == _summary(live_log) and _summary(live_log)
    # The same sentence; each run points to its own results.json.
    live_results, replay_results = str(live_dir / "results.json"), str(replay.dir / "results.json")
    assert _final_message(live_log).endswith("see the summary below and %s" % live_results)
    assert _final_message(replay.output) == _final_message(live_log).replace(live_results, replay_results)
    assert _final_message(live_log).startswith("8 of 16 node(s) failed acceptance: gpu003, gpu005, gpu006, gpu009, "
                                               "gpu011, gpu012, gpu014, gpu016")
    # The demo's eight faults, each on its node and stage, and nothing else on a node.
    # report.html: the same page but for the run's own header (id, times, "replay of")
    live_view, replay_view = _report_view.build_view(live), _report_view.build_view(replay.results)
    for section in ("nodes", "fabric", "rounds", "curves", "workload"):
        assert replay_view[section] == live_view[section], section
    assert live_view["fabric"]["state"] == live_view["rounds"]["state"] == live_view["workload"]["state"] == "ok"
    assert (replay.dir / "report.html").stat().st_size > 0
    faulty = {"gpu003", "gpu005", "gpu006", "gpu009", "gpu011", "gpu012", "gpu014", "gpu016"}
    assert set(n for n, _s in _failed_pairs(live) if n != "(cluster)") == faulty


def test_the_demo_summary_counts_each_failed_node_once(demo):
    _work, live_dir, live_log = demo
    live = validated_results(live_dir / "results.json")
    (line,) = _summary(live_log)
    assert line.startswith("gpucluster.acceptance verdict: FAIL — 8 of 16 node(s) failed, %d check(s)"
                           % len(live["checks"]))
    assert live["verdict"]["nodes_failed"] == len(live["verdict"]["failed_nodes"]) == 8
    sdc = [c for c in live["checks"] if c["node"] == "gpu005" and c["status"] in ("fail", "error")]
    assert {c["stage"] for c in sdc} == {"sdc"} and {c["component"] for c in sdc} == {"GPU4 (00000000:9A:00.0)"}
    assert any(c["check"] == "sdc.consistency" and "intermittently" in c["message"] for c in sdc)
    assert "cluster" not in live["nodes"] and len(live["nodes"]) == 16
    assert os.path.exists(str(live_dir / "COMPLETE"))
