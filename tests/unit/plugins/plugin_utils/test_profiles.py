"""Hardware profiles: the shipped files load and validate; overrides merge; mistakes are named."""
import copy
import pathlib
import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    PROFILES_DIR, SCHEMA, available_profiles, deep_merge, load_profile, validate_profile)

SHIPPED = ["a100_sxm_80gb", "gb200_nvl72_tray", "hgx_b200", "hgx_h100_sxm", "hgx_h200"]


def test_shipped_profiles_listed():
    assert available_profiles() == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profile_loads_and_is_complete(name):
    profile = load_profile(name)
    assert profile["name"] == name
    # Every schema key present after merging _common.yml: judges need not guess defaults.
    for key, (_spec, _required) in SCHEMA.items():
        assert key in profile, key
    assert profile["nccl"]["single_node_busbw_min"] > profile["nccl"]["multi_node_pair_busbw_min"]
    assert profile["dcgm"]["level"] == 3
    # the PCIe links a platform's GPUs and HCAs must train at (GB200: the GPUs' own maximum)
    expected = {"a100_sxm_80gb": (4, 16, 4, 16), "gb200_nvl72_tray": (None, None, None, None)}.get(name, (5, 16, 5, 16))
    assert tuple(profile["pcie"][k] for k in ("gpu_gen", "gpu_width", "nic_gen", "nic_width")) == expected


@pytest.mark.parametrize("name", SHIPPED)
def test_every_hardware_figure_names_its_source(name):
    """Each hardware profile file cites a public source (a URL) for its figures."""
    text = (pathlib.Path(PROFILES_DIR) / (name + ".yml")).read_text()
    data = yaml.safe_load(text)
    assert "http" in text
    for key in ("gpus_per_node", "nvlink_per_pair", "nics_per_node"):
        assert key in data
    # the bandwidth floors each carry a comment with a link just above them
    lines = text.splitlines()
    for key in ("single_node_busbw_min", "multi_node_pair_busbw_min"):
        index = next(i for i, line in enumerate(lines) if line.strip().startswith(key + ":"))
        above = "\n".join(lines[max(0, index - 8):index])
        assert "https://" in above, key


@pytest.mark.parametrize("name, gpus, link, nics, rate, relation", [
    ("hgx_h100_sxm", 8, "NV18", 8, 400, ["PIX", "PXB"]),
    ("hgx_h200", 8, "NV18", 8, 400, ["PIX", "PXB"]),
    ("hgx_b200", 8, "NV18", 8, 400, ["PIX", "PXB"]),
    ("a100_sxm_80gb", 8, "NV12", 8, 200, ["PIX", "PXB"]),
    ("gb200_nvl72_tray", 4, "NV18", 4, 400, None),
])
def test_hardware_figures(name, gpus, link, nics, rate, relation):
    profile = load_profile(name)
    assert (profile["gpus_per_node"], profile["nvlink_per_pair"], profile["nics_per_node"],
            profile["infiniband"]["port_rate"], profile["nic_gpu_relation"]) == \
        (gpus, link, nics, rate, relation)


def test_gpu_name_patterns_match_real_device_names():
    cases = {
        "hgx_h100_sxm": (["NVIDIA H100 80GB HBM3"], ["NVIDIA H100 PCIe", "NVIDIA H800"]),
        "hgx_h200": (["NVIDIA H200"], ["NVIDIA H200 NVL"]),
        "hgx_b200": (["NVIDIA B200"], ["NVIDIA H200"]),
        "a100_sxm_80gb": (["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM-80GB"],
                          ["NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe"]),
        "gb200_nvl72_tray": (["NVIDIA GB200"], ["NVIDIA B200"]),
    }
    for name, (good, bad) in cases.items():
        pattern = re.compile(load_profile(name)["gpu_name_pattern"])
        assert all(pattern.search(n) for n in good), name
        assert not any(pattern.search(n) for n in bad), name


def test_overrides_deep_merge():
    profile = load_profile("hgx_h100_sxm", {"nccl": {"single_node_busbw_min": 430},
                                            "xid": {"unknown": "fail"},
                                            "nic_names": ["mlx5_0", "mlx5_3"]})
    assert profile["nccl"] == {"single_node_busbw_min": 430, "multi_node_pair_busbw_min": 300,
                               "busbw_max_single_node": 900, "busbw_max_multi_node": 800}
    assert profile["xid"]["unknown"] == "fail"
    assert 79 in profile["xid"]["fail"]                      # siblings kept
    assert profile["nic_names"] == ["mlx5_0", "mlx5_3"]
    assert load_profile("hgx_h100_sxm")["nccl"]["single_node_busbw_min"] == 360  # no leak


def test_override_replaces_lists_whole():
    profile = load_profile("hgx_h100_sxm", {"throttle": {"warn": []}})
    assert profile["throttle"]["warn"] == []
    assert "HW Slowdown" in profile["throttle"]["fail"]


