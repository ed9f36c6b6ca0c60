"""_manifest on real trees (tmp_path): create, resume after an interruption, load; the manifest index."""
import json
import os

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _manifest
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (
    INDEX, JOURNAL, ManifestError, create_manifest, is_partial, load_manifest)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest_verify import verify


def tree(root, sizes=(10, 2000, 300, 0, 70000, 5)):
    for i, size in enumerate(sizes):
        path = root / ("d%d" % (i % 2)) / ("f%d.bin" % i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes((i * 7 + j) % 251 for j in range(size)))
    return root


@pytest.mark.parametrize("algorithm", ["sha256", "md5", "xxh3", "xxh64", "blake2b"])
def test_create_then_verify_clean(tmp_path, algorithm):
    src = tree(tmp_path / "src")
    summary = create_manifest(str(src), str(tmp_path / "m"), algorithm=algorithm, workers=3)
    assert summary["files"] == 6 and summary["hashed"] == 6 and summary["reused"] == 0
    assert not (tmp_path / "m" / JOURNAL).exists()
    manifest = load_manifest(str(tmp_path / "m"))
    assert manifest["algorithm"] == algorithm and [e["path"] for e in manifest["entries"]] == sorted(
        e["path"] for e in manifest["entries"])
    result = verify(str(src), manifest)
    kinds = ("missing", "size_mismatch", "checksum_mismatch", "extra", "partial")
    assert result["ok"] == 6 and not any(result[k] for k in kinds)
    assert (tmp_path / "m" / ("manifest-%s.txt" % algorithm)).exists()
    assert (tmp_path / "m" / "SHA256SUMS").exists() == (algorithm == "sha256")


def test_interrupted_create_resumes_without_rehashing_finished_files(tmp_path, monkeypatch):
    src = tree(tmp_path / "src")
    real = _manifest.hash_file
    calls = []

    def dies_after_three(path, algorithm):
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        calls.append(path)
        return real(path, algorithm)
    monkeypatch.setattr(_manifest, "hash_file", dies_after_three)
    with pytest.raises(KeyboardInterrupt):
        create_manifest(str(src), str(tmp_path / "m"), workers=1)
    assert not (tmp_path / "m" / INDEX).exists()  # no manifest from a cut run
    journal = [json.loads(line) for line in (tmp_path / "m" / JOURNAL).read_text().splitlines()]
    assert len(journal) == 3
    monkeypatch.setattr(_manifest, "hash_file", real)
    summary = create_manifest(str(src), str(tmp_path / "m"), workers=1)
    assert summary["reused"] == 3 and summary["hashed"] == 3
    fresh = create_manifest(str(src), str(tmp_path / "m2"), workers=1)
    assert load_manifest(str(tmp_path / "m"))["entries"] == load_manifest(str(tmp_path / "m2"))["entries"]
    assert fresh["hashed"] == 6


def test_journal_entry_of_a_changed_file_is_not_reused(tmp_path):
    src = tree(tmp_path / "src")
    out = tmp_path / "m"
    out.mkdir()
    (out / JOURNAL).write_text(json.dumps({"path": "d0/f0.bin", "size": 10, "mtime_ns": 1, "digest": "0" * 64,
                                           "algorithm": "sha256"}) + "\n" + '{"path": "d1/f1.b')  # cut line
    summary = create_manifest(str(src), str(out), workers=1)
    assert summary["reused"] == 0 and summary["hashed"] == 6


def test_files_being_written_are_left_out_and_named(tmp_path):
    src = tree(tmp_path / "src")
    (src / "d0" / "big.tar.part").write_bytes(b"x")
    (src / "d0" / ".f9.bin.Ab3xZ9").write_bytes(b"x")  # rsync's temporary file
    summary = create_manifest(str(src), str(tmp_path / "m"))
    assert summary["files"] == 6 and sorted(summary["skipped_partial"]) == ["d0/.f9.bin.Ab3xZ9", "d0/big.tar.part"]
    assert is_partial("a/b.part") and is_partial(".x.bin.q1W2e3") and not is_partial("x.bin") and not is_partial(".bashrc")


def test_a_bag_without_the_index_is_read_with_sizes_unknown(tmp_path):
    src = tree(tmp_path / "src")
    create_manifest(str(src), str(tmp_path / "m"))
    os.remove(str(tmp_path / "m" / INDEX))
    manifest = load_manifest(str(tmp_path / "m"))
    assert manifest["algorithm"] == "sha256" and all(e["size"] is None for e in manifest["entries"])
    assert verify(str(src), manifest)["ok"] == 6


def test_cut_index_and_no_manifest_are_errors(tmp_path):
    src = tree(tmp_path / "src")
    create_manifest(str(src), str(tmp_path / "m"))
    index = tmp_path / "m" / INDEX
    index.write_text("\n".join(index.read_text().splitlines()[:-2]) + "\n")
    with pytest.raises(ManifestError, match="cut short"):
        load_manifest(str(tmp_path / "m"))
    with pytest.raises(ManifestError, match="no manifest"):
        load_manifest(str(tmp_path / "nothing"))
    with pytest.raises(ManifestError, match="unknown algorithm"):
        create_manifest(str(src), str(tmp_path / "m3"), algorithm="crc7")


