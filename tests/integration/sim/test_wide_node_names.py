# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A cluster named like a 1,024-node one (gpu0001, width 4), small enough for the suite.

The real Slurm runs the fake tools on each node through srun, the way acceptance does; the
1,024-node start itself is bench/sim_scale.py (about 30 s and 8 GiB), not a test.
"""
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error

pytestmark = pytest.mark.integration  # tests/conftest.py fails fast without root or Slurm

SPEC = {"name": "sfwide", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 4, "width": 4},
        "fabric": {"leaves": 2},
        "faults": [{"kind": "gpu_missing", "node": "gpu0003", "gpu": 5}]}


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    root = tmp_path_factory.mktemp("wide")
    spec = root / "wide.json"
    spec.write_text(json.dumps(SPEC))
    cluster = simcluster.SimCluster(spec, run_dir=root / "run")
    with cluster:
        yield cluster
    assert not cluster.daemons.pids(cluster.state())["slurmd"] or not any(
        cluster.daemons.pids(cluster.state())["slurmd"].values())


def test_width_4_nodes_run_the_fake_tools_under_srun(wide):
    assert wide.sinfo() == {"gpu%04d" % i: "idle" for i in range(1, 5)}
    env = {"PATH": "%s:%s" % (REPO / "sim" / "bin", os.environ["PATH"]), "GPUCLUSTER_SIM_PYTHON": sys.executable}
    proc = wide.run(["srun", "-N", "4", "--ntasks-per-node=1", "--label", "nvidia-smi", "-L"], env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    gpus = {}
    for line in proc.stdout.splitlines():
        rank, text = line.split(": ", 1)
        gpus[int(rank)] = gpus.get(int(rank), 0) + text.startswith("GPU ")
    assert gpus == {0: 8, 1: 8, 2: 7, 3: 8}  # gpu0003 lost GPU 5
    names = wide.run(["srun", "-N", "4", "--ntasks-per-node=1", "printenv", "SLURMD_NODENAME"], timeout=60)
    assert sorted(names.stdout.split()) == ["gpu0001", "gpu0002", "gpu0003", "gpu0004"]
    leaves = (wide.run_dir / "etc" / "topology.conf").read_text()
    assert "SwitchName=leaf01 Nodes=gpu[0001-0002]" in leaves and "SwitchName=leaf02 Nodes=gpu[0003-0004]" in leaves
