"""sacct, sacctmgr events and the drain history as failure history (plugins/module_utils/_sacct.py)."""
import datetime

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _sacct

# The states, exit codes and times of shared/notes' verified sacct run, in the playbook's format.
SACCT = """JobID|JobName|Partition|State|ExitCode|Submit|Start|End|ElapsedRaw|NNodes|NodeList
1|a|gpu|TIMEOUT|0:0|2026-12-02T03:32:47|2026-12-02T03:32:48|2026-12-02T03:34:01|73|1|acc1
2|b|gpu|COMPLETED|0:0|2026-12-02T03:32:47|2026-12-02T03:32:48|2026-12-02T03:32:49|1|1|acc2
3|c|gpu|FAILED|1:0|2026-12-02T03:32:50|2026-12-02T03:32:51|2026-12-02T03:32:51|0|1|acc2
4|d|gpu|NODE_FAIL|0:0|2026-12-02T03:32:53|2026-12-02T03:32:54|2026-12-02T03:32:54|0|2|acc[3-4]
5|e|gpu|REQUEUED|0:0|2026-12-02T03:32:53|2026-12-02T03:32:54|2026-12-02T03:32:55|1|1|acc4
5|e|gpu|COMPLETED|0:0|2026-12-02T03:32:55|2026-12-02T03:35:01|2026-12-02T03:35:02|1|1|acc4
6|f|cpu|CANCELLED by 0|0:9|2026-12-02T03:32:59|2026-12-02T03:33:00|2026-12-02T03:33:01|1|1|acc3
"""
EVENTS = """acc3|2026-12-02T03:32:54|2026-12-02T03:40:00|DOWN|sim node failure|root(0)
acc4|2026-12-02T03:32:55|Unknown|DOWN|x|root(0)
|2026-12-02T03:00:00|Unknown|CLUSTER_CPU|x|root
"""


def test_records_follow_the_header_and_drop_steps():
    reordered = "State|JobID|NodeList|Start|End\nCOMPLETED|7|gpu[001-002]|2026-12-02T03:00:00|2026-12-02T03:00:10\n" \
                "COMPLETED|7.batch|gpu001|2026-12-02T03:00:00|2026-12-02T03:00:10\n"
    parsed = _sacct.parse_sacct(reordered)
    assert parsed["errors"] == []
    (record,) = parsed["records"]
    assert record["node_names"] == ["gpu001", "gpu002"] and record["nodes"] == 2 and record["elapsed_s"] == 10


def test_kinds_of_failure():
    parsed = _sacct.parse_sacct(SACCT)
    events = _sacct.parse_events(EVENTS)
    assert events["errors"] == [] and len(events["events"]) == 2  # the cluster event is left out
    kinds = dict((f["job_id"], f["kind"]) for f in _sacct.classify(parsed["records"], events["events"]))
    assert kinds == {"1": "timeout", "4": "node_fail", "5": "requeue", "6": "signal"}
    by_job = dict((f["job_id"], f) for f in _sacct.classify(parsed["records"], events["events"]))
    assert by_job["4"]["node"] == "acc3" and by_job["5"]["node"] == "acc4"


def test_requeue_without_a_node_event_is_not_a_failure():
    parsed = _sacct.parse_sacct(SACCT)
    kinds = [f["kind"] for f in _sacct.classify(parsed["records"], [])]
    assert "requeue" not in kinds and "node_fail" in kinds


def test_restart_time_from_the_requeue_chain():
    (found,) = _sacct.restarts(_sacct.parse_sacct(SACCT)["records"])
    assert found["job"] == "5" and found["seconds"] == 126  # 03:32:55 -> 03:35:01, as in the notes


def test_exposure_by_partition():
    records = _sacct.parse_sacct(SACCT)["records"]
    assert _sacct.exposure_node_s(records) == 73 + 1 + 0 + 0 + 1 + 1 + 1
    assert _sacct.exposure_node_s(records, ("cpu",)) == 1


def test_garbage_is_an_error_beside_the_records():
    parsed = _sacct.parse_sacct("sacct: warning: something\n" + SACCT + "[root@login ~]# \n")
    assert len(parsed["records"]) == 7
    assert len(parsed["errors"]) == 2 and "before sacct's header" in parsed["errors"][0]
    assert _sacct.parse_sacct("no header at all\n")["errors"][-1].startswith("no sacct header")


