"""The one status vocabulary: its ranking, and that no other module keeps its own copy."""
import re

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import (
    ERROR, FAIL, PASS, SKIP, STATUSES, worst, worst_status)

from conftest import REPO


def test_the_worst_wins_and_an_unknown_status_is_an_error():
    assert worst([PASS, SKIP]) == PASS and worst([PASS, FAIL, SKIP]) == FAIL and worst([FAIL, ERROR]) == ERROR
    assert worst([]) == SKIP and worst([], empty=PASS) == PASS
    assert worst([PASS, "warn"]) == ERROR and worst([None]) == ERROR
    assert worst_status([{"status": PASS}, {"status": SKIP}]) == PASS and worst_status([]) == SKIP
    assert worst_status([{"status": PASS}, {}, "x"]) == ERROR


@given(st.lists(st.sampled_from(STATUSES + ("warn", "", None))))
def test_worst_never_improves_on_a_member(statuses):
    found = worst(statuses)
    assert found in STATUSES
    if any(s not in STATUSES for s in statuses) or ERROR in statuses:
        assert found == ERROR
    elif FAIL in statuses:
        assert found == FAIL


def test_no_other_module_spells_out_the_vocabulary_or_its_ranking():
    """One home: a tuple of the four statuses, a (fail, error) pair or a rank table elsewhere is a copy."""
    copies = re.compile(r'\(\s*"pass",\s*"fail",\s*"error",\s*"skip"\s*\)|\(\s*"fail",\s*"error"\s*\)|'
                        r'"error":\s*\d,\s*"fail":\s*\d|\{\s*SKIP:\s*0,\s*PASS:\s*1')
    found = ["%s: %s" % (path.relative_to(REPO), match.group(0))
             for path in sorted((REPO / "plugins").rglob("*.py")) if path.name != "_status.py"
             for match in copies.finditer(path.read_text())]
    assert found == []
