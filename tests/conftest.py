"""Test-wide setup: import the collection through its ansible_collections path, hypothesis profiles."""
import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "gpucluster" / "acceptance"
FIXTURES = REPO / "tests" / "fixtures"

if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(REPO)
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

# CI runs at least 2000 generated cases per property; a quick local profile keeps iteration fast.
settings.register_profile(
    "ci", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
