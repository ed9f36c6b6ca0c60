# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slow_tool fault (sim/gpusim/spec.py, model.py, cli.py): one node's tool takes longer, its output
is unchanged, and a bad fault is one line naming the key."""
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sim"))

from gpusim import cli, model, spec  # noqa: E402  pylint: disable=wrong-import-position


def _spec(faults, tool_times=None):
    return spec.validate({"name": "slowt", "profile": "hgx_h100_sxm", "faults": faults,
                          "tool_times": tool_times or {},
                          "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1}})


def test_the_delay_adds_to_tool_times_on_that_node_only():
    data = _spec([{"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi_diag_r3", "seconds": 2},
                  {"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi_diag_r3", "seconds": 0.5}])
    assert model.node_state(data, "gpu001").tool_delay == {"dcgmi_diag_r3": 2.5}
    assert model.node_state(data, "gpu002").tool_delay == {}


def test_the_fake_tool_sleeps_the_extra_seconds_and_prints_the_same(monkeypatch, tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"name": "slowt", "profile": "hgx_h100_sxm", "nodes": {
        "prefix": "gpu", "count": 2, "width": 3, "start": 1},
        "faults": [{"kind": "slow_tool", "node": "gpu001", "tool": "nvidia_smi", "seconds": 0.3}]}))
    monkeypatch.setenv("GPUCLUSTER_SIM_SPEC", str(path))
    monkeypatch.setenv("GPUCLUSTER_SIM_RUN", str(tmp_path / "run"))
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    outputs = {}
    for node in ("gpu001", "gpu002"):
        monkeypatch.setenv("GPUCLUSTER_SIM_NODE", node)
        outputs[node] = cli.run_tool("nvidia-smi", ["-L"])[0]
        assert cli.main(["nvidia-smi", "-L"]) == 0
    assert outputs["gpu001"].extra_delay == pytest.approx(0.3) and outputs["gpu002"].extra_delay == 0.0
    assert slept == [pytest.approx(0.3)]  # tool_times gives nvidia_smi nothing; only gpu001 waits
    assert outputs["gpu001"].out.count("GPU ") == outputs["gpu002"].out.count("GPU ") == 8


@pytest.mark.parametrize("fault, key", [
    ({"kind": "slow_tool", "node": "gpu001", "tool": "nvidia-smi", "seconds": 1}, "faults[0].tool"),
    ({"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi", "seconds": 0}, "faults[0].seconds"),
    ({"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi", "seconds": "long"}, "faults[0].seconds"),
    ({"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi"}, "faults[0].seconds"),
])
def test_a_bad_fault_names_its_key(fault, key):
    with pytest.raises(spec.SpecError, match=r"^spec: %s: " % key.replace("[", r"\[").replace("]", r"\]")):
        _spec([fault])


def test_with_a_release_file_the_tool_waits_only_until_it_exists(tmp_path):
    release = tmp_path / "go"
    release.write_text("")
    started = time.monotonic()
    cli._slow_tool_wait(600.0, str(release))  # pylint: disable=protected-access
    assert time.monotonic() - started < 60  # released at once, not after 600 s
    data = _spec([{"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi_diag_r3", "seconds": 600,
                   "release_file": str(release)}])
    assert model.node_state(data, "gpu001").tool_release == {"dcgmi_diag_r3": str(release)}
    with pytest.raises(spec.SpecError, match=r"^spec: faults\[0\]\.release_file: "):
        _spec([{"kind": "slow_tool", "node": "gpu001", "tool": "dcgmi", "seconds": 1, "release_file": "rel/go"}])
