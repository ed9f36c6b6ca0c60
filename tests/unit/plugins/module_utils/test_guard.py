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


def _watched_from(tmp_path, under_playbook):
    """watched_ancestors() of a process started by pytest, directly or by a program named ansible-playbook."""
    probe = tmp_path / "probe.py"
    probe.write_text("import json, os, sys\nsys.path.insert(0, %r)\n"
                     "from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard\n"
                     "print(json.dumps([os.getppid(), _guard.watched_ancestors(), _guard.ancestors()]))\n"
                     % str(COLLECTIONS))
    if not under_playbook:
        return subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, check=True).stdout
    playbook = tmp_path / "ansible-playbook"  # the name is what marks it, as in /proc/PID/cmdline
    playbook.write_text("import subprocess, sys\n"
                        "print(subprocess.run(['sh', '-c', 'exec \"$0\" \"$1\"', sys.executable, %r],"
                        " capture_output=True, text=True, check=True).stdout, end='')\n" % str(probe))
    return subprocess.run([sys.executable, str(playbook)], capture_output=True, text=True, check=True).stdout


def test_the_guard_watches_up_to_ansible_playbook_not_what_started_it(tmp_path):
    import json  # pylint: disable=import-outside-toplevel
    parent, watched, every = json.loads(_watched_from(tmp_path, under_playbook=True))
    # probe (sh exec'd into it) -> "ansible-playbook" -> pytest -> ...: watched up to the playbook only
    assert watched == [parent] and every[:2] == [parent, os.getpid()], (watched, every)
    # Without an Ansible program above: the parent alone (here pytest), never the whole chain.
    parent, watched, every = json.loads(_watched_from(tmp_path, under_playbook=False))
    assert watched == [parent] == [os.getpid()] and len(every) > 1
