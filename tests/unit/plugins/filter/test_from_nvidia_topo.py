# -*- coding: utf-8 -*-
"""The from_nvidia_topo filter: wiring, type checks and a real output."""

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_nvidia_topo import FilterModule

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_topo"


def flt():
    return FilterModule().filters()["from_nvidia_topo"]


def test_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ["from_nvidia_topo"]


def test_parses_real_output():
    result = flt()((FIXTURES / "rtx6000ada_4gpu_4nic_spaces_legend.txt").read_text())
    assert result["errors"] == []
    assert result["matrix"]["GPU2"]["GPU3"] == "NODE"
    assert result["nic_names"]["NIC0"] == "mlx5_0"


def test_bytes_are_decoded():
    result = flt()((FIXTURES / "gh200_4gpu_alps_numa_ids.txt").read_bytes())
    assert result["gpu_numa_id"]["GPU3"] == 28


@pytest.mark.parametrize("value", [None, 42, {"stdout": "GPU0"}, ["GPU0"]])
def test_non_string_input_raises(value):
    with pytest.raises(AnsibleFilterError, match="from_nvidia_topo"):
        flt()(value)


def test_garbled_string_is_an_error_result():
    result = flt()("garbage")
    assert result["errors"] and result["gpus"] == []
