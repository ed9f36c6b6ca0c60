"""bench/results_scale.py --template reads a run directory whose raw index leaves paths out."""
import json
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import results_scale  # noqa: E402  pylint: disable=wrong-import-position


def test_a_template_without_raw_paths_is_read_from_the_conventional_places(tmp_path):
    # results.json's raw index carries rc and seconds; the path is left out where it is the
    # convention raw/<node>/<tool>.txt (what the callback writes today).
    (tmp_path / "raw" / "gpu001").mkdir(parents=True)
    (tmp_path / "raw" / "gpu002").mkdir(parents=True)
    (tmp_path / "raw" / "_fabric").mkdir(parents=True)
    (tmp_path / "raw" / "gpu001" / "ibstat.txt").write_text("CA 'mlx5_0'\n")
    (tmp_path / "raw" / "gpu002" / "ibstat.txt").write_text("CA 'mlx5_1'\n")
    (tmp_path / "raw" / "_fabric" / "r1-g1.txt").write_text("# srun ...\n#  size  count\n")
    # the launcher preflight's outputs, answered by the bench's fake srun as the template's srun did
    (tmp_path / "raw" / "_fabric" / "preflight-mpi-list.txt").write_text("$ srun --mpi=list\nMPI plugin types are...\n")
    (tmp_path / "raw" / "_fabric" / "preflight-2-ranks.txt").write_text(
        "$ srun --nodelist=gpu001,gpu002 -N2 all_reduce_perf -b 8 -e 8 -f 2 -n 1 -w 0 -c 1 -g 1\n# nccl-tests\n")
    document = {
        "raw": {"gpu001": {"ibstat": {"seconds": 0.1}},
                "gpu002": {"ibstat": {"seconds": 0.1, "rc": 1}},
                "_fabric": {"r1-g1": {"seconds": 1.0}}},
        "verdict": {"failed_nodes": ["gpu002"]},
        "fabric": {"rounds": [{"groups": [{"nodes": ["gpu001", "gpu002"], "busbw": 350.0, "raw": "r1-g1"}]}]},
    }
    (tmp_path / "results.json").write_text(json.dumps(document))
    nodes, good, bad, pair_text, _results = results_scale.load_template(str(tmp_path))
    assert nodes["gpu001"]["ibstat"]["output"] == "CA 'mlx5_0'\n"
    assert nodes["gpu002"]["ibstat"]["output"] == "CA 'mlx5_1'\n" and nodes["gpu002"]["ibstat"]["rc"] == 1
    assert (good, bad) == (["gpu001"], ["gpu002"])
    assert pair_text["pair"] == "#  size  count\n"
    assert pair_text["mpi-list"] == "MPI plugin types are...\n" and pair_text["launch"] == "# nccl-tests\n"
    assert pair_text["launch-nodes"] == ["gpu001", "gpu002"] and pair_text["launch-args"][:2] == ["-b", "8"]
