"""The console's progress lines (_progress): one per node and stage, and the heartbeat (no real waits)."""
import threading

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._progress import Heartbeat, node_line


def _check(status, message="", check="x"):
    return {"check": check, "status": status, "message": message}


def test_a_node_line_gives_the_status_and_the_first_bad_message():
    result = {"stage": "topology", "checks": [_check("pass"), _check("fail", "GPU2<->GPU5 is SYS, expected NV18"),
                                              _check("fail", "GPU3<->GPU4 is SYS")]}
    assert node_line("gpu003", result) == "gpu003 topology FAIL: GPU2<->GPU5 is SYS, expected NV18 (+1 more)"
    assert node_line("gpu001", {"stage": "topology", "checks": [_check("pass"), _check("pass")]}) == "gpu001 topology pass"
    # No check has the status "warn": outside the vocabulary it is an error, never a pass.
    assert node_line("gpu002", {"stage": "dcgm", "checks": [_check("warn", "slow")]}) == "gpu002 dcgm ERROR: slow"
    assert node_line("gpu004", {"stage": "dcgm", "checks": []}) == "gpu004 dcgm ERROR"


def test_a_node_line_is_cut_to_160_characters_on_one_line():
    line = node_line("gpu003", {"stage": "gpu_health", "checks": [_check("error", "x\n" * 200)]})
    assert len(line) == 160 and line.endswith("...") and "\n" not in line


class _Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_the_heartbeat_is_due_every_interval_with_elapsed_time_and_nodes_done():
    clock, lines = _Clock(), []
    beat = Heartbeat(60, lines.append, clock=clock)
    beat._stop.set()  # no thread: drive line() by hand
    beat._stop.clear()
    beat._thread = object()  # pretend started
    beat.begin("dcgm", 16)
    assert beat.line() is None
    clock.now += 59
    assert beat.line() is None
    clock.now += 1
    for node in range(12):
        beat.done("gpu%03d" % node)
    beat.done("gpu000")  # twice: counted once
    assert beat.line() == "dcgm: 1m00s, 12/16 nodes done"
    assert beat.line() is None  # not again before the next interval
    clock.now += 61 * 60  # a long silence: one line, then every interval again
    assert beat.line() == "dcgm: 1h02m00s, 12/16 nodes done"
    assert beat.line() is None
    beat.end()
    clock.now += 600
    assert beat.line() is None  # the stage ended: quiet


def test_the_thread_prints_while_a_stage_runs_and_never_after_stop():
    printed = threading.Event()
    lines = []

    def emit(text):
        lines.append(text)
        printed.set()
    beat = Heartbeat(0.1, emit)
    beat.begin("dcgm", 2)
    beat.done("gpu001")
    assert printed.wait(5)
    beat.stop()
    assert not beat._thread.is_alive() and beat._thread.daemon
    count = len(lines)
    beat.begin("dcgm", 2)  # after stop: never starts again
    assert beat.line() is None and len(lines) == count
    assert lines[0].startswith("dcgm: 0m00s, 1/2 nodes done")
