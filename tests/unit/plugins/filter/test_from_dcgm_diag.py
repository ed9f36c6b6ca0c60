# -*- coding: utf-8 -*-
"""The from_dcgm_diag filter: wraps parse_dcgm_diag and rejects non-string input."""
from __future__ import absolute_import, division, print_function

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_dcgm_diag import FilterModule
from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import parse_dcgm_diag

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "dcgm_diag"
FILTER = FilterModule().filters()["from_dcgm_diag"]


def test_filter_is_registered_under_its_name():
    assert set(FilterModule().filters()) == {"from_dcgm_diag"}


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()
                                        if p.suffix in (".txt", ".json")))
def test_filter_returns_what_the_parser_returns(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert FILTER(text) == parse_dcgm_diag(text)


def test_level_is_passed_through():
    text = (FIXTURES / "text_4x_r3_pass_docs.txt").read_text(encoding="utf-8")
    result = FILTER(text, level=3)
    assert result["level"] == 3 and result["overall"] == "pass"


def test_bytes_are_decoded():
    text = (FIXTURES / "json_3x_r3_virtualclient.json").read_text(encoding="utf-8")
    result = FILTER(text.encode("utf-8"))
    assert result == parse_dcgm_diag(text)
    assert result["format"] == "json" and result["overall"] == "pass"


@pytest.mark.parametrize("value", [None, 42, 1.5, ["| Denylist | Pass |"], {"stdout": ""}])
def test_non_string_input_raises(value):
    with pytest.raises(AnsibleFilterError, match="from_dcgm_diag expects"):
        FILTER(value)


def test_empty_string_gives_errors_not_an_exception():
    result = FILTER("")
    assert result["overall"] == "fail" and result["errors"]
