"""judge_checkpoint over real probe outputs (tests/fixtures/checkpoint), the stage state the checkpoint
plan reads, and the cluster checks (peers, contention)."""
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _stages
from ansible_collections.gpucluster.acceptance.plugins.module_utils._checkpoint_probe import parse_checkpoint_probe
from ansible_collections.gpucluster.acceptance.plugins.module_utils._cluster import judge_cluster
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_checkpoint import (
    judge_checkpoint_stage, write_floor)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
# The metrics contract of both stages (the checkpoint plan reads these keys).
CONTRACT = {"shard_bytes", "local_write_s", "local_read_s", "shared_write_s", "shared_read_s", "release_s",
            "durable_s", "local_write_mb_s", "shared_write_mb_s", "fio", "verified", "simulated"}


def _text(name):
    return (FIXTURES / "checkpoint" / name).read_text()


def _judge(text, profile=None, **options):
    options.setdefault("stage", "checkpoint")
    return judge_checkpoint_stage({"checkpoint-probe": text}, profile or H100, options)


def _by(checks, name):
    return [c for c in checks if c["check"] == name]


def test_simulated_node_passes_with_every_metric_of_the_contract():
    checks, metrics = _judge(_text("gpu001.jsonl"))
    assert sorted((c["check"], c["status"]) for c in checks) == [
        ("checkpoint.async", "pass"), ("checkpoint.fio", "pass"), ("checkpoint.fio", "pass"),
        ("checkpoint.verify", "pass"), ("checkpoint.write", "pass"), ("checkpoint.write", "pass")]
    assert CONTRACT <= set(metrics)
    assert metrics["shard_bytes"] == 8002461 and isinstance(metrics["shard_bytes"], int)
    assert metrics["local_write_mb_s"] == 2000.0 and metrics["shared_write_mb_s"] == 2000.0
    assert metrics["local_write_s"] == pytest.approx(8002461 / 2e9, rel=1e-3)
    assert metrics["release_s"] == metrics["local_write_s"] == metrics["blocking_s"]
    assert metrics["durable_s"] == pytest.approx(2 * metrics["release_s"], rel=1e-3)
    assert metrics["verified"] is True and metrics["simulated"] is True and metrics["writers"] == 2
    assert set(metrics["fio"]) == {"local", "shared"}
    for side in metrics["fio"].values():
        assert set(side) == {"write_mb_s", "read_mb_s", "write_p99_ms", "read_p99_ms"} and side["write_mb_s"] > 0
    (local, shared) = _by(checks, "checkpoint.write")
    assert local["component"].startswith("local NVMe ") and shared["component"].startswith("shared file system ")
    assert local["message"].startswith("torch.save of 8 MB + fsync to local NVMe ")
    assert "0.004 s, 2000 MB/s; torch.load back 0.004 s, 2000 MB/s (simulated storage clock)" in local["message"]
    assert "2 nodes writing at once" in shared["message"] and "no floor set" in shared["message"]
    (pattern,) = _by(checks, "checkpoint.async")
    assert "released after 0.004 s (local save + fsync)" in pattern["message"] and "durable after 0.008 s" in pattern["message"]
    assert pattern["metrics"] == metrics  # the stage's metrics travel into results.json with this check
    assert "--rate of the simulated storage" in _by(checks, "checkpoint.fio")[0]["message"]


def test_slow_nvme_against_a_floor_names_the_path_and_where_the_floor_comes_from():
    checks, metrics = _judge(_text("gpu002.jsonl"), min_local_write_mb_s=1000.0)
    assert metrics["local_write_mb_s"] == 400.0 and metrics["release_s"] == pytest.approx(0.020006)
    # torch.save and fio on that NVMe are both below it
    bad, fio = [c for c in checks if c["status"] == "fail"]
    assert fio["check"] == "checkpoint.fio" and "below the floor 1000 MB/s" in fio["message"]
    assert bad["check"] == "checkpoint.write" and bad["component"].startswith("local NVMe /")
    assert bad["message"].startswith("local NVMe ")
    assert "writes the checkpoint at 400 MB/s, below the floor 1000 MB/s (check_checkpoint_min_local_write_mb_s)" in \
        bad["message"]
    profile = dict(H100, checkpoint={"min_local_write_mb_s": 300, "min_shared_write_mb_s": 2500, "source": "site"})
    checks = _judge(_text("gpu002.jsonl"), profile)[0]
    failed = sorted((c["check"], c["component"].split(" /")[0]) for c in checks if c["status"] == "fail")
    assert failed == [("checkpoint.fio", "shared file system"), ("checkpoint.write", "shared file system")]
    assert any("(profile checkpoint.min_shared_write_mb_s)" in c["message"] for c in checks if c["status"] == "fail")
    assert write_floor("local", H100, {}) == (None, None)


