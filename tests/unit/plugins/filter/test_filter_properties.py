"""The filter family: every filter of the collection, tried with garbage in every argument.

Property: a filter returns, or raises AnsibleFilterError naming itself; never a bare Python
exception (which Ansible reports as an "unexpected templating type error" naming neither the
filter nor the input). New filters are found by listing plugins/filter: none can be forgotten.
"""
import importlib
import inspect
import math
import signal

import pytest
from hypothesis import given, strategies as st
from ansible.errors import AnsibleError, AnsibleFilterError

from conftest import REPO, garbage

PACKAGE = "ansible_collections.gpucluster.acceptance.plugins.filter."
FILTERS = sorted((name, function) for path in sorted((REPO / "plugins" / "filter").glob("*.py"))
                 if not path.name.startswith("_")
                 for name, function in importlib.import_module(PACKAGE + path.stem).FilterModule().filters().items())

GARBAGE = garbage()


def test_every_filter_is_found_and_guarded():
    assert len(FILTERS) >= 37
    for name, function in FILTERS:
        assert getattr(function, "__wrapped__", None) is not None, "%s is not wrapped by guarded_filters" % name


def _positional(function):
    params = inspect.signature(function).parameters.values()
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


@given(chosen=st.sampled_from(FILTERS), data=st.data())
def test_garbage_in_any_argument_is_a_named_filter_error_or_a_result(chosen, data):
    """One property over the family: each case draws a filter, then garbage for its arguments."""
    name, function = chosen
    params = _positional(function)
    required = [p for p in params if p.default is inspect.Parameter.empty]
    optional = [p for p in params if p.default is not inspect.Parameter.empty]
    args = [data.draw(GARBAGE, label=p.name) for p in required]
    kwargs = dict((p.name, data.draw(GARBAGE, label=p.name)) for p in optional if data.draw(st.booleans()))
    try:
        function(*args, **kwargs)
    except AnsibleFilterError as exc:
        assert name in str(exc) or str(exc), exc
    except AnsibleError:
        pass  # a filter's own clear error (AnsibleError's family) is a clear error too


def test_an_input_error_names_the_filter_and_what_it_got():
    (function,) = [f for n, f in FILTERS if n == "young_interval"]
    with pytest.raises(AnsibleFilterError) as caught:
        function({"not": "a number"}, [])
    assert "young_interval" in str(caught.value)


def test_an_infinite_number_does_not_pass_for_a_plan():
    """inf in a plan's inputs is refused or yields no number, never an infinite interval."""
    for name in ("young_interval", "daly_interval"):
        (function,) = [f for n, f in FILTERS if n == name]
        try:
            result = function(float("inf"), 3600.0)
        except AnsibleError:
            continue
        assert result is None or (isinstance(result, (int, float)) and math.isfinite(result)), (name, result)


class _TooSlow(Exception):
    pass


def _too_slow(signum, frame):
    raise _TooSlow()


@pytest.mark.parametrize("big", [10 ** 12, 10 ** 40])
def test_a_huge_count_in_any_argument_never_hangs_a_filter(big):
    """A count of 10**12 (a world size, a shard count, NICs per node) from a garbled file or a typo:
    a filter that loops or allocates by it hangs the controller (the property above found one by
    the OOM killer). Each filter gets it in every argument, plain and inside a dict and a list."""
    slow = []
    previous = signal.signal(signal.SIGALRM, _too_slow)
    try:
        for name, function in FILTERS:
            params = _positional(function)
            for index, param in enumerate(params):
                for value in (big, {"x": big, "nics_per_node": big, "gpus_per_node": big, "shards": big}, [big]):
                    args = [{} if p.default is inspect.Parameter.empty else p.default for p in params]
                    args[index] = value
                    signal.alarm(5)
                    try:
                        function(*args)
                    except _TooSlow:
                        slow.append("%s(%s=%r)" % (name, param.name, value))
                    except AnsibleError:
                        pass
                    finally:
                        signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert slow == []
