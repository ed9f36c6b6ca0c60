"""The results callback's progress lines: one per node and stage, and the heartbeat (no real waits)."""
import threading

from ansible_collections.gpucluster.acceptance.plugins.callback.acceptance_report import Heartbeat, node_line


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


def _task(stage, action="gpucluster.acceptance.collect_stage"):
    import types  # pylint: disable=import-outside-toplevel
    return types.SimpleNamespace(action=action, get_vars=lambda: {"collect_stage": stage}, _role=None,
                                 get_name=lambda: stage)


def _result(host, stage):
    import types  # pylint: disable=import-outside-toplevel
    return types.SimpleNamespace(_host=types.SimpleNamespace(get_name=lambda: host), _task=_task(stage))


def test_a_pipelined_play_has_one_heartbeat_counting_node_stages():
    from ansible_collections.gpucluster.acceptance.plugins.callback import acceptance_report  # pylint: disable=import-outside-toplevel
    clock, lines = _Clock(), []
    callback = acceptance_report.CallbackModule()
    callback._heartbeat = beat = Heartbeat(60, lines.append, clock=clock)
    beat._thread = object()  # pretend started: drive line() by hand
    callback._targets = ["gpu001", "gpu002"]
    callback._pipelined = 2  # two per-node stages in the play
    callback._task_started(_task("topology"))
    callback._finished(_result("gpu001", "topology"))
    clock.now += 30
    callback._task_started(_task("dcgm"))  # gpu001 moves on: the heartbeat goes on, not restarted
    callback._finished(_result("gpu001", "dcgm"))
    callback._task_started(_task("topology"))
    callback._finished(_result("gpu002", "topology"))
    callback._task_started(_task("anything else", action="ansible.builtin.set_fact"))  # not ended either
    clock.now += 30
    assert beat.line() == "%s: 1m00s, 3/4 node stages done" % acceptance_report.PIPELINE_LABEL


def test_a_plays_stages_are_its_collect_tasks_in_order_through_nested_blocks():
    import types  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpucluster.acceptance.plugins.callback.acceptance_report import _play_stages  # pylint: disable=import-outside-toplevel

    def block(*items):
        return types.SimpleNamespace(block=list(items), rescue=[], always=[])
    play = types.SimpleNamespace(pre_tasks=[], tasks=[
        block(block(_task("preflight"), _task("x", action="ansible.builtin.assert")), block(_task("topology"))),
        block(_task("preflight"), block(block(_task("dcgm"))))])
    assert _play_stages(play) == ["preflight", "topology", "dcgm"]
