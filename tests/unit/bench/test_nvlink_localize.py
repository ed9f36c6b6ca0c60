"""Localisation inside an NVLink domain (bench/nvlink_localize.py): a slow tray pinned in at most
three rounds, no tray of another rack or a healthy one blamed, a whole slow rack pinning none."""
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import nvlink_localize  # noqa: E402  pylint: disable=wrong-import-position


def test_slow_trays_are_pinned_inside_their_rack_in_three_rounds_without_false_positives():
    cells = nvlink_localize.run((2,), seeds=4)
    assert [c["scenario"] for c in cells] == [s[0] for s in nvlink_localize.SCENARIOS]
    for cell in cells:
        assert cell["rounds_max"] <= 3 and cell["false_positives"] == 0, cell
        if cell["scenario"] == "whole rack slow":
            assert cell["pinned_in_whole_rack"] == 0 and cell["recall"] is None
        else:
            assert cell["recall"] == 1.0, cell
    assert "Targets: a slow tray pinned in at most 3 rounds: met" in nvlink_localize.markdown(cells)
