"""read_node: a past run's raw outputs come back with their recorded exit codes and durations."""
import json

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._replay import read_node


def test_artifact_directory_with_results_json(tmp_path):
    (tmp_path / "raw" / "gpu001").mkdir(parents=True)
    (tmp_path / "raw" / "gpu001" / "dcgmi-diag.txt").write_text("partial")
    (tmp_path / "results.json").write_text(json.dumps(
        {"raw": {"gpu001": {"dcgmi-diag": {"rc": 124, "seconds": 600.0, "complete": True}}}}))
    got = read_node(str(tmp_path), "gpu001", ["dcgmi-diag", "ibstat"])
    assert got == {"tools": {"dcgmi-diag": {"output": "partial", "rc": 124, "seconds": 600.0, "complete": True}},
                   "errors": [], "replay": True}


def test_plain_folder_per_node_and_missing_node(tmp_path):
    (tmp_path / "gpu002").mkdir()
    (tmp_path / "gpu002" / "ibstat.txt").write_text("CA 'mlx5_0'\n")
    assert read_node(str(tmp_path), "gpu002", ["ibstat"])["tools"]["ibstat"]["rc"] == 0
    assert read_node(str(tmp_path), "gpu009", ["ibstat"])["errors"] == ["replay: no folder for gpu009 under %s" % tmp_path]
    assert read_node(str(tmp_path), "gpu002", ["dmesg"])["errors"] == ["replay: none of dmesg under %s/gpu002" % tmp_path]
    assert read_node(str(tmp_path), "gpu002", ["ibstat", "dmesg"])["errors"] == []  # dmesg: the stage says "not collected"
