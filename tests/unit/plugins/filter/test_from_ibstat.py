"""The from_ibstat filter plugin: wiring, documentation, input types."""
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter import from_ibstat as plugin
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "ibstat" / "gpud_a100_ibpanic_spaces.txt"


@pytest.fixture
def from_ibstat():
    return plugin.FilterModule().filters()["from_ibstat"]


def test_registered_name():
    assert list(plugin.FilterModule().filters()) == ["from_ibstat"]


def test_documentation():
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["name"] == "from_ibstat"
    assert str(doc["version_added"]) == "0.1.0"
    assert doc["short_description"] and doc["description"] and doc["author"]
    assert doc["options"]["_input"]["type"] == "string"
    assert yaml.safe_load(plugin.EXAMPLES)
    returned = yaml.safe_load(plugin.RETURN)["_value"]["contains"]
    assert {"cas", "errors", "warnings"} <= set(returned)


def test_text_is_parsed(from_ibstat):
    text = FIXTURE.read_text()
    result = from_ibstat(text)
    assert result == parse_ibstat(text)
    assert result["cas"][0]["ports"][0]["rate"] == 200
    assert result["failed_cas"] == ["mlx5_8"]


def test_bytes_are_decoded(from_ibstat):
    assert from_ibstat(FIXTURE.read_bytes())["cas"][0]["name"] == "mlx5_0"


def test_empty_string_is_an_error_in_the_result(from_ibstat):
    assert from_ibstat("")["errors"]


@pytest.mark.parametrize("value", [None, 42, ["CA 'mlx5_0'"], {"stdout": "CA 'mlx5_0'"}])
def test_non_string_raises(from_ibstat, value):
    with pytest.raises(AnsibleFilterError, match="from_ibstat expects the tool's output as a string"):
        from_ibstat(value)
