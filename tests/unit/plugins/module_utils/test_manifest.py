"""_manifest on real trees (tmp_path): create, resume after an interruption, shards, verify, progress."""
import json
import os

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _manifest
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (
    INDEX, JOURNAL, ManifestError, create_manifest, is_partial, load_manifest, progress, shard_entries, verify)


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


def test_shards_cover_every_file_once_and_balance_bytes(tmp_path):
    entries = [{"path": "f%03d" % i, "size": (i * 7919) % 1000 + 1, "digest": "x"} for i in range(300)]
    shards = [shard_entries(entries, s, 4) for s in range(4)]
    names = [e["path"] for part in shards for e in part]
    assert sorted(names) == sorted(e["path"] for e in entries)
    loads = [sum(e["size"] for e in part) for part in shards]
    assert max(loads) - min(loads) <= 1000
    assert shard_entries(entries, 2, 4) == shards[2]  # every node computes the same split


def test_sharded_verification_equals_a_single_one(tmp_path):
    src = tree(tmp_path / "src", sizes=tuple(range(1, 40)))
    create_manifest(str(src), str(tmp_path / "m"))
    manifest = load_manifest(str(tmp_path / "m"))
    (src / "d0" / "f0.bin").unlink()
    (src / "d1" / "f1.bin").write_bytes(b"")
    (src / "extra.txt").write_text("hi")
    one = verify(str(src), manifest)
    parts = [verify(str(src), manifest, shard=s, shards=3) for s in range(3)]
    for key in ("missing", "extra"):
        assert sorted(x for p in parts for x in p[key]) == one[key]
    assert sorted(x["path"] for p in parts for x in p["size_mismatch"]) == [x["path"] for x in one["size_mismatch"]]
    assert sum(p["checked"] for p in parts) == one["checked"] == 39
    with pytest.raises(ManifestError):
        verify(str(src), manifest, shard=3, shards=3)


def test_cache_rehashes_only_changed_files(tmp_path):
    src = tree(tmp_path / "src")
    create_manifest(str(src), str(tmp_path / "m"))
    manifest = load_manifest(str(tmp_path / "m"))
    cache = str(tmp_path / "c" / "cache.jsonl")
    first = verify(str(src), manifest, cache_path=cache)
    second = verify(str(src), manifest, cache_path=cache)
    assert (first["rehashed"], second["rehashed"], second["reused"]) == (6, 0, 6)
    path = src / "d1" / "f1.bin"
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))
    third = verify(str(src), manifest, cache_path=cache)
    assert third["rehashed"] == 1 and [m["path"] for m in third["checksum_mismatch"]] == ["d1/f1.bin"]
    # A known mismatch stays one without rehashing
    fourth = verify(str(src), manifest, cache_path=cache)
    assert fourth["rehashed"] == 0 and [m["path"] for m in fourth["checksum_mismatch"]] == ["d1/f1.bin"]
    # check mode writes no cache
    os.remove(cache)
    verify(str(src), manifest, cache_path=cache, check_mode=True)
    assert not os.path.exists(cache)


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


def test_progress_rate_eta_and_cost_from_observations(tmp_path):
    src = tree(tmp_path / "src", sizes=(1000, 1000, 1000, 1000))
    create_manifest(str(src), str(tmp_path / "m"))
    manifest = load_manifest(str(tmp_path / "m"))
    dst = tmp_path / "dst" / "d0"
    dst.mkdir(parents=True)
    state = str(tmp_path / "progress.jsonl")
    (dst / "f0.bin").write_bytes((src / "d0" / "f0.bin").read_bytes())
    first = progress(str(tmp_path / "dst"), manifest, state, window_s=600, price_per_gb=100.0, now=1000.0)
    assert (first["files_complete"], first["bytes_arrived"], first["rate_bytes_per_s"], first["eta_s"]) == (1, 1000, None, None)
    (dst / "f2.bin").write_bytes(b"z" * 500)  # half written
    second = progress(str(tmp_path / "dst"), manifest, state, window_s=600, price_per_gb=100.0, now=1010.0)
    assert second["bytes_arrived"] == 1500 and second["rate_bytes_per_s"] == 50.0
    assert second["eta_s"] == 2500 / 50.0 and second["remaining_cost"] == round(2500 / 1e9 * 100.0, 2)
    # outside the window the old observation no longer counts
    third = progress(str(tmp_path / "dst"), manifest, state, window_s=5, now=1100.0)
    assert third["rate_bytes_per_s"] is None
