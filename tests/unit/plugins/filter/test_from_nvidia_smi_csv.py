# -*- coding: utf-8 -*-
"""The from_nvidia_smi_csv filter: wiring, type checks, the fields argument."""

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_nvidia_smi_csv import (
    FilterModule,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"


def flt():
    return FilterModule().filters()["from_nvidia_smi_csv"]


def test_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ["from_nvidia_smi_csv"]


def test_parses_real_output():
    result = flt()((FIXTURES / "csv_gtx_units_loop_ksysguard.csv").read_text())
    assert result["errors"] == []
    assert result["gpus"][0]["power.draw"] == 83.92


def test_fields_argument_positional_and_keyword():
    text = (FIXTURES / "csv_noheader_nounits_fan_not_supported_zabbix.csv").read_text()
    assert flt()(text, "fan.speed")["gpus"] == [{"fan.speed": None}]
    assert flt()(text, fields=["fan.speed"])["gpus"] == [{"fan.speed": None}]


@pytest.mark.parametrize("value", [None, 3.5, {"stdout": "index\n0"}, ["index", "0"]])
def test_non_string_input_raises(value):
    with pytest.raises(AnsibleFilterError, match="from_nvidia_smi_csv"):
        flt()(value)


def test_empty_string_is_an_error_result():
    result = flt()("")
    assert result["errors"] and result["gpus"] == []
