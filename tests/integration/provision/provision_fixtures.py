"""Shared set-up of the provisioning tests: the stand-ins (prereqs.py) and a clean host.

Imported by the test modules (not a conftest.py: a second conftest module would shadow
tests/conftest.py, which other tests import by name).

These tests install stand-in packages through the real apt of this host and build nccl-tests for
real: they need root, apt, the CUDA toolkit and OpenMPI (tools/install-system-deps.sh). A missing
prerequisite fails the tests with what to install; they never skip.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import prereqs  # noqa: E402  pylint: disable=wrong-import-position,import-error


@pytest.fixture(scope="session")
def stand_ins():
    """Build (once) the stand-in apt repository, the NCCL wheel install and the nccl-tests archive."""
    try:
        return prereqs.ensure(repo=True, nccl=True)
    except prereqs.PrereqError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture()
def clean_host(stand_ins):  # pylint: disable=redefined-outer-name
    """A host without stand-in packages, apt source or pins before and after the test."""
    prereqs.reset()
    yield stand_ins
    prereqs.reset()
