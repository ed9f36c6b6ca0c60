"""judge_loader over real probe outputs (tests/fixtures/loader)."""
import json

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_loader import (
    consume_rate, judge_loader_stage)

from conftest import FIXTURES


def _text(name):
    return (FIXTURES / "loader" / name).read_text()


def _judge(text, **options):
    return judge_loader_stage({"loader-probe": text}, {}, options)


def test_rate_against_consumption_names_the_cap():
    checks, metrics = _judge(_text("gpu002.jsonl"), consume_samples_per_s=100000, min_fraction=0.95)
    (cap,) = [c for c in checks if c["check"] == "loader.utilisation"]
    assert cap["status"] == "fail" and cap["component"] == "storage"
    assert cap["message"] == ("delivers 61035 samples/s, the GPUs consume 100000: the loader caps utilisation at 61 % "
                              "(simulated storage clock) (needs 95 %)")
    assert metrics["samples_per_s"] == 61035.16 and metrics["utilisation_cap"] == 0.6104


def test_fast_enough_passes_and_says_what_was_read():
    checks = _judge(_text("gpu001.jsonl"), samples_per_step=1000, step_time_s=0.01)[0]
    assert [c["status"] for c in checks] == ["pass", "pass"]
    assert "read 256 samples (4.19 MB) from 8 shard(s) with 1 workers" in checks[0]["message"]


def test_no_consumption_rate_is_a_skip_not_a_pass():
    checks = _judge(_text("real_wall_clock.jsonl"))[0]
    assert [(c["check"], c["status"]) for c in checks] == [("loader.throughput", "pass"), ("loader.utilisation", "skip")]
    assert "(simulated" not in checks[0]["message"]


def test_killed_probe_and_garbage_are_errors():
    lines = _text("gpu001.jsonl").splitlines()
    checks, metrics = _judge(lines[0])
    assert metrics == {} and any("did not finish" in c["message"] for c in checks)
    checks = _judge("\n".join(["$ prompt", lines[0], '{"record": "do', lines[1]]), consume_samples_per_s=1)[0]
    statuses = sorted((c["check"], c["status"]) for c in checks)
    assert ("loader.parse", "error") in statuses and ("loader.utilisation", "pass") in statuses
    assert _judge("")[0][0]["status"] == "error"


def test_nothing_read_fails():
    lines = _text("gpu001.jsonl").splitlines()
    done = json.loads(lines[1])
    done.update(samples=0, bytes=0)
    done.pop("samples_per_s")
    checks = _judge("\n".join([lines[0], json.dumps(done)]))[0]
    assert checks[-1]["check"] == "loader.throughput" and checks[-1]["status"] == "fail"


def test_consume_rate_options():
    assert consume_rate({"consume_samples_per_s": 0, "samples_per_step": 64, "step_time_s": 0.5}) == 128.0
    assert consume_rate({}) is None and consume_rate({"consume_samples_per_s": 7400.0}) == 7400.0
