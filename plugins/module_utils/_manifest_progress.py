# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Following a copy as it arrives: how much of a transfer manifest is under the destination (by
size, no hashing; files still being written count with the bytes they have), the rate over a window
of observations kept in a state file, the ETA and the egress cost of what remains (progress).

Apart from the manifest itself (_manifest) and its verification (_manifest_verify): it reads the
files' sizes only, never their contents.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import time

from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import write_atomic
from ansible_collections.gpucluster.acceptance.plugins.module_utils._manifest import (
    PARTIAL_PATTERNS, _read_jsonl, is_partial, walk)


def progress(root, manifest, state_path=None, window_s=600.0, price_per_gb=None, now=None, check_mode=False,
             partial_patterns=PARTIAL_PATTERNS):
    """How much of ``manifest`` has arrived under ``root`` (by size, no hashing), the rate over the
    last ``window_s`` seconds of observations kept in ``state_path``, the ETA and the egress cost
    of what remains. Files still being written count with the bytes they have."""
    now = time.time() if now is None else now
    present = dict((rel, size) for rel, size, _m in walk(root)) if os.path.isdir(root) else {}
    total = sum(e.get("size") or 0 for e in manifest["entries"])
    complete, arrived = 0, 0
    for entry in manifest["entries"]:
        size = present.get(entry["path"])
        if size is None:
            continue
        if entry.get("size") is not None and size == entry["size"]:
            complete += 1
            arrived += size
        else:
            arrived += min(size, entry.get("size") or size)
    in_flight = sum(size for rel, size in present.items() if is_partial(rel, partial_patterns))
    arrived = min(arrived + in_flight, total)
    history = [row for row in _read_jsonl(state_path) if isinstance(row.get("t"), (int, float))] if state_path else []
    history.append({"t": now, "bytes": arrived})
    window = [row for row in history if now - row["t"] <= window_s]
    rate = None
    if len(window) >= 2 and window[-1]["t"] > window[0]["t"]:
        rate = (window[-1]["bytes"] - window[0]["bytes"]) / (window[-1]["t"] - window[0]["t"])
    remaining = total - arrived
    eta = None
    if remaining == 0:
        eta = 0.0
    elif rate and rate > 0:
        eta = remaining / rate
    if state_path and not check_mode:
        kept = [row for row in history if now - row["t"] <= max(window_s * 4, 3600)]
        write_atomic(state_path, "".join(json.dumps(row) + "\n" for row in kept))
    out = {"files_total": len(manifest["entries"]), "files_complete": complete, "bytes_total": total,
           "bytes_arrived": arrived, "bytes_remaining": remaining,
           "fraction": round(float(arrived) / total, 6) if total else 1.0,
           "rate_bytes_per_s": round(rate, 1) if rate is not None else None,
           "window_s": window_s, "observations": len(window),
           "eta_s": round(eta, 1) if eta is not None else None, "time": now}
    if price_per_gb is not None:
        out["remaining_cost"] = round(remaining / 1e9 * float(price_per_gb), 2)
        out["price_per_gb"] = float(price_per_gb)
    return out
