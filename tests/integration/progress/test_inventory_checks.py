"""Inventory checks at the start: no hosts in the node group, unknown variables (no cluster needed)."""
import pytest

from harness import playbook

pytestmark = pytest.mark.integration


def _inventory(tmp_path, text):
    path = tmp_path / "hosts.ini"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["acceptance.yml", "health_check.yml", "data_loader.yml", "checkpoint_plan.yml"])
def test_no_node_group_fails_at_once_naming_it(tmp_path, name):
    inventory = _inventory(tmp_path, "[login]\nlogin01 ansible_connection=local\n")
    run = playbook(inventory, tmp_path / "artifacts", "-e", "acceptance_profile=hgx_h100_sxm", playbook_name=name)
    out = " ".join(run.output.split())
    assert run.rc != 0, run.output[-3000:]
    assert "no hosts in group gpu_nodes:" in out, run.output[-3000:]
    assert "groups in this inventory: login" in out
    assert "0 of 0 node(s)" not in out and "Traceback" not in out
    assert run.dir is None  # stopped before the run started: no run directory, no summary


def test_an_empty_pattern_is_named_too(tmp_path):
    inventory = _inventory(tmp_path, "[gpu_nodes]\ngpu001 ansible_connection=local\n")
    run = playbook(inventory, tmp_path / "artifacts", "-e", "acceptance_profile=hgx_h100_sxm",
                   "-e", "acceptance_nodes=gpu_nodes:!gpu001")
    assert run.rc != 0
    assert "no hosts in group gpu_nodes:!gpu001:" in run.output, run.output[-3000:]


def test_unknown_variables_fail_with_the_closest_name_when_strict(tmp_path):
    inventory = _inventory(tmp_path, "[gpu_nodes]\ngpu001 ansible_connection=local check_topology_timout=30\n")
    run = playbook(inventory, tmp_path / "artifacts", "-e", "acceptance_profile=hgx_h100_sxm",
                   "-e", "acceptance_strict_variables=true", "-e", "acceptance_profil=hgx_h200",
                   "-e", "node_health_zzz_qqq=1")
    out = " ".join(run.output.split())
    assert run.rc != 0, run.output[-3000:]
    assert ("unknown variable(s), set in the inventory or extra vars but used by nothing: "
            "acceptance_profil (did you mean acceptance_profile?); "
            "check_topology_timout (did you mean check_topology_timeout?); node_health_zzz_qqq") in out, out[-3000:]
    assert "Stage " not in out  # no stage started
    assert run.dir is None
