"""Known variable names and the unknown ones with the closest name (plugin_utils/_variables.py)."""
import re
from pathlib import Path

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._variables import (
    PREFIXES, describe, known_names, unknown_variables)

REPO = Path(__file__).resolve().parents[4]


def test_every_role_option_and_documented_playbook_variable_is_known():
    known = known_names()
    for name in ("acceptance_profile", "acceptance_environment", "acceptance_controller_environment",
                 "acceptance_replay_dir", "acceptance_profile_overrides", "acceptance_fail_fast",
                 "acceptance_nodes", "acceptance_strict_variables", "check_dcgm_level", "check_topology_timeout",
                 "node_health_nodes", "checkpoint_plan_nodes", "acceptance_run_id", "acceptance_targets"):
        assert name in known, name
    assert not any(n.startswith("__") for n in known)


def test_the_variables_in_the_docs_are_known():
    # Every checked-prefix name the README and docs mention in backquotes is one the check knows.
    known = known_names()
    pattern = re.compile(r"`((?:%s)[a-z0-9_]*[a-z0-9])\b" % "|".join(PREFIXES))
    mentioned = set()
    for path in [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md")):
        mentioned.update(pattern.findall(path.read_text()))
    missing = sorted(n for n in mentioned if n not in known and not n.endswith("_"))
    # Role names (check_dcgm) and a few documented result names are not variables.
    missing = [n for n in missing if not (REPO / "roles" / n).is_dir()]
    assert len(missing) <= len(mentioned) // 5, missing


def test_unknown_names_get_the_closest_known_one():
    known = {"acceptance_profile", "check_dcgm_level", "check_dcgm_timeouts"}
    names = ["acceptance_profil", "check_dcgm_levle", "check_dcgm_level", "ansible_host", "node_health_zzz_qqq",
             "acceptance_profile"]
    found = unknown_variables(names, known)
    assert found == [{"name": "acceptance_profil", "closest": "acceptance_profile"},
                     {"name": "check_dcgm_levle", "closest": "check_dcgm_level"},
                     {"name": "node_health_zzz_qqq", "closest": None}]
    assert describe(found) == ["acceptance_profil (did you mean acceptance_profile?)",
                               "check_dcgm_levle (did you mean check_dcgm_level?)",
                               "node_health_zzz_qqq (no similar name)"]


def test_known_names_read_a_collection_tree(tmp_path):
    role = tmp_path / "roles" / "check_x"
    (role / "meta").mkdir(parents=True)
    (role / "defaults").mkdir()
    (role / "tasks").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      check_x_a: {type: int}\n  other:\n    options:\n      check_x_b: {}\n")
    (role / "defaults" / "main.yml").write_text("check_x_c: 1\n__check_x_hidden: 2\n")
    (role / "tasks" / "main.yml").write_text("- debug: msg={{ acceptance_used_in_task | default(1) }}\n")
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "p.yml").write_text("- hosts: \"{{ acceptance_nodes | default('x') }}\"\n")
    assert known_names(str(tmp_path)) == {"check_x_a", "check_x_b", "check_x_c", "acceptance_used_in_task",
                                          "acceptance_nodes"}
