# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulator's unprivileged mode (a tenant without root): dmesg refused as util-linux refuses it
under kernel.dmesg_restrict=1, the fake journalctl -k readable only with journal: true; its call
log (every fake tool call, for tests that count what ran where); the slurm spec key."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

from gpusim import spec  # noqa: E402  pylint: disable=wrong-import-position
from gpusim.spec import SpecError  # noqa: E402  pylint: disable=wrong-import-position

BIN = REPO / "sim" / "bin"
XID = [{"kind": "xid", "node": "gpu001", "gpu": 3, "xid": 79}]


def _cluster(tmp_path, **extra):
    data = dict({"name": "tenant", "profile": "hgx_h100_sxm", "seed": 5,
                 "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1}, "faults": XID}, **extra)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    run_dir = tmp_path / "run"
    (run_dir / "gpusim").mkdir(parents=True)
    return path, run_dir


def _tool(cluster, name, *args, node="gpu001"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUCLUSTER_SIM"))}
    env.update(GPUCLUSTER_SIM_SPEC=str(cluster[0]), GPUCLUSTER_SIM_RUN=str(cluster[1]), GPUCLUSTER_SIM_NODE=node,
               GPUCLUSTER_SIM_PYTHON=sys.executable)
    return subprocess.run([str(BIN / name), *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_dmesg_refused_and_journal_by_membership(tmp_path):
    tenant = _cluster(tmp_path, unprivileged={"journal": False})
    refused = _tool(tenant, "dmesg")
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")
    journal = _tool(tenant, "journalctl", "-k", "-o", "short-iso", "--no-pager")
    assert journal.stdout == "-- No entries --\n" and journal.stderr.startswith("Hint: You are currently not seeing")
    member = _cluster(tmp_path / "m", unprivileged={"journal": True})
    lines = _tool(member, "journalctl", "-k", "-o", "short-iso", "--no-pager").stdout.splitlines()
    xid = [line for line in lines if "NVRM: Xid" in line]
    assert xid and " gpu001 kernel: NVRM: Xid (PCI:0000:5d:00): 79," in xid[0]
    assert lines[0][:4].isdigit() and lines[0][19] in "+-"  # 2026-01-05T10:00:00+0000
    root = _cluster(tmp_path / "r")
    assert "NVRM: Xid" in _tool(root, "dmesg").stdout


def test_call_log_counts_each_call_per_node(tmp_path):
    cluster = _cluster(tmp_path)
    _tool(cluster, "nvidia-smi", "topo", "-m", node="gpu002")
    _tool(cluster, "dmesg", node="gpu001")
    calls = (cluster[1] / "gpusim" / "calls.log").read_text().splitlines()
    assert calls == ["gpu002\tnvidia-smi\ttopo -m", "gpu001\tdmesg\t"]


@pytest.mark.parametrize("extra, message", [
    ({"unprivileged": "yes"}, "unprivileged: must be false or {journal: true|false}"),
    ({"unprivileged": {"root": True}}, "unprivileged: must be false or"),
    ({"slurm": {"partitions": {"gpu": ["gpu009"]}}}, "slurm.partitions.gpu: 'gpu009' is not a node"),
    ({"slurm": {"features": {"H100": ["gpu001"]}}}, "is not a usable name"),
    ({"slurm": {"gres": True}}, "slurm.gres: unknown key")])
def test_spec_refusals(extra, message):
    data = dict({"name": "t", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1}},
                **extra)
    with pytest.raises(SpecError, match=message.replace("{", r"\{").replace("}", r"\}").replace("|", r"\|")):
        spec.validate(data)
