"""The stages the results callback finds in a play (_play_stages): its collect tasks, in order."""


def _task(stage, action="gpucluster.acceptance.collect_stage"):
    import types  # pylint: disable=import-outside-toplevel
    return types.SimpleNamespace(action=action, get_vars=lambda: {"collect_stage": stage}, _role=None,
                                 get_name=lambda: stage)


def test_a_plays_stages_are_its_collect_tasks_in_order_through_nested_blocks():
    import types  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._play_stages import _play_stages  # pylint: disable=import-outside-toplevel

    def block(*items):
        return types.SimpleNamespace(block=list(items), rescue=[], always=[])
    play = types.SimpleNamespace(pre_tasks=[], tasks=[
        block(block(_task("preflight"), _task("x", action="ansible.builtin.assert")), block(_task("topology"))),
        block(_task("preflight"), block(block(_task("dcgm"))))])
    assert _play_stages(play) == ["preflight", "topology", "dcgm"]
