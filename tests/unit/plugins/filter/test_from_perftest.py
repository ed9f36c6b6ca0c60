"""The from_perftest filter plugin: wiring, documentation, input types."""
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter import from_perftest as plugin
from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import parse_perftest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perftest"


@pytest.fixture
def from_perftest():
    return plugin.FilterModule().filters()["from_perftest"]


def test_registered_name():
    assert list(plugin.FilterModule().filters()) == ["from_perftest"]


def test_documentation():
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["name"] == "from_perftest"
    assert str(doc["version_added"]) == "0.1.0"
    assert doc["short_description"] and doc["description"] and doc["author"]
    assert doc["options"]["_input"]["type"] == "string"
    assert "1048576" in plugin.DOCUMENTATION  # the MB/sec = 2**20 bytes/s note
    assert yaml.safe_load(plugin.EXAMPLES)
    returned = yaml.safe_load(plugin.RETURN)["_value"]["contains"]
    assert {"msg_size", "bw_peak", "bw_average", "rows", "msg_rate", "test", "device", "link_type", "errors",
            "warnings"} <= set(returned)


def test_text_is_parsed(from_perftest):
    text = (FIXTURES / "nvidia_gpu_operator_write_bw_a_gbits_roce.txt").read_text()
    result = from_perftest(text)
    assert result == parse_perftest(text)
    assert result["bw_average"] == 92.39


def test_failed_run_is_an_error_in_the_result(from_perftest):
    result = from_perftest((FIXTURES / "perftest_228_client_couldnt_connect.txt").read_text())
    assert result["errors"] and result["bw_average"] is None


def test_bytes_are_decoded(from_perftest):
    assert from_perftest((FIXTURES / "pib_4_atomic_bw_mb.txt").read_bytes())["msg_size"] == 8


@pytest.mark.parametrize("value", [None, 0, [], {"stdout": "x", "rc": 0}])
def test_non_string_raises(from_perftest, value):
    with pytest.raises(AnsibleFilterError, match="from_perftest expects the tool's output as a string"):
        from_perftest(value)