def test_real_wall_clock_run_compares_torch_save_with_fio():
    checks, metrics = _judge(_text("real_wall_clock.jsonl"))
    assert all(c["status"] == "pass" for c in checks)
    assert metrics["simulated"] is False and metrics["writers"] is None
    assert not any("(simulated" in c["message"] for c in checks)
    assert all("torch.save reached" in c["message"] for c in _by(checks, "checkpoint.fio"))
    assert "read back and verified 3 checkpoint files" in _by(checks, "checkpoint.verify")[0]["message"]


def test_setup_errors_name_node_stage_tool_and_path():
    checks, metrics = _judge(_text("errors_setup.jsonl"), stage="checkpoint_alone")
    errors = [c for c in checks if c["status"] == "error"]
    assert [c["check"] for c in errors] == ["checkpoint.setup", "checkpoint.setup"]
    local, shared = errors
    assert local["message"] == ("checkpoint-probe on gpu007 (stage checkpoint_alone): local NVMe path /tmp/hb1x/full: "
                                "disk full: /tmp/hb1x/full has 4 MB free, the checkpoint and fio files need 81 MB")
    assert shared["message"] == ("checkpoint-probe on gpu007 (stage checkpoint_alone): shared file system path "
                                 "/nonexistent/gpucluster-ckpt: /nonexistent/gpucluster-ckpt does not exist "
                                 "(nor its parent /nonexistent)")
    assert shared["component"] == "shared file system /nonexistent/gpucluster-ckpt"
    assert not any(c["status"] == "pass" for c in checks)
    assert metrics["local_write_s"] is None and metrics["shared_write_s"] is None and metrics["verified"] is False
    assert _by(checks, "checkpoint.async")[0]["status"] == "skip"


def test_disk_full_during_torch_save_is_an_error_in_the_os_words():
    checks = _judge(_text("disk_full_write.jsonl"))[0]
    (error,) = [c for c in checks if c["status"] == "error"]
    assert error["check"] == "checkpoint.write" and error["metrics"]["tool"] == "torch.save"
    assert "disk full: [Errno 28] No space left on device (0 MB free)" in error["message"]


def test_missing_fio_is_an_error_and_the_async_pattern_a_skip_without_a_shared_path():
    checks, metrics = _judge(_text("fio_missing.jsonl"))
    (fio,) = _by(checks, "checkpoint.fio")
    assert fio["status"] == "error" and "fio is not installed (fio-not-installed not found on PATH)" in fio["message"]
    (pattern,) = _by(checks, "checkpoint.async")
    assert pattern["status"] == "skip" and "no shared file system path set" in pattern["message"]
    assert metrics["blocking_s"] == metrics["local_write_s"] and metrics["release_s"] is None
    assert metrics["fio"] == {}


def test_a_failed_fio_job_is_an_error_with_its_errno():
    lines = _text("gpu001.jsonl").splitlines()
    record = json.loads(lines[5])
    record["fio"] = json.loads(_text("fio_enospc_stdout.txt").split("\n", 2)[2])
    record["rc"] = 2
    checks = _judge("\n".join(lines[:5] + [json.dumps(record)] + lines[6:]))[0]
    (error,) = [c for c in checks if c["status"] == "error"]
    assert error["check"] == "checkpoint.fio" and error["component"].startswith("local NVMe ")
    assert "fio job write failed with error 28 (No space left on device)" in error["message"]


def test_sigterm_and_garbage_are_errors_beside_the_findings():
    checks, metrics = _judge(_text("sigterm.jsonl"))
    assert sorted(c["message"] for c in checks if c["status"] == "error") == [
        "checkpoint-probe on gpu006 (stage checkpoint): did not finish (no 'done' record)",
        "checkpoint-probe on gpu006 (stage checkpoint): stopped by SIGTERM during local write"]
    checks, metrics = _judge(_text("garbled.jsonl"))
    statuses = sorted((c["check"], c["status"]) for c in checks)
    assert ("checkpoint.parse", "error") in statuses and ("checkpoint.write", "pass") in statuses
    assert any(c["message"].startswith("warning: checkpoint-probe output has 1 line(s)") for c in checks)
    assert metrics["local_write_mb_s"] == 400.0 and metrics["shared_write_s"] is None  # the cut record is lost
    assert _judge("")[0][0]["status"] == "error" and judge_checkpoint_stage({}, {}, {})[0][0]["status"] == "skip"
    assert _judge("not json at all")[0][-1]["message"] == (
        "checkpoint-probe printed no header record (it died before it started testing); its last output: "
        "line 1: not json at all")


