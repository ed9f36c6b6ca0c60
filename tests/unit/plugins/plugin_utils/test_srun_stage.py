"""The srun stage's bookkeeping: which nodes share a step, whose variables differ, how long a step may take."""
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _srun_stage


def test_nodes_with_the_same_tool_line_share_one_step_in_inventory_order():
    tools = [{"name": "t", "timeout": 5, "argv": ["x", "/sys/@node@"]}]
    per_node = {"gpu001": {"tools": tools, "environment": {"A": "@node@"}},
                "gpu002": {"tools": tools, "environment": {"A": "@node@"}},
                "gpu003": {"tools": [dict(tools[0], argv=["x", "/other"])], "environment": {"A": "@node@"}},
                "gpu004": {"tools": tools, "environment": {"A": "@node@"}}}
    groups = _srun_stage.group_nodes(per_node)
    assert [g[0] for g in groups] == [["gpu001", "gpu002", "gpu004"], ["gpu003"]]
    assert [g[0] for g in _srun_stage.group_nodes(per_node, sequential=True)] == [["gpu001"], ["gpu002"],
                                                                                  ["gpu003"], ["gpu004"]]


def test_a_hosts_own_value_counts_unless_something_above_inventory_set_it():
    base = {"inventory_hostname": "gpu001", "check_x_timeout": 10, "same": 1, "collect_node_state": {"big": 1}}
    task_vars = {"inventory_hostname": "gpu001", "check_x_timeout": 10, "same": 1, "play_var": "p",
                 "role_default": "d"}
    defaults = {"role_default": "d"}
    own = {"inventory_hostname": "gpu002", "check_x_timeout": 99, "same": 1, "play_var": "host",
           "role_default": "host", "only_here": 5, "collect_node_state": {"big": 2}}
    overlay = _srun_stage._overlay(own, base, task_vars, defaults)  # pylint: disable=protected-access
    # its name, its inventory override of an inventory value and of a role default, a new variable;
    # not a play variable (higher precedence than inventory), not the node state (never compared)
    assert overlay == {"inventory_hostname": "gpu002", "check_x_timeout": 99, "role_default": "host", "only_here": 5}
    # an extra var (or play var) over the first host's inventory value wins for every host
    assert "check_x_timeout" not in _srun_stage._overlay(  # pylint: disable=protected-access
        own, base, dict(task_vars, check_x_timeout=1), defaults)


def test_a_step_may_take_its_tools_timeouts_the_pauses_the_margin_and_the_launch():
    args = {"tools": [{"timeout": 30}, {"timeout": "10", "pause_before": 2.5}]}
    assert _srun_stage.step_timeout(args, 30, 180) == 252.5


def test_the_variables_a_stage_uses_are_followed_through_their_own_templates():
    variables = {"collect_tools": [{"argv": ["{{ check_x_bin }}", "--since={{ __window }}"]}],
                 "check_x_bin": "/usr/bin/x",
                 "__window": "{{ last_pass[inventory_hostname] | default('boot') | gpucluster.acceptance.f(y) }}",
                 "unused": "{{ never_seen }}"}
    names = _srun_stage.referenced_names({"tools": "{{ collect_tools }}", "stage": "x"}, variables)
    assert names == {"collect_tools", "check_x_bin", "__window", "last_pass", "inventory_hostname", "y"}
    # only those are compared per host: a host differing elsewhere keeps the first host's arguments
    own = {"inventory_hostname": "gpu002", "unused": "other"}
    base = {"inventory_hostname": "gpu001", "unused": "this"}
    task_vars = dict(base)
    assert _srun_stage._overlay(own, base, task_vars, {}, {"check_x_bin"}) == {}  # pylint: disable=protected-access
    assert _srun_stage._overlay(own, base, task_vars, {}, names) == {"inventory_hostname": "gpu002"}  # pylint: disable=protected-access
    # a template that cannot be read: every host is rendered (None), never a wrong shortcut
    assert _srun_stage.referenced_names({"tools": "{{ x | y( }}"}, {}) is None


def _tool(tmp_path, name, text, rc):
    path = tmp_path / name
    path.write_text("#!/bin/sh\necho '%s' >&2\nexit %d\n" % (text, rc))
    path.chmod(0o755)
    return str(path)


def test_slurm_itself_gone_is_a_scheduler_error_and_the_node_stays_in_the_run(tmp_path):
    """sinfo's own words when slurmctld is gone (Slurm 22.05): a scheduler error, not an unreachable node."""
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._srun_stage import SrunStage
    sinfo = _tool(tmp_path, "sinfo", "slurm_load_node: Unable to contact slurm controller (connect failure)", 1)
    stage = SrunStage("dcgm", "#!/bin/bash\n", {"sinfo": sinfo, "sinfo_timeout": 30})
    outputs = stage.run({"gpu001": {"tools": []}, "gpu002": {"tools": []}})
    for node in ("gpu001", "gpu002"):
        assert outputs[node]["component"] == "scheduler", outputs[node]
        assert "Unable to contact slurm controller" in outputs[node]["errors"][0]


def test_a_node_slurm_reports_down_is_a_transport_error(tmp_path):
    from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._srun_stage import SrunStage
    sinfo = tmp_path / "sinfo"
    sinfo.write_text("#!/bin/sh\necho 'gpu001|down*'\n")
    sinfo.chmod(0o755)
    outputs = SrunStage("dcgm", "#!/bin/bash\n", {"sinfo": str(sinfo), "sinfo_timeout": 30}).run({"gpu001": {"tools": []}})
    assert outputs["gpu001"]["component"] == "transport"
    assert "Slurm reports it down* (not responding)" in outputs["gpu001"]["errors"][0]
