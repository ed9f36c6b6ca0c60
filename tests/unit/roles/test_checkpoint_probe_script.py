"""The checkpoint probe itself (roles/check_checkpoint/files/gpucluster_checkpoint_probe.py), run for real
with PyTorch and fio on this machine: it measures, verifies and leaves no file behind, also when a path
is missing or it is stopped."""
import errno
import importlib.util
import json
import signal
import subprocess
import sys
import time

from conftest import REPO

PROBE = REPO / "roles" / "check_checkpoint" / "files" / "gpucluster_checkpoint_probe.py"


def _start(*args):
    return subprocess.Popen([sys.executable, str(PROBE), "--node", "gpu001", "--fio-size-mb", "4", "--fio-iodepth", "4",
                             "--fio-timeout", "60", "--deadline", "120"] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _records(*args):
    proc = _start(*args)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


def test_both_paths_measured_verified_and_cleaned(tmp_path):
    local, shared = tmp_path / "nvme", tmp_path / "shared"
    local.mkdir()
    records = _records("--local-path", str(local), "--shared-path", str(shared), "--create-paths",
                       "--shard-bytes", "3000000")
    kinds = [(r["record"], r.get("kind"), r.get("path_kind")) for r in records]
    assert kinds == [("header", None, None), ("measurement", "state", None), ("measurement", "save", "local"),
                     ("measurement", "async", None), ("measurement", "save", "shared"),
                     ("measurement", "fio", "local"), ("measurement", "fio", "shared"), ("done", None, None)]
    saves = [r for r in records if r.get("kind") == "save"]
    assert all(r["sha256_ok"] and r["samples_mismatched"] == [] and r["clock"] == "wall" for r in saves)
    assert [j["error"] for r in records if r.get("kind") == "fio" for j in r["fio"]["jobs"]] == [0, 0, 0, 0]
    assert list(local.iterdir()) == [] and list(shared.iterdir()) == []  # created, emptied, left in place


def test_a_missing_path_is_an_error_and_the_other_is_still_measured(tmp_path):
    records = _records("--local-path", str(tmp_path), "--shared-path", str(tmp_path / "no" / "such"),
                       "--create-paths", "--shard-bytes", "2000000", "--fio", "")
    (error,) = [r for r in records if r["record"] == "error"]
    assert error["path_kind"] == "shared" and error["phase"] == "setup"
    assert error["message"].endswith("does not exist (nor its parent %s)" % (tmp_path / "no"))
    assert [r["path_kind"] for r in records if r.get("kind") == "save"] == ["local"]
    assert records[-1]["record"] == "done" and list(tmp_path.iterdir()) == []


def test_sigterm_stops_it_and_removes_what_it_wrote(tmp_path):
    proc = _start("--local-path", str(tmp_path), "--shard-bytes", "300000000", "--fio", "")
    deadline = time.time() + 120
    while not list(tmp_path.glob("*.pt")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    out, _err = proc.communicate(timeout=60)
    records = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 143 and records[-1]["record"] == "error", records[-1]
    assert records[-1]["message"].startswith("stopped by SIGTERM during ")
    assert list(tmp_path.iterdir()) == []


def test_torch_saves_runtime_error_is_named_by_the_os_error_behind_it(tmp_path):
    spec = importlib.util.spec_from_file_location("gpucluster_checkpoint_probe", str(PROBE))
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    wrapped = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")
    wrapped.__context__ = OSError(errno.ENOSPC, "No space left on device")  # as torch.save raises it
    text = probe.io_problem(wrapped, str(tmp_path))
    assert text.startswith("disk full: [Errno 28] No space left on device (") and "MB free)" in text
