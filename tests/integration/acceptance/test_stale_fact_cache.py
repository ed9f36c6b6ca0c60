"""A persistent fact cache (jsonfile, AWX fact storage) never carries one run's node states into the next.

The collect_stage action publishes each node's state as a host fact, and a persistent cache keeps
host facts between runs: without the run id, an old failure would fail a healthy cluster and an
old pass would stand in for a node that is unreachable today.
"""
import json

import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration

SKIP = ("--skip-tags", "fabric,workload")


def _cache_env(cache_dir):
    return {"ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile",
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache_dir),
            "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "86400"}


def _untag(value):
    """ansible-core 2.19 caches tagged values as {value, tags, __ansible_type}: keep the values."""
    if isinstance(value, dict):
        if "__ansible_type" in value and "value" in value:
            return _untag(value["value"])
        return dict((k, _untag(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_untag(v) for v in value]
    return value


def _cached_state(cache_dir, node):
    """The node's collect_node_state as the jsonfile cache holds it (file name: [prefix]node)."""
    files = [p for p in cache_dir.iterdir() if p.name == node or p.name.endswith("_" + node)]
    assert len(files) == 1, sorted(p.name for p in cache_dir.iterdir())
    data = json.loads(files[0].read_text())
    if "__payload__" in data:
        data = json.loads(data["__payload__"])
    return _untag(data)["collect_node_state"]


def test_states_cached_by_earlier_runs_do_not_count(tmp_path):
    cache = tmp_path / "facts"
    env = _cache_env(cache)

    xid = [{"kind": "xid", "node": "gpu002", "gpu": 3, "xid": 79}]
    with SimRun(spec("stale", faults=xid, count=3), tmp_path / "one") as sim:
        first = sim.acceptance(*SKIP, extra_env=env)
    assert first.rc != 0 and first.bad() == {("gpu002", "gpu_health")}, first.output[-2000:]
    assert "gpu_health" in _cached_state(cache, "gpu002")["failed_stages"]  # the stale failure is really there

    with SimRun(spec("stale", count=3), tmp_path / "two") as sim:
        second = sim.acceptance(*SKIP, extra_env=env)
    assert second.rc == 0 and second.results["verdict"]["status"] == "pass", second.output[-3000:]

    with SimRun(spec("stale", count=3, unreachable=["gpu003"]), tmp_path / "three") as sim:
        third = sim.acceptance(*SKIP, extra_env=env)
    assert _cached_state(cache, "gpu003")["failed_stages"] == []  # run two's pass is cached
    assert third.rc != 0
    # unreachable: not judged, nothing measured there
    assert "failed acceptance: gpu003 (0 with a measured fault; 1 not judged \u2014 transport error: 1);" in third.output, \
        third.output[-3000:]
    assert ("gpu003", "preflight") in third.bad()


def test_same_verdict_with_inject_facts_as_vars_off(tmp_path):
    # The stages' state is a host fact: with injection off it is only under ansible_facts.
    faults = [{"kind": "xid", "node": "gpu002", "gpu": 3, "xid": 79},
              {"kind": "nic_down", "node": "gpu003", "nic": "mlx5_3"}]
    with SimRun(spec("noinject", faults=faults, count=4), tmp_path) as sim:
        run = sim.acceptance(*SKIP, extra_env={"ANSIBLE_INJECT_FACT_VARS": "False"})
        fast = sim.acceptance(*SKIP, "-e", "acceptance_fail_fast=true", extra_env={"ANSIBLE_INJECT_FACT_VARS": "False"})
    assert run.rc != 0 and run.bad() == {("gpu002", "gpu_health"), ("gpu003", "infiniband")}, run.output[-3000:]
    assert "2 of 4 node(s) failed acceptance: gpu002, gpu003;" in run.output
    assert fast.bad() == {("gpu002", "gpu_health")}  # fail-fast still sees the failure and stops there
    assert "infiniband" not in set(c["stage"] for c in fast.results["checks"])
