# -*- coding: utf-8 -*-
"""The Xid window: events count from the last passed run (or boot, or a configured start); older
ones are history. The verdict rests on captured outputs only (node-clock, xid-window)."""

import calendar

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    judge_gpu_health, judge_gpu_health_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import parse_nvidia_smi_q
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import parse_xid_log
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_window import (
    parse_duration, parse_iso_time, parse_node_clock, parse_xid_window, place_events, resolve_window, time_fields)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
Q_TEXT = (FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text()
Q = parse_nvidia_smi_q(Q_TEXT)

# The node booted 10000 s before 2025-03-14T12:00:00Z (boot at 09:13:20Z).
CLOCK_TEXT = "now: 2025-03-14T12:00:00Z\ntz: +0100\nuptime: 10000.00 150000.00\n"
NOW = calendar.timegm((2025, 3, 14, 12, 0, 0, 0, 0, 0))
# An Xid 48 at 1000 s after boot (09:30:00Z) and an Xid 79 at 9000 s (11:43:20Z), plain dmesg.
DMESG = ("[ 1000.000000] NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
         "double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x3f3b5f partition 0\n"
         "[ 9000.000000] NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")


def window(start, since="last_pass", run="20250314T100000.000000Z-1"):
    return "xid_since: %s\nwindow: %s\nlast_pass_run: %s\n" % (since, start, run)


def stage(dmesg=DMESG, clock=CLOCK_TEXT, xid_window=None):
    outputs = {"nvidia-smi-q": Q_TEXT, "nvidia-smi-csv": None, "dmesg": dmesg, "node-clock": clock,
               "xid-window": xid_window}
    return judge_gpu_health_stage(outputs, H100, {})


def by(checks, check):
    return [c for c in checks if c["check"] == check]


# ------------------------------------------------------------------------------ parsing ----

def test_node_clock():
    clock = parse_node_clock(CLOCK_TEXT)
    assert clock["errors"] == []
    assert clock["now"] == NOW and clock["tz_offset"] == 3600 and clock["uptime"] == 10000.0
    assert clock["boot"] == NOW - 10000


@pytest.mark.parametrize("text", ["now: yesterday\n", "uptime: -5 1\n", "uptime: inf 1\n", "tz: CET\n",
                                  "whatever\n", ""])
def test_unreadable_clock_text_is_a_parse_error(text):
    assert parse_node_clock(text)["errors"]


@pytest.mark.parametrize("text, seconds", [("24h", 86400), ("90m", 5400), ("7d", 604800), ("1h30m", 5400),
                                           ("3600s", 3600), ("2w", 1209600), ("1.5h", 5400), ("", None),
                                           ("h", None), ("24", None), ("-1h", None), ("1e309h", None)])
def test_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text, epoch", [("2025-03-14T12:00:00Z", NOW), ("2025-03-14T13:00:00+01:00", NOW),
                                         ("2025-03-14 12:00:00", NOW), ("2025-03-14", NOW - 12 * 3600),
                                         ("2025-13-14T12:00:00Z", None), ("boot", None)])
def test_iso_time(text, epoch):
    assert parse_iso_time(text) == epoch


def test_event_times_in_every_log_form():
    clock = parse_node_clock(CLOCK_TEXT)
    events = [
        {"time": time_fields("[ 1000.000000]", "monotonic")},
        {"time": time_fields("[Fri Mar 14 10:30:00 2025]", "ctime")},  # local time, UTC+1
        {"time": time_fields("Mar 14 10:30:00 host kernel: [  219.470994]", "syslog")},
        {"time": time_fields("2025-03-14T09:30:00,000000+00:00", "iso")},
        {"time": time_fields("2025-03-14T09:30:00+0000 host kernel:", "iso")},
        {"time": {}},
    ]
    assert place_events(events, clock) == 1
    assert [e["epoch"] for e in events[:5]] == [NOW - 9000] * 5
    assert events[5]["epoch"] is None


def test_syslog_without_a_year_is_never_placed_in_the_future():
    clock = parse_node_clock("now: 2025-01-01T00:10:00Z\ntz: +0000\nuptime: 100 1\n")
    event = {"time": time_fields("Dec 31 23:00:00 host kernel:", "syslog")}
    place_events([event], clock)
    assert event["epoch"] == calendar.timegm((2024, 12, 31, 23, 0, 0, 0, 0, 0))


def test_window_forms():
    clock = parse_node_clock(CLOCK_TEXT)
    last = resolve_window(parse_xid_window(window("2025-03-14T10:00:00Z")), clock)
    assert last["kind"] == "last_pass" and last["start"] == NOW - 7200
    assert "since the last passed run (2025-03-14T10:00:00Z, run 20250314T100000.000000Z-1)" == last["label"]
    boot = resolve_window(parse_xid_window(window("boot")), clock)
    assert boot["kind"] == "boot" and boot["start"] is None  # dmesg holds this boot only
    assert boot["label"] == "since boot (2025-03-14T09:13:20Z), no passed run of this node on record"
    hours = resolve_window(parse_xid_window(window("24h", since="24h")), clock)
    assert hours["kind"] == "duration" and hours["start"] == NOW - 86400
    bad = resolve_window(parse_xid_window(window("last tuesday", since="x")), clock)
    assert bad["start"] is None and bad["errors"]
    blind = resolve_window(parse_xid_window(window("24h", since="24h")), None)
    assert blind["start"] is None and "needs the node's clock" in blind["errors"][0]


