"""Every test file has its own name: pytest (its default import mode, no __init__.py) cannot
collect two test modules of one basename in one run, which tools/test_counts.py and `pytest tests`
do (a unit test mirroring plugin_utils/_progress.py and an integration test of the console's
progress were both test_progress.py)."""
from conftest import REPO


def test_no_two_test_files_share_a_name():
    seen = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if "fixtures" in path.relative_to(REPO / "tests").parts:
            continue
        seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    assert [paths for paths in seen.values() if len(paths) > 1] == []
