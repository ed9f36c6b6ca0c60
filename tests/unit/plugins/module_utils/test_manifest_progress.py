"""_manifest_progress on real trees (tmp_path): what has arrived, the rate, the ETA and the cost."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import create_manifest, load_manifest
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest_progress import progress

from test_manifest import tree


def test_progress_rate_eta_and_cost_from_observations(tmp_path):
    src = tree(tmp_path / "src", sizes=(1000, 1000, 1000, 1000))
    create_manifest(str(src), str(tmp_path / "m"))
    manifest = load_manifest(str(tmp_path / "m"))
    dst = tmp_path / "dst" / "d0"
    dst.mkdir(parents=True)
    state = str(tmp_path / "progress.jsonl")
    (dst / "f0.bin").write_bytes((src / "d0" / "f0.bin").read_bytes())
    first = progress(str(tmp_path / "dst"), manifest, state, window_s=600, price_per_gb=100.0, now=1000.0)
    assert (first["files_complete"], first["bytes_arrived"], first["rate_bytes_per_s"], first["eta_s"]) == (1, 1000, None, None)
    (dst / "f2.bin").write_bytes(b"z" * 500)  # half written
    second = progress(str(tmp_path / "dst"), manifest, state, window_s=600, price_per_gb=100.0, now=1010.0)
    assert second["bytes_arrived"] == 1500 and second["rate_bytes_per_s"] == 50.0
    assert second["eta_s"] == 2500 / 50.0 and second["remaining_cost"] == round(2500 / 1e9 * 100.0, 2)
    # outside the window the old observation no longer counts
    third = progress(str(tmp_path / "dst"), manifest, state, window_s=5, now=1100.0)
    assert third["rate_bytes_per_s"] is None