# ------------------------------------------------------------------------------- judging ----

def test_events_before_the_last_pass_are_history_not_failures():
    checks, metrics = stage(xid_window=window("2025-03-14T11:00:00Z"))  # between the two events
    xid = by(checks, "gpu.xid")
    failed = [c for c in xid if c["status"] == "fail"]
    assert [c["metrics"]["xid"] for c in failed] == [79]
    assert failed[0]["message"].startswith("GPU5 (00000000:AB:00.0) logged Xid 79 (GPU has fallen off the bus) "
                                           "since the last passed run (2025-03-14T11:00:00Z")
    assert failed[0]["evidence"][0].startswith("[ 9000.000000] NVRM: Xid (PCI:0000:ab:00): 79")
    history = [c for c in xid if c["metrics"].get("history")]
    assert len(history) == 1 and history[0]["status"] == "pass" and history[0]["metrics"]["warning"]
    assert "Xid 48 on GPU0" in history[0]["message"] and "history, not counted" in history[0]["message"]
    assert history[0]["evidence"][0].startswith("[ 1000.000000] NVRM: Xid (PCI:0000:18:00): 48")
    assert metrics["xid_history"][0]["xid"] == 48 and metrics["xid_history"][0]["gpu"] == "GPU0"
    assert metrics["xid_window"]["kind"] == "last_pass" and metrics["xid_window"]["start"] == NOW - 3600
    assert [c["status"] for c in by(checks, "gpu.lost")] == ["fail"]


def test_everything_before_the_last_pass_passes_with_a_warning():
    checks, metrics = stage(xid_window=window("2025-03-14T11:50:00Z"))
    xid = by(checks, "gpu.xid")
    assert "fail" not in [c["status"] for c in checks if c["check"] in ("gpu.xid", "gpu.lost")]
    assert xid[-1]["status"] == "pass" and "no hardware Xid events since the last passed run" in xid[-1]["message"]
    history = [c for c in xid if c["metrics"].get("history")][0]
    assert "GPU fallen off the bus on GPU5" in history["message"]
    assert len(metrics["xid_history"]) == 3  # two Xids and the lost GPU


def test_no_passed_run_on_record_counts_the_whole_boot():
    checks, _metrics = stage(xid_window=window("boot"))
    assert sorted(c["metrics"]["xid"] for c in by(checks, "gpu.xid") if c["status"] == "fail") == [48, 79]


def test_duration_window_uses_the_nodes_clock():
    checks, _metrics = stage(xid_window=window("1h", since="1h"))
    assert [c["metrics"]["xid"] for c in by(checks, "gpu.xid") if c["status"] == "fail"] == [79]


def test_plain_dmesg_without_the_clock_cannot_be_placed_and_counts():
    checks, _metrics = stage(clock=None, xid_window=window("2025-03-14T11:50:00Z"))
    failed = [c for c in by(checks, "gpu.xid") if c["status"] == "fail"]
    assert sorted(c["metrics"]["xid"] for c in failed) == [48, 79]


def test_unreadable_window_is_an_error_and_the_whole_log_is_judged():
    checks, _metrics = stage(xid_window=window("last tuesday", since="last tuesday"))
    errors = [c for c in by(checks, "gpu.xid") if c["status"] == "error"]
    assert errors and "Xid window" in errors[0]["message"] and errors[0]["tool"] == "xid-window"
    assert sorted(c["metrics"]["xid"] for c in by(checks, "gpu.xid") if c["status"] == "fail") == [48, 79]


def test_unreadable_clock_is_an_error_of_the_stage():
    checks, _metrics = stage(clock="now: soon\n", xid_window=window("boot"))
    assert any(c["status"] == "error" and c.get("tool") == "node-clock" for c in checks)


def test_iso_log_window_needs_no_uptime():
    log = (FIXTURES / "xid_log" / "dmesg_decode_iso_xid13_43_gpud.log").read_text().replace(
        "): 43, pid=2924364", "): 79, pid=2924364")
    xid = parse_xid_log(log)
    window_text = parse_xid_window(window("2025-01-21T04:41:44.285Z"))
    results = judge_gpu_health(Q, None, xid, H100, window=window_text, clock=None)
    failed = [c for c in by(results, "gpu.xid") if c["status"] == "fail"]
    assert [c["metrics"]["xid"] for c in failed] == [79]
    history = [c for c in by(results, "gpu.xid") if c["metrics"].get("history")]
    assert len(history[0]["metrics"]["history"]) == 14  # the Xid 13s logged before 04:41:44.285


def test_replaying_the_captured_outputs_gives_the_same_verdict():
    first = stage(xid_window=window("2025-03-14T11:00:00Z"))
    again = stage(xid_window=window("2025-03-14T11:00:00Z"))
    assert first == again


def test_window_not_captured_judges_the_whole_log():
    checks, metrics = stage(clock=None, xid_window=None)
    assert metrics["xid_window"]["kind"] == "log"
    assert any(c["status"] == "skip" and c.get("tool") == "xid-window" for c in checks)
    assert sorted(c["metrics"]["xid"] for c in by(checks, "gpu.xid") if c["status"] == "fail") == [48, 79]
