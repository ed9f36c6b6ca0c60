# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dcgmi diag levels: which tests each level runs, and which level a run's tests prove.

Public through _dcgm_diag (LEVEL_TESTS, LEVEL_NAMES, level_gaps, proven_level). Standard
library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag_common import (
    FAIL,
    PASS,
    WARN,
)


# The tests each dcgmi diag level adds, by test key, as NvidiaValidationSuite::FillTestVectors
# (nvvs/src/NvidiaValidationSuite.cpp, DCGM v2.1.4 to v4.6.0) builds the suites: level 1 runs
# the deployment (software) tests only; 2 adds memory and pcie; 3 adds diagnostic,
# memory_bandwidth, targeted_stress and targeted_power; 4 (2.4 on) adds memtest and pulse_test.
# A level is proven when every one of its tests, and of the levels below, ran (passed, warned or
# failed): a skipped or absent test proves nothing.
LEVEL_TESTS = {
    2: ("memory", "pcie"),
    3: ("diagnostic", "memory_bandwidth", "targeted_stress", "targeted_power"),
    4: ("memtest", "pulse_test"),
}
# Level-3 tests some runs add and others lack (2.x sm_stress; eud and cpu_eud only as root;
# nvbandwidth since 4.0; nccl_tests and rist where installed): they prove nothing on their own.
LEVEL_OPTIONAL_TESTS = {3: ("sm_stress", "eud", "cpu_eud", "nvbandwidth", "nccl_tests", "rist")}
LEVEL_NAMES = {
    1: "Deployment tests only",
    2: "deployment, memory and PCIe tests",
    3: "deployment, memory, PCIe, diagnostic and stress tests",
    4: "deployment, memory, PCIe, diagnostic, stress, memtest and pulse tests",
}
# 2.x/3.x deployment tests: run once for the node, their results name no GPU (or only the one a
# failure is about), so they say nothing about which GPUs were tested. 4.x has 'software'.
_DEPLOYMENT_KEYS = frozenset((
    "denylist", "nvml_library", "cuda_main_library", "cuda_toolkit_library",
    "permissions_and_os_blocks", "permissions_and_os_related_blocks", "persistence_mode",
    "environment_variables", "environmental_variables", "page_retirement_row_remap",
    "graphics_processes", "inforom", "fabric_manager"))
_RAN = (PASS, WARN, FAIL)
# Where dcgmi prints each of those tests (Diag.cpp DISPLAY_HARDWARE/INTEGRATION/STRESS in 2.x and
# 3.x; the plugin's test class in 4.x, which moved memtest to Hardware). A test under another
# section is a damaged or edited output and proves nothing.
_CATEGORIES = {
    "memory": ("hardware",), "diagnostic": ("hardware",), "pulse_test": ("hardware",),
    "pcie": ("integration",), "memory_bandwidth": ("stress",), "targeted_stress": ("stress",),
    "targeted_power": ("stress",), "memtest": ("stress", "hardware"),
}


def _is_deployment(test):
    return test.get("key") in _DEPLOYMENT_KEYS or test.get("key") == "software" \
        or str(test.get("category") or "").lower() == "deployment"


def level_gaps(tests, level):
    """[(level, test key, 'missing'|'skipped')] keeping the output from proving ``level``.

    Level 1 needs one deployment test that ran; every higher level needs each of its
    LEVEL_TESTS to have run (the tests of the levels below included).
    """
    gaps = []
    tests = [t for t in tests or [] if isinstance(t, dict)]
    for step in range(1, (level or 0) + 1):
        if step == 1:
            deployment = [t for t in tests if _is_deployment(t)]
            if not any(t.get("status") in _RAN for t in deployment):
                gaps.append((1, "deployment", "skipped" if deployment else "missing"))
            continue
        for key in LEVEL_TESTS.get(step, ()):
            found = [t for t in tests if t.get("key") == key]
            placed = [t for t in found if _in_place(t)]
            if not found:
                gaps.append((step, key, "missing"))
            elif not placed:
                gaps.append((step, key, "misplaced"))
            elif not any(t.get("status") in _RAN for t in placed):
                gaps.append((step, key, "skipped"))
    return gaps


def _in_place(test):
    """Whether a level test sits in the section dcgmi prints it in."""
    allowed = _CATEGORIES.get(test.get("key"))
    return allowed is None or str(test.get("category") or "").lower() in allowed


def _misplaced_errors(tests, result):
    for test in tests:
        if test.get("category") and not _in_place(test):
            result["errors"].append(
                "test %r is listed under %s, dcgmi prints it under %s: the output is damaged"
                % (test["name"], test["category"],
                   " or ".join(c.title() for c in _CATEGORIES[test["key"]])))


def proven_level(tests):
    """The highest level (1-4) whose tests all ran, or None when not even level 1 did."""
    proven = None
    for level in (1, 2, 3, 4):
        if [gap for gap in level_gaps(tests, level) if gap[0] == level]:
            break
        proven = level
    return proven


def _listed_level(tests):
    """The highest level any test in the output belongs to (ran or not): what was asked for."""
    listed = None
    keys = set(t.get("key") for t in tests)
    if any(_is_deployment(t) for t in tests):
        listed = 1
    for level in (2, 3, 4):
        if keys & set(LEVEL_TESTS[level] + LEVEL_OPTIONAL_TESTS.get(level, ())):
            listed = level
    return listed
