"""The guard: a module's or worker's children are ended when whoever started them is gone."""
import os
import subprocess
import sys
import time

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard
from conftest import COLLECTIONS


def _wait(condition, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_ancestors_alive_and_children():
    assert _guard.ancestors()[0] == os.getppid()
    assert _guard.alive(os.getpid()) and not _guard.alive(2 ** 22 + 12345)
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert proc.pid in _guard.children()
    finally:
        proc.kill()
        proc.wait()
    assert not _guard.alive(proc.pid)


def test_kill_children_ends_them_even_when_they_ignore_sigterm(tmp_path):
    ready = tmp_path / "ready"
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\n"
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                 "open(%r, 'w').close()\ntime.sleep(60)" % str(ready)])
    polite = subprocess.Popen(["sleep", "60"])
    assert _wait(ready.exists)   # its SIGTERM handler is in place
    _guard.kill_children(grace=0.5)
    for proc in (stubborn, polite):
        proc.wait(timeout=10)
        assert proc.returncode < 0


def test_a_guard_kills_its_groups_and_exits_when_its_parent_is_gone(tmp_path):
    # parent -> child (the guarded process) -> grandchild group; kill the parent: the group goes.
    script = tmp_path / "guarded.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "sys.path.insert(0, %r)\n"
        "from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard\n"
        "guard = _guard.Guard(interval=0.1, grace=1.0).start()\n"
        "proc = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        "guard.add(proc.pid)\n"
        "open(%r, 'w').write(str(proc.pid))\n"
        "time.sleep(60)\n" % (str(COLLECTIONS), str(tmp_path / "pid")))
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                               "subprocess.Popen([sys.executable, %r])\ntime.sleep(60)" % str(script)])
    try:
        assert _wait(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text())
        grandchild = int((tmp_path / "pid").read_text())
        assert _guard.alive(grandchild)
        parent.kill()
        parent.wait()
        assert _wait(lambda: not _guard.alive(grandchild)), "the guarded group outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
