# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One spec validator (sim/gpusim/spec.py) and a 1,024-node cluster's files, written without daemons.

Starting 1,024 slurmds takes ~30 s and 8 GiB: that is bench/sim_scale.py, not the test suite.
"""
import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sim"))

REPO = Path(__file__).resolve().parents[3]

import sim_config  # noqa: E402  pylint: disable=wrong-import-position,import-error
import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
from gpusim import spec as tool_spec  # noqa: E402  pylint: disable=wrong-import-position,import-error

BIG = {"name": "sf1024", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 1024, "width": 4},
       "fabric": {"leaves": 32}, "topology": True,
       "faults": [{"kind": "degraded_uplink", "node": "gpu0033", "factor": 0.5},
                  {"type": "xid", "node": "gpu1024", "gpu": 3, "xid": 79}]}


def test_simcluster_uses_the_tools_validator():
    assert simcluster.SpecError is tool_spec.SpecError and simcluster.Spec is tool_spec.Spec
    assert simcluster.MAX_NODES == tool_spec.MAX_NODES == 1024
    spec = simcluster.validate_spec(json.loads(json.dumps(BIG)))
    assert spec.nodes[0] == "gpu0001" and spec.nodes[-1] == "gpu1024" and len(spec.reachable) == 1024
    assert spec.hostlist() == "gpu[0001-1024]" and spec.hostlist(32, 63) == "gpu[0033-0064]"
    # Normalized faults for the tools; the faults as written in data, so spec.json validates again.
    assert spec.faults[0]["leaf"] == "leaf02" and spec.faults[1]["kind"] == "xid"
    assert spec.data["faults"] == BIG["faults"]
    again = tool_spec.validate(json.loads(json.dumps(spec.data)))
    assert again.digest() == spec.digest() and again.faults == spec.faults


@pytest.mark.parametrize("change, message", [
    ({"nodes": {"prefix": "gpu", "count": 1025, "width": 4}}, "nodes.count: must be an integer from 1 to 1024, got 1025"),
    ({"nodes": {"prefix": "gpu", "count": 1024, "width": 3}}, "nodes.width: 3 is too narrow for node number 1024 (needs 4)"),
    ({"name": "Big"}, "name: must be lower-case letters"),
    ({"unreachable": ["gpu0001", "gpu0001"]}, "unreachable: lists a node twice"),
    ({"topology": "yes"}, "topology: must be true or false, got 'yes'"),
    ({"health_check": {"program": "hc.sh", "every": 5}}, "health_check.every: unknown key"),
    ({"tool_times": {"nvidia-smi": 1}}, "tool_times.nvidia-smi: unknown tool"),
])
def test_errors_name_the_file_and_the_key(tmp_path, change, message):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(dict(BIG, **change)))
    with pytest.raises(simcluster.SpecError) as info:
        simcluster.load_spec(path)
    assert str(info.value).startswith("%s: %s" % (path, message)), str(info.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(simcluster.SpecError, match=r"^%s: no such spec file$" % (tmp_path / "none.yml")):
        simcluster.load_spec(tmp_path / "none.yml")
    (tmp_path / "empty.yml").write_text("")
    with pytest.raises(simcluster.SpecError, match=r"empty\.yml: empty spec \(needs at least name, profile, nodes\)"):
        simcluster.load_spec(tmp_path / "empty.yml")


def test_health_check_program_is_relative_to_the_spec_file(tmp_path):
    path = tmp_path / "hc.json"
    path.write_text(json.dumps(dict(BIG, health_check={"program": "bin/hc.sh"})))
    spec = simcluster.load_spec(path)
    assert spec.health_check == {"program": str(tmp_path / "bin" / "hc.sh"), "interval": 15}


def test_1024_node_slurm_conf_topology_and_inventory(tmp_path):
    spec = simcluster.validate_spec(json.loads(json.dumps(BIG)))
    run = tmp_path / "run"
    sim_config.check_socket_paths(spec, run)
    base = sim_config.pick_ports(spec, run)
    assert sim_config.PORT_LOW <= base and base + 1025 <= sim_config.PORT_HIGH
    # never the rdma stage's perftest ports (its default base, one port per test of a round)
    defaults = yaml.safe_load((REPO / "roles" / "check_rdma" / "defaults" / "main.yml").read_text())
    assert sim_config.PERFTEST_PORTS[0] == defaults["check_rdma_base_port"]
    assert sim_config.PERFTEST_PORTS[1] <= sim_config.PORT_LOW
    for run_dir in ("/tmp/a", "/tmp/gcat/pool0/c1/run", str(run)):
        assert sim_config.pick_ports(spec, run_dir) >= sim_config.PERFTEST_PORTS[1]
    conf = sim_config.write_slurm_conf(spec, run, base, {"SLURM_CONF": str(run / "etc" / "slurm.conf")})
    lines = conf.read_text().splitlines()
    node_line = [line for line in lines if line.startswith("NodeName=")]
    assert node_line == ["NodeName=gpu[0001-1024] NodeHostname=%s NodeAddr=127.0.0.1 Port=[%d-%d] CPUs=2 "
                         "RealMemory=1000 State=UNKNOWN" % (sim_config.hostname(), base + 1, base + 1024)]
    assert "SlurmdTimeout=78" in lines and "MessageTimeout=58" in lines and "TopologyPlugin=topology/tree" in lines
    topo = (run / "etc" / "topology.conf").read_text().splitlines()
    assert topo[1] == "SwitchName=leaf01 Nodes=gpu[0001-0032]" and topo[32] == "SwitchName=leaf32 Nodes=gpu[0993-1024]"
    assert topo[33] == "SwitchName=spine Switches=%s" % ",".join("leaf%02d" % i for i in range(1, 33))
    hosts = simcluster.inventory(spec, run)["all"]["children"]["gpu_nodes"]["hosts"]
    assert len(hosts) == 1024 and hosts["gpu1024"]["slurm_topology_leaf"] == "leaf32"
    assert not (run / "pid").exists(), "nothing started"


def test_small_clusters_keep_slurms_defaults(tmp_path):
    spec = simcluster.validate_spec({"name": "sf4", "profile": "hgx_h100_sxm", "nodes": {"prefix": "n", "count": 4}})
    lines = sim_config.slurm_conf_lines(spec, tmp_path, 17000, host="h")
    assert "SlurmdTimeout=30" in lines and "MessageTimeout=10" in lines
    assert simcluster.start_timeout(4) == 30 and simcluster.start_timeout(1024) > 60


def test_run_directory_too_long_for_slurmds_sockets(tmp_path):
    spec = simcluster.validate_spec(json.loads(json.dumps(BIG)))
    with pytest.raises(simcluster.SimError, match="run directory path too long"):
        sim_config.check_socket_paths(spec, tmp_path / ("x" * 80))
