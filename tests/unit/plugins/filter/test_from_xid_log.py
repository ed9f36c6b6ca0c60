# -*- coding: utf-8 -*-
"""The from_xid_log filter: wraps parse_xid_log and rejects non-string input."""
from __future__ import absolute_import, division, print_function

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_xid_log import FilterModule
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "xid_log"
FILTER = FilterModule().filters()["from_xid_log"]


def test_filter_is_registered_under_its_name():
    assert set(FilterModule().filters()) == {"from_xid_log"}


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.log")))
def test_filter_returns_what_the_parser_returns(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert FILTER(text) == parse_xid_log(text)


def test_bytes_are_decoded():
    text = (FIXTURES / "syslog_xid48_64_gpu_operator_1146.log").read_text(encoding="utf-8")
    result = FILTER(text.encode("utf-8"))
    assert result == parse_xid_log(text)
    assert result["by_xid"] == {48: 1, 64: 1}


@pytest.mark.parametrize("value", [None, 42, 1.5, ["NVRM: Xid (PCI:0000:01:00): 79"],
                                   {"stdout": ""}])
def test_non_string_input_raises(value):
    with pytest.raises(AnsibleFilterError, match="from_xid_log expects"):
        FILTER(value)


def test_log_without_xid_is_an_empty_result():
    result = FILTER("[    0.000000] Linux version 6.8.0\n")
    assert result["events"] == [] and result["errors"] == []
