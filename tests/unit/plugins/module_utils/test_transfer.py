"""The data_transfer stage's verdicts: shards merged, progress judged."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._transfer import (
    human_bytes, human_seconds, transfer_progress, transfer_verification)


def shard(shard, shards, **problems):
    out = {"shard": shard, "shards": shards, "algorithm": "sha256", "checked": 10, "bytes": 1000, "ok": 10,
           "rehashed": 10, "reused": 0, "missing": [], "size_mismatch": [], "checksum_mismatch": [], "extra": [],
           "partial": []}
    out.update(problems)
    return out


def test_each_problem_is_a_check_named_by_path_and_files_are_no_nodes():
    result = transfer_verification({
        "gpu001": shard(0, 2, missing=["a/x"], extra=["b/y"]),
        "gpu002": shard(1, 2, size_mismatch=[{"path": "c", "expected": 10, "found": 4}],
                        checksum_mismatch=[{"path": "d", "expected": "aa", "found": "bb"}],
                        partial=[{"path": "e.part", "size": 3}]),
    })
    bad = sorted((c["check"], c["component"]) for c in result["checks"] if c["status"] == "fail"
                 and c["check"] != "transfer.verified")
    assert bad == [("transfer.checksum", "d"), ("transfer.extra", "b/y"), ("transfer.in_progress", "e.part"),
                   ("transfer.missing", "a/x"), ("transfer.size", "c")]
    assert all(c["node"] is None for c in result["checks"])
    assert result["document"]["verification"]["missing"] == 1 and result["document"]["verification"]["files"] == 20


def test_a_shard_that_did_not_report_is_an_error_never_a_pass():
    result = transfer_verification({"gpu001": shard(0, 2), "gpu002": {"failed": True, "msg": "Permission denied"}})
    (error,) = [c for c in result["checks"] if c["status"] == "error"]
    assert "gpu002 did not report" in error["message"] and "Permission denied" in error["message"]


def test_extra_files_can_be_a_warning():
    result = transfer_verification({"gpu001": shard(0, 1, extra=["z"])}, extra="warn")
    (extra,) = [c for c in result["checks"] if c["check"] == "transfer.extra"]
    assert extra["status"] == "pass" and extra["message"].startswith("warning:")


def test_progress_check_states_and_stall():
    base = {"files_total": 4, "files_complete": 1, "bytes_total": 4000, "bytes_arrived": 1000, "bytes_remaining": 3000,
            "fraction": 0.25, "window_s": 600, "observations": 2}
    ok = transfer_progress(dict(base, rate_bytes_per_s=100.0, eta_s=30.0))["checks"][0]
    assert ok["status"] == "pass" and "ETA 30s" in ok["message"] and "1 of 4 files complete" in ok["message"]
    first = transfer_progress(dict(base, rate_bytes_per_s=None, eta_s=None))["checks"][0]
    assert first["message"].startswith("warning:")
    stalled = transfer_progress(dict(base, rate_bytes_per_s=0.0, eta_s=None))["checks"][0]
    assert stalled["status"] == "fail" and "stalled" in stalled["message"]
    done = transfer_progress(dict(base, bytes_arrived=4000, bytes_remaining=0, fraction=1.0, rate_bytes_per_s=0.0))
    assert done["checks"][0]["status"] == "pass" and "complete" in done["checks"][0]["message"]


@pytest.mark.parametrize("key, value", [("rate_bytes_per_s", float("nan")), ("rate_bytes_per_s", float("inf")),
                                        ("eta_s", float("nan")), ("bytes_arrived", -5), ("fraction", "x")])
def test_a_progress_report_that_is_no_reading_is_an_error_never_a_pass(key, value):
    base = {"files_total": 4, "files_complete": 1, "bytes_total": 4000, "bytes_arrived": 1000, "bytes_remaining": 3000,
            "fraction": 0.25, "window_s": 600, "rate_bytes_per_s": 100.0, "eta_s": 30.0}
    (check,) = transfer_progress(dict(base, **{key: value}))["checks"]
    assert check["status"] == "error" and check["message"].startswith("the progress report is no reading (%s: " % key)


def test_human_units():
    assert human_bytes(999) == "999 B" and human_bytes(1500) == "1.5 KB" and human_bytes(4.8e12) == "4.8 TB"
    assert human_seconds(30) == "30s" and human_seconds(3 * 3600 + 13 * 60) == "3h 13m" and human_seconds(90000) == "1d 1h"


@pytest.mark.parametrize("shards", [10 ** 12, "x", -1, float("nan")])
def test_a_shard_count_that_is_no_count_is_an_error_not_an_endless_loop(shards):
    result = transfer_verification({}, shards)
    (check,) = [c for c in result["checks"] if c["check"] == "transfer.shard"]
    assert check["status"] == "error" and check["message"].startswith("the shard count is no count of shards (")
    assert result["document"]["verification"]["shards"] == 0
