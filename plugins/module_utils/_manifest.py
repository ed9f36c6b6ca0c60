# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transfer manifests: create one for a tree, verify a copy against it (in shards), follow a copy.

A manifest directory holds:
- gpucluster-manifest.jsonl  the index: a header {algorithm, files, bytes, created} and one line
                             per file {path, size, digest}; every other file is made from it
- manifest-<alg>.txt, bagit.txt, bag-info.txt
                             a BagIt (RFC 8493) bag's tag files, payload paths under data/: link
                             the copy as data/ and any BagIt tool validates it
- <ALG>SUMS                  "digest  path" lines, for sha256sum -c / sha512sum -c / md5sum -c;
                             a name with a backslash, newline or carriage return is escaped the
                             way GNU sha256sum writes it (a leading "\\", then \\\\, \\n, \\r), so
                             no name can add a line of its own
Creating is resumable: finished files go to manifest.journal.jsonl as they are hashed, and a
re-run reuses every journal entry whose size and mtime are unchanged. Verifying reports each file
that is missing, of the wrong size, of the wrong checksum, extra, or still being written
(``*.part``, rsync's ``.name.XXXXXX``); it can be split in shards (nodes) balanced by bytes, and
with a cache it rehashes only the files that changed since the last verification.

Here: the manifest's format, hashing, walking a tree, creating and loading a manifest. Verifying a
copy is _manifest_verify; following a copy as it arrives is _manifest_progress.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import hashlib
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic

try:
    import xxhash
    HAS_XXHASH = True
except ImportError:  # pragma: no cover - only the xxh3 algorithm needs it
    xxhash = None
    HAS_XXHASH = False

INDEX = "gpucluster-manifest.jsonl"
JOURNAL = "manifest.journal.jsonl"
CHUNK = 4 * 1024 * 1024
# Names of files still being written: download/partial suffixes and rsync's temporary
# ".<name>.<6 random characters>" (rsync without --inplace/--partial-dir).
PARTIAL_PATTERNS = ("*.part", "*.partial", "*.tmp", "*.crdownload", "*.filepart")
_RSYNC_TEMP = re.compile(r"^\..+\.[A-Za-z0-9]{6}$")
HASHLIB = ("sha256", "sha512", "sha1", "md5", "blake2b")
ALGORITHMS = HASHLIB + ("xxh3", "xxh64")
MAX_LISTED = 1000


class ManifestError(Exception):
    """A manifest that cannot be made or read; the message says which file and why."""


def new_hash(algorithm):
    if algorithm in HASHLIB:
        return hashlib.new(algorithm)
    if algorithm in ("xxh3", "xxh64"):
        if not HAS_XXHASH:
            raise ManifestError("algorithm %s needs the Python package xxhash on this host" % algorithm)
        return xxhash.xxh3_128() if algorithm == "xxh3" else xxhash.xxh64()
    raise ManifestError("unknown algorithm %r (known: %s)" % (algorithm, ", ".join(ALGORITHMS)))


def hash_file(path, algorithm):
    digest = new_hash(algorithm)
    with open(path, "rb") as handle:
        while True:
            block = handle.read(CHUNK)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def is_partial(relpath, patterns=PARTIAL_PATTERNS):
    name = relpath.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) for p in patterns) or bool(_RSYNC_TEMP.match(name))


