"""The from_ibnetdiscover filter plugin: wiring, documentation, input types."""
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter import from_ibnetdiscover as plugin
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import parse_ibnetdiscover

FIXTURE = (Path(__file__).resolve().parents[3] / "fixtures" / "ibnetdiscover"
           / "handmade_two_leaf_one_spine_full.txt")


@pytest.fixture
def from_ibnetdiscover():
    return plugin.FilterModule().filters()["from_ibnetdiscover"]


def test_registered_name():
    assert list(plugin.FilterModule().filters()) == ["from_ibnetdiscover"]


def test_documentation():
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["name"] == "from_ibnetdiscover"
    assert str(doc["version_added"]) == "0.1.0"
    assert doc["short_description"] and doc["description"] and doc["author"]
    assert doc["options"]["_input"]["type"] == "string"
    assert yaml.safe_load(plugin.EXAMPLES)
    returned = yaml.safe_load(plugin.RETURN)["_value"]["contains"]
    assert {"switches", "hcas", "links", "leaf_switches", "spine_switches", "hca_hosts", "errors",
            "warnings"} <= set(returned)


def test_text_is_parsed(from_ibnetdiscover):
    text = FIXTURE.read_text()
    result = from_ibnetdiscover(text)
    assert result == parse_ibnetdiscover(text)
    assert result["spine_switches"] == ["0x2c5eab0300c26280"]


def test_bytes_are_decoded(from_ibnetdiscover):
    assert len(from_ibnetdiscover(FIXTURE.read_bytes())["switches"]) == 3


def test_empty_string_is_an_error_in_the_result(from_ibnetdiscover):
    assert from_ibnetdiscover("")["errors"]


@pytest.mark.parametrize("value", [None, 3.5, ["Switch"], {"stdout": ""}])
def test_non_string_raises(from_ibnetdiscover, value):
    with pytest.raises(AnsibleFilterError, match="from_ibnetdiscover expects the tool's output as a string"):
        from_ibnetdiscover(value)
