# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated storage the checkpoint and loader probes read from gpusim-storage-hook (sim/gpusim/cli.py):
slow_storage by path, the shared file system's aggregate and the writers' folder."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sim"))

from gpusim import cli, model, spec  # noqa: E402  pylint: disable=wrong-import-position


def _hook(faults, node="gpu001", run_dir="/run/sim"):
    data = spec.validate({"name": "ckptu", "profile": "hgx_h100_sxm", "faults": faults,
                          "nodes": {"prefix": "gpu", "count": 2, "width": 3, "start": 1}})
    return json.loads(cli.storage_hook(model.node_state(data, node), data, run_dir).out)


def test_default_path_slows_the_nvme_for_the_loader_and_the_checkpoint():
    hook = _hook([{"kind": "slow_storage", "node": "gpu001", "factor": 0.2}])
    assert hook["read_bytes_per_s"] == pytest.approx(0.4e9)  # the loader's reads, as before
    model_ = hook["checkpoint"]
    assert model_["local_write_bytes_per_s"] == pytest.approx(0.4e9)
    assert model_["local_read_bytes_per_s"] == pytest.approx(0.4e9) and model_["shared_factor"] == 1.0
    assert model_["writers_dir"] == "/run/sim/gpusim/checkpoint-writers"
    assert _hook([{"kind": "slow_storage", "node": "gpu001", "factor": 0.2}], node="gpu002")["checkpoint"][
        "local_write_bytes_per_s"] == 2e9


@pytest.mark.parametrize("path, local, shared", [("shared", 2e9, 0.5), ("all", 1e9, 0.5), ("local", 1e9, 1.0)])
def test_path_chooses_what_is_slow(path, local, shared):
    hook = _hook([{"kind": "slow_storage", "node": "gpu001", "factor": 0.5, "path": path}])
    assert hook["checkpoint"]["local_write_bytes_per_s"] == pytest.approx(local)
    assert hook["checkpoint"]["shared_factor"] == pytest.approx(shared)
    assert hook["read_bytes_per_s"] == pytest.approx(local)
    assert hook["checkpoint"]["shared_write_bytes_per_s"] == 4e9  # the file system's aggregate is everyone's


def test_an_unknown_path_is_named():
    with pytest.raises(spec.SpecError, match=r"faults\[0\]\.path: must be one of local, shared, all, got 'nvme'"):
        _hook([{"kind": "slow_storage", "node": "gpu001", "factor": 0.5, "path": "nvme"}])
