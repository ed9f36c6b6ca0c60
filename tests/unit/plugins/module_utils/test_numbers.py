"""The one reader of outside numbers (module_utils/_numbers.py): finite, in range, ASCII, bounded."""
import math

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import MAX_CHARS, is_digits, read_number


@pytest.mark.parametrize("value, expected", [
    (5, 5), ("5", 5), (" 42 ", 42), ("-3", -3), ("2.5", 2.5), ("1e3", 1000.0), (".5", 0.5), (7.0, 7.0),
])
def test_plain_numbers_are_read(value, expected):
    assert read_number(value) == (expected, None)


@pytest.mark.parametrize("value, words", [
    (True, "True is not a number"), (None, "None is not a number"), ("inf", "'inf' is not a number"),
    (float("inf"), "inf is not a finite number"), (float("nan"), "nan is not a finite number"),
    ("nan", "'nan' is not a number"), ("\u00b2", "is not a number"), ("\u0663", "is not a number"),
    ("1_000", "'1_000' is not a number"), ("1.2.3", "'1.2.3' is not a number"), ("1e309", "is not a finite number"),
    ("9" * 5000, "is not a number (5000 characters)"), ([1], "[1] is not a number"), ("", "'' is not a number"),
    ("0x10", "'0x10' is not a number"), ("1e1000", "is not a number"),
])
def test_what_a_tool_never_prints_for_a_reading_is_refused_with_why(value, words):
    number, why = read_number(value)
    assert number is None and words in why


def test_bounds_and_whole_numbers():
    assert read_number("0", low=1) == (None, "'0' is below 1")
    assert read_number(10, high=5) == (None, "10 is above 5")
    assert read_number("4.0", integer=True) == (4, None)
    assert read_number(4.5, integer=True) == (None, "4.5 is not a whole number")


@given(st.one_of(st.text(max_size=80), st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                 st.booleans(), st.none(), st.binary(max_size=8)))
def test_anything_is_a_finite_number_or_a_reason(value):
    """Property: never an exception; a number is finite and was written in plain ASCII."""
    number, why = read_number(value, low=-1e12, high=1e12)
    if why is None:
        assert isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
        assert -1e12 <= number <= 1e12
        if isinstance(value, str):
            assert value.strip().isascii() and len(value.strip()) <= MAX_CHARS
    else:
        assert number is None and isinstance(why, str) and why


@pytest.mark.parametrize("text, expected", [("0", True), ("123", True), ("\u00b2", False), ("\u0663", False),
                                            ("", False), ("1" * 19, False), ("-1", False), (" 1", False), (5, False)])
def test_is_digits_is_what_int_can_read_as_a_count(text, expected):
    assert is_digits(text) is expected


def test_options_problem_names_the_first_option_out_of_its_bounds():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import WEEK, options_problem
    bounds = {"timeout": (1, WEEK), "qps": (1, 64)}
    assert options_problem({"timeout": 30, "qps": 4}, bounds) is None
    assert options_problem({"timeout": 10 ** 400, "qps": 4}, bounds) == (
        "timeout must be from 1 to 604800: %s... is above 604800" % repr(10 ** 400)[:37])
    assert options_problem({"timeout": 30, "qps": 0}, bounds) == "qps must be from 1 to 64: 0 is below 1"
    assert "is not a number" in options_problem({"timeout": None, "qps": 1}, bounds)


def test_the_cell_readers_of_the_parsers_use_the_one_reader():
    """_text.to_number / finite_number: no exception and no infinity from any cell."""
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import finite_number, to_number
    assert to_number("9" * 5000) is None and to_number("1e309 W") is None and to_number("80 C") == 80
    assert finite_number("9" * 5000) == (None, "not finite") and finite_number("1e309") == (None, "not finite")
    assert finite_number("%.2f" % 1e300)[0] == float("%.2f" % 1e300)
    assert finite_number("\u00b2") == (None, "not a number")