def test_a_read_back_mismatch_fails_verify():
    lines = _text("gpu001.jsonl").splitlines()
    record = json.loads(lines[4])
    record.update(sha256_ok=False, sha256="0" * 64, samples_mismatched=["optimizer/master/layer0000"])
    checks, metrics = _judge("\n".join(lines[:4] + [json.dumps(record)] + lines[5:]))
    (bad,) = [c for c in checks if c["status"] == "fail"]
    assert bad["check"] == "checkpoint.verify" and metrics["verified"] is False
    assert "shared file system /" in bad["message"] and "optimizer/master/layer0000" in bad["message"]


def test_parser_keeps_each_record_kind():
    parsed = parse_checkpoint_probe(_text("gpu002.jsonl"))
    assert sorted(parsed["saves"]) == ["local", "shared"] and sorted(parsed["fio"]) == ["local", "shared"]
    assert parsed["async"]["durable_s"] == pytest.approx(0.040012) and parsed["done"]["writers"] == 2
    assert parsed["fio"]["local"]["parsed"]["jobs"][0]["write"]["mb_s"] > 0 and "fio" not in parsed["fio"]["local"]


# ------------------------------------------------------------------ stage state and cluster checks

def _collected(text, stage="checkpoint"):
    tool = _stages.STAGES[stage][0][0]  # checkpoint-probe, checkpoint-probe-alone: raw outputs kept apart
    return "==> gpucluster-begin %s <==\n%s\n==> gpucluster-end %s rc=0 seconds=2.5 <==\n" % (tool, text, tool)


def _states(rates, shared_alone=2000.0, shared_together=500.0):
    """Node states of both stages from the gpu001 fixture with the local rate (MB/s) per node."""
    states = {}
    for node, rate in rates.items():
        state = {}
        for stage, shared in (("checkpoint_alone", shared_alone), ("checkpoint", shared_together)):
            lines = _text("gpu001.jsonl").splitlines()
            local, remote = json.loads(lines[2]), json.loads(lines[4])
            local.update(write_mb_s=rate, write_s=local["file_bytes"] / rate / 1e6)
            remote.update(write_mb_s=shared, write_s=remote["file_bytes"] / shared / 1e6)
            text = "\n".join(lines[:2] + [json.dumps(local), lines[3], json.dumps(remote)] + lines[5:])
            state = _stages.judge_stage(state, stage, _collected(text, stage), H100, {"stage": stage}, node=node)
        states[node] = state
    return states


def test_both_stages_keep_the_contract_in_the_node_state():
    state = {}
    for stage in ("checkpoint_alone", "checkpoint"):
        state = _stages.judge_stage(state, stage, _collected(_text("gpu001.jsonl"), stage), H100, {}, node="gpu001")
        assert state["stages"][stage]["status"] == "pass"
        assert CONTRACT <= set(state["stages"][stage]["metrics"])
        assert all(c["stage"] == stage and c["node"] == "gpu001" for c in state["last"]["checks"])
        assert all(c["raw"] == [_stages.STAGES[stage][0][0]] for c in state["last"]["checks"])


def test_peers_name_the_slow_nvme_and_contention_states_the_shared_split():
    rates = dict(("gpu%03d" % i, 2050.0 + 10 * (i % 3)) for i in range(1, 17))
    rates["gpu007"] = 410.0
    results = judge_cluster(_states(rates), H100)
    peers = [r for r in results if any(c["check"] == "peers_local_write_mb_s" for c in r["checks"])]
    assert sorted(r["stage"] for r in peers) == ["checkpoint", "checkpoint_alone"]
    for result in peers:
        assert result["failed_nodes"] == ["gpu007"]
        (bad,) = [c for c in result["checks"] if c["status"] == "fail"]
        assert bad["message"].startswith("gpu007 local NVMe checkpoint write")
        assert "410 MB/s is 80 % below the cluster median 2060 MB/s" in bad["message"]
    (contention,) = [r for r in results if r["stage"] == "checkpoint"
                     and any(c["check"] == "checkpoint.contention" for c in r["checks"])]
    assert len(contention["checks"]) == 16 and contention["failed_nodes"] == []
    assert contention["checks"][0]["message"] == (
        "gpu001 checkpoint writes to the shared file system with 16 nodes at once: 500 MB/s, 25 % of the "
        "2000 MB/s it writes alone (the 16 nodes together 8000 MB/s)")
    assert contention["checks"][0]["metrics"]["contention_factor"] == 4.0
