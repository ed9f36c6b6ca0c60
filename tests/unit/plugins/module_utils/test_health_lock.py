"""The health check's drain lock and its append-only history (module_utils/_health_lock.py)."""
import json
import multiprocessing
import os

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._health_lock import (
    LockTimeout, append_lines, exclusive_lock)


def test_identical_entries_are_both_kept_and_earlier_lines_are_never_rewritten(tmp_path):
    path = tmp_path / "log" / "h.jsonl"
    entry = {"time": "2026-01-01T00:00:00Z", "node": "gpu003", "action": "drain", "reason": "gpucluster: x"}
    append_lines(str(path), [entry])
    inode, first = os.stat(str(path)).st_ino, path.read_bytes()
    append_lines(str(path), [entry, entry])
    assert os.stat(str(path)).st_ino == inode and path.read_bytes().startswith(first)
    assert [json.loads(line) for line in path.read_text().splitlines()] == [entry, entry, entry]


def test_values_with_newlines_and_quotes_stay_one_line(tmp_path):
    path = tmp_path / "h.jsonl"
    entry = {"node": "gpu001", "reason": "a\nb'\"$(touch /tmp/pwned)"}
    append_lines(str(path), [entry])
    lines = path.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == entry


def _writer(path, who, count):
    for i in range(count):
        append_lines(path, [{"who": who, "i": i, "pad": "x" * 300}])


def test_concurrent_appends_from_other_processes_are_all_kept(tmp_path):
    path = str(tmp_path / "h.jsonl")
    procs = [multiprocessing.Process(target=_writer, args=(path, who, 200)) for who in ("a", "b", "c")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    lines = [json.loads(line) for line in open(path).read().splitlines()]
    assert len(lines) == 600
    for who in ("a", "b", "c"):
        assert [e["i"] for e in lines if e["who"] == who] == list(range(200))


def test_lock_is_exclusive_and_times_out_with_the_holder(tmp_path):
    path = str(tmp_path / "sub" / "drain.lock")
    with exclusive_lock(path, 1):
        assert open(path).read().strip() == str(os.getpid())
        with pytest.raises(LockTimeout) as raised:
            with exclusive_lock(path, 0.2):
                pass
    assert "could not take the health-check drain lock %s within 0.2 s" % path in str(raised.value)
    assert "(pid %d)" % os.getpid() in str(raised.value)
    with exclusive_lock(path, 0):  # released at the end of the block
        pass
