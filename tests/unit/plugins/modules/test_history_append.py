"""The history_append module: appends, never rewrites or deduplicates; check mode writes nothing."""
import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.acceptance.plugins.modules import history_append


def run_module(capsys, args, check=False):
    module_args = dict(args, _ansible_diff=True)
    if check:
        module_args["_ansible_check_mode"] = True
    with patch_module_args(module_args):
        with pytest.raises(SystemExit):
            history_append.main()
    return json.loads(capsys.readouterr().out)


def test_two_identical_entries_are_both_appended_after_the_existing_lines(capsys, tmp_path):
    path = tmp_path / "log" / "h.jsonl"
    entry = {"node": "gpu003", "action": "drain", "reason": "gpucluster: x"}
    result = run_module(capsys, {"path": str(path), "entries": [entry]})
    assert result["changed"] and result["appended"] == 1
    result = run_module(capsys, {"path": str(path), "entries": [entry, entry]})
    assert result["appended"] == 2 and result["diff"]["after"].count("\n") == 2
    assert [json.loads(line) for line in path.read_text().splitlines()] == [entry] * 3


def test_check_mode_writes_nothing_and_says_what_it_would_append(capsys, tmp_path):
    path = tmp_path / "log" / "h.jsonl"
    result = run_module(capsys, {"path": str(path), "entries": [{"node": "gpu001"}]}, check=True)
    assert result["changed"] and result["lines"] == ['{"node":"gpu001"}']
    assert not path.parent.exists()


@pytest.mark.parametrize("mode", ["rw", "147602206330", "-644", "17777"])
def test_a_bad_mode_fails_clearly(capsys, tmp_path, mode):
    """'147602206330' reads as octal but is no file mode: os.open raised OverflowError (the module
    family property found it on a clean clone)."""
    result = run_module(capsys, {"path": str(tmp_path / "h"), "entries": [{}], "mode": mode})
    assert result["failed"] and "mode must be an octal file mode" in result["msg"]
    assert not (tmp_path / "h").exists()


def test_a_path_with_a_nul_byte_fails_clearly(capsys, tmp_path):
    result = run_module(capsys, {"path": str(tmp_path / "a\x00b"), "entries": [{}]})
    assert result["failed"] and result["msg"].startswith("cannot append to")
