# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the nccl-tests judges read and quote a row of a parse_nccl_tests result: the rows that are
rows (_rows), a row's out-of-place and in-place sides (_sides), where it is for a message
("line 54 (8 GiB)", _where, _size_text) and its text as evidence (_row_text).

Apart from the checks that use them (_judge_nccl, _judge_nccl_correctness,
_judge_nccl_plausibility), so every check names a row the same way. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import fmt_num, is_number


def _size_text(size):
    if not is_number(size):
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return "%s %s" % (fmt_num(size / float(scale)), unit)
    return "%d B" % size


def _rows(nccl):
    return [row for row in nccl.get("rows") or [] if isinstance(row, dict)]


def _sides(row):
    for label, key in (("out-of-place", "oop"), ("in-place", "ip")):
        side = row.get(key)
        if isinstance(side, dict):
            yield label, side


def _where(row):
    return "line %s (%s)" % (row.get("line"), _size_text(row.get("size")))


def _row_text(row):
    return row.get("text") or "%s %s %s" % (row.get("size"), row.get("count"), row.get("type"))
