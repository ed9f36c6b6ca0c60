"""playbooks/data_loader.yml on the simulated cluster: real webdataset shards through a real torch
DataLoader on each node, alone then all at once; the simulated storage clock makes a slow_storage
node's rate exact. Verdicts from the run's validated results.json."""
import pytest

from harness import SimRun, spec

pytestmark = pytest.mark.integration


def loader_checks(run, node=None):
    return [c for c in run.results["checks"] if c["stage"] in ("data_loader", "data_loader_alone")
            and (node is None or c["node"] == node)]


def test_slow_storage_node_is_named_with_its_rate_and_cap(tmp_path):
    faults = [{"kind": "slow_storage", "node": "gpu003", "factor": 0.5}]
    with SimRun(spec("ldr", faults, count=4), tmp_path) as sim:
        run = sim.acceptance(playbook_name="data_loader.yml")
    assert run.rc != 0
    bad = sorted({(c["node"], c["stage"]) for c in loader_checks(run) if c["status"] in ("fail", "error")})
    assert bad == [("gpu003", "data_loader"), ("gpu003", "data_loader_alone")], bad
    (cap,) = [c for c in loader_checks(run, "gpu003") if c["check"] == "loader.utilisation" and c["stage"] == "data_loader"]
    assert "delivers 61035 samples/s, the GPUs consume 100000: the loader caps utilisation at 61 %" in cap["message"]
    peers = [c for c in loader_checks(run, "gpu003") if c["check"] == "peers_samples_per_s"]
    assert peers and all(c["status"] == "fail" and "50 % below the cluster median" in c["message"] for c in peers)
    contention = [c for c in loader_checks(run) if c["check"] == "loader.contention"]
    assert len(contention) == 4
    # Each stage keeps its own raw output (one name for both would leave only the second to replay).
    alone, together = (run.dir / "raw" / "gpu003" / "loader-probe-alone.txt"), (run.dir / "raw" / "gpu003" / "loader-probe.txt")
    assert '"concurrent": 1,' in alone.read_text() and '"concurrent": 4,' in together.read_text()


def test_clean_cluster_passes(tmp_path):
    with SimRun(spec("ldrc", count=3), tmp_path) as sim:
        run = sim.acceptance(playbook_name="data_loader.yml")
    assert run.rc == 0, run.output[-3000:]
    ok = [c for c in loader_checks(run) if c["check"] == "loader.utilisation"]
    assert len(ok) == 6 and all(c["status"] == "pass" for c in ok)
    assert all("read 256 samples" in c["message"] for c in loader_checks(run) if c["check"] == "loader.throughput")


def test_a_crashed_loader_probe_is_an_error_in_both_stages_and_never_a_pass(tmp_path):
    """The probe's Python dies of a segmentation fault on every node (tests/fixtures/crashing_python)."""
    from conftest import FIXTURES
    with SimRun(spec("ldrx", count=3), tmp_path) as sim:
        run = sim.acceptance("-e", "check_data_loader_python=%s" % (FIXTURES / "crashing_python" / "python-segfault"),
                             playbook_name="data_loader.yml")
    assert run.rc != 0
    assert all(c["status"] != "pass" or c["message"].startswith("warning:") for c in loader_checks(run)), [
        (c["node"], c["check"], c["message"]) for c in loader_checks(run) if c["status"] == "pass"]
    for node in ("gpu001", "gpu002", "gpu003"):
        assert run.results["nodes"][node]["stages"] == {"data_loader_alone": "error", "data_loader": "error"}
        for stage, tool in (("data_loader_alone", "loader-probe-alone"), ("data_loader", "loader-probe")):
            (crash,) = [c for c in loader_checks(run, node) if c["stage"] == stage and c["check"] == "collect"]
            assert crash["component"] == "probe" and crash["status"] == "error"
            assert crash["message"].startswith("%s was killed by signal 11 (SIGSEGV): the probe did not finish" % tool)
    assert "Segmentation fault" in (run.dir / "raw" / "gpu001" / "loader-probe.txt").read_text()


def test_consumption_rate_from_an_acceptance_runs_workload(tmp_path):
    import json
    from conftest import FIXTURES
    results = FIXTURES / "report" / "demo_run" / "results.json"
    step = dict((r["node"], r["step_p50_ms"]) for r in json.loads(results.read_text())["workload"]["ranks"])
    with SimRun(spec("ldrw", count=3), tmp_path) as sim:
        run = sim.acceptance("-e", "check_data_loader_workload_results=%s" % results,
                             "-e", "check_data_loader_samples_per_step=30000", "-e", "check_data_loader_isolation=false",
                             playbook_name="data_loader.yml")
    caps = dict((c["node"], c) for c in loader_checks(run) if c["check"] == "loader.utilisation")
    assert sorted(caps) == ["gpu001", "gpu002", "gpu003"]
    for node, check in caps.items():
        want = 30000 / (step[node] / 1000.0)
        assert check["metrics"]["consume_samples_per_s"] == pytest.approx(want, rel=1e-5)
        assert (check["status"] == "fail") == (122070.31 < 0.95 * want), check["message"]
