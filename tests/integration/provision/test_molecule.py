"""Each provisioning role's molecule scenario (molecule/<role>/): converge, idempotence, verify.

Offline: the delegated driver on localhost, prerun off, the work tree's collection through
ANSIBLE_COLLECTIONS_PATH, stand-ins from prereqs.py (built by each scenario's prepare step). The
scenarios have no cleanup step: the clean_host fixture removes the stand-ins after each one.
"""
# pylint: disable=redefined-outer-name  # pytest fixtures imported from provision_fixtures
import subprocess

import pytest

from provision_fixtures import clean_host, stand_ins  # noqa: F401  pylint: disable=import-error,unused-import
from provision_support import REPO, ansible_env  # pylint: disable=import-error

pytestmark = pytest.mark.integration

SCENARIOS = ["nvidia_driver", "dcgm", "nccl", "mpi", "nccl_tests"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario, clean_host):  # pylint: disable=unused-argument
    assert (REPO / "molecule" / scenario / "molecule.yml").exists()
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "molecule"), "test", "-s", scenario], cwd=REPO,
                          env=ansible_env(), capture_output=True, text=True, timeout=600, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, "molecule test -s %s failed (rc %d):\n%s" % (scenario, proc.returncode, output[-8000:])
    for step in ("converge", "idempotence", "verify"):
        assert "%s ➜ %s: Executed: Successful" % (scenario, step) in output or \
            "%s: Executed: Successful" % step in output, "%s did not run:\n%s" % (step, output[-4000:])
