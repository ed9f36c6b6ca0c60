#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""data_manifest module: create a transfer manifest, verify a copy against it, follow a copy."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: data_manifest
version_added: 0.2.0
short_description: Create a transfer manifest, verify a copy against it, or follow a copy's progress
description:
  - O(state=created) hashes every file under O(path) (relative path, size, checksum) into the
    manifest directory O(manifest) - an index, the tag files of a BagIt (RFC 8493) bag
    (C(manifest-<alg>.txt) with payload paths under C(data/), C(bagit.txt), C(bag-info.txt) with
    C(Payload-Oxum)) and, for hashlib algorithms, C(SHA256SUMS)-style lines for C(sha256sum -c).
    Files are hashed on O(workers) threads; each finished file is journaled at once, so an
    interrupted run resumes without rehashing the files it finished (same size and mtime).
    Files still being written (O(partial_patterns), rsync's C(.name.XXXXXX)) are left out and listed.
  - O(state=verified) checks the copy under O(path) against the manifest. With O(shards) > 1 each
    host verifies O(shard), a share balanced by bytes that every host computes the same way; the
    filter P(gpucluster.acceptance.transfer_verification#filter) merges the shards. Each file
    missing, of another size, of another checksum, extra, or still being written is listed. With
    O(cache) only the files whose size or mtime changed since the last verification are rehashed.
  - O(state=progress) compares the copy with the manifest by size (no hashing) while a transfer
    runs - files complete, bytes arrived, rate over the last O(window) seconds of observations kept
    in O(state_file), ETA and, with O(price_per_gb), what the rest costs to move.
  - Check mode changes nothing; created reports what it would hash.
options:
  path:
    description: The tree to manifest (O(state=created)) or the copy to check.
    type: path
    required: true
  manifest:
    description: The manifest directory (written by O(state=created), read otherwise; a BagIt bag
      directory without the index is read too, with sizes unknown).
    type: path
    required: true
  state:
    description: What to do.
    type: str
    choices: [created, verified, progress]
    default: verified
  algorithm:
    description: Checksum for O(state=created) (sha256 by default; xxh3 - 128-bit XXH3 - is several
      times faster and not cryptographic; it needs the Python package xxhash).
    type: str
    choices: [sha256, sha512, sha1, md5, blake2b, xxh3, xxh64]
    default: sha256
  workers:
    description: Hashing threads.
    type: int
    default: 4
  shard:
    description: Which share of the manifest this host verifies (0-based).
    type: int
    default: 0
  shards:
    description: Into how many shares the verification is split.
    type: int
    default: 1
  cache:
    description: A file remembering what this host verified (size, mtime, checksum); unchanged files
      are not rehashed next time. Not written in check mode.
    type: path
  state_file:
    description: Where O(state=progress) keeps its observations (for the rate over O(window)).
    type: path
  window:
    description: Seconds of observations the rate is measured over.
    type: float
    default: 600
  price_per_gb:
    description: Egress price per GB (10^9 bytes), to price what remains to move.
    type: float
  exclude:
    description: Glob patterns of relative paths to leave out (C(.snapshot/*)).
    type: list
    elements: str
    default: []
  partial_patterns:
    description: File names of files still being written.
    type: list
    elements: str
    default: ["*.part", "*.partial", "*.tmp", "*.crdownload", "*.filepart"]
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Manifest the dataset at the source
  gpucluster.acceptance.data_manifest:
    path: /data/corpus
    manifest: /data/corpus.manifest
    state: created
    algorithm: sha256

- name: Verify the copy, one share per node
  gpucluster.acceptance.data_manifest:
    path: /lustre/corpus
    manifest: /lustre/corpus.manifest
    shard: "{{ ansible_play_hosts.index(inventory_hostname) }}"
    shards: "{{ ansible_play_hosts | length }}"
    cache: /var/cache/gpucluster/corpus.verify
  register: verification

- name: How far is the copy
  gpucluster.acceptance.data_manifest:
    path: /lustre/corpus
    manifest: /lustre/corpus.manifest
    state: progress
    state_file: /var/cache/gpucluster/corpus.progress
    price_per_gb: 0.05
"""

RETURN = r"""
files:
  description: Files in the manifest (created).
  returned: state=created
  type: int
hashed:
  description: Files hashed in this run (created); the rest came from the journal of an interrupted run.
  returned: state=created
  type: int
skipped_special:
  description: Symlinks and other entries that are no regular file, left out of the manifest, each
    with why (C(link.bin (symlink))); the first 1000.
  returned: state=created
  type: list
  elements: str
skipped_special_count:
  description: How many entries were left out that way.
  returned: state=created
  type: int
bytes_per_s:
  description: Hashing throughput of this run (created).
  returned: state=created, not in check mode
  type: float
shard:
  description: The share this host verified.
  returned: state=verified
  type: int
checked:
  description: Files of this share.
  returned: state=verified
  type: int
missing:
  description: Relative paths missing at the destination.
  returned: state=verified
  type: list
  elements: str
size_mismatch:
  description: "{path, expected, found} for files of another size."
  returned: state=verified
  type: list
  elements: dict
checksum_mismatch:
  description: "{path, expected, found} for files of another checksum."
  returned: state=verified
  type: list
  elements: dict
extra:
  description: Files at the destination that are not in the manifest (this share's).
  returned: state=verified
  type: list
  elements: str
partial:
  description: "{path, size} of files still being written."
  returned: state=verified
  type: list
  elements: dict
bytes_arrived:
  description: Bytes of the manifest's files at the destination (progress).
  returned: state=progress
  type: int
rate_bytes_per_s:
  description: Arrival rate over the window; null before a second observation.
  returned: state=progress
  type: float
eta_s:
  description: Seconds until the rest arrives at that rate; null without a rate.
  returned: state=progress
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (
    ManifestError, create_manifest, load_manifest)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest_progress import progress
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest_verify import verify


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            manifest=dict(type="path", required=True),
            state=dict(type="str", default="verified", choices=["created", "verified", "progress"]),
            algorithm=dict(type="str", default="sha256",
                           choices=["sha256", "sha512", "sha1", "md5", "blake2b", "xxh3", "xxh64"]),
            workers=dict(type="int", default=4),
            shard=dict(type="int", default=0),
            shards=dict(type="int", default=1),
            cache=dict(type="path"),
            state_file=dict(type="path"),
            window=dict(type="float", default=600.0),
            price_per_gb=dict(type="float"),
            exclude=dict(type="list", elements="str", default=[]),
            partial_patterns=dict(type="list", elements="str",
                                  default=["*.part", "*.partial", "*.tmp", "*.crdownload", "*.filepart"]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["workers"] < 1 or p["shards"] < 1 or not 0 <= p["shard"] < p["shards"]:
        module.fail_json(msg="workers and shards must be >= 1 and shard one of 0..shards-1 (got workers=%d, "
                             "shard=%d, shards=%d)" % (p["workers"], p["shard"], p["shards"]))
    try:
        if p["state"] == "created":
            result = create_manifest(p["path"], p["manifest"], p["algorithm"], p["workers"], p["exclude"],
                                     p["partial_patterns"], check_mode=module.check_mode)
            changed = result["hashed"] > 0 or result["reused"] == 0
            module.exit_json(changed=changed, diff={"before": "", "after": "%d files, %d bytes\n"
                                                    % (result["files"], result["bytes"])}, **result)
        manifest = load_manifest(p["manifest"])
        if p["state"] == "verified":
            result = verify(p["path"], manifest, p["shard"], p["shards"], p["cache"], p["workers"],
                            p["partial_patterns"], p["exclude"], check_mode=module.check_mode)
        else:
            result = progress(p["path"], manifest, p["state_file"], p["window"], p["price_per_gb"],
                              check_mode=module.check_mode, partial_patterns=p["partial_patterns"])
    except (ManifestError, OSError) as exc:
        module.fail_json(msg="%s: %s" % (p["state"], exc))
    except Exception as exc:  # pylint: disable=broad-except  # a defect is a failure that says so, not a traceback
        module.fail_json(msg="%s: unexpected %s: %s (manifest %s, path %s)"
                         % (p["state"], type(exc).__name__, exc, p["manifest"], p["path"]))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
