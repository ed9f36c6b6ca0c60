"""hostlist_expand filter: strings and lists in, names out, AnsibleFilterError on bad input."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.hostlist_expand import (
    FilterModule, hostlist_expand)


def test_registered_under_its_name():
    # guarded_filters wraps it: the wrapped function is the one the module defines
    assert dict((k, v.__wrapped__) for k, v in FilterModule().filters().items()) == {"hostlist_expand": hostlist_expand}


def test_expands_a_string():
    assert hostlist_expand("gpu[001-003,010],login1") == [
        "gpu001", "gpu002", "gpu003", "gpu010", "login1"]


def test_expands_a_list_of_expressions_in_order():
    assert hostlist_expand(["b[1-2]", "a1", ""]) == ["b1", "b2", "a1"]


def test_expands_bytes():
    assert hostlist_expand(b"n[1-2]") == ["n1", "n2"]


@pytest.mark.parametrize("data", ["gpu[1-", "a[3-1]", "a[0-99999999]"])
def test_malformed_expression_is_a_filter_error(data):
    with pytest.raises(AnsibleFilterError) as info:
        hostlist_expand(data)
    assert "hostlist_expand: " in str(info.value)
    assert repr(data) in str(info.value)


@pytest.mark.parametrize("data", [None, 5, {"stdout": "gpu1"}, ["gpu1", 2]])
def test_wrong_type_is_a_filter_error(data):
    with pytest.raises(AnsibleFilterError):
        hostlist_expand(data)
