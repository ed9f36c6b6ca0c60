"""Every real-output fixture of the InfiniBand and perftest parsers is listed in its SOURCES.md."""
import pytest

from conftest import FIXTURES


@pytest.mark.parametrize("folder", ["ib_counters", "ibnetdiscover", "ibstat", "perftest"])
def test_every_fixture_is_listed_in_sources(folder):
    sources = (FIXTURES / folder / "SOURCES.md").read_text()
    for path in (FIXTURES / folder).glob("*.txt"):
        assert path.name in sources
