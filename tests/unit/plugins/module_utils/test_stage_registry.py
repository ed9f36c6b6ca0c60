"""The stage registry (_stages.STAGES) is the one list of per-node stages: what names a stage
elsewhere (the action's documented choices, the collect role's argument spec, the roles that run a
stage, docs/developing.md) is checked against it here."""
import re

import yaml

from ansible_collections.gpucluster.acceptance.plugins.action.collect_stage import ARGUMENT_SPEC
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES

from conftest import REPO


def _documented_choices():
    text = (REPO / "plugins" / "modules" / "collect_stage.py").read_text()
    documentation = re.search(r'DOCUMENTATION = r?"""(.*?)"""', text, re.S).group(1)
    return yaml.safe_load(documentation)["options"]["stage"]["choices"]


def test_the_action_and_its_documentation_offer_exactly_the_registry():
    assert ARGUMENT_SPEC["stage"]["choices"] == sorted(STAGES)
    assert sorted(_documented_choices()) == sorted(STAGES)


def test_the_collect_role_names_every_stage():
    spec = yaml.safe_load((REPO / "roles" / "collect" / "meta" / "argument_specs.yml").read_text())
    description = spec["argument_specs"]["main"]["options"]["collect_stage"]["description"]
    assert [s for s in STAGES if not re.search(r"\b%s\b" % s, description)] == []


def test_every_stage_a_role_runs_is_registered_and_every_registered_stage_is_run():
    used = {}
    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        for name in re.findall(r"^\s*collect_stage: ([a-z_]+)\s*$", path.read_text(), re.M):
            used.setdefault(name, []).append(str(path.relative_to(REPO)))
    assert sorted(set(used) - set(STAGES)) == []
    assert sorted(set(STAGES) - set(used)) == []
