"""Slurm hostlist expand/compress: Slurm's semantics by example, then properties."""
import itertools
import re
import time

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    MAX_HOSTLIST_NAMES, compress_hostlist, expand_hostlist, hostlist_count)


# ------------------------------------------------------------------------------------- expand

@pytest.mark.parametrize("expr, names", [
    ("gpu[001-004,010]", ["gpu001", "gpu002", "gpu003", "gpu004", "gpu010"]),
    ("tux[0-3,12,18-20]", ["tux0", "tux1", "tux2", "tux3", "tux12", "tux18", "tux19", "tux20"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("a,b[1-2],c", ["a", "b1", "b2", "c"]),
    ("n[1-2]-ib", ["n1-ib", "n2-ib"]),
    ("switch.2.[1-3]", ["switch.2.1", "switch.2.2", "switch.2.3"]),
    ("gpu001", ["gpu001"]),
    ("a[9-11]", ["a9", "a10", "a11"]),          # width of the low bound: 1, so no padding
    ("a[01-3]", ["a01", "a02", "a03"]),         # width 2 from '01'; the high bound's is ignored
    ("a[098-101]", ["a098", "a099", "a100", "a101"]),
    ("a[7]", ["a7"]),
    ("[1-3]", ["1", "2", "3"]),
    ("", []),
    (",,", []),
    ("  a \t b\nc ", ["a", "b", "c"]),         # whitespace separates like commas (Slurm: "\t, \n")
    ("a[1-3],a[2-4]", ["a1", "a2", "a3", "a2", "a3", "a4"]),  # duplicates kept, in order
    ("x[1-2]y[3-4]z", ["x1y3z", "x1y4z", "x2y3z", "x2y4z"]),
    ("a[1-2],", ["a1", "a2"]),
])
def test_expand_examples(expr, names):
    assert expand_hostlist(expr) == names


@pytest.mark.parametrize("expr, fragment", [
    ("gpu[1-", "never closed"),
    ("gpu1]", "no matching '['"),
    ("a[[1]]", "inside another bracket"),
    ("a[]", "empty brackets"),
    ("a[3-1]", "runs backwards"),
    ("a[x]", "not a number"),
    ("a[1,,2]", "not a number"),
    ("a[1-2-3]", "not a number"),
    ("a[-1]", "not a number"),
    ("a[+1]", "not a number"),
    ("a[1-]", "not a number"),
    ("a[1 2]", "whitespace"),
    ("a[1,2", "never closed"),
    ("a[1]b[2", "never closed"),
])
def test_expand_rejects_malformed(expr, fragment):
    with pytest.raises(ValueError) as info:
        expand_hostlist(expr)
    assert fragment in str(info.value)
    assert repr(expr) in str(info.value)


def test_expand_rejects_non_strings():
    with pytest.raises(TypeError):
        expand_hostlist(["gpu1"])
    with pytest.raises(TypeError):
        expand_hostlist(None)


@pytest.mark.parametrize("expr", [
    "a[0-%d]" % MAX_HOSTLIST_NAMES,
    "a[0-99999999999999999999]",
    "a[0-999]b[0-9999]",                       # 10M through the product
    "a[0-600000],b[0-600000]",                 # over the limit only in total
])
def test_expand_refuses_huge_expressions_quickly(expr):
    started = time.monotonic()
    with pytest.raises(ValueError) as info:
        expand_hostlist(expr)
    assert "more than %d names" % MAX_HOSTLIST_NAMES in str(info.value)
    assert time.monotonic() - started < 2


def test_expand_limit_is_inclusive_and_configurable():
    assert len(expand_hostlist("a[1-10]", limit=10)) == 10
    with pytest.raises(ValueError):
        expand_hostlist("a[1-11]", limit=10)
    assert hostlist_count("a[1-4],b[1-2]c[1-3],d") == 11


# ------------------------------------------------------------------------------------ compress

@pytest.mark.parametrize("names, expr", [
    (["gpu001", "gpu002", "gpu003", "gpu010", "vm"], "gpu[001-003,010],vm"),
    (["gpu001"], "gpu001"),                                # a single name stays bare
    (["gpu001", "gpu002"], "gpu[001-002]"),
    (["gpu010", "gpu002", "gpu001", "gpu003", "gpu002"], "gpu[001-003,010]"),
    (["a9", "a10", "a11"], "a[9-11]"),
    (["a099", "a100", "a101"], "a[099-101]"),             # padding runs out into 100
    (["a1", "a01"], "a[1,01]"),                            # different hosts, kept apart
    (["a1", "a2", "a01", "a02"], "a[1-2,01-02]"),
    (["rack10-n1", "rack2-n1", "rack2-n2"], "rack2-n[1-2],rack10-n1"),  # numbers in prefix by value
    (["gpu", "gpu1", "gpu2", "gpux"], "gpu,gpu[1-2],gpux"),
    (["1", "2", "3"], "[1-3]"),
    (["n1-ib", "n2-ib"], "n1-ib,n2-ib"),                   # only a trailing number is ranged
    ([], ""),
])
def test_compress_examples(names, expr):
    assert compress_hostlist(names) == expr


def test_compress_accepts_an_expression_and_other_iterables():
    assert compress_hostlist("gpu[003,001-002]") == "gpu[001-003]"
    assert compress_hostlist(("b1", "a1")) == "a1,b1"
    assert compress_hostlist({"n2", "n1"}) == "n[1-2]"


@pytest.mark.parametrize("names, fragment", [
    ([""], "empty host name"),
    (["gpu[1]"], "'['"),
    (["a,b"], "','"),
    (["a b"], "' '"),
])
def test_compress_rejects_names_a_hostlist_cannot_hold(names, fragment):
    with pytest.raises(ValueError) as info:
        compress_hostlist(names)
    assert fragment in str(info.value)


def test_compress_rejects_non_string_names():
    with pytest.raises(TypeError):
        compress_hostlist(["gpu1", 2])
    with pytest.raises(TypeError):
        compress_hostlist({"gpu1": 1})
    with pytest.raises(TypeError):
        compress_hostlist(42)


# ---------------------------------------------------------------------------------- properties

_PREFIX_TEXT = st.text(alphabet="abgnpu-._", min_size=0, max_size=3)
_NUMBER_TEXT = st.text(alphabet="0123456789", min_size=1, max_size=4)


@st.composite
def host_names(draw):
    """Names like gpu007, rack2-n10, vm, 42: a prefix (maybe with a number inside) plus digits."""
    prefix = draw(_PREFIX_TEXT)
    if draw(st.booleans()):
        prefix += draw(_NUMBER_TEXT) + draw(st.text(alphabet="-n.", min_size=1, max_size=2))
    suffix = draw(st.one_of(st.just(""), _NUMBER_TEXT))
    name = prefix + suffix
    assume(name)
    return name


@st.composite
def expressions(draw):
    """A valid hostlist expression and, built independently, the names it must expand to."""
    tokens = []
    expected = []
    for _group in range(draw(st.integers(min_value=0, max_value=3))):
        parts = [draw(_PREFIX_TEXT)]
        choices = [[parts[0]]]
        for _bracket in range(draw(st.integers(min_value=0, max_value=2))):
            items = []
            values = []
            for _item in range(draw(st.integers(min_value=1, max_value=3))):
                low = draw(st.integers(min_value=0, max_value=120))
                high = low + draw(st.integers(min_value=0, max_value=4))
                width = draw(st.integers(min_value=len(str(low)), max_value=4))
                low_text = str(low).zfill(width)
                items.append(low_text if low == high else "%s-%d" % (low_text, high))
                values.extend(str(number).zfill(width) for number in range(low, high + 1))
            tail = draw(_PREFIX_TEXT)
            parts.append("[%s]%s" % (",".join(items), tail))
            choices.append(values)
            choices.append([tail])
        token = "".join(parts)
        if not token:
            continue
        tokens.append(token)
        expected.extend("".join(combo) for combo in itertools.product(*choices))
    separator = draw(st.sampled_from([",", " ", ", ", "\n"]))
    return separator.join(tokens), expected


@given(expressions())
def test_expand_matches_an_independent_expansion(case):
    expr, expected = case
    assert expand_hostlist(expr) == expected


@given(expressions())
def test_compress_of_expand_round_trips_to_the_same_set(case):
    expr, _expected = case
    names = expand_hostlist(expr)
    assert set(expand_hostlist(compress_hostlist(names))) == set(names)


@given(st.lists(host_names(), max_size=30))
def test_expand_of_compress_gives_every_name_once(names):
    expanded = expand_hostlist(compress_hostlist(names))
    assert len(expanded) == len(set(expanded))
    assert set(expanded) == set(names)


@given(st.lists(host_names(), max_size=30))
def test_compress_is_stable(names):
    once = compress_hostlist(names)
    assert compress_hostlist(expand_hostlist(once)) == once
    assert compress_hostlist(list(reversed(names))) == once


def _natural(text):
    return [(int(piece), piece) if index % 2 else piece
            for index, piece in enumerate(re.split(r"([0-9]+)", text))]


@given(st.lists(st.tuples(st.sampled_from(["gpu", "node-", "rack1-n", "rack2-n", "rack10-n", "a"]),
                          st.integers(min_value=0, max_value=999)), max_size=40),
       st.sampled_from([0, 3, 4]))
def test_expand_of_compress_is_sorted_unique_for_uniform_padding(pairs, width):
    names = ["%s%0*d" % (prefix, width, number) for prefix, number in pairs]
    expected = sorted(set(names), key=lambda name: (
        _natural(re.match(r"^(.*?)([0-9]+)$", name).group(1)),
        int(re.match(r"^(.*?)([0-9]+)$", name).group(2))))
    assert expand_hostlist(compress_hostlist(names)) == expected


@given(st.text(max_size=40))
def test_expand_of_any_text_returns_names_or_raises_value_error(text):
    try:
        names = expand_hostlist(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert all(isinstance(name, str) and name for name in names)
        assert not any(set(name) & set("[], \t\n\r") for name in names)


def test_names_problem_is_the_reason_a_node_list_cannot_be_a_run():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import names_problem
    assert names_problem(["gpu001", "gpu002"]) is None and names_problem([]) is None
    assert names_problem(["gpu001", ""]) == "an empty host name cannot be written in a hostlist"
    assert names_problem(["gpu[1-2]"]) == "host name 'gpu[1-2]' contains '[' and ']', which a hostlist cannot hold"
    assert names_problem([7]) == "host names must be strings, got int"


def test_hostlist_text_is_a_hostlist_or_the_names_joined():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import hostlist_text
    assert hostlist_text(["gpu003", "gpu001", "gpu002", "gpu001"]) == "gpu[001-003]"
    assert hostlist_text(["b x", "a", 7]) == "7,a,b x"
    assert hostlist_text([]) == ""


def test_no_other_module_falls_back_from_a_hostlist_on_its_own():
    import re
    from conftest import REPO
    pattern = re.compile(r"except \(TypeError, ValueError\):\s*\n\s*(?:return|\w+ =) \",\"\.join")
    found = [str(path.relative_to(REPO)) for path in sorted((REPO / "plugins").rglob("*.py"))
             if path.name != "_hostlist.py" and pattern.search(path.read_text())]
    assert found == []
