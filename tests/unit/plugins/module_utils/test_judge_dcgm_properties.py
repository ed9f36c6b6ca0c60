"""Property tests: a real dcgmi diag output made impossible is never judged pass.

Uses the hypothesis profile loaded in tests/conftest.py (no max_examples here).
"""
import copy
import json
import re
import string

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    parse_dcgm_diag)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    worst_status)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_dcgm import judge_dcgm
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import (
    load_profile)

from conftest import FIXTURES

# Real outputs that pass as published, with the GPUs and level they ran.
BASELINES = {
    "text_4x_r3_pass_docs.txt": (4, 3),
    "text_4x_r2_pass_issue124.txt": (1, 2),
    "json_3x_r3_virtualclient.json": (1, 3),
}
TEXT = dict((name, (FIXTURES / "dcgm_diag" / name).read_text()) for name in BASELINES)
KNOWN = {"pass", "passed", "fail", "failed", "warn", "warning", "warned", "skip", "skipped",
         "not run", "not_run", "notrun", ""}
_STATUS_CELL = re.compile(r'(\|\s*(?:GPU\d+:\s*)?|"status"\s*:\s*")(Pass)\b')
_GPU_ROW = re.compile(r"GPU(\d+): Pass")
_JSON_GPU = re.compile(r'("gpu_ids?"\s*:\s*")(\d+)(")')
_SECTION = re.compile(r"^[+|]-+\s+(Deployment|Hardware|Integration|Stress)\s+-+")


def _profile(name):
    gpus, level = BASELINES[name]
    profile = copy.deepcopy(load_profile("hgx_h100_sxm"))
    profile["gpus_per_node"] = gpus
    profile["dcgm"]["level"] = level
    return profile


PROFILES = dict((name, _profile(name)) for name in BASELINES)


def _judge(name, text):
    diag = parse_dcgm_diag(text)
    results = judge_dcgm(diag, PROFILES[name])
    json.dumps([diag, results], allow_nan=False)
    return diag, results


def test_every_baseline_passes():
    for name in BASELINES:
        _diag, results = _judge(name, TEXT[name])
        assert worst_status(results) == "pass", (name, results)
        assert [r["status"] for r in results if r["check"] == "dcgm.level"] == ["pass"]


UNKNOWN_STATUS = st.text(alphabet=string.ascii_letters + string.digits + "!?_",
                         min_size=1, max_size=12).filter(lambda w: w.lower() not in KNOWN)


@given(st.sampled_from(sorted(BASELINES)), st.data(), UNKNOWN_STATUS)
def test_a_result_that_is_not_a_known_status_never_passes(name, data, word):
    text = TEXT[name]
    cells = list(_STATUS_CELL.finditer(text))
    cell = data.draw(st.sampled_from(cells))
    damaged = text[:cell.start(2)] + word + text[cell.end(2):]
    _diag, results = _judge(name, damaged)
    assert worst_status(results) in ("fail", "error")


@given(st.sampled_from(sorted(BASELINES)), st.data())
def test_a_gpu_id_beyond_the_count_never_passes(name, data):
    text = TEXT[name]
    gpus = BASELINES[name][0]
    found = list(_GPU_ROW.finditer(text)) or list(_JSON_GPU.finditer(text))
    match = data.draw(st.sampled_from(found))
    gpu = data.draw(st.integers(min_value=gpus, max_value=10 ** 6))
    group = 1 if match.re is _GPU_ROW else 2
    damaged = text[:match.start(group)] + str(gpu) + text[match.end(group):]
    _diag, results = _judge(name, damaged)
    assert worst_status(results) in ("fail", "error")


@given(st.sampled_from(sorted(BASELINES)), st.data())
def test_removing_level_evidence_never_passes(name, data):
    text = TEXT[name]
    evidence = parse_dcgm_diag(text)["level_evidence"]
    dropped = data.draw(st.sets(st.sampled_from(evidence), min_size=1))
    lines = [line for line in text.splitlines() if line.strip() not in dropped]
    _diag, results = _judge(name, "\n".join(lines) + "\n")
    assert worst_status(results) in ("fail", "error")
    assert "pass" not in [r["status"] for r in results if r["check"] == "dcgm.level"]


@given(st.sampled_from([n for n in sorted(BASELINES) if n.startswith("text")]), st.data())
def test_removing_category_lines_never_passes(name, data):
    lines = TEXT[name].splitlines()
    sections = [n for n, line in enumerate(lines) if _SECTION.match(line)]
    dropped = data.draw(st.sets(st.sampled_from(sections), min_size=1))
    kept = [line for n, line in enumerate(lines) if n not in dropped]
    _diag, results = _judge(name, "\n".join(kept) + "\n")
    assert worst_status(results) in ("fail", "error")
