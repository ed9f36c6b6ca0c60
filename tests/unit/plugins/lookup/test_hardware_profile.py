"""The gpucluster.acceptance.hardware_profile lookup.

The plugin is instantiated directly and its option definitions registered from DOCUMENTATION,
which is what Ansible's plugin loader does when it loads the plugin (the loader itself needs the
collection finder installed before any collection module is imported, which other unit tests in
the same process have already done by plain import).
"""
import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.gpucluster.acceptance.plugins.lookup import hardware_profile

NAME = "gpucluster.acceptance.hardware_profile"


@pytest.fixture(scope="module")
def lookup():
    options = yaml.safe_load(hardware_profile.DOCUMENTATION)["options"]
    C.config.initialize_plugin_configuration_definitions("lookup", NAME, options)
    plugin = hardware_profile.LookupModule()
    plugin._load_name = NAME
    return plugin


def test_named_profile(lookup):
    result = lookup.run(["hgx_h100_sxm"], variables={})
    assert isinstance(result, list) and len(result) == 1
    assert result[0]["name"] == "hgx_h100_sxm"
    assert result[0]["nvlink_per_pair"] == "NV18"


def test_overrides_as_inventory_gives_them(lookup):
    overrides = {"nccl": {"single_node_busbw_min": 430}, "driver_branch": "550"}
    profile = lookup.run(["hgx_h200"], variables={}, overrides=overrides)[0]
    assert profile["nccl"]["single_node_busbw_min"] == 430
    assert profile["nccl"]["multi_node_pair_busbw_min"] == 300
    assert profile["driver_branch"] == "550"


def test_typo_in_overrides_fails_with_the_key(lookup):
    with pytest.raises(AnsibleLookupError, match="unknown key nccl.single_node_busbw"):
        lookup.run(["hgx_h100_sxm"], variables={},
                   overrides={"nccl": {"single_node_busbw": 430}})


def test_bad_terms(lookup):
    with pytest.raises(AnsibleLookupError, match="needs a profile name"):
        lookup.run([], variables={})
    with pytest.raises(AnsibleLookupError, match="one profile per call"):
        lookup.run(["hgx_h100_sxm", "hgx_h200"], variables={})
    with pytest.raises(AnsibleLookupError, match="unknown hardware profile 'dgx_x'"):
        lookup.run(["dgx_x"], variables={})


def test_documentation_is_valid_yaml():
    doc = yaml.safe_load(hardware_profile.DOCUMENTATION)
    assert doc["name"] == "hardware_profile"
    assert set(doc["options"]) == {"_terms", "overrides"}
    assert yaml.safe_load(hardware_profile.EXAMPLES)
    assert "_raw" in yaml.safe_load(hardware_profile.RETURN)
