# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one statistics module: median, MAD, robust z and percentile, for judges, localisation,
baselines and the report. Thresholds (k, minimum drops) never live here: they come from the
profile. Standard library only: judges may run on managed nodes as well as on the controller.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import bisect
import math

# The 0.75 quantile of the standard normal: MAD / 0.6745 estimates the standard deviation of
# normally distributed data (Iglewicz and Hoaglin's modified z-score uses 0.6745 * diff / MAD).
MAD_TO_SIGMA = 0.6745
# The same scale the other way round: 1.4826 x MAD estimates sigma (a robust CV is 1.4826 MAD / median).
MAD_SCALE = 1.4826


def is_finite_number(value):
    """True for an int or float (never a bool) that is finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def median(values):
    """Median of a non-empty sequence of numbers; ValueError when it is empty (a caller that has
    no values has nothing to compare against, and must say so)."""
    ordered = sorted(values)
    count = len(ordered)
    if count == 0:
        raise ValueError("median of an empty sequence")
    middle = count // 2
    if count % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def median_or_none(values):
    """Median of the finite numbers among values (others ignored); None when there are none."""
    usable = [v for v in values if is_finite_number(v)]
    return median(usable) if usable else None


def mad(values, center=None):
    """Median absolute deviation (unscaled) around center (default: the median)."""
    if center is None:
        center = median(values)
    return median([abs(v - center) for v in values])


def mad_sorted(values, center):
    """Median absolute deviation of sorted values around center, walking out from the center."""
    count = len(values)
    right = bisect.bisect_left(values, center)
    left = right - 1
    wanted = (count - 1) // 2, count // 2
    found = []
    for rank in range(count // 2 + 1):
        dev_left = center - values[left] if left >= 0 else None
        dev_right = values[right] - center if right < count else None
        if dev_right is None or (dev_left is not None and dev_left <= dev_right):
            dev = dev_left
            left -= 1
        else:
            dev = dev_right
            right += 1
        if rank in wanted:
            found.append(dev)
    return sum(found) / len(found)


def robust_z(value, center, spread):
    """Modified z-score 0.6745 * (value - center) / MAD.

    When the MAD is zero (most peers identical) any deviation gives +/-inf and no deviation 0.
    """
    diff = value - center
    if spread == 0:
        if diff == 0:
            return 0.0
        return math.copysign(float("inf"), diff)
    return MAD_TO_SIGMA * diff / spread


def percentile(values, pct):
    """Linear-interpolated percentile (as numpy's default) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of an empty sequence")
    pos = (len(ordered) - 1) * pct / 100.0
    low = int(math.floor(pos))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
