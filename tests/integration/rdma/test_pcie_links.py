"""PCIe links on a simulated cluster with real Slurm: a GPU trained at x8 and a NIC trained at Gen4 are
named by the gpu_health and infiniband stages from what nvidia-smi -q and sysfs print, their cost is
seen by perftest (GPUDirect through that GPU, plain RDMA on that NIC), the other nodes pass, and a
replay of the captured outputs gives the same verdicts."""
import pytest

from harness import SimRun, playbook, spec

pytestmark = pytest.mark.integration

GPU_X8 = {"kind": "pcie_downtrained", "node": "gpu002", "gpu": 5, "width": 8}
NIC_GEN4 = {"kind": "pcie_downtrained", "node": "gpu003", "nic": "mlx5_2", "gen": 4}


def checks(run, names, status=("pass", "fail", "error", "skip")):
    return [c for c in run.results["checks"] if c["check"] in names and c["status"] in status]


def test_a_downtrained_gpu_and_nic_are_named_and_perftest_sees_what_they_cost(tmp_path):
    with SimRun(spec("pcielink", faults=[GPU_X8, NIC_GEN4], count=4), tmp_path) as sim:
        run = sim.acceptance("--tags", "topology,gpu_health,infiniband,rdma", "-e", "check_rdma_use_cuda=true")
        # (nodes that failed a per-node stage are left out of the pair stage: run it on its own too)
        pairs = sim.acceptance("--tags", "topology,rdma", "-e", "check_rdma_use_cuda=true")
    assert run.rc != 0
    bad = [(c["node"], c["check"], c["component"], c["message"])
           for c in checks(run, ("gpu.pcie_link", "ib.pcie_link"), ("fail", "error", "skip"))]
    assert bad == [
        ("gpu002", "gpu.pcie_link", "GPU5", "GPU5 (00000000:AB:00.0) PCIe link trained at x8, expected x16: "
                                            "Gen5 x8 (252 Gb/s) instead of Gen5 x16 (504 Gb/s)"),
        ("gpu003", "ib.pcie_link", "mlx5_2", "mlx5_2 PCIe link runs at Gen4, expected Gen5: Gen4 x16 (252 Gb/s) "
                                             "instead of Gen5 x16 (504 Gb/s): 252 Gb/s, less than the port's 400 Gb/s")]
    # every other GPU and HCA passes, and the pass says what the output showed
    passes = checks(run, ("gpu.pcie_link", "ib.pcie_link"), ("pass",))
    assert len(passes) == 8
    assert all("at PCIe Gen5 x16 (504 Gb/s), as expected (Gen5 x16)" in c["message"] for c in passes)
    tested = set(run.results["rdma"]["nics"])
    assert tested == {"gpu001", "gpu004"}
    # what the links cost: the NIC behind GPU5 of gpu002 (GPUDirect) and mlx5_2 of gpu003 are slow
    slow = sorted(c["component"] for c in pairs.results["checks"] if c["stage"] == "rdma" and c["status"] == "fail")
    assert slow == ["gpu002 mlx5_5", "gpu003 mlx5_2"]
    assert pairs.results["rdma"]["nics"]["gpu002"]["mlx5_5"]["gpu"] == 5
    # The verdicts stand on the captured outputs alone.
    replay = playbook(sim.inventory, tmp_path / "replayed", "--tags", "gpu_health,infiniband",
                      "-e", "acceptance_replay_dir=%s" % run.dir)
    assert [(c["node"], c["check"], c["component"], c["message"])
            for c in checks(replay, ("gpu.pcie_link", "ib.pcie_link"), ("fail", "error", "skip"))] == bad