@pytest.mark.parametrize("overrides, fragment", [
    ({"nccl": {"single_node_bus_min": 400}}, "unknown key nccl.single_node_bus_min"),
    ({"gpus_per_node": "eight"}, "gpus_per_node must be an integer from 1 to 1024, got 'eight'"),
    ({"gpus_per_node": 0}, "gpus_per_node must be an integer"),
    ({"nvlink_per_pair": "NVL18"}, "nvlink_per_pair must be an NVLink label such as NV18"),
    ({"nic_gpu_relation": ["PIX", "CLOSE"]}, "nic_gpu_relation[1] must be one of PIX"),
    ({"infiniband": {"link_layer": "ib"}}, "infiniband.link_layer must be one of InfiniBand"),
    ({"gpu_name_pattern": "H100("}, "gpu_name_pattern is not a valid regular expression"),
    ({"xid": {"fail": [48, "79"]}}, "xid.fail[1] must be an integer"),
    ({"dcgm": {"level": 5}}, "dcgm.level must be an integer from 1 to 4, got 5"),
    ({"ecc": {"volatile_uncorrectable_max": True}}, "ecc.volatile_uncorrectable_max must be"),
    ({"peers": {"min_rel_drop": 10}}, "peers.min_rel_drop must be a number from 0 to 1"),
    ({"infiniband": {"counter_limits": {"symbol_error": -1}}},
     "infiniband.counter_limits.symbol_error must be an integer >= 0 or null"),
    ({"nccl": 400}, "nccl must be a mapping"),
    ({"pcie": {"gpu_width": 12}}, "pcie.gpu_width must be one of 1, 2, 4, 8, 16, 32 or null, got 12"),
    ({"pcie": {"nic_width": True}}, "pcie.nic_width must be one of"),
    ({"pcie": {"nic_gen": 7}}, "pcie.nic_gen must be an integer from 1 to 6"),
])
def test_bad_overrides_are_named(overrides, fragment):
    with pytest.raises(ValueError) as info:
        load_profile("hgx_h100_sxm", overrides)
    assert fragment in str(info.value)
    assert str(info.value).startswith("hardware profile hgx_h100_sxm is invalid: ")


def test_every_problem_is_listed():
    with pytest.raises(ValueError) as info:
        load_profile("hgx_h100_sxm", {"gpus_per_node": "x", "dcgm": {"level": 0}, "typo": 1})
    message = str(info.value)
    assert "gpus_per_node" in message and "dcgm.level" in message and "unknown key typo" in message


def test_unknown_profile_name_lists_available():
    with pytest.raises(ValueError) as info:
        load_profile("hgx_h300")
    assert "unknown hardware profile 'hgx_h300'" in str(info.value)
    assert "hgx_h100_sxm" in str(info.value)
    with pytest.raises(ValueError, match="is not valid"):
        load_profile("_common")
    with pytest.raises(ValueError, match="is empty"):
        load_profile("  ")


def test_overrides_must_be_a_mapping():
    with pytest.raises(ValueError, match="acceptance_profile_overrides must be a mapping"):
        load_profile("hgx_h100_sxm", ["nccl"])


def test_profile_by_path(tmp_path):
    site = tmp_path / "site_hgx.yml"
    site.write_text(yaml.safe_dump({
        "description": "site HGX H100 with 4 NICs",
        "gpus_per_node": 8, "gpu_name_pattern": "H100", "nvlink_per_pair": "NV18",
        "nics_per_node": 4, "nic_gpu_relation": ["PXB"],
        "infiniband": {"port_rate": 400, "link_layer": "InfiniBand"},
        "nccl": {"single_node_busbw_min": 360, "multi_node_pair_busbw_min": 150},
    }))
    profile = load_profile(str(site))
    assert profile["name"] == "site_hgx"
    assert profile["nics_per_node"] == 4
    # the shared policy comes from _common.yml
    assert profile["infiniband"]["counter_limits"]["symbol_error"] == 0
    assert profile["dcgm"]["level"] == 3


def test_profile_path_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_profile(str(tmp_path / "missing.yml"))
    broken = tmp_path / "broken.yml"
    broken.write_text("gpus_per_node: [8\n")
    with pytest.raises(ValueError, match="is not valid YAML"):
        load_profile(str(broken))
    listing = tmp_path / "list.yml"
    listing.write_text("- 8\n")
    with pytest.raises(ValueError, match="must be a mapping"):
        load_profile(str(listing))
    incomplete = tmp_path / "incomplete.yml"
    incomplete.write_text("gpus_per_node: 8\n")
    with pytest.raises(ValueError) as info:
        load_profile(str(incomplete))
    assert "nics_per_node is required" in str(info.value)
    assert "nccl is required" in str(info.value)


def test_validate_profile_direct():
    profile = load_profile("hgx_b200")
    assert validate_profile(copy.deepcopy(profile)) == profile
    with pytest.raises(ValueError, match="must be a mapping"):
        validate_profile("hgx_b200")


_VALUES = st.recursive(st.integers() | st.text(max_size=3) | st.none(),
                       lambda children: st.dictionaries(st.text(max_size=3), children, max_size=3),
                       max_leaves=8)


@given(st.dictionaries(st.text(max_size=3), _VALUES, max_size=4),
       st.dictionaries(st.text(max_size=3), _VALUES, max_size=4))
def test_deep_merge_properties(base, override):
    before = copy.deepcopy(base)
    merged = deep_merge(base, override)
    assert base == before                                    # inputs untouched
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            assert deep_merge(base[key], value) == merged[key]
        else:
            assert merged[key] == value
    for key in base:
        assert key in merged
