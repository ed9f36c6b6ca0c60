# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm hostlist expressions: expand ``gpu[001-004,010]`` to names and compress names back.

Private to the collection. Semantics follow Slurm's hostlist code (``scontrol show hostnames`` /
``scontrol show hostlistsorted``):

* Top-level separators are commas and whitespace; commas inside brackets do not split.
* A bracket holds comma-separated numbers and ``lo-hi`` ranges. The zero padding of a range is
  the width of its *low* bound as written: ``[01-10]`` gives 01..10, ``[1-10]`` gives 1..10.
* Text may follow the brackets (``n[1-2]-ib`` gives n1-ib, n2-ib) and several bracket groups
  expand as a cartesian product, the leftmost group varying slowest
  (``rack[1-2]-n[01-02]`` gives rack1-n01, rack1-n02, rack2-n01, rack2-n02).
* Expansion keeps duplicates and order; compression sorts, removes duplicates and merges runs.

The pure functions raise ``ValueError`` with a message naming the problem for malformed
expressions, and for expressions that would expand to more than ``MAX_HOSTLIST_NAMES`` names
(the count is computed before anything is expanded).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import itertools
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

# Refuse to build more names than this from one expression (Slurm caps a single range at 64K).
MAX_HOSTLIST_NAMES = 1000000

_SEPARATORS = frozenset(", \t\n\r")
_WHITESPACE = frozenset(" \t\n\r\f\v")
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?\Z")
_TRAILING_DIGITS = re.compile(r"^(.*?)([0-9]+)\Z", re.DOTALL)
_DIGIT_RUNS = re.compile(r"([0-9]+)")
_NOT_IN_NAMES = frozenset("[],") | _WHITESPACE

_STRING_TYPES = (str,)


def _split_tokens(expr):
    """Split at top-level separators; return [(token, start offset)]. Checks bracket balance."""
    tokens = []
    start = None
    open_at = None
    for pos, char in enumerate(expr):
        if char == "[":
            if open_at is not None:
                raise ValueError("invalid hostlist %r: '[' at position %d is inside another "
                                 "bracket opened at position %d" % (expr, pos, open_at))
            open_at = pos
        elif char == "]":
            if open_at is None:
                raise ValueError("invalid hostlist %r: ']' at position %d has no matching '['"
                                 % (expr, pos))
            open_at = None
        elif char in _SEPARATORS and open_at is None:
            if start is not None:
                tokens.append((expr[start:pos], start))
                start = None
            continue
        elif char in _WHITESPACE:
            raise ValueError("invalid hostlist %r: whitespace at position %d inside brackets"
                             % (expr, pos))
        if start is None:
            start = pos
    if open_at is not None:
        raise ValueError("invalid hostlist %r: '[' at position %d is never closed"
                         % (expr, open_at))
    if start is not None:
        tokens.append((expr[start:], start))
    return tokens


def _parse_ranges(expr, body, offset):
    """'001-004,010' -> [(1, 4, 3), (10, 10, 3)] as (low, high, width)."""
    if body == "":
        raise ValueError("invalid hostlist %r: empty brackets at position %d" % (expr, offset))
    ranges = []
    for item in body.split(","):
        match = _RANGE.match(item)
        if not match:
            raise ValueError("invalid hostlist %r: %r inside the brackets at position %d is not a "
                             "number or a low-high range" % (expr, item, offset))
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            raise ValueError("invalid hostlist %r: range %r at position %d runs backwards"
                             % (expr, item, offset))
        ranges.append((low, high, len(match.group(1))))
    return ranges


def _parse_token(expr, token, offset):
    """One top-level element as alternating literal text and range lists."""
    parts = []
    pos = 0
    while True:
        opening = token.find("[", pos)
        if opening < 0:
            parts.append(token[pos:])
            return parts
        closing = token.index("]", opening)  # balance already checked by _split_tokens
        parts.append(token[pos:opening])
        parts.append(_parse_ranges(expr, token[opening + 1:closing], offset + opening))
        pos = closing + 1


def _group_size(ranges):
    return sum(high - low + 1 for low, high, _width in ranges)


def _group_values(ranges):
    values = []
    for low, high, width in ranges:
        values.extend("%0*d" % (width, number) for number in range(low, high + 1))
    return values


def hostlist_count(expr, limit=MAX_HOSTLIST_NAMES):
    """Number of names expr expands to (duplicates counted), without expanding it."""
    return sum(_count_parsed(_parse_expression(expr, limit)))


def _parse_expression(expr, limit):
    if not isinstance(expr, _STRING_TYPES):
        raise TypeError("a hostlist expression must be a string, got %s" % type(expr).__name__)
    parsed = [_parse_token(expr, token, offset) for token, offset in _split_tokens(expr)]
    total = 0
    for parts in parsed:
        count = 1
        for part in parts[1::2]:
            count *= _group_size(part)
            if count > limit:
                break
        total += count
        if total > limit:
            raise ValueError("hostlist %s expands to more than %d names; refusing to expand it"
                             % (_shorten(expr), limit))
    return parsed


def _count_parsed(parsed):
    for parts in parsed:
        count = 1
        for part in parts[1::2]:
            count *= _group_size(part)
        yield count


def _shorten(text, keep=80):
    text = repr(text)
    return text if len(text) <= keep else text[:keep - 3] + "..."


