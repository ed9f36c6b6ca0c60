# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The result table of nccl-tests: its column header, and each data row split into typed cells.

Private to _nccl_tests: _nccl_tests_lines hands every candidate row to _parse_row. Values that
are not finite, negative or not whole counts become None and a sentence in the row's problems.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    finite_number, is_non_finite_word)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits


# A "[0] " rank label (MPICH/Intel MPI -prepend-rank / -l) glued inside a row.
_INLINE_LABEL = re.compile(r"\[\d+\]")
_INT = re.compile(r"^[-+]?\d+$")
_NUMBERISH = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")

# Column header names across nccl-tests generations, mapped to one vocabulary.
_COLUMN_NAMES = {
    "bytes": "size", "size": "size", "n": "count", "count": "count", "type": "type",
    "op": "redop", "redop": "redop", "root": "root",
    "time": "time", "cputime": "time", "algbw": "algbw", "busbw": "busbw",
    "#wrong": "wrong", "wrong": "wrong", "error": "error", "res": "error",
    "i_min": "i_min_us", "i_max": "i_max_us", "i_p99": "i_p99_us", "i_cv%": "i_cv_pct",
    "timestamp": "timestamp",
}
_LEAD_COLUMNS = frozenset(("size", "count", "type", "redop", "root"))
_DEFAULT_PERF = ("time", "algbw", "busbw", "wrong")
_CELL_LABEL = {"time": "time", "algbw": "algbw", "busbw": "busbw", "wrong": "#wrong",
               "error": "error", "i_min_us": "i_min", "i_max_us": "i_max", "i_p99_us": "i_p99",
               "i_cv_pct": "i_cv%"}


class _Table(object):
    """What one column header line says about the rows under it."""

    def __init__(self, names, old_style):
        self.has_root = "root" in names
        self.perf = [n for n in names if n not in _LEAD_COLUMNS and n != "timestamp"]
        # Before 2019 ('bytes N type op ...') times were milliseconds and no units row followed;
        # a '(us)' units row, when one follows, sets this back to 1.
        self.time_scale = 1000.0 if old_style else 1.0


def _is_int(token):
    return bool(_INT.match(token))


def _is_value(token):
    """A table cell: a number (1.5, -1, 2e+06), the N/A placeholder, or inf/nan (read, then refused)."""
    return token.upper() == "N/A" or bool(_NUMBERISH.match(token)) or is_non_finite_word(token)


def _as_count(value):
    """Counts printed with %g come back as floats (1.04858e+06); keep them integral."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _column_header(body):
    """A _Table when body is a table header line ('size count type redop ...'), else None."""
    tokens = body.lower().split()
    if "busbw" not in tokens or not ("size" in tokens or "bytes" in tokens):
        return None
    return _Table([_COLUMN_NAMES[t] for t in tokens if t in _COLUMN_NAMES], tokens[0] == "bytes")


def _looks_like_deviation(token, number):
    """Without a header: is this cell the 2017-2022 float error column rather than #wrong?

    #wrong is printed with %g (0, 96, 1e+06 for a million); the old error column with %.0le
    (0e+00, 2e-07, 1e+00), always with an exponent. An exponent below 6, or a fraction written
    with one, means a deviation.
    """
    mantissa, sep, exponent = token.lower().partition("e")
    if not sep:
        return False
    return not float(number).is_integer() or (_is_int(exponent) and int(exponent) < 6)


def _unreadable(what, token, why):
    """The problem text for a cell finite_number could not read (why: 'not finite' or other)."""
    return "%s %r is %s" % (what, token, "not a finite number" if why == "not finite" else "not a number")


def _measure(side, name, token, where, problems):
    """One time/bandwidth/per-iteration cell into side[name]; False when the cell is N/A."""
    value, why = finite_number(token)
    label = "%s %s" % (where, _CELL_LABEL[name])
    if why == "missing":
        side[name] = None
        return False
    if why is not None:
        problems.append(_unreadable(label, token, why))
        side[name] = None
        return True
    if value < 0:
        problems.append("%s %s is negative" % (label, token))
    side[name] = float(value)
    return True


def _count_cell(side, token, where, guess, problems):
    """The #wrong cell (or, without a header, the 2017-2022 deviation in its place)."""
    value, why = finite_number(token)
    if why == "missing":
        return
    if why is not None:
        problems.append(_unreadable(where + " #wrong", token, why))
        return
    if guess and _looks_like_deviation(token, value):
        _deviation(side, token, where, problems)
        return
    if not float(value).is_integer():
        problems.append("%s #wrong %s is not a whole count" % (where, token))
        return
    if value < 0:
        problems.append("%s #wrong %s is negative" % (where, token))
        return
    side["wrong"] = _as_count(value)


