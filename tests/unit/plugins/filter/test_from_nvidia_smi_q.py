# -*- coding: utf-8 -*-
"""The from_nvidia_smi_q filter: wiring, type checks and a real output."""

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_nvidia_smi_q import (
    FilterModule,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"


def flt():
    return FilterModule().filters()["from_nvidia_smi_q"]


def test_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ["from_nvidia_smi_q"]


def test_parses_real_output():
    result = flt()((FIXTURES / "q_a100_sxm4_4gpu_pending_remap_555.txt").read_text())
    assert result["errors"] == []
    assert [g["remapped_rows"]["pending"] for g in result["gpus"]] == [False, True, False, False]


@pytest.mark.parametrize("value", [None, 0, {"stdout": ""}, ("a",)])
def test_non_string_input_raises(value):
    with pytest.raises(AnsibleFilterError, match="from_nvidia_smi_q"):
        flt()(value)


def test_empty_string_is_an_error_result():
    result = flt()("")
    assert result["errors"] and result["gpus"] == []
