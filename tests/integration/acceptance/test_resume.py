"""A run killed in the middle of the dcgm stage, then resumed in its own directory
(-e acceptance_resume=artifacts/<run-id>): the per-node stages it had judged are not run again (the
simulator's call log counts every tool call), the verdict equals an uninterrupted run's; resuming
is refused for a live run's directory, another profile or node set, and a complete run."""
import json
import os
import signal

import pytest

from harness import SimRun, playbook, playbook_started, run_dirs, spec, validated_results, wait_for

pytestmark = pytest.mark.integration

SKIP = ("--skip-tags", "fabric,workload,rdma,sdc,nvlink")


def _calls(sim):
    """[(node, tool, args)] of every fake tool call so far."""
    path = sim.run_dir / "gpusim" / "calls.log"
    if not path.exists():
        return []
    return [tuple((line.split("\t") + ["", ""])[:3]) for line in path.read_text().splitlines() if line]


def _judged(document):
    """{(node, stage)} whose checks a results.json holds."""
    return set((c["node"], c["stage"]) for c in document["checks"] if c.get("node") and not c["node"].startswith("_"))


def _findings(document):
    return sorted((c["node"], c["stage"], c["check"], c["status"], c["message"]) for c in document["checks"]
                  if c["status"] in ("fail", "error"))


def _holding(sim, node):
    return any(n == node and tool == "dcgmi" and args.startswith("diag") for n, tool, args in _calls(sim))


@pytest.mark.parametrize("transport", ["ssh", "srun"])
def test_killed_in_dcgm_then_resumed_runs_only_what_was_left(tmp_path, transport):
    """ssh: the nodes' connections (each at its own pace); srun: one Slurm step per stage."""
    skip = SKIP + (("-e", "acceptance_transport=srun") if transport == "srun" else ())
    release = tmp_path / "release-dcgm"
    faults = [{"kind": "ecc_uncorrectable", "node": "gpu001", "gpu": 2},
              {"kind": "slow_tool", "node": "gpu003", "tool": "dcgmi_diag_r3", "seconds": 900,
               "release_file": str(release)}]
    with SimRun(spec("resume" + transport, count=4, faults=faults), tmp_path) as sim:
        release.write_text("")  # the uninterrupted run: nothing held
        whole = sim.acceptance(*skip)
        assert whole.dir is not None, whole.output[-3000:]
        release.unlink()

        started = playbook_started(sim.inventory, sim.artifacts, *skip)
        try:
            wait_for(lambda: _holding(sim, "gpu003") and len(run_dirs(sim.artifacts)) == 2, 300,
                     "gpu003 held in its dcgm diag")
            run_dir = run_dirs(sim.artifacts)[-1]
            wait_for(lambda: (run_dir / "results.json").exists() and ("gpu004", "gpu_health") in _judged(
                json.loads((run_dir / "results.json").read_text())), 300, "results.json with the first stages")
            # A directory a live run writes is never resumed.
            live = playbook(sim.inventory, tmp_path / "refused", *skip, "-e", "acceptance_resume=%s" % run_dir)
            assert live.rc != 0 and "is being written by a live run" in live.output, live.output[-3000:]
            assert len(run_dirs(sim.artifacts)) == 2 and live.dir is None  # the refused resume made no directory
        finally:
            os.kill(started.pid, signal.SIGKILL)
            started.wait(timeout=60)
        before = json.loads((run_dir / "results.json").read_text())
        assert before["run"]["state"] == "running" and (run_dir / "INCOMPLETE").exists()
        judged_before = _judged(before)
        assert ("gpu003", "dcgm") not in judged_before and ("gpu003", "topology") in judged_before
        calls_before = len(_calls(sim))
        release.write_text("")

        resumed = sim.acceptance(*skip, "-e", "acceptance_resume=%s" % run_dir)
        assert len(run_dirs(sim.artifacts)) == 2, "a resume writes into the run's own directory"
        after = validated_results(run_dir / "results.json")
        assert (run_dir / "COMPLETE").exists() and not (run_dir / "INCOMPLETE").exists()
        assert len(after["run"]["resumed"]) == 1 and after["run"]["id"] == before["run"]["id"]
        assert after["run"]["started"] == before["run"]["started"]

        new_calls = _calls(sim)[calls_before:]
        assert ("gpu003", "dcgmi") in set((n, t) for n, t, a in new_calls if a.startswith("diag")), new_calls[:20]
        # Stages judged before the kill: none of their tools ran again on their nodes. (topo -m runs
        # in the topology stage and, for its HCAs' GPU affinity, in the infiniband stage.)
        for node in ("gpu001", "gpu002", "gpu003", "gpu004"):
            topo = [c for c in new_calls if c[0] == node and c[1] == "nvidia-smi" and c[2].startswith("topo")]
            expected_topo = sum((node, stage) not in judged_before for stage in ("topology", "infiniband"))
            assert len(topo) == expected_topo, (node, topo, sorted(judged_before))
            health = [c for c in new_calls if c[0] == node and (c[1] == "dmesg" or c[1:3] == ("nvidia-smi", "-q"))]
            assert not health or (node, "gpu_health") not in judged_before, (node, health)
        assert all(("gpu%03d" % n, "topology") in judged_before for n in (1, 2, 3, 4))

        assert resumed.rc == whole.rc
        assert after["verdict"]["status"] == whole.results["verdict"]["status"] == "fail"
        assert _findings(after) == _findings(whole.results)
        assert resumed.bad() == whole.bad() and ("gpu001", "gpu_health") in whole.bad()

        # A complete run changes nothing when resumed.
        stamp = (run_dir / "results.json").stat().st_mtime_ns
        again = playbook(sim.inventory, tmp_path / "refused", *skip, "-e", "acceptance_resume=%s" % run_dir)
        assert again.rc != 0 and "is a complete run (verdict fail): nothing to resume" in again.output
        assert (run_dir / "results.json").stat().st_mtime_ns == stamp and len(run_dirs(sim.artifacts)) == 2
        assert again.dir is None


def test_resume_refuses_another_profile_or_node_set(tmp_path):
    with SimRun(spec("resumebad", count=2), tmp_path) as sim:
        run_dir = tmp_path / "old"
        run_dir.mkdir()
        (run_dir / "results.json").write_text(json.dumps({"run": {
            "id": "old", "playbook": "acceptance.yml", "profile": "hgx_b200", "state": "running", "started": "x",
            "targets": ["gpu001", "gpu009"]}, "checks": [], "raw": {}}))
        run = playbook(sim.inventory, sim.artifacts, "--tags", "topology", "-e", "acceptance_resume=%s" % run_dir)
        assert run.rc != 0 and run.dir is None, run.output[-2000:]
        text = " ".join(run.output.split())
        assert "its profile is hgx_b200, not hgx_h100_sxm" in text, text[-2000:]
        assert "not in this inventory: gpu009" in text and "not in the run: gpu002" in text
        missing = playbook(sim.inventory, sim.artifacts, "--tags", "topology", "-e",
                           "acceptance_resume=%s" % (tmp_path / "nowhere"))
        assert missing.rc != 0 and "is not a directory" in missing.output
