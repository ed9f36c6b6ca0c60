# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small text helpers shared by the tool-output parsers.

Private to the collection: parsers import these; nothing here raises on odd input.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import read_number

# "[1,0]<stdout>:" (mpirun --tag-output) and " 0: " / "12: " (srun --label).
_MPI_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s?")
_SRUN_LABEL = re.compile(r"^\s*\d+:\s")

# infiniband-diags (ibstat, perfquery, ibnetdiscover ...) report problems as "[prog: ]iberror: msg",
# "ibpanic: msg" (fatal) and "ibwarn: msg".
IBDIAG_ERROR = re.compile(r"^\s*(?:\S+:\s*)?(?:iberror|ibpanic):\s*(?P<msg>.*)$")
IBDIAG_WARNING = re.compile(r"^\s*(?:\S+:\s*)?ibwarn:\s*(?P<msg>.*)$")

_MISSING = frozenset(("n/a", "na", "[n/a]", "[not supported]", "not supported", "[unknown error]",
                      "unknown error", "[insufficient permissions]", "", "-", "none", "null"))
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def strip_launcher_prefix(line):
    """Remove an mpirun --tag-output or srun --label prefix from one line, if present."""
    # Called on every line of every output: one match where a prefix cannot be, not two subs.
    match = _MPI_TAG.match(line) if line[:1] == "[" else None
    if match is None:
        match = _SRUN_LABEL.match(line)
    return line[match.end():] if match else line


# A shell prompt, alone or with the command typed after it, as people paste captures:
# "$ nvidia-smi -q", "user@gpu01:~$ dcgmi diag -r 3", "[root@gpu01 ~]# ibstat", "gpu01:~ # ibstat",
# "(venv) user@host:/opt$ ...", and bash xtrace "+ nvidia-smi topo -m". A bare "# text" is not one:
# nccl-tests and others print their own "#" comment lines.
_SHELL_PROMPT = re.compile(
    r"^\s*(?:\([^)]*\)\s*)?"
    r"(?:\$"
    r"|\[[\w.-]+@[\w.-]+(?:\s[^\]]*)?\]\s?[$#%]"
    r"|[\w.-]+@[\w.-]+:[^\s$#]*\s?[$#%]"
    r"|[\w.-]+:[~/][^\s$#]*\s?[$#])"
    r"(?:\s|$)")
_XTRACE = re.compile(r"^\+{1,3} [\w./-]")


def is_shell_echo(line):
    """True for a shell prompt line (with or without the command after it) or an xtrace line."""
    # Every prompt ends in $, # or %, and xtrace starts with +: most lines need no regex at all.
    if "$" not in line and "#" not in line and "%" not in line:
        return line[:1] == "+" and bool(_XTRACE.match(line))
    return bool(_SHELL_PROMPT.match(line) or _XTRACE.match(line))


def is_missing(value):
    """True for the placeholders NVIDIA tools print instead of a value (N/A, [Not Supported], ...)."""
    return value is None or value.strip().lower() in _MISSING


def to_number(value):
    """Leading number of a cell such as '80 C', '700.00 W', '1.5e-3' or '42'; None when missing.

    Integers stay int, anything with a dot or exponent becomes float.
    """
    if value is None:
        return None
    text = value.strip()
    if is_missing(text):
        return None
    match = _NUMBER.match(text)
    if not match:
        return None
    # The one numeric reader: 5,000 digits (int() raises) or '1e309' (inf) are no number at all.
    number, dummy = read_number(match.group(0))
    return number


def lines_of(text):
    """Split text into lines, dropping carriage returns left by captured terminals."""
    return [line.rstrip("\r") for line in text.splitlines()]


def new_result(**fields):
    """A parser result with the keys every parser returns."""
    result = {"errors": [], "warnings": []}
    result.update(fields)
    return result


# Cells that read as a number to a careless float(): "inf", "-Infinity", "NaN". A tool never prints
# them for a measured value; they mean a division by zero or an uninitialised field.
_NON_FINITE_WORD = re.compile(r"^[-+]?(?:inf(?:inity)?|nan)$", re.IGNORECASE)
_WHOLE_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def is_non_finite_word(token):
    """True for inf, -inf, Infinity, nan (any case): a cell that is a number word but not a value."""
    return bool(_NON_FINITE_WORD.match(token.strip())) if isinstance(token, str) else False


def finite_number(token):
    """(number, None) for a cell that is exactly one finite number; (None, why) otherwise.

    why is "missing" for the placeholders of is_missing (N/A, ...), "not finite" for inf/nan and
    numbers too large for a float ('1e309' would read as infinity), "not a number" for anything
    else. Integers stay int, a dot or an exponent gives a float.
    """
    if token is None or is_missing(token):
        return None, "missing"
    text = token.strip()
    if is_non_finite_word(text):
        return None, "not finite"
    if not _WHOLE_NUMBER.match(text):
        return None, "not a number"
    value, why = read_number(text)
    if why:  # well formed, but inf or beyond what a float or a sane count holds ('1e309', 5,000 digits)
        return None, "not finite"
    return value, None


# A tool that crashed after (or instead of) its output: glibc/C++ runtime, shells, Go, Python.
_CRASH = re.compile(
    r"(?:^panic: |^fatal error: |terminate called (?:after throwing|without an active|recursively)"
    r"|\(core dumped\)|^Segmentation fault\b|^Bus error\b|^Aborted\b|^Killed\b"
    r"|\*\*\* Process received signal \*\*\*|^Traceback \(most recent call last\):"
    r"|\*\*\* (?:stack smashing|buffer overflow) detected|double free or corruption)")


def is_crash_line(line):
    """True for a line a crashing process prints (panic, terminate called, core dumped, ...)."""
    return bool(_CRASH.search(line.strip())) if isinstance(line, str) else False


def launcher_prefix(line):
    """The mpirun --tag-output / srun --label prefix at the start of line, or '' when none."""
    stripped = strip_launcher_prefix(line)
    return line[:len(line) - len(stripped)] if stripped != line else ""


MB = 1000 * 1000


def capped(limit_mb):
    """Decorator for a parser(text, ...): an input above ``limit_mb`` MB is not parsed.

    The parser's result for empty input comes back with an error first naming the size: a real
    output is far smaller (nvidia-smi -q of 8 GPUs is ~60 KB), and a capture gone wrong (a log
    appended to for weeks, a binary dumped) must not hold the controller for minutes. Each parser
    states its cap; bench/parser_scale.py checks that 20 MB of anything returns within 2 s."""
    limit = int(limit_mb * MB)

    def wrap(parser):
        @functools.wraps(parser)
        def parse(text, *args, **kwargs):
            size = len(text) if isinstance(text, str) else 0
            if size <= limit:
                return parser(text, *args, **kwargs)
            result = parser("", *args, **kwargs)
            result["errors"].insert(0, "the output is %.1f MB, above the %g MB this parser reads: not parsed "
                                       "(a capture gone wrong?)" % (size / float(MB), limit_mb))
            return result
        parse.limit_mb = limit_mb
        return parse
    return wrap
