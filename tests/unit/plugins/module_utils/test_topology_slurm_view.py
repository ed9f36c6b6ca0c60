"""Checks of Slurm's view (module_utils/_topology_slurm_view.py): scontrol show topology, and pair bandwidth.

Real input: ``scontrol show topology`` output of Slurm 22.05.8 captured on the simulated cluster
(REAL_SHOW_TOPOLOGY). Made-up fabrics come from tests/integration/slurm/fabric_text.py.
"""
import sys
from pathlib import Path

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_model import build_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    check_pair_bandwidth, compare_topology, leaves_of, parse_scontrol_show_topology)

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "tests" / "integration" / "slurm"))
from fabric_text import ibnetdiscover_text  # noqa: E402  pylint: disable=wrong-import-position,import-error
from test_topology_from_fabric import THREE_LEAVES  # noqa: E402  pylint: disable=wrong-import-position,import-error

REAL_SHOW_TOPOLOGY = (
    "SwitchName=leafA Level=0 LinkSpeed=1 Nodes=n[01-02]\n"
    "SwitchName=leafB Level=0 LinkSpeed=1 Nodes=n[03-04]\n"
    "SwitchName=leafC Level=0 LinkSpeed=1 Nodes=n[05-06]\n"
    "SwitchName=root Level=1 LinkSpeed=1 Nodes=n[01-06] Switches=leafA,leafB,leafC\n"
)


# ------------------------------------------------------------------------ Slurm's view


def test_real_show_topology_and_comparison():
    shown = parse_scontrol_show_topology(REAL_SHOW_TOPOLOGY)
    assert shown["errors"] == []
    assert shown["switches"][3]["switches"] == ["leafA", "leafB", "leafC"] and shown["switches"][3]["level"] == 1
    assert leaves_of(shown) == {"leafA": ["n01", "n02"], "leafB": ["n03", "n04"], "leafC": ["n05", "n06"]}
    written = build_topology(ibnetdiscover_text(THREE_LEAVES), "ibnetdiscover")["text"]
    assert compare_topology(shown, written) == []
    other = written.replace("n[03-04]", "n03").replace("leafC Nodes=n[05-06]", "leafC Nodes=n[04-06]")
    problems = compare_topology(REAL_SHOW_TOPOLOGY, other)
    assert problems == ["switch leafB: Slurm's nodes differ from the file (only in Slurm: n04)",
                        "switch leafC: Slurm's nodes differ from the file (missing in Slurm: n04)"]
    assert compare_topology(REAL_SHOW_TOPOLOGY, "SwitchName=x Nodes=n01\n")[0] == \
        "switch x is in the file but not in Slurm's view"
    assert parse_scontrol_show_topology("")["errors"]


# --------------------------------------------------------------------------- bandwidth


def matrix(leaves, fast=380.0, slow=180.0, slow_pairs=()):
    out = {}
    nodes = sorted(n for members in leaves.values() for n in members)
    for a in nodes:
        for b in nodes:
            if a < b:
                out.setdefault(a, {})[b] = slow if (a, b) in slow_pairs or (b, a) in slow_pairs else fast
    return out


def test_cross_spine_pair_on_one_leaf_is_named():
    leaves = {"leafA": ["n01", "n02", "n03"], "leafB": ["n04", "n05", "n06"]}
    busbw = matrix(leaves, slow_pairs=[("n01", "n03"), ("n02", "n03")])
    result = check_pair_bandwidth(leaves, busbw, 0.8)
    assert result["pairs_checked"] == 6 and result["median"] == 380.0 and result["threshold"] == 304.0
    assert [p["nodes"] for p in result["low_pairs"]] == [["n01", "n03"], ["n02", "n03"]]
    assert result["suspects"] == ["n03"]
    assert "n01 and n03 are on leaf leafA" in result["warnings"][0]
    assert "n03" in result["warnings"][-1]


def test_bandwidth_both_directions_lower_wins_and_bad_values():
    leaves = {"leafA": ["a", "b", "c"]}
    busbw = {"a": {"b": 380, "c": "380"}, "b": {"a": 100, "c": 380}, "c": {"a": "n/a"}}
    result = check_pair_bandwidth(leaves, busbw, 0.8)
    assert [p["nodes"] for p in result["low_pairs"]] == [["a", "b"]]
    assert any("not numbers" in w for w in result["warnings"])


def test_bandwidth_too_few_pairs_and_bad_ratio():
    assert check_pair_bandwidth({"l": ["a", "b"]}, {"a": {"b": 1}})["median"] is None
    assert check_pair_bandwidth({"l": ["a", "b"]}, {})["warnings"] == []
    with pytest.raises(ValueError):
        check_pair_bandwidth({"l": ["a", "b"]}, {"a": {"b": 1}}, ratio=1.5)
    with pytest.raises(TypeError):
        check_pair_bandwidth({"l": ["a"]}, [1])