def walk(root, exclude=(), skipped=None):
    """[(relpath, size, mtime_ns)] of the regular files under root, sorted; symlinks are not followed.

    skipped: a list that receives "relpath (symlink)" / "relpath (not a regular file)" for every
    entry left out that way, so a caller can say so instead of leaving it out without a word."""
    out = []
    root = os.path.abspath(root)
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            full = os.path.join(directory, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if any(fnmatch.fnmatch(rel, p) for p in exclude):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue  # removed while we walked: the next look sees it gone
            if not os.path.islink(full) and os.path.isfile(full):
                out.append((rel, st.st_size, st.st_mtime_ns))
            elif skipped is not None:
                skipped.append("%s (%s)" % (rel, "symlink" if os.path.islink(full) else "not a regular file"))
        if skipped is not None:  # a symlinked directory is not walked (os.walk does not follow it)
            skipped.extend("%s (symlink)" % os.path.relpath(os.path.join(directory, d), root).replace(os.sep, "/")
                           for d in dirs if os.path.islink(os.path.join(directory, d)))
    out.sort()
    if skipped is not None:
        skipped.sort()
    return out


def sums_line(digest, path):
    """One line of <ALG>SUMS as GNU coreutils writes it: a name holding a backslash, a newline or a
    carriage return is escaped (\\\\, \\n, \\r) and the line marked with a leading backslash."""
    if "\\" in path or "\n" in path or "\r" in path:
        escaped = path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return "\\%s  %s\n" % (digest, escaped)
    return "%s  %s\n" % (digest, path)


def _read_index(path):
    """Every line of a manifest index as parsed JSON; ManifestError naming the first unreadable one
    (unlike a journal, an index is written whole: a bad line is damage, not an interruption)."""
    rows = []
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise ManifestError("%s line %d is not JSON: %s" % (path, number, exc))
    return rows


def _read_jsonl(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as handle:
        for line in handle:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by the interruption: that file is hashed again
    return rows


def _hash_all(jobs, algorithm, workers, done):
    """Hash [(relpath, fullpath, size, mtime_ns)] on ``workers`` threads; done(entry) per file."""
    def one(job):
        rel, full, size, mtime = job
        return {"path": rel, "size": size, "mtime_ns": mtime, "digest": hash_file(full, algorithm)}
    if workers <= 1:
        for job in jobs:
            done(one(job))
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for entry in pool.map(one, jobs):
            done(entry)


def create_manifest(root, out_dir, algorithm="sha256", workers=4, exclude=(), partial_patterns=PARTIAL_PATTERNS,
                    check_mode=False):
    """Hash every file of ``root`` into the manifest directory ``out_dir``; resumable."""
    new_hash(algorithm)  # an unknown or unavailable algorithm fails before any work
    if not os.path.isdir(root):
        raise ManifestError("%s is not a directory" % root)
    started = time.time()
    skipped = []
    files = walk(root, exclude, skipped)
    partial = [f for f in files if is_partial(f[0], partial_patterns)]
    files = [f for f in files if not is_partial(f[0], partial_patterns)]
    journal_path = os.path.join(out_dir, JOURNAL)
    known = {}
    for row in _read_jsonl(journal_path):
        if row.get("algorithm") == algorithm and isinstance(row.get("path"), str):
            known[row["path"]] = row
    reuse, jobs = {}, []
    for rel, size, mtime in files:
        row = known.get(rel)
        if row and row.get("size") == size and row.get("mtime_ns") == mtime and row.get("digest"):
            reuse[rel] = row
        else:
            jobs.append((rel, os.path.join(root, rel), size, mtime))
    summary = {"files": len(files), "bytes": sum(f[1] for f in files), "reused": len(reuse),
               "hashed": len(jobs), "skipped_partial": [f[0] for f in partial][:MAX_LISTED],
               "skipped_special": skipped[:MAX_LISTED], "skipped_special_count": len(skipped),
               "algorithm": algorithm, "manifest": out_dir}
    if check_mode:
        summary["hashed_bytes"] = sum(j[2] for j in jobs)
        return summary
    if not os.path.isdir(out_dir):
        os.makedirs(out_dir)
    lock = threading.Lock()
    entries = dict(reuse)
    with open(journal_path, "a") as journal:
        def done(entry):
            with lock:
                entries[entry["path"]] = entry
                journal.write(json.dumps(dict(entry, algorithm=algorithm), sort_keys=True) + "\n")
                journal.flush()  # an interrupted run keeps every file hashed so far
        _hash_all(jobs, algorithm, workers, done)
        os.fsync(journal.fileno())
    ordered = [entries[rel] for rel, _s, _m in files]
    write_manifest(out_dir, algorithm, ordered, root)
    os.remove(journal_path)
    elapsed = max(time.time() - started, 1e-9)
    summary.update({"hashed_bytes": sum(j[2] for j in jobs), "seconds": round(elapsed, 3),
                    "bytes_per_s": round(sum(j[2] for j in jobs) / elapsed, 1)})
    return summary


def write_manifest(out_dir, algorithm, entries, root=None):
    total = sum(e["size"] for e in entries)
    header = {"manifest": "gpucluster-manifest", "version": 1, "algorithm": algorithm, "files": len(entries),
              "bytes": total, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "source": root}
    lines = [json.dumps(header, sort_keys=True)]
    lines.extend(json.dumps({"path": e["path"], "size": e["size"], "digest": e["digest"]}, sort_keys=True)
                 for e in entries)
    # BagIt names payload paths under data/ with percent-encoded CR, LF and % (RFC 8493 2.1.3).
    encoded = [e["path"].replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A") for e in entries]
    write_atomic(os.path.join(out_dir, "manifest-%s.txt" % algorithm),
                 "".join("%s  data/%s\n" % (e["digest"], p) for e, p in zip(entries, encoded)))
    write_atomic(os.path.join(out_dir, "bagit.txt"), "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    write_atomic(os.path.join(out_dir, "bag-info.txt"),
                 "Bagging-Date: %s\nPayload-Oxum: %d.%d\nBag-Software-Agent: gpucluster.acceptance data_manifest\n"
                 % (header["created"][:10], total, len(entries)))
    if algorithm in HASHLIB:
        write_atomic(os.path.join(out_dir, "%sSUMS" % algorithm.upper()),
                     "".join(sums_line(e["digest"], e["path"]) for e in entries))
    write_atomic(os.path.join(out_dir, INDEX), "\n".join(lines) + "\n")  # last: it marks the manifest done


_DIGEST = re.compile(r"^[0-9a-f]{8,128}\Z")


def _entry_problem(row):
    """Why an index row is no file entry, or None."""
    if not isinstance(row, dict):
        return "not a JSON object"
    rel, size, digest = row.get("path"), row.get("size"), row.get("digest")
    if not isinstance(rel, str) or not rel or "\0" in rel:
        return "no usable path (%r)" % (rel,)
    if rel.startswith("/") or ".." in rel.split("/"):
        return "path %r leaves the data root" % rel
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        return "size %r is not a byte count" % (size,)
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        return "digest %r is not a hexadecimal checksum" % (digest,)
    return None


def _checked_entries(name, rows, first_line):
    """The entries of an index or bag manifest, each valid and each path once; ManifestError naming
    the line otherwise (a duplicate with another digest must not verify as a match)."""
    seen = {}
    for number, row in enumerate(rows, first_line):
        problem = _entry_problem(row)
        if problem:
            raise ManifestError("%s line %d: %s" % (name, number, problem))
        if row["path"] in seen:
            raise ManifestError("%s line %d: %r is listed again (first on line %d)"
                                % (name, number, row["path"], seen[row["path"]]))
        seen[row["path"]] = number
    return rows


def load_manifest(path):
    """{algorithm, entries [{path, size, digest}], bytes} from a manifest directory (the index, or a
    bag's manifest-<alg>.txt when there is no index: sizes then unknown) or an index file."""
    index = os.path.join(path, INDEX) if os.path.isdir(path) else path
    if os.path.isfile(index):
        rows = _read_index(index)
        if not rows or not isinstance(rows[0], dict) or rows[0].get("manifest") != "gpucluster-manifest":
            raise ManifestError("%s is not a gpucluster manifest index" % index)
        header, entries = rows[0], rows[1:]
        if header.get("algorithm") not in ALGORITHMS:
            raise ManifestError("%s line 1: algorithm %r is not one of %s" % (index, header.get("algorithm"),
                                                                              ", ".join(ALGORITHMS)))
        if len(entries) != header.get("files"):
            raise ManifestError("%s lists %d files, its header %s: cut short?" % (index, len(entries), header.get("files")))
        return {"algorithm": header["algorithm"], "entries": _checked_entries(index, entries, 2),
                "bytes": header.get("bytes")}
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            m = re.match(r"^manifest-([a-z0-9]+)\.txt$", name)
            if m:
                entries = []
                with open(os.path.join(path, name)) as handle:
                    for number, line in enumerate(handle, 1):
                        parts = line.rstrip("\n").split(None, 1)
                        if len(parts) != 2 or not parts[1].startswith("data/"):
                            raise ManifestError("%s line %d is not 'digest  data/path'" % (name, number))
                        rel = parts[1][5:].replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
                        entries.append({"path": rel, "size": None, "digest": parts[0].lower()})
                return {"algorithm": m.group(1), "entries": _checked_entries(name, entries, 1), "bytes": None}
    raise ManifestError("no manifest at %s (neither %s nor a BagIt manifest-<alg>.txt)" % (path, INDEX))