def expand_hostlist(expr, limit=MAX_HOSTLIST_NAMES):
    """Expand a Slurm hostlist expression to the list of names it stands for.

    'gpu[001-003,010],vm' -> ['gpu001', 'gpu002', 'gpu003', 'gpu010', 'vm']; '' -> [].
    Raises ValueError for a malformed expression or one with more than `limit` names,
    TypeError for a non-string.
    """
    names = []
    for parts in _parse_expression(expr, limit):
        if len(parts) == 1:
            names.append(parts[0])
            continue
        pieces = []
        for index, part in enumerate(parts):
            pieces.append([part] if index % 2 == 0 else _group_values(part))
        names.extend("".join(combo) for combo in itertools.product(*pieces))
    return names


def natural_key(text):
    """The one sort key for names: numbers by value ('gpu2' < 'gpu10', 'leaf2' < 'leaf10'), text
    without regard to case (then by case, so the order is total), any value comparable with any
    other (a digit run too long to be a count sorts as text)."""
    return tuple((0, int(piece), "", piece) if is_digits(piece) else (1, 0, piece.lower(), piece)
                 for piece in _DIGIT_RUNS.split(str(text)))


def _check_name(name):
    if not isinstance(name, _STRING_TYPES):
        raise TypeError("host names must be strings, got %s" % type(name).__name__)
    if name == "":
        raise ValueError("an empty host name cannot be written in a hostlist")
    bad = sorted(set(name) & _NOT_IN_NAMES)
    if bad:
        raise ValueError("host name %r contains %s, which a hostlist cannot hold"
                         % (name, " and ".join(repr(char) for char in bad)))


def names_problem(names):
    """None, or why these names cannot be nodes of a run (each must be a name a hostlist can hold).

    Modules check their node list with this at the door: a bad name is the user's message, not a
    traceback from deep inside a stage.
    """
    for name in names:
        try:
            _check_name(name)
        except (TypeError, ValueError) as exc:
            return str(exc)
    return None


def _runs(numbers):
    """Sorted ints -> [(low, high)] of consecutive runs."""
    runs = []
    for number in numbers:
        if runs and runs[-1][1] == number - 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return runs


def _ranges_for(digit_strings):
    """Number suffixes of one prefix -> sorted [(low, high, width)]; width 0 means unpadded.

    A zero-padded suffix ('007') only shares a range with suffixes of the same width; an unpadded
    run may continue a padded one where the padding runs out ('098-101' is 098, 099, 100, 101).
    """
    padded = {}
    natural = set()
    for digits in digit_strings:
        if len(digits) > 1 and digits[0] == "0":
            padded.setdefault(len(digits), set()).add(int(digits))
        else:
            natural.add(int(digits))
    ranges = []
    for width in sorted(padded):
        for low, high in _runs(sorted(padded[width])):
            while high + 1 in natural and len(str(high + 1)) >= width:
                natural.discard(high + 1)
                high += 1
            ranges.append((low, high, width))
    ranges.extend((low, high, 0) for low, high in _runs(sorted(natural)))
    ranges.sort(key=lambda item: (item[0], len("%0*d" % (item[2], item[0]))))
    return ranges


def _format_range(low, high, width):
    if low == high:
        return "%0*d" % (width, low)
    return "%0*d-%0*d" % (width, low, width, high)


def compress_hostlist(names):
    """Compact sorted Slurm hostlist expression for a list of names (like scontrol show
    hostlistsorted): 'gpu001,gpu002,gpu003,gpu010,vm' -> 'gpu[001-003,010],vm'.

    `names` is a list (or tuple/set) of host names, or a hostlist expression string. Duplicates
    are dropped; names sort by prefix (numbers inside it compared by value), then by number.
    Raises ValueError for names a hostlist cannot hold (empty, or with brackets, commas or
    whitespace), TypeError for non-string names.
    """
    if isinstance(names, _STRING_TYPES):
        names = expand_hostlist(names)
    if isinstance(names, dict) or not hasattr(names, "__iter__"):
        raise TypeError("compress_hostlist expects a list of host names, got %s"
                        % type(names).__name__)
    plain = set()
    numbered = {}
    for name in names:
        _check_name(name)
        match = _TRAILING_DIGITS.match(name)
        if match:
            numbered.setdefault(match.group(1), set()).add(match.group(2))
        else:
            plain.add(name)
    # A name without a number sorts before numbered names sharing its text ("gpu" < "gpu1").
    entries = [(natural_key(name), 0, name, None) for name in plain]
    entries.extend((natural_key(prefix), 1, prefix, digits) for prefix, digits in numbered.items())
    entries.sort(key=lambda entry: (entry[0], entry[1], entry[2]))
    pieces = []
    for _key, kind, prefix, digits in entries:
        if kind == 0:
            pieces.append(prefix)
            continue
        ranges = _ranges_for(digits)
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            pieces.append(prefix + _format_range(*ranges[0]))
        else:
            pieces.append("%s[%s]" % (prefix, ",".join(_format_range(*item) for item in ranges)))
    return ",".join(pieces)


def hostlist_text(names):
    """Names as one short text for a message: the hostlist ("gpu[001-004,007]") when every name
    can be one, else the names joined by commas (a name with a bracket or a blank stays readable)."""
    unique = sorted(set(str(name) for name in names), key=natural_key)
    try:
        return compress_hostlist(unique)
    except (TypeError, ValueError):
        return ",".join(unique)
