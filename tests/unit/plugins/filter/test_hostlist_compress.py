"""hostlist_compress filter: names in, sorted hostlist out, AnsibleFilterError on bad input."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.hostlist_compress import (
    FilterModule, hostlist_compress)


def test_registered_under_its_name():
    # guarded_filters wraps it: the wrapped function is the one the module defines
    assert dict((k, v.__wrapped__) for k, v in FilterModule().filters().items()) == {"hostlist_compress": hostlist_compress}


@pytest.mark.parametrize("data, expr", [
    (["gpu001", "gpu002", "gpu003", "gpu010", "vm"], "gpu[001-003,010],vm"),
    (["gpu001"], "gpu001"),
    (("gpu002", "gpu001", "gpu001"), "gpu[001-002]"),
    ("gpu[003,001-002]", "gpu[001-003]"),
    (b"n2,n1", "n[1-2]"),
    ([], ""),
])
def test_compresses(data, expr):
    assert hostlist_compress(data) == expr


@pytest.mark.parametrize("data", [["gpu[1]"], ["a b"], [""], ["gpu1", None], 5, None,
                                  {"gpu1": 1}, "gpu[1-"])
def test_bad_input_is_a_filter_error(data):
    with pytest.raises(AnsibleFilterError) as info:
        hostlist_compress(data)
    assert "hostlist_compress" in str(info.value)
