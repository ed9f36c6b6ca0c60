"""Progress on the console: task names per stage, a line per node and stage, the heartbeat of a
long stage, what to do next, and --check that runs no tool (simulated clusters named pg*)."""
import re

import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration


def test_stage_names_node_lines_heartbeat_and_next_steps(tmp_path):
    faults = [{"kind": "nvlink_down", "node": "gpu002", "gpus": [2, 5]},
              {"kind": "ecc_uncorrectable", "node": "gpu003", "gpu": 1, "count": 2}]
    data = spec("pgrun", faults=faults, count=3)
    data["tool_times"]["dcgmi_diag_r1"] = 2.5  # a long stage for a 1 s heartbeat
    with SimRun(data, tmp_path) as sim:
        run = sim.acceptance("--skip-tags", "fabric,workload,sdc,nccl_single_node",
                             "-e", "check_dcgm_level=1", "-e", "check_dcgm_levle=3",
                             extra_env={"GPUCLUSTER_HEARTBEAT_S": "1"})
    out = run.output
    assert run.rc != 0, out[-3000:]
    # Each stage's collect task names its stage, tools and node count.
    assert "TASK [gpucluster.acceptance.collect : Stage dcgm: dcgmi-diag (3 nodes)]" in out, out[-3000:]
    assert re.search(r"TASK \[gpucluster.acceptance.collect : Stage topology: \S+ \(3 nodes\)\]", out)
    # One line per node per stage as it finishes; the failing one with its first message.
    assert re.search(r"^gpu002 topology FAIL: .*GPU2", out, re.M), out[-3000:]
    assert re.search(r"^gpu001 topology pass$", out, re.M)
    assert re.search(r"^gpu003 gpu_health FAIL: .*GPU1", out, re.M)
    for line in out.splitlines():
        if re.match(r"^gpu00\d (preflight|topology|gpu_health|dcgm|infiniband) ", line):
            assert len(line) <= 160, line
    assert len(re.findall(r"^gpu00\d dcgm ", out, re.M)) == 3
    # The heartbeat while dcgm runs (2.5 s per node): each node at its own pace, one line for the
    # play counting node stages (3 nodes x the 5 stages the tags leave), not one per stage.
    beats = re.findall(r"^per-node stages, each node at its own pace: 0m0\ds, (\d+)/15 node stages done$", out, re.M)
    assert beats, out[-3000:]
    assert not re.search(r"^(topology|preflight|dcgm): 0m0\ds", out, re.M)
    # The misspelled variable is reported with the name it was meant to be.
    assert "unknown variable check_dcgm_levle (did you mean check_dcgm_level?)" in " ".join(out.split())
    # What to do next, per kind of failure.
    summary = out[out.index("gpucluster.acceptance verdict:"):]
    assert "next steps:" in summary
    assert re.search(r"^  gpu002: reseat the GPU baseboard / NVLink bridges; RMA the baseboard", summary, re.M), summary
    assert re.search(r"^  gpu003: RMA the GPU \(uncorrectable ECC errors\)", summary, re.M), summary
    assert run.bad() >= {("gpu002", "topology"), ("gpu003", "gpu_health")}


def test_check_mode_runs_no_tool_and_prints_the_plan(tmp_path):
    with SimRun(spec("pgcheck", count=2), tmp_path) as sim:
        state = sim.run_dir / "gpusim"

        def snapshot():  # every fake tool call reads and rewrites its node's state file
            return dict((p.name, (p.stat().st_mtime_ns, p.read_text())) for p in sorted(state.glob("*.json")))
        before = snapshot()
        run = sim.acceptance("--check")
        after = snapshot()
        # The control: the same stage run for real does leave its trace.
        real = sim.acceptance("--tags", "topology")
        assert real.rc == 0 and snapshot() != after, real.output[-2000:]
    out = run.output
    assert run.rc == 0, out[-3000:]
    assert before and after == before  # no fake tool ran on any node
    assert run.dir is None  # nothing measured: no run directory
    assert "check mode: dcgm would run dcgmi diag -r 3 -j on gpu[001-002]" in out, out[-3000:]
    assert "check mode: topology would run nvidia-smi topo -m on gpu[001-002]" in out
    assert re.search(r"^check mode: workload would run srun --nodes=2 .*gpucluster_ddp_train.py.* on gpu\[001-002\]$",
                     out, re.M), out[-3000:]
    assert re.search(r"^check mode: infiniband would run sh -c grep -H .*; ibstat; .* on gpu\[001-002\]$", out, re.M), out[-3000:]
    assert re.search(r"^check mode: fabric would run nccl-tests from the controller, first round: \d+ job\(s\) .* on gpu\[001-002\]$",
                     out, re.M), out[-3000:]
    assert "gpucluster.acceptance check mode: nothing was run or measured, no verdict" in out
    assert re.search(r"^  dcgm on gpu\[001-002\] \(2 node\(s\)\): dcgmi diag -r 3 -j$", out, re.M)
    # How long it would take: per stage (DCGM level 3 ~35 min on an 8-GPU node) and in all.
    assert "expected duration (typical times of an 8-GPU H100/H200 node; at most: the tools' timeouts):" in out
    assert re.search(r"^  dcgm: ~35m \(at most \d+h\d+m\)$", out, re.M), out[-3000:]
    assert re.search(r"^  workload: ~\d+m\d*s? \(at most 15m\)$", out, re.M), out[-3000:]
    assert re.search(r"^  total: ~\d+m \(at most \d+h\d+m\), every node at once; plus rdma, fabric: rounds", out, re.M)
    assert "check mode: nothing was run or measured, no verdict" in out
    assert "verdict: PASS" not in out and "verdict: FAIL" not in out
    assert "Traceback" not in out
