"""The simulated nodes over real SSH (spec ``transport: ssh``, sim/sshnodes.py): one sshd per node.

A 16-node cluster started by sim/clusterctl: each node's own sshd on its own loopback address
with its own host key, an unprivileged login user whose PATH holds only sudo, become through sudo,
a wrong host key refused, a dead sshd restarted, and nothing left after `clusterctl stop`.
Needs root, Slurm and openssh-server + sudo (tools/install-system-deps.sh). Synchronisation is by
polling with deadlines.
"""
import ipaddress
import json
import os
import pwd
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CLUSTERCTL = REPO / "sim" / "clusterctl"
sys.path.insert(0, str(REPO / "sim"))

import simcluster  # noqa: E402  pylint: disable=wrong-import-position,import-error
import sshnodes  # noqa: E402  pylint: disable=wrong-import-position,import-error
from harness import ansible_env, wait_for  # noqa: E402  pylint: disable=wrong-import-position,import-error

pytestmark = pytest.mark.integration

COUNT = 16
NODES = ["gpu%03d" % i for i in range(1, COUNT + 1)]
# Whole `clusterctl start` of 16 SSH nodes (slurmctld, 16 slurmd, 17 keys, 16 sshd): measured
# 0.4-0.9 s on the 2-core development machine; the bound leaves room for a loaded machine.
START_BOUND_S = 20


def _prerequisites():
    missing = [str(p) for p in (sshnodes.SSHD, sshnodes.SUDO) if not p.exists()]
    if missing:
        pytest.fail("SSH nodes need %s: run tools/install-system-deps.sh" % ", ".join(missing), pytrace=False)


