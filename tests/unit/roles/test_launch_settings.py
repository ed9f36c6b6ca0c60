"""The launch settings the roles derive, rendered by Ansible's own templating from the roles' defaults
and vars: one partition/reservation for every srun launch, --gpus-per-node from the profile for the
workload, and the workload's timeout from the duration asked for (a 2-hour run not killed at 15 min)."""
import json
import subprocess
import sys

import pytest

from conftest import REPO

# Rendered in a child process: Ansible's collection loader is configured once per process, and the
# unit suite's other tests import the collection by path.
_RENDER = r"""
import json, os, sys
import yaml
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template
repo = sys.argv[1]
init_plugin_loader([os.path.join(repo, ".build", "collections")])

def trust(value):
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((k, trust(v)) for k, v in value.items())
    if isinstance(value, list):
        return [trust(v) for v in value]
    return value

out = []
for role, expression, variables in json.load(sys.stdin):
    values = {}
    for part in ("defaults", "vars"):
        path = os.path.join(repo, "roles", role, part, "main.yml")
        if os.path.exists(path):
            values.update(yaml.safe_load(open(path)) or {})
    values.update({"role_path": os.path.join(repo, "roles", role), "inventory_hostname_short": "gpu001",
                   "ansible_play_hosts": ["gpu001", "gpu002"], "acceptance_profile_data": {"gpus_per_node": 8},
                   "hostvars": {"localhost": {"__check_workload_node_names": {"gpu001": "gpu001", "gpu002": "gpu002"}}}})
    values.update(variables)
    try:
        out.append({"value": Templar(loader=DataLoader(), variables=trust(values)).template(
            trust_as_template("{{ %s }}" % expression))})
    except AnsibleError as exc:
        out.append({"error": str(exc)})
print(json.dumps(out))
"""
_CACHE = {}


def _render_all(cases):
    key = json.dumps(cases, sort_keys=True)
    if key not in _CACHE:
        proc = subprocess.run([sys.executable, "-c", _RENDER, str(REPO)], input=key, capture_output=True,
                              text=True, timeout=120, check=True)
        _CACHE[key] = json.loads(proc.stdout)
    return _CACHE[key]


def _render(role, expression, **variables):
    result = _render_all([[role, expression, variables]])[0]
    if "error" in result:
        raise RuntimeError(result["error"])
    return result["value"]


@pytest.mark.parametrize("settings, timeout", [
    ({}, 900), ({"check_workload_duration_s": 7200}, 9600), ({"check_workload_duration_s": 60}, 675),
    ({"check_workload_duration_s": 7200, "check_workload_timeout": 8000}, 8000),
    ({"check_workload_duration_s": 1e30}, 900)])
def test_workload_timeout_follows_the_duration(settings, timeout):
    assert int(_render("check_workload", "__check_workload_timeout", **settings)) == timeout


def test_workload_srun_line_has_partition_reservation_and_gpus():
    argv = _render("check_workload", "__check_workload_launcher_argv", acceptance_slurm_partition="gpu",
                   acceptance_slurm_reservation="burnin")
    assert argv[0] == "srun" and "--partition=gpu" in argv and "--reservation=burnin" in argv
    assert "--gpus-per-node=8" in argv
    argv = _render("check_workload", "__check_workload_launcher_argv", check_workload_gpus_per_node_flag=False)
    assert not [a for a in argv if a.startswith(("--partition", "--reservation", "--gpus-per-node"))]
    mpirun = _render("check_workload", "__check_workload_launcher_argv", check_workload_launcher="mpirun",
                     acceptance_slurm_partition="gpu")
    assert mpirun[0] == "mpirun" and "--partition=gpu" not in mpirun


@pytest.mark.parametrize("role, expression", [
    ("check_fabric", "__check_fabric_launcher_args"), ("check_rdma", "__check_rdma_launcher_args"),
    ("check_nvlink_domain", "__check_nvlink_domain_launcher_args"), ("collect", "collect_srun.srun_args")])
def test_every_srun_launch_takes_the_one_partition_setting(role, expression):
    args = _render(role, expression, acceptance_slurm_partition="gpu", acceptance_slurm_reservation="burnin",
                   check_fabric_launcher_args=["--account=ml"], acceptance_srun_args=["--account=ml"])
    assert args[:2] == ["--partition=gpu", "--reservation=burnin"], args
    assert _render(role, expression, check_fabric_launcher_args=[]) == []


def test_a_partition_with_a_shell_character_is_refused():
    with pytest.raises(RuntimeError, match="is not a Slurm name"):
        _render("check_fabric", "__check_fabric_launcher_args", acceptance_slurm_partition="gpu; rm -rf /")
