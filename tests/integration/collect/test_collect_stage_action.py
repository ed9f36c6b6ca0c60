"""The collect_stage action, run by a real ansible-playbook on the controller (local connection)."""
import pytest

from harness import REPO, playbook

pytestmark = pytest.mark.integration

PLAYBOOK = REPO / "tests" / "integration" / "collect" / "collect_stage_action.yml"


def _run(tmp_path, *args, playbook_path=PLAYBOOK):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("node01 ansible_connection=local ansible_python_interpreter=auto_silent\n")
    return playbook(inventory, tmp_path / "artifacts", "-e", "collect_test_dir=%s" % tmp_path, *args,
                    playbook_name=str(playbook_path))


def test_collector_failures_hostile_values_and_bad_arguments(tmp_path):
    run = _run(tmp_path)
    assert run.rc == 0, run.output[-4000:]
    assert "failed=0" in run.output and "ignored=3" in run.output
    assert "Traceback" not in run.output


def test_check_mode_runs_nothing_unless_asked(tmp_path):
    run = _run(tmp_path, "--check", playbook_path=REPO / "tests" / "integration" / "collect" / "collect_stage_check_mode.yml")
    assert run.rc == 0, run.output[-4000:]
    assert "changed=0" in run.output and "failed=0" in run.output