def test_down_intervals_merge_events_and_history():
    start, end = datetime.datetime(2026, 12, 2, 3, 0), datetime.datetime(2026, 12, 2, 4, 0)
    history = _sacct.parse_drain_history(
        '{"time": "2026-12-02T03:35:00Z", "node": "acc3", "action": "drain", "reason": "gpucluster: dcgm"}\n'
        '{"time": "2026-12-02T03:50:00Z", "node": "acc3", "action": "resume", "reason": "passed"}\n'
        'not json\n')
    assert len(history["entries"]) == 2 and history["errors"] == ["history line 3: not JSON: not json"]
    spans = _sacct.down_intervals(_sacct.parse_events(EVENTS)["events"], history["entries"], start, end)
    # acc3: DOWN 03:32:54-03:40:00 merged with the drain 03:35-03:50; acc4 still down at the window's end.
    assert spans["acc3"] == [(datetime.datetime(2026, 12, 2, 3, 32, 54), datetime.datetime(2026, 12, 2, 3, 50))]
    assert spans["acc4"] == [(datetime.datetime(2026, 12, 2, 3, 32, 55), end)]


def test_unconfigured_accounting_is_recognised():
    assert _sacct.looks_unconfigured(1, "sacct: error: Slurm accounting storage is disabled")
    assert not _sacct.looks_unconfigured(0, SACCT)


# Real outputs of a known history on the simulated cluster's slurmdbd (tests/fixtures/accounting).
def _fixture(name):
    from conftest import FIXTURES  # pylint: disable=import-outside-toplevel
    return (FIXTURES / "accounting" / name).read_text()


def _truth():
    import json  # pylint: disable=import-outside-toplevel
    return json.loads(_fixture("truth.json"))


def test_real_history_failures_restarts_and_exposure():
    truth = _truth()
    parsed = _sacct.parse_sacct(_fixture("sacct_X_D.psv"))
    events = _sacct.parse_events(_fixture("sacctmgr_events.psv"))
    assert parsed["errors"] == [] and events["errors"] == []
    assert len(parsed["records"]) == sum(truth["states"].values())
    failures = _sacct.classify(parsed["records"], events["events"])
    assert len([f for f in failures if f["kind"] == "node_fail"]) == len(truth["node_failures"])
    assert len([f for f in failures if f["kind"] == "timeout"]) == truth["timeouts"]
    # Every node failure is matched to the node that went down under it.
    named = sorted((f["job_id"], f["node"]) for f in failures if f["kind"] == "node_fail")
    assert named == sorted((str(f["job"]), f["node"]) for f in truth["node_failures"])
    assert sorted(r["seconds"] for r in _sacct.restarts(parsed["records"])) == sorted(truth["restart_s_sacct"])
    assert _sacct.exposure_node_s(parsed["records"]) == truth["exposure_node_s_sacct"]


def test_real_history_in_epoch_time_reads_the_same():
    iso = _sacct.parse_sacct(_fixture("sacct_X_D.psv"))["records"]
    epoch = _sacct.parse_sacct(_fixture("sacct_X_D_epoch.psv"))["records"]
    assert [(r["job_id"], r["state"], r["start"], r["end"]) for r in iso] == \
        [(r["job_id"], r["state"], r["start"], r["end"]) for r in epoch]


def test_parsable_without_header_is_an_error_not_a_history():
    parsed = _sacct.parse_sacct(_fixture("sacct_X_D_parsable_noheader.txt"))
    assert parsed["records"] == [] and parsed["errors"][-1].startswith("no sacct header")


def test_without_duplicates_the_requeued_failures_are_gone():
    # Why the playbook asks for -D: without it sacct keeps only the last run of a requeued job.
    truth = _truth()
    plain = _sacct.parse_sacct(_fixture("sacct_X.psv"))["records"]
    assert len([r for r in plain if r["state"] == "NODE_FAIL"]) < len(truth["node_failures"])
    assert _sacct.restarts(plain) == []