def _deviation(side, token, where, problems):
    value, why = finite_number(token)
    if why == "missing":
        return
    if why is not None:
        problems.append(_unreadable(where + " error", token, why))
        return
    if value < 0:
        problems.append("%s error %s is negative" % (where, token))
        return
    side["error"] = float(value)


def _side(cells, time_scale, where, problems, guess=False):
    """One out-of-place or in-place group of cells -> dict, or None when unreadable.

    guess: no column header named the last cell, so tell #wrong from error by its look.
    Values that are not finite numbers become None and a sentence in problems.
    """
    side = {"time_us": None, "algbw": None, "busbw": None, "wrong": None, "error": None}
    for name in ("time", "algbw", "busbw"):
        if not _measure(side, name, cells.get(name, ""), where, problems):
            return None   # these three are always printed: N/A here means a damaged row
    time = side.pop("time")
    side["time_us"] = round(time * time_scale, 3) if time is not None else None
    if cells.get("wrong") is not None:
        _count_cell(side, cells["wrong"], where, guess, problems)
    if cells.get("error") is not None:
        _deviation(side, cells["error"], where, problems)
    for name in ("i_min_us", "i_max_us", "i_p99_us", "i_cv_pct"):
        if name in cells:
            _measure(side, name, cells[name], where, problems)
    return side


def _parse_row(tokens, table):
    """Split data-row tokens into a row dict; None when the row is incomplete or garbled."""
    row = {"size": int(tokens[0]), "count": int(tokens[1]), "type": tokens[2], "redop": None,
           "root": None}
    rest = tokens[3:]
    if rest and not _is_value(rest[0]):
        row["redop"] = rest[0]
        rest = rest[1:]
    if table is not None and table.perf:
        if table.has_root and rest and _is_int(rest[0]):
            row["root"] = int(rest[0])
            rest = rest[1:]
        names = table.perf
        scale = table.time_scale
    else:
        if len(rest) % 4 == 1 and _is_int(rest[0]):
            row["root"] = int(rest[0])
            rest = rest[1:]
        names = list(_DEFAULT_PERF) * min(2, len(rest) // 4)
        scale = 1.0
    guess = table is None or not table.perf
    if not names or len(rest) < len(names) or not all(_is_value(t) for t in rest[:len(names)]):
        return None
    groups = []
    for name, token in zip(names, rest):
        if name == "time":
            groups.append({})
        if groups:
            groups[-1][name] = token
    problems = []
    sides = [_side(group, scale, where, problems, guess)
             for group, where in zip(groups[:2], ("out-of-place", "in-place"))]
    if not sides or any(side is None for side in sides):
        return None
    row["oop"] = sides[0]
    row["ip"] = sides[1] if len(sides) > 1 else None
    row["problems"] = problems
    return row


def _row_tokens(body):
    """Tokens of a candidate data row (two integers then a type name), else None."""
    tokens = _INLINE_LABEL.sub(" ", body).split()
    if len(tokens) < 3 or not (is_digits(tokens[0]) and is_digits(tokens[1])):
        return None
    if _is_value(tokens[2]):
        return None
    return tokens
