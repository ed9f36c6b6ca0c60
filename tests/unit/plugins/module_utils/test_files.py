"""The one atomic write: old or new, never a temporary left behind, and no copy of it elsewhere."""
import os
import re
import threading

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic

from conftest import REPO


def test_threads_writing_one_path_leave_one_whole_file(tmp_path):
    path = str(tmp_path / "sub" / "out.txt")  # the folder is made
    texts = ["%d" % i * 1000 for i in range(8)]
    threads = [threading.Thread(target=write_atomic, args=(path, text)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open(path) as handle:
        assert handle.read() in texts
    assert os.listdir(str(tmp_path / "sub")) == ["out.txt"]


def test_no_other_module_writes_through_its_own_rename():
    found = ["%s: %s" % (path.relative_to(REPO), match.group(0))
             for path in sorted((REPO / "plugins").rglob("*.py")) if path.name != "_files.py"
             for match in re.finditer(r"os\.replace\(|os\.rename\(|^def \w*atomic\w*\(", path.read_text(), re.M)]
    assert found == []