def test_names_with_newline_backslash_or_cr_are_escaped_the_way_sha256sum_checks_them(tmp_path):
    """A newline in a name cannot add a line to SHA256SUMS: real sha256sum -c reads every name back."""
    import shutil
    import subprocess
    root = tmp_path / "src"
    root.mkdir()
    names = ["plain.bin", "a\nb", "c\\d", "e\rf", "x\n" + "0" * 64 + "  outside.bin"]
    for i, name in enumerate(names):
        (root / name).write_bytes(b"%d" % i)
    out = tmp_path / "m"
    _manifest.create_manifest(str(root), str(out), workers=1)
    sums = (out / "SHA256SUMS").read_text()
    assert len(sums.splitlines()) == len(names)
    assert shutil.which("sha256sum"), "coreutils sha256sum is part of the machine (Debian 12)"
    check = subprocess.run(["sha256sum", "--strict", "-c", str(out / "SHA256SUMS")], cwd=str(root),
                           capture_output=True, text=True, timeout=60, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": OK") == len(names)
    # the injected "digest  outside.bin" is part of one escaped name, never a line of its own
    assert not any(line.startswith("outside.bin") for line in check.stdout.splitlines())


def test_symlinks_and_special_files_are_reported_not_dropped_silently(tmp_path):
    root = tmp_path / "src"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "real.bin").write_bytes(b"x")
    os.symlink("real.bin", str(root / "dir" / "link.bin"))
    os.symlink("dir", str(root / "linkdir"))
    os.mkfifo(str(root / "fifo"))
    summary = _manifest.create_manifest(str(root), str(tmp_path / "m"), workers=1)
    assert summary["files"] == 1
    assert summary["skipped_special"] == ["dir/link.bin (symlink)", "fifo (not a regular file)", "linkdir (symlink)"]
    assert summary["skipped_special_count"] == 3


def _index(tmp_path, rows, files=None):
    path = tmp_path / "idx" / _manifest.INDEX
    path.parent.mkdir(exist_ok=True)
    header = {"manifest": "gpucluster-manifest", "version": 1, "algorithm": "sha256",
              "files": len(rows) if files is None else files, "bytes": 1}
    path.write_text("\n".join(json.dumps(r) if not isinstance(r, str) else r for r in [header] + rows) + "\n")
    return str(path.parent)


GOOD = {"path": "a.bin", "size": 1, "digest": "ab" * 32}


@pytest.mark.parametrize("row, words", [
    (dict(GOOD, digest="cd" * 32), "'a.bin' is listed again (first on line 2)"),
    ({"path": "b.bin", "size": 1}, "digest None is not a hexadecimal checksum"),
    ({"path": "b.bin", "size": "1", "digest": "ab" * 32}, "size '1' is not a byte count"),
    ({"path": "b.bin", "size": -1, "digest": "ab" * 32}, "size -1 is not a byte count"),
    ({"path": "", "size": 1, "digest": "ab" * 32}, "no usable path"),
    ({"path": ["x"], "size": 1, "digest": "ab" * 32}, "no usable path"),
    ({"path": "../etc/passwd", "size": 1, "digest": "ab" * 32}, "leaves the data root"),
    ({"path": "/etc/passwd", "size": 1, "digest": "ab" * 32}, "leaves the data root"),
    ("[1, 2]", "not a JSON object"),
    ("{not json", "line 3 is not JSON"),
])
def test_every_malformed_index_row_is_an_error_naming_its_line(tmp_path, row, words):
    with pytest.raises(_manifest.ManifestError) as caught:
        _manifest.load_manifest(_index(tmp_path, [GOOD, row]))
    assert words in str(caught.value) and "line 3" in str(caught.value)


def test_a_bag_manifest_with_a_duplicate_path_is_refused(tmp_path):
    (tmp_path / "manifest-sha256.txt").write_text("%s  data/a\n%s  data/a\n" % ("ab" * 32, "cd" * 32))
    with pytest.raises(_manifest.ManifestError, match="manifest-sha256.txt line 2: 'a' is listed again"):
        _manifest.load_manifest(str(tmp_path))


FIELD_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=6), st.just("ab" * 32),
                         st.lists(st.integers(), max_size=2))
ROWS = st.lists(st.one_of(st.dictionaries(st.sampled_from(["path", "size", "digest", "x"]), FIELD_VALUES),
                          st.text(max_size=10)), max_size=4)


@given(rows=ROWS)
def test_any_index_loads_or_is_a_manifest_error(tmp_path_factory, rows):
    """Property: whatever the index holds, load_manifest returns valid entries or raises ManifestError."""
    folder = tmp_path_factory.mktemp("prop")
    try:
        manifest = _manifest.load_manifest(_index(folder, rows))
    except _manifest.ManifestError:
        return
    for entry in manifest["entries"]:
        assert isinstance(entry["path"], str) and entry["path"] and isinstance(entry["digest"], str)
