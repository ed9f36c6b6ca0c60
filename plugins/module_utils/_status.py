# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one status vocabulary of a check, and its ranking.

A check is ``pass``, ``fail`` (measured a fault), ``error`` (could not judge: no verdict, never a
pass) or ``skip`` (not applicable or not captured). Summaries take the worst: error > fail >
pass > skip; a status outside the vocabulary counts as an error (a judge's defect is never a
pass). Standard library only: judges may run on managed nodes as well as on the controller.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

PASS = "pass"
FAIL = "fail"
ERROR = "error"
SKIP = "skip"
STATUSES = (PASS, FAIL, ERROR, SKIP)
BAD = (FAIL, ERROR)
RANK = {SKIP: 0, PASS: 1, FAIL: 2, ERROR: 3}


def worst(statuses, empty=SKIP):
    """The worst of the statuses; ``empty`` when there are none; an unknown one is an error."""
    found = None
    for status in statuses:
        status = status if status in RANK else ERROR
        if found is None or RANK[status] > RANK[found]:
            found = status
    return empty if found is None else found


def worst_status(results):
    """The worst status of a list of check results; 'skip' for an empty list."""
    return worst(result.get("status") if isinstance(result, dict) else None for result in results)