def clusterctl(*args, check=True, timeout=120):
    proc = subprocess.run([sys.executable, str(CLUSTERCTL), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("clusterctl %s: rc=%d\n%s%s" % (
            " ".join(map(str, args)), proc.returncode, proc.stdout, proc.stderr))
    return proc


def ansible(inventory, pattern, *args, timeout=120):
    """ansible ad-hoc with -o: {host: (status word, output)} plus the whole output."""
    env = ansible_env(Path(inventory).parent / "artifacts")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible"), "-i", str(inventory), pattern, "-o", *args],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO), check=False)
    hosts = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"^(\S+) \| (\w+)[!:]?(.*)$", line)
        if match:
            # -o prints one line per host: the output's newlines (CRLF under ssh -tt) escaped.
            hosts[match.group(1)] = (match.group(2), match.group(3).replace("\\r", "").replace("\\n", "\n"))
    return hosts, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    _prerequisites()
    base = tmp_path_factory.mktemp("ssh16")
    spec = {"name": "ssh16", "profile": "hgx_h100_sxm", "nodes": {"prefix": "gpu", "count": COUNT, "width": 3},
            "fabric": {"leaves": 2, "spines": 1, "rails": 8}, "seed": 3, "transport": "ssh"}
    spec_path = base / "ssh16.yml"
    spec_path.write_text(yaml.safe_dump(spec))
    run_dir = base / "run"
    started = time.monotonic()
    proc = clusterctl("start", spec_path, "--run-dir", run_dir)
    wall = time.monotonic() - started
    inventory = Path(clusterctl("inventory", spec_path, "--run-dir", run_dir, "--out", base / "inv").stdout.strip())
    state = json.loads((run_dir / "state.json").read_text())
    yield {"spec": spec_path, "run": run_dir, "start": proc, "wall": wall, "inventory": inventory, "state": state,
           "nodes": sshnodes.SSHNodes.from_state(run_dir, state["ssh"])}
    clusterctl("stop", "--run-dir", run_dir, check=False)


def test_sixteen_sshd_start_in_bounded_time_each_on_its_own_address(cluster):
    seconds = float(re.search(r"([0-9.]+) s; source", cluster["start"].stderr).group(1))
    sys.stderr.write("16 SSH nodes: clusterctl start %.2f s (command %.2f s)\n" % (seconds, cluster["wall"]))
    assert seconds < START_BOUND_S and cluster["wall"] < START_BOUND_S + 5
    ssh = cluster["state"]["ssh"]
    addresses = [ssh["nodes"][n]["address"] for n in NODES]
    assert len(set(addresses)) == COUNT
    for node, address in zip(NODES, addresses):
        ip = ipaddress.IPv4Address(address)
        assert ip in ipaddress.IPv4Network("127.0.0.0/8") and address != "127.0.0.1"
        assert sshnodes.listening(address, ssh["port"]), node
        pid = ssh["nodes"][node]["pid"]
        assert simcluster.alive(pid) and "nodes/%s/sshd_config" % node in " ".join(simcluster._cmdline(pid))
    hostkeys = [(cluster["run"] / "ssh" / "nodes" / n / "ssh_host_ed25519_key.pub").read_text().split()[1]
                for n in NODES]
    assert len(set(hostkeys)) == COUNT
    known = (cluster["run"] / "ssh" / "known_hosts").read_text().splitlines()
    assert ["[%s]:%d" % (a, ssh["port"]) for a in addresses] == [line.split()[0] for line in known]
    status = json.loads(clusterctl("status", "--run-dir", cluster["run"]).stdout)
    assert status["running"] and all(status["sshd"][n]["alive"] for n in NODES)


def test_inventory_reaches_the_nodes_as_a_real_cluster_is(cluster):
    data = yaml.safe_load(cluster["inventory"].read_text())
    group = data["all"]["children"]["gpu_nodes"]
    user = cluster["state"]["ssh"]["user"]
    assert group["vars"]["ansible_connection"] == "ssh" and group["vars"]["ansible_become"] is True
    assert group["vars"]["ansible_user"] == user and group["vars"]["ansible_port"] == sshnodes.PORT
    assert "StrictHostKeyChecking=yes" in group["vars"]["ansible_ssh_common_args"]
    assert group["vars"]["ansible_host_key_checking"] is True
    assert {h: v["ansible_host"] for h, v in group["hosts"].items()} == \
        {n: i["address"] for n, i in cluster["state"]["ssh"]["nodes"].items()}
    assert data["all"]["children"]["slurm_controller"]["hosts"]["localhost"]["ansible_connection"] == "local"
    entry = pwd.getpwnam(user)
    assert entry.pw_uid != 0 and entry.pw_shell == "/bin/bash"


def test_each_host_is_its_own_sshd_the_login_user_has_no_python_and_become_is_root(cluster):
    # Without become: the login user's own session, marked by that node's sshd.
    hosts, output = ansible(cluster["inventory"], "gpu_nodes", "-e", "ansible_become=false", "-m", "raw",
                            "-a", 'echo "mark=$GPUCLUSTER_SIM_SSHD path=$PATH"; command -v mkdir sudo >/dev/null'
                                  ' && echo has-commands; command -v python3 python python3.11 || echo no-python')
    assert sorted(hosts) == NODES, output
    home = Path(sshnodes.HOME_ROOT) / cluster["state"]["ssh"]["user"]
    for node in NODES:
        status, text = hosts[node]
        assert status == "CHANGED", output
        assert "mark=%s " % (cluster["run"] / "ssh" / "nodes" / node) in text
        assert "path=%s\n" % (home / "bin") in text and "has-commands" in text and "no-python" in text
    # With become (the inventory's): root through sudo, whose secure_path is not the login PATH.
    hosts, output = ansible(cluster["inventory"], "gpu_nodes", "-m", "raw", "-a", 'echo "uid=$(id -u) path=$PATH"')
    assert all(hosts[n][0] == "CHANGED" and "uid=0 " in hosts[n][1] and "/usr/bin" in hosts[n][1]
               for n in NODES), output


def test_a_wrong_host_key_is_refused(cluster, tmp_path):
    known = (cluster["run"] / "ssh" / "known_hosts").read_text().splitlines()
    # gpu001's address with gpu002's key: what a reinstalled (or impostor) node would present.
    wrong = [known[0].split()[0] + " " + " ".join(known[1].split()[1:])] + known[1:]
    (tmp_path / "known_hosts").write_text("\n".join(wrong) + "\n")
    data = yaml.safe_load(cluster["inventory"].read_text())
    group = data["all"]["children"]["gpu_nodes"]["vars"]
    group["ansible_ssh_common_args"] = group["ansible_ssh_common_args"].replace(
        str(cluster["run"] / "ssh" / "known_hosts"), str(tmp_path / "known_hosts"))
    # A new connection: a ControlPersist master of an earlier test would skip the key exchange.
    group["ansible_ssh_args"] = "-o ControlMaster=no -o ControlPath=none"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(data))
    hosts, output = ansible(inventory, "gpu001:gpu002", "-m", "raw", "-a", "true")
    assert hosts["gpu001"][0] == "UNREACHABLE", output
    assert "Host key verification failed" in output or "HOST IDENTIFICATION HAS CHANGED" in output
    assert hosts["gpu002"][0] == "CHANGED", output


