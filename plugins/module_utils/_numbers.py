# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One reader for a number that came from outside: a tool's output, an inventory value, a file.

read_number(value, low, high, integer) -> (number, None) or (None, why). It takes an int or float
(never a bool) or a string of ASCII digits in plain or exponent form, at most MAX_CHARS long:
Python's own int() and float() accept Unicode digits ("٣"), underscores ("1_000"), "inf", "nan"
and strings of thousands of digits (ValueError past 4,300 in Python 3.11, seconds of CPU below),
none of which a tool prints for a reading. The result is finite and, when bounds are given,
within them; ``why`` says what was wrong in words a message can quote. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

# Room for any finite double written out in full ("%.2f" % 1e308 is 312 characters), far below
# the 4,300 digits past which int() raises.
MAX_CHARS = 330
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?\Z")
_INTEGER = re.compile(r"^[+-]?[0-9]+\Z")


def is_digits(text, limit=18):
    """True for a string of 1 to ``limit`` ASCII digits: what int() may read as a count or an id.

    str.isdigit() is also true for "²" (int() then raises) and for other scripts' digits, and
    says nothing of length (int() raises past 4,300 digits)."""
    return isinstance(text, str) and 0 < len(text) <= limit and text.isascii() and text.isdigit()


def _show(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


WEEK = 7 * 24 * 3600


def options_problem(params, bounds):
    """None, or the first option of ``params`` outside its (low, high) in ``bounds``, named.

    A module's seconds and counts at the door: a timeout of 10**400 s would overflow float() deep
    in a stage (a traceback), and one of a year is a hang nobody meant.
    """
    for name in sorted(bounds):
        low, high = bounds[name]
        dummy, why = read_number(params.get(name), low, high)
        if why:
            return "%s must be from %s to %s: %s" % (name, low, high, why)
    return None


def read_number(value, low=None, high=None, integer=False):
    """(number, None) for a finite number within [low, high] (an int when ``integer``), else
    (None, why)."""
    if isinstance(value, bool) or value is None:
        return None, "%s is not a number" % _show(value)
    if isinstance(value, (int, float)):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_CHARS:
            return None, "%s is not a number (%d characters)" % (_show(value), len(text))
        if not _NUMBER.match(text):
            return None, "%s is not a number" % _show(value)
        number = int(text) if _INTEGER.match(text) else float(text)
    else:
        return None, "%s is not a number" % _show(value)
    if isinstance(number, float) and not math.isfinite(number):
        return None, "%s is not a finite number" % _show(value)
    if integer:
        if isinstance(number, float):
            if not number.is_integer():
                return None, "%s is not a whole number" % _show(value)
            number = int(number)
    if low is not None and number < low:
        return None, "%s is below %s" % (_show(value), low)
    if high is not None and number > high:
        return None, "%s is above %s" % (_show(value), high)
    return number, None
