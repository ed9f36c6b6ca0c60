# -*- coding: utf-8 -*-
"""The from_nccl_tests filter: wraps parse_nccl_tests and rejects non-string input."""
from __future__ import absolute_import, division, print_function

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.from_nccl_tests import FilterModule
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import parse_nccl_tests

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nccl_tests"
FILTER = FilterModule().filters()["from_nccl_tests"]


def test_filter_is_registered_under_its_name():
    assert set(FilterModule().filters()) == {"from_nccl_tests"}


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
def test_filter_returns_what_the_parser_returns(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert FILTER(text) == parse_nccl_tests(text)


def test_bytes_are_decoded():
    text = (FIXTURES / "all_gather_gb10_v2183_unalign.txt").read_text(encoding="utf-8")
    assert FILTER(text.encode("utf-8")) == parse_nccl_tests(text)


@pytest.mark.parametrize("value", [None, 42, 1.5, ["# nThread 1 nGpus 1"], {"stdout": ""}])
def test_non_string_input_raises(value):
    with pytest.raises(AnsibleFilterError, match="from_nccl_tests expects"):
        FILTER(value)


def test_empty_string_gives_errors_not_an_exception():
    result = FILTER("")
    assert result["passed"] is False and result["errors"]
