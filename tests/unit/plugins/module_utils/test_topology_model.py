"""Unit tests for module_utils/_topology_model.py (build_topology) and the slurm_topology_from_fabric filter.

The models it builds are tested with their sources (test_topology_from_fabric.py,
test_topology_from_labels.py), Slurm's view with _topology_slurm_view (test_topology_slurm_view.py).
"""
import sys
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.slurm_topology_from_fabric import (
    slurm_topology_from_fabric)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import parse_ibnetdiscover
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_model import build_topology

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "tests" / "integration" / "slurm"))
from fabric_text import ibnetdiscover_text  # noqa: E402  pylint: disable=wrong-import-position,import-error
from test_topology_from_fabric import THREE_LEAVES, codes  # noqa: E402  pylint: disable=wrong-import-position,import-error
from test_topology_slurm_view import REAL_SHOW_TOPOLOGY, matrix  # noqa: E402  pylint: disable=wrong-import-position,import-error


# ------------------------------------------------------------------------------- build


def test_block_from_the_fabric_is_refused():
    result = build_topology(ibnetdiscover_text(THREE_LEAVES), "ibnetdiscover", plugin="block")
    assert result["fatal"] and codes(result) == ["block_needs_labels"]


# ------------------------------------------------------------------------------ filter


def test_filter_auto_sources_and_scontrol_view():
    text = ibnetdiscover_text(THREE_LEAVES)
    built = slurm_topology_from_fabric(text, nodes="n[01-06]")
    assert built["source"] == "ibnetdiscover" and not built["fatal"] and built["mismatches"] == []
    assert slurm_topology_from_fabric(parse_ibnetdiscover(text))["source"] == "parsed"
    assert slurm_topology_from_fabric({"n01": {"leaf": "a"}})["source"] == "labels"
    view = slurm_topology_from_fabric(REAL_SHOW_TOPOLOGY, "scontrol", expected=built["text"], nodes="n[01-06]",
                                      pair_busbw=matrix(built["leaves"], slow_pairs=[("n01", "n02")]))
    assert view["mismatches"] == [] and not view["fatal"]
    assert view["leaves"]["leafA"] == ["n01", "n02"]
    assert view["bandwidth"]["low_pairs"] == [{"leaf": "leafA", "nodes": ["n01", "n02"], "busbw": 180.0}]


def test_filter_rejects_wrong_types():
    with pytest.raises(AnsibleFilterError, match="stdout"):
        slurm_topology_from_fabric({"stdout": "x"}, "ibnetdiscover")
    with pytest.raises(AnsibleFilterError, match="source"):
        slurm_topology_from_fabric("x", "nope")
    with pytest.raises(AnsibleFilterError, match="cross_leaf_ratio"):
        slurm_topology_from_fabric(REAL_SHOW_TOPOLOGY, "scontrol", pair_busbw={"a": {"b": 1}}, cross_leaf_ratio=2)
