"""Helpers of the provisioning tests: the environment of ansible runs, role and playbook runs, dpkg."""
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))

import prereqs  # noqa: E402  pylint: disable=wrong-import-position,import-error

ROLE_PLAYBOOK = HERE / "playbooks" / "role.yml"
PROVISION_PLAYBOOK = REPO / "playbooks" / "provision.yml"


def ansible_env():
    """The environment of every ansible-playbook/molecule run: the work tree's collection, no report callback."""
    env = dict(os.environ)
    env.update(
        PATH=os.pathsep.join([str(REPO / ".venv" / "bin"), env.get("PATH", "")]),
        ANSIBLE_CONFIG=str(HERE / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PY_COLORS="0",
    )
    return env


def repo_vars(paths):
    """Role variables pointing every NVIDIA role at the stand-in repository."""
    url = "file:" + paths["standin_repo"]
    variables = {}
    for role in ("nvidia_driver", "dcgm", "nccl"):
        variables.update({role + "_repo_mode": "mirror", role + "_repo_url": url, role + "_repo_trusted": True,
                          role + "_repo_name": prereqs.standin_repo.REPO_NAME})
    return variables


class Run:
    """One finished ansible-playbook run."""

    def __init__(self, proc):
        self.rc = proc.returncode
        self.output = proc.stdout + proc.stderr

    @property
    def recap(self):
        """The PLAY RECAP counters of localhost (ok, changed, failed, ...)."""
        for line in self.output.splitlines():
            if line.startswith("localhost") and "ok=" in line:
                return {k: int(v) for k, v in (f.split("=") for f in line.split()[2:])}
        raise AssertionError("no PLAY RECAP for localhost in:\n" + self.output[-3000:])

    def __repr__(self):
        return "Run(rc=%d)\n%s" % (self.rc, self.output[-6000:])


def run_playbook(playbook, variables, tmp_path, check=False, timeout=300, path_prepend=None):
    """ansible-playbook on localhost (local connection) with the variables as an extra-vars file;
    path_prepend: a directory searched first for commands (stand-ins for host tools)."""
    vars_file = tmp_path / ("vars-%d.json" % len(list(tmp_path.glob("vars-*.json"))))
    vars_file.write_text(json.dumps(dict(variables, ansible_python_interpreter=sys.executable)))
    argv = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "@" + str(vars_file), str(playbook)]
    if check:
        argv.append("--check")
    env = ansible_env()
    if path_prepend:
        env["PATH"] = os.pathsep.join([str(path_prepend), env["PATH"]])
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return Run(proc)


def run_role(role, variables, tmp_path, check=False, path_prepend=None):
    """One role on localhost through tests/integration/provision/playbooks/role.yml."""
    return run_playbook(ROLE_PLAYBOOK, dict(variables, provision_test_role=role), tmp_path, check=check,
                        path_prepend=path_prepend)


def dpkg_versions(*names):
    """{name: version} of the installed packages among names."""
    proc = subprocess.run(["dpkg-query", "--show", "--showformat=${Package} ${Version} ${db:Status-Status}\\n",
                           *names], capture_output=True, text=True, check=False)
    return {f[0]: f[1] for f in (line.split() for line in proc.stdout.splitlines()) if len(f) == 3
            and f[2] == "installed"}
