"""No file under plugins/ over 400 lines: a file that grows past it holds more than one concept
(docs/developing.md, "One home per concept"); split it by concept, not by size."""
from conftest import REPO

MAX_LINES = 400


def test_no_plugin_file_is_over_the_limit():
    found = []
    for path in sorted((REPO / "plugins").rglob("*.py")):
        with open(str(path), "rb") as handle:
            count = sum(1 for _line in handle)
        if count > MAX_LINES:
            found.append("%s: %d lines" % (path.relative_to(REPO), count))
    assert found == []
