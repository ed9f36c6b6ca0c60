# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the dcgmi diag parsers share: status words, test keys, GPU ids, the test record.

Private to _dcgm_diag (parse_dcgm_diag is the entry point). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re


PASS = "pass"
FAIL = "fail"
SKIP = "skip"
WARN = "warn"

# Worst first: the status a test gets when its rows or GPUs disagree.
_SEVERITY = {FAIL: 3, WARN: 2, SKIP: 1, PASS: 0}

_STATUS_WORDS = {
    "pass": PASS, "passed": PASS,
    "fail": FAIL, "failed": FAIL,
    "warn": WARN, "warning": WARN, "warned": WARN,
    "skip": SKIP, "skipped": SKIP,
    # DCGM 4.x prints nothing (and JSON carries "") for a test that did not run.
    "": SKIP, "not run": SKIP, "not_run": SKIP, "notrun": SKIP,
}

# Display names (2.x/3.x text and JSON) -> the plugin names DCGM 4.x prints; ``key`` of a test.
_TEST_KEYS = {
    "blacklist": "denylist",
    "denylist": "denylist",
    "nvml library": "nvml_library",
    "cuda main library": "cuda_main_library",
    "cuda toolkit library": "cuda_toolkit_library",
    "permissions and os blocks": "permissions_and_os_blocks",
    "persistence mode": "persistence_mode",
    "environment variables": "environment_variables",
    "page retirement": "page_retirement_row_remap",
    "page retirement/row remap": "page_retirement_row_remap",
    "graphics processes": "graphics_processes",
    "inforom": "inforom",
    "gpu memory": "memory",
    "memory": "memory",
    "context create": "context_create",
    "sm stress": "sm_stress",
    "targeted stress": "targeted_stress",
    "targeted power": "targeted_power",
    "diagnostic": "diagnostic",
    "pcie": "pcie",
    "memory bandwidth": "memory_bandwidth",
    "memtest": "memtest",
    "pulse test": "pulse_test",
    "eud test": "eud",
    "eud": "eud",
    "cpu eud test": "cpu_eud",
    "cpu eud": "cpu_eud",
    "software": "software",
    "nvbandwidth": "nvbandwidth",
}
_GPU_PREFIX = re.compile(r"^\s*GPU\s?(\d{1,3})\b")
_RUN_LEVEL = re.compile(r"\bdcgmi\s+diag\b.*?(?:-r|--run)[\s=]+['\"]?(\S+?)['\"]?(?:\s|$)")
_SUCCESS = "Successfully ran diagnostic for group."
# Where a JSON document starts; "[root@host ~]# dcgmi diag -r 3" is a prompt, not JSON.
_JSON_START = re.compile(r"^(?:\{|\[\s*(?:$|[{\[\]\"\d-]|true|false|null))")


def _status_of(word):
    """Normalised status for a DCGM result word, or None when the word is not one."""
    if word is None:
        return None
    if not isinstance(word, str):
        return None
    return _STATUS_WORDS.get(word.strip().lower())


def _worst(statuses):
    worst = None
    for status in statuses:
        if worst is None or _SEVERITY[status] > _SEVERITY[worst]:
            worst = status
    return worst


def _test_key(name):
    lowered = " ".join(name.lower().split())
    if lowered in _TEST_KEYS:
        return _TEST_KEYS[lowered]
    return re.sub(r"[^a-z0-9]+", "_", lowered).strip("_")


def _to_gpu_id(value):
    """An int GPU id from 3, "3", "GPU3" or "GPU 3"; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        match = re.match(r"^\s*(?:gpu\s*)?(\d{1,6})\s*$", value, re.IGNORECASE)
        if match:
            return int(match.group(1))
    return None


def _gpu_list(value):
    """GPU ids from a gpu_ids value: an int, "0", "0,1,2,3", ["0", 1] or None."""
    if value is None:
        return []
    if isinstance(value, list):
        found = []
        for item in value:
            gpu = _to_gpu_id(item)
            if gpu is not None:
                found.append(gpu)
        return found
    if isinstance(value, str) and "," in value:
        return _gpu_list(value.split(","))
    gpu = _to_gpu_id(value)
    return [] if gpu is None else [gpu]


def _new_test(name, category, line):
    return {
        "name": name,
        "key": _test_key(name),
        "category": category,
        "status": None,
        "gpus": [],
        "all_gpus": False,
        "gpu_results": {},
        "details": [],
        "messages": [],
        "line": line,
        # Working state, removed before the result is returned.
        "_rows": [],
    }
