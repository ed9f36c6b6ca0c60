"""The one statistics module, and that no other module keeps a median, a MAD scale or a percentile."""
import re

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stats import (
    MAD_SCALE, MAD_TO_SIGMA, mad, mad_sorted, median, median_or_none, percentile, robust_z)

from conftest import REPO

FINITE = st.floats(-1e6, 1e6, allow_nan=False)


def test_median_and_its_empty_case():
    assert median([3, 1, 2]) == 2 and median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        median([])
    assert median_or_none([]) is None and median_or_none([None, float("nan"), True, "7"]) is None
    assert median_or_none([float("inf"), 2, 4, None]) == 3.0


def test_mad_robust_z_and_the_two_scales_agree():
    assert mad([1, 2, 3, 4, 100]) == 1 and robust_z(10, 10, 0) == 0.0 and robust_z(11, 10, 0) == float("inf")
    assert robust_z(12, 10, 1) == pytest.approx(2 * MAD_TO_SIGMA)
    assert MAD_SCALE == pytest.approx(1 / MAD_TO_SIGMA, rel=1e-3)
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([5], 99) == 5


@given(st.lists(FINITE, min_size=1, max_size=60))
def test_the_walk_on_sorted_values_is_the_mad(values):
    ordered = sorted(values)
    center = median(ordered)
    assert mad_sorted(ordered, center) == pytest.approx(mad(ordered, center), abs=1e-9)


def test_no_other_module_keeps_its_own_statistics():
    """One home: a median/MAD/percentile function or a MAD scale constant elsewhere is a copy (the
    docs may still say 1.4826 x MAD)."""
    copies = re.compile(r"^def _?(?:median|mad|percentile|robust_z)\w*\(|^\s*\w+ = (?:0\.6745|1\.4826)\b", re.M)
    found = ["%s: %s" % (path.relative_to(REPO), match.group(0))
             for path in sorted((REPO / "plugins").rglob("*.py")) if path.name != "_stats.py"
             for match in copies.finditer(path.read_text())]
    assert found == []
