# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated cluster's ib_write_bw / ib_read_bw (sim/gpusim/perftest.py): a real server and
client meeting over TCP, perftest's layout byte for byte against real outputs
(tests/fixtures/perftest), the nic_slow fault, and perftest's own failure lines."""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sim"))

from gpusim import perftest, spec  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import parse_perftest  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "perftest"
TOOL = REPO / "sim" / "bin" / "ib_write_bw"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    data = {"name": "ptfake", "profile": "hgx_h100_sxm", "seed": 3,
            "nodes": {"prefix": "gpu", "count": 3, "width": 3, "start": 1},
            "faults": [{"kind": "nic_slow", "node": "gpu002", "nic": "mlx5_3", "factor": 0.5},
                       {"kind": "nic_down", "node": "gpu003", "nic": "mlx5_1"}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    return path


def env_for(spec_path, node):
    env = dict(os.environ, GPUCLUSTER_SIM_SPEC=str(spec_path), GPUCLUSTER_SIM_NODE=node,
               GPUCLUSTER_SIM_PYTHON=sys.executable)
    env.pop("SLURMD_NODENAME", None)
    return env


def start_server(spec_path, node, nic, port, tmp_path):
    out = tmp_path / ("server-%s-%s.txt" % (node, port))
    handle = out.open("w")
    proc = subprocess.Popen([str(TOOL), "-d", nic, "-p", str(port), "--report_gbits", "-F"], stdout=handle,
                            stderr=subprocess.STDOUT, env=env_for(spec_path, node))
    deadline = time.monotonic() + 60
    while "Waiting for client to connect" not in out.read_text():
        assert proc.poll() is None, out.read_text()
        assert time.monotonic() < deadline, "the server never said it was waiting"
        time.sleep(0.05)
    return proc, out, handle


def client(spec_path, node, nic, port, server):
    return subprocess.run([str(TOOL), "-d", nic, "-p", str(port), "--report_gbits", "-F", server],
                          capture_output=True, text=True, env=env_for(spec_path, node), timeout=60, check=False)


def pair(spec_path, tmp_path, server, client_node, nic):
    port = free_port()
    proc, out, handle = start_server(spec_path, server, nic, port, tmp_path)
    try:
        done = client(spec_path, client_node, nic, port, server)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        handle.close()
    return done, out.read_text(), port


def test_server_and_client_meet_and_both_print_the_measured_row(cluster, tmp_path):
    done, served, _port = pair(cluster, tmp_path, "gpu001", "gpu003", "mlx5_3")
    assert done.returncode == 0, done.stderr
    mine, theirs = parse_perftest(done.stdout), parse_perftest(served)
    assert mine["errors"] == [] and theirs["errors"] == []
    assert (mine["role"], theirs["role"]) == ("client", "server")
    assert mine["device"] == theirs["device"] == "mlx5_3" and mine["link_type"] == "IB"
    assert mine["bw_average"] == theirs["bw_average"]
    assert 380 < mine["bw_average"] < 400  # 400 Gb/s NDR, one QP, 64 KiB messages
    # Each end prints its own QP first: the client's local address is the server's remote one.
    local = [l for l in done.stdout.splitlines() if l.startswith(" local address")][0]
    assert local.replace("local", "remote") in served


def test_a_slow_nic_halves_its_pairs_only(cluster, tmp_path):
    slow, _served, _port = pair(cluster, tmp_path, "gpu001", "gpu002", "mlx5_3")
    other, _served, _port = pair(cluster, tmp_path, "gpu001", "gpu002", "mlx5_2")
    ratio = parse_perftest(slow.stdout)["bw_average"] / parse_perftest(other.stdout)["bw_average"]
    assert ratio == pytest.approx(0.5, abs=0.01)


def test_layout_is_perftests_byte_for_byte():
    real = (FIXTURES / "perftest_273_write_postlist_gbits.txt").read_text().splitlines()
    # REPORT_FMT with the values of linux-rdma/perftest#273
    assert perftest.report_row(8, 224958464, 0.0, 0.48, 7.498617) == real[17]
    assert perftest.HEADER_G == real[16] and perftest.RULE == real[15]
    header = perftest._header("RDMA_Write", type("Nic", (), {"name": "ib0"})(), {}, client=True).splitlines()
    for line in ("Dual-port       : OFF\t\tDevice         : ib0", "Number of qps   : 1\t\tTransport type : IB",
                 "Connection type : RC\t\tUsing SRQ      : OFF", "TX depth        : ", "Mtu             : 4096[B]"):
        assert any(h.startswith(" " + line) for h in header), line
    assert " rdma_cm QPs\t : OFF" in header and real[13] == " rdma_cm QPs\t : OFF"


def test_a_client_without_server_fails_as_perftest_does(cluster):
    port = free_port()
    done = client(cluster, "gpu002", "mlx5_0", port, "gpu001")
    real = (FIXTURES / "perftest_228_client_couldnt_connect.txt").read_text().splitlines()
    assert done.returncode != 0
    assert done.stderr.splitlines() == ["Couldn't connect to gpu001:%d" % port, real[2]]
    assert parse_perftest(done.stderr)["errors"]


def test_a_down_port_is_refused_before_any_connection(cluster):
    done = client(cluster, "gpu003", "mlx5_1", free_port(), "gpu001")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == " Port number 1 state is Down"
    missing = client(cluster, "gpu001", "mlx5_9", free_port(), "gpu002")
    assert missing.stderr.splitlines()[:2] == ["IB device mlx5_9 not found", " Unable to find the Infiniband/RoCE device"]


def test_nic_slow_fault_is_validated():
    base = {"name": "ptbad", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": 2}}
    with pytest.raises(spec.SpecError, match=r"faults\[0\]\.factor: must be a number > 0 and <= 1"):
        spec.validate(dict(base, faults=[{"kind": "nic_slow", "node": "gpu001", "nic": "mlx5_0", "factor": 2}]))
    with pytest.raises(spec.SpecError, match=r"faults\[0\]\.nic: 'mlx5_8' is not a NIC"):
        spec.validate(dict(base, faults=[{"kind": "nic_slow", "node": "gpu001", "nic": "mlx5_8", "factor": 0.5}]))
