# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verifying a copy against a transfer manifest, in shards: each node checks its share of the files
(shard_entries: balanced by bytes, the same split on every node) and reports each file that is
missing, of the wrong size, of the wrong checksum, extra, or still being written (``*.part``,
rsync's ``.name.XXXXXX``); with a cache it rehashes only the files that changed since the last
verification.

verify(...) returns {shard, shards, algorithm, root, checked, bytes, ok, rehashed, reused, missing,
size_mismatch, checksum_mismatch, extra, partial}. Apart from the manifest itself (_manifest: its
format, hashing and creation), which verifying only reads.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import zlib

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (
    PARTIAL_PATTERNS, ManifestError, _hash_all, _read_jsonl, is_partial, new_hash, walk)


def _stable_shard(rel, shards):
    return zlib.crc32(rel.encode("utf-8")) % shards


def shard_entries(entries, shard, shards):
    """The entries of shard ``shard`` of ``shards``: largest files first to the lightest shard
    (deterministic: every node computes the same split from the same manifest)."""
    if shards <= 1:
        return list(entries)
    load = [0] * shards
    mine = []
    for entry in sorted(entries, key=lambda e: (-(e.get("size") or 0), e["path"])):
        target = min(range(shards), key=lambda i: (load[i], i))
        load[target] += (entry.get("size") or 0) + 1
        if target == shard:
            mine.append(entry)
    return mine


def _read_cache(cache_path, algorithm):
    """{path: row} of an earlier verification's cache, for this algorithm ({} without one)."""
    cache = {}
    if cache_path and os.path.exists(cache_path):
        for row in _read_jsonl(cache_path):
            if row.get("algorithm") == algorithm and isinstance(row.get("path"), str):
                cache[row["path"]] = row
    return cache


def _write_cache(cache_path, cache):
    directory = os.path.dirname(os.path.abspath(cache_path))
    if not os.path.isdir(directory):
        os.makedirs(directory)
    write_atomic(cache_path, "".join(json.dumps(row, sort_keys=True) + "\n" for _p, row in sorted(cache.items())))


def _unlisted(result, present, listed, shard, shards, partial_patterns):
    """This shard's files under the root that the manifest does not list: extra, or still being written."""
    for rel in sorted(present):
        if rel in listed or _stable_shard(rel, shards) != shard:
            continue
        if is_partial(rel, partial_patterns):
            result["partial"].append({"path": rel, "size": present[rel][0]})
        else:
            result["extra"].append(rel)


def verify(root, manifest, shard=0, shards=1, cache_path=None, workers=4, partial_patterns=PARTIAL_PATTERNS,
           exclude=(), check_mode=False):
    """Check this shard's files of ``manifest`` under ``root``; see the module docs for the result."""
    if not 0 <= shard < shards:
        raise ManifestError("shard %d is not one of 0..%d" % (shard, shards - 1))
    algorithm = manifest["algorithm"]
    new_hash(algorithm)
    if not os.path.isdir(root):  # a copy that is not there is not a copy that matches, even of nothing
        raise ManifestError("%s is not a directory: nothing to verify against the manifest" % root)
    mine = shard_entries(manifest["entries"], shard, shards)
    present = dict((rel, (size, mtime)) for rel, size, mtime in walk(root, exclude))
    listed = set(e["path"] for e in manifest["entries"])
    cache = _read_cache(cache_path, algorithm)
    result = {"shard": shard, "shards": shards, "algorithm": algorithm, "root": root, "checked": len(mine),
              "bytes": sum(e.get("size") or 0 for e in mine), "ok": 0, "rehashed": 0, "reused": 0,
              "missing": [], "size_mismatch": [], "checksum_mismatch": [], "extra": [], "partial": []}
    jobs = []
    for entry in mine:
        rel = entry["path"]
        if rel not in present:
            result["missing"].append(rel)
            continue
        size, mtime = present[rel]
        if entry.get("size") is not None and size != entry["size"]:
            result["size_mismatch"].append({"path": rel, "expected": entry["size"], "found": size})
            continue
        seen = cache.get(rel)
        if seen and seen.get("size") == size and seen.get("mtime_ns") == mtime and seen.get("expected") == entry["digest"]:
            result["reused"] += 1
            if seen.get("digest") == entry["digest"]:
                result["ok"] += 1
            else:
                result["checksum_mismatch"].append({"path": rel, "expected": entry["digest"], "found": seen.get("digest")})
            continue
        jobs.append((rel, os.path.join(root, rel), size, mtime))
    expected = dict((e["path"], e["digest"]) for e in mine)
    fresh = []

    def done(found):
        fresh.append(found)
    _hash_all(jobs, algorithm, workers, done)
    for found in fresh:
        result["rehashed"] += 1
        want = expected[found["path"]]
        cache[found["path"]] = {"path": found["path"], "size": found["size"], "mtime_ns": found["mtime_ns"],
                                "digest": found["digest"], "expected": want, "algorithm": algorithm}
        if found["digest"] == want:
            result["ok"] += 1
        else:
            result["checksum_mismatch"].append({"path": found["path"], "expected": want, "found": found["digest"]})
    _unlisted(result, present, listed, shard, shards, partial_patterns)
    for key in ("missing", "extra"):
        result[key].sort()
    for key in ("size_mismatch", "checksum_mismatch", "partial"):
        result[key].sort(key=lambda item: item["path"])
    if cache_path and not check_mode:
        _write_cache(cache_path, cache)
    return result
