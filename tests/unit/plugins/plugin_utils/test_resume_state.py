"""Resuming a run directory: the lock, each refusal named, which (node, stage) pairs are judged again
(no error, every output file there, the same command line), and the snapshot a resume keeps."""
import json
import os

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _resume

TOPO = {"name": "nvidia-smi-topo", "argv": ["nvidia-smi", "topo", "-m"], "timeout": 60}
DIAG = {"name": "dcgmi-diag", "argv": ["dcgmi", "diag", "-r", "3", "-j"], "timeout": 3600}


def _run_dir(tmp_path, checks, raw, **run):
    run_dir = tmp_path / "run1"
    run_dir.mkdir()
    for node, tools in raw.items():
        (run_dir / "raw" / node).mkdir(parents=True, exist_ok=True)
        for tool in tools:
            (run_dir / "raw" / node / ("%s.txt" % tool)).write_text("output\n")
    record = dict({"id": "run1", "playbook": "acceptance.yml", "profile": "hgx_h100_sxm", "state": "running",
                   "started": "t0", "targets": ["gpu001", "gpu002"]}, **run)
    (run_dir / "results.json").write_text(json.dumps({"run": record, "checks": checks, "raw": raw}))
    return run_dir


def _check(node, stage, status="pass", component=None):
    return {"node": node, "stage": stage, "check": stage + ".x", "status": status, "component": component}


def test_refusals_name_each_difference(tmp_path):
    run_dir = _run_dir(tmp_path, [], {})
    info, problems = _resume.check(str(run_dir), "acceptance.yml", "hgx_h100_sxm", ["gpu001", "gpu002"])
    assert problems == [] and info["run_id"] == "run1" and not info["complete"]
    problems = _resume.check(str(run_dir), "health_check.yml", "hgx_b200", ["gpu001", "gpu003"])[1]
    text = " ".join(problems)
    assert "made by acceptance.yml, not health_check.yml" in text and "profile is hgx_h100_sxm, not hgx_b200" in text
    assert "not in this inventory: gpu002" in text and "not in the run: gpu003" in text
    assert "cannot resume" in _resume.check(str(run_dir), replay="artifacts/x")[1][0]
    assert "is not a directory" in _resume.check(str(tmp_path / "none"))[1][0]
    (tmp_path / "empty").mkdir()
    assert "has no results.json" in _resume.check(str(tmp_path / "empty"))[1][0]


def test_a_held_lock_is_a_live_writer_and_a_released_one_is_not(tmp_path):
    run_dir = _run_dir(tmp_path, [], {})
    holder = _resume.hold_lock(str(run_dir))
    assert holder is not None and not isinstance(holder, _resume.Unlockable)
    assert _resume.is_locked(str(run_dir)) and _resume.hold_lock(str(run_dir)) is None
    assert "being written by a live run" in _resume.check(str(run_dir))[1][0]
    holder.close()
    assert not _resume.is_locked(str(run_dir))


def test_an_unlockable_directory_falls_back_to_the_marks_pid(tmp_path):
    run_dir = _run_dir(tmp_path, [], {})
    os.chmod(str(run_dir), 0o500)  # the lock file cannot be made (root may still write: then it locks)
    try:
        handle = _resume.hold_lock(str(run_dir))
    finally:
        os.chmod(str(run_dir), 0o700)
    assert handle is not None
    (run_dir / "INCOMPLETE").write_text(json.dumps({"pid": os.getppid(), "host": os.uname().nodename}))
    assert _resume._writer_alive(str(run_dir))  # pylint: disable=protected-access
    (run_dir / "INCOMPLETE").write_text(json.dumps({"pid": 2 ** 22 + 12345, "host": os.uname().nodename}))
    assert not _resume._writer_alive(str(run_dir))  # pylint: disable=protected-access


def test_what_is_judged_again(tmp_path):
    raw = {"gpu001": {"nvidia-smi-topo": {"argv_digest": _resume.argv_digest(TOPO)},
                      "dcgmi-diag": {"argv_digest": _resume.argv_digest(dict(DIAG, argv=["dcgmi", "diag", "-r", "1", "-j"]))}},
           "gpu002": {"nvidia-smi-topo": {"complete": False}, "dcgmi-diag": {}}}
    checks = [_check("gpu001", "topology"), _check("gpu001", "dcgm"), _check("gpu002", "topology"),
              _check("gpu002", "dcgm", "error", "tool"), _check("_fabric", "fabric")]
    run_dir = _run_dir(tmp_path, checks, raw)
    state = _resume.state(str(run_dir))
    assert _resume.resumable(state, str(run_dir), "gpu001", "topology", [TOPO])
    assert not _resume.resumable(state, str(run_dir), "gpu001", "dcgm", [DIAG])  # it ran at level 1
    assert not _resume.resumable(state, str(run_dir), "gpu002", "dcgm", [DIAG])  # an error runs again
    assert not _resume.resumable(state, str(run_dir), "gpu002", "topology", [TOPO])  # cut off: no complete output
    os.unlink(str(run_dir / "raw" / "gpu001" / "nvidia-smi-topo.txt"))
    assert not _resume.resumable(_resume.state(str(run_dir)), str(run_dir), "gpu001", "topology", [TOPO])


def test_the_snapshot_outlives_a_results_json_written_anew(tmp_path):
    run_dir = _run_dir(tmp_path, [_check("gpu001", "topology")], {"gpu001": {"nvidia-smi-topo": {}}})
    _resume.snapshot(str(run_dir))
    (run_dir / "results.json").write_text(json.dumps({"run": {"id": "run1"}, "checks": [], "raw": {}}))
    assert _resume.judged(str(run_dir)) == {"gpu001": {"topology": ["nvidia-smi-topo"]}}
    # A newer judgement of the stage replaces the snapshot's (a tool now cut off is no longer complete).
    (run_dir / "results.json").write_text(json.dumps({"run": {"id": "run1"}, "checks": [_check("gpu001", "topology")],
                                                      "raw": {"gpu001": {"nvidia-smi-topo": {"complete": False}}}}))
    found = _resume.judged(str(run_dir))["gpu001"]["topology"]
    assert found == []  # judged again since, and now cut off: nothing complete to re-judge
