"""The results callback's progress: a pipelined play's one heartbeat, driven by the callback's events
(the lines themselves: tests/unit/plugins/plugin_utils/test_progress.py)."""
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._progress import PIPELINE_LABEL, Heartbeat


class _Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


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
    assert beat.line() == "%s: 1m00s, 3/4 node stages done" % PIPELINE_LABEL
