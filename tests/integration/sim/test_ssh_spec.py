"""The ``transport`` spec key and the SSH inventory (sim/sshnodes.py): pure functions, no daemons.

Not marked ``integration``: nothing here needs root, Slurm or sshd.
"""
import ipaddress
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
import sshnodes  # noqa: E402  pylint: disable=wrong-import-position,import-error
from gpusim import spec as tool_spec  # noqa: E402  pylint: disable=wrong-import-position,import-error

BASE = {"name": "t", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 256, "width": 3}}


def test_transport_defaults_to_local_and_is_validated():
    assert simcluster.validate_spec(dict(BASE)).transport == "local"
    assert simcluster.validate_spec(dict(BASE, transport="ssh")).transport == "ssh"
    with pytest.raises(simcluster.SpecError, match=r"transport: must be one of local, ssh, got 'rsh'"):
        simcluster.validate_spec(dict(BASE, transport="rsh"))
    # The fake tools read the same spec (spec.json) and accept the key too.
    data = simcluster.validate_spec(dict(BASE, transport="ssh")).data
    assert tool_spec.validate(data).data["transport"] == "ssh"
    with pytest.raises(tool_spec.SpecError, match="transport"):
        tool_spec.validate(dict(data, transport="rsh"))


def test_node_addresses_are_distinct_loopback_addresses_fixed_by_the_run_directory():
    nodes = ["gpu%03d" % i for i in range(1, 257)]
    first = sshnodes.addresses("/tmp/a/run", nodes)
    assert first == sshnodes.addresses("/tmp/a/run", nodes)
    assert len(set(first.values())) == 256
    loopback = ipaddress.IPv4Network("127.0.0.0/8")
    assert all(ipaddress.IPv4Address(a) in loopback and not a.startswith("127.0.") for a in first.values())
    other = sshnodes.addresses("/tmp/b/run", nodes)
    assert first != other
    assert sshnodes.login_user("/tmp/a/run") != sshnodes.login_user("/tmp/b/run")
    assert len(sshnodes.login_user("/tmp/a/run")) <= 32


def test_ssh_inventory_is_a_real_clusters_with_every_node_at_its_own_address():
    spec = simcluster.validate_spec(dict(BASE, nodes={"prefix": "gpu", "count": 4}, transport="ssh",
                                         unreachable=["gpu004"]))
    inv = simcluster.inventory(spec, "/tmp/x/run")
    nodes = inv["all"]["children"]["gpu_nodes"]
    assert nodes["vars"]["ansible_connection"] == "ssh" and nodes["vars"]["ansible_become"] is True
    assert nodes["vars"]["ansible_user"] == sshnodes.login_user("/tmp/x/run")
    assert nodes["vars"]["ansible_ssh_private_key_file"] == "/tmp/x/run/ssh/id_ed25519"
    assert "UserKnownHostsFile=/tmp/x/run/ssh/known_hosts" in nodes["vars"]["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in nodes["vars"]["ansible_ssh_common_args"]
    addresses = sshnodes.addresses("/tmp/x/run", spec.nodes)
    assert {h: v["ansible_host"] for h, v in nodes["hosts"].items()} == addresses
    # An unreachable node keeps its address: nothing listens there, the connection is refused.
    assert "ansible_port" not in nodes["hosts"]["gpu004"]
    assert inv["all"]["children"]["slurm_controller"]["hosts"]["localhost"]["ansible_connection"] == "local"
    local = simcluster.inventory(simcluster.validate_spec(dict(BASE)), "/tmp/x/run")
    assert local["all"]["children"]["gpu_nodes"]["vars"]["ansible_connection"] == "local"


def test_sshd_config_keeps_to_its_node():
    nodes = sshnodes.SSHNodes("/tmp/x/run", ["gpu001", "gpu002"])
    text = nodes._sshd_config("gpu002", "/tmp/x/run/ssh/nodes/gpu002/ssh_host_ed25519_key")
    assert "ListenAddress %s:%d" % (nodes.address["gpu002"], sshnodes.PORT) in text
    assert "PidFile /tmp/x/run/pid/sshd-gpu002.pid" in text and "UsePAM no" in text
    assert "AllowUsers %s" % nodes.user in text and "PermitRootLogin no" in text
    assert "SetEnv PATH=/home/%s/bin GPUCLUSTER_SIM_SSHD=/tmp/x/run/ssh/nodes/gpu002" % nodes.user in text
    assert "Include" not in text  # nothing from /etc/ssh
