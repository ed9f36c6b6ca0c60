"""The from_ib_counters and ib_counter_deltas filter plugins: wiring, documentation, input types."""
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter import from_ib_counters as plugin
from ansible_collections.gpucluster.acceptance.plugins.filter import ib_counter_deltas as deltas_plugin
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "ib_counters"
SYSFS = FIXTURES / "gpud_943_mlx5_1_saturated_grep.txt"


@pytest.fixture
def from_ib_counters():
    return plugin.FilterModule().filters()["from_ib_counters"]


@pytest.fixture
def ib_counter_deltas():
    return deltas_plugin.FilterModule().filters()["ib_counter_deltas"]


def test_registered_names():
    assert list(plugin.FilterModule().filters()) == ["from_ib_counters"]
    assert list(deltas_plugin.FilterModule().filters()) == ["ib_counter_deltas"]


@pytest.mark.parametrize("module, name, keys", [
    (plugin, "from_ib_counters", {"counters", "names", "sources", "unavailable", "saturated", "errors", "warnings"}),
    (deltas_plugin, "ib_counter_deltas", {"deltas", "resets", "saturated", "missing_before", "missing_after",
                                          "errors", "warnings"}),
])
def test_documentation(module, name, keys):
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["name"] == name
    assert str(doc["version_added"]) == "0.1.0"
    assert doc["short_description"] and doc["description"] and doc["author"]
    assert "_input" in doc["options"]
    assert yaml.safe_load(module.EXAMPLES)
    assert keys <= set(yaml.safe_load(module.RETURN)["_value"]["contains"])


def test_text_is_parsed(from_ib_counters):
    text = SYSFS.read_text()
    assert from_ib_counters(text) == parse_ib_counters(text)


def test_ca_argument_is_passed(from_ib_counters):
    text = (FIXTURES / "infiniband_diags_16_perfquery_x.txt").read_text()
    assert list(from_ib_counters(text, ca="mlx5_3")["counters"]) == ["mlx5_3"]
    assert list(from_ib_counters(text, "mlx5_4")["counters"]) == ["mlx5_4"]


def test_bytes_are_decoded(from_ib_counters):
    assert from_ib_counters(SYSFS.read_bytes())["counters"]["mlx5_1"]["1"]["link_downed"] == 255


@pytest.mark.parametrize("value", [None, 7, ["x"], {"stdout": "x"}])
def test_non_string_raises(from_ib_counters, value):
    with pytest.raises(AnsibleFilterError, match="from_ib_counters expects the tool's output as a string"):
        from_ib_counters(value)


def test_deltas_from_text_results_and_mappings(ib_counter_deltas, from_ib_counters):
    text = SYSFS.read_text()
    after = text.replace("counters/symbol_error:0", "counters/symbol_error:5")
    from_text = ib_counter_deltas(text, after)
    assert from_text["deltas"]["mlx5_1"]["1"]["symbol_error"] == 5
    from_results = ib_counter_deltas(from_ib_counters(text), from_ib_counters(after))
    assert from_results["deltas"] == from_text["deltas"]
    from_mappings = ib_counter_deltas(from_ib_counters(text)["counters"], from_ib_counters(after)["counters"])
    assert from_mappings["deltas"] == from_text["deltas"]
    assert ib_counter_deltas(text.encode(), after.encode())["deltas"] == from_text["deltas"]
    assert "mlx5_1/1/link_downed" in from_text["saturated"]


@pytest.mark.parametrize("before, after, label", [
    (None, "", "before"),
    ("", 12, "after"),
    (["x"], {}, "before"),
])
def test_deltas_wrong_types_raise(ib_counter_deltas, before, after, label):
    with pytest.raises(AnsibleFilterError, match="ib_counter_deltas expects the %s snapshot" % label):
        ib_counter_deltas(before, after)
