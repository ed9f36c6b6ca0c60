"""_manifest_verify on real trees (tmp_path): shards, sharded and cached verification."""
import os

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _manifest, _manifest_verify
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (
    ManifestError, create_manifest, load_manifest)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest_verify import shard_entries, verify

from test_manifest import _index, tree


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


def test_a_root_that_does_not_exist_never_verifies(tmp_path):
    empty = _manifest.load_manifest(_index(tmp_path, []))
    with pytest.raises(_manifest.ManifestError, match="is not a directory: nothing to verify"):
        _manifest_verify.verify(str(tmp_path / "nowhere"), empty)