def test_start_restarts_only_a_dead_sshd(cluster):
    nodes = cluster["nodes"]
    before = nodes.pids()
    os.kill(before["gpu005"], signal.SIGKILL)
    wait_for(lambda: not simcluster.alive(before["gpu005"]), 10, "sshd of gpu005 to die")
    proc = clusterctl("start", cluster["spec"], "--run-dir", cluster["run"])
    assert "restarted sshd on gpu005" in proc.stderr
    after = nodes.pids()
    assert after["gpu005"] not in (None, before["gpu005"])
    assert {n: p for n, p in after.items() if n != "gpu005"} == {n: p for n, p in before.items() if n != "gpu005"}


def test_stop_leaves_no_sshd_no_sudo_session_no_tool_and_no_user(cluster):
    nodes, run = cluster["nodes"], cluster["run"]
    # A session in progress on gpu003: sudo running a command as root.
    env = ansible_env(run.parent / "artifacts")
    busy = subprocess.Popen([str(Path(sys.executable).parent / "ansible"), "-i", str(cluster["inventory"]), "gpu003",
                             "-m", "raw", "-a", "sleep 600"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, cwd=str(REPO))
    try:
        sleeper = wait_for(lambda: [p for p in nodes.node_processes("gpu003", sessions=False)
                                    if simcluster._cmdline(p)[:2] == ["sleep", "600"]], 60, "sleep 600 under sudo")
        assert any(simcluster._cmdline(p)[0] == "sudo" for p in nodes.node_processes("gpu003"))
        everything = nodes.processes()
        assert len([p for p in everything if "[listener]" in " ".join(simcluster._cmdline(p))]) == COUNT
        proc = clusterctl("stop", "--run-dir", run)
        assert "stopped" in proc.stderr
        assert nodes.processes() == []
        assert not any(simcluster.alive(p) for p in everything + sleeper)
        busy.wait(timeout=60)
    finally:
        if busy.poll() is None:
            busy.kill()
    user = cluster["state"]["ssh"]["user"]
    left = []
    for pid in simcluster._all_pids():
        argv = " ".join(simcluster._cmdline(pid))
        if simcluster.alive(pid) and (str(run) in argv or user in argv):
            left.append("%d %s" % (pid, argv[:120]))
    assert left == []
    with pytest.raises(KeyError):
        pwd.getpwnam(user)
    assert not nodes.sudoers.exists() and not nodes.home.exists()
    assert not any(sshnodes.listening(i["address"], sshnodes.PORT) for i in cluster["state"]["ssh"]["nodes"].values())
    assert "nothing running" in clusterctl("stop", "--run-dir", run).stderr
