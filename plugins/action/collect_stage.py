# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""collect_stage action: run a stage's tools on a node and judge them, in one task per node.

Runs the collector the way ansible.builtin.raw runs a command (no module upload, no Python on the
node), then parses and judges on the controller in the same worker. One worker per node per stage
instead of two, and no collection filter in per-host templates (every forked worker would import
them all again): the controller-cost bench in bench/ measures the difference.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import collector_command
from ansible_collections.gpucluster.acceptance.plugins.module_utils._guard import Guard, kill_children
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import worst_status
from ansible_collections.gpucluster.acceptance.plugins.module_utils._run_state import node_state_of, plural_states, without_outputs
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES, judge_stage
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _srun_stage
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _estimates, _resume
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._replay import read_node

# The collect role's script; the action finds it next to the collection's plugins.
DEFAULT_SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                              "roles", "collect", "files", "gpucluster-collect.sh")
STDERR_KEEP = 2000

ARGUMENT_SPEC = {
    "stage": {"type": "str", "required": True, "choices": sorted(STAGES)},
    "tools": {"type": "list", "elements": "dict", "required": True},
    "environment": {"type": "dict", "default": {}},
    "profile": {"type": "dict", "default": {}},
    "options": {"type": "dict", "default": {}},
    "replay_dir": {"type": "str", "default": ""},
    "resume_dir": {"type": "str", "default": ""},
    "run_id": {"type": "str", "default": ""},
    "script": {"type": "str"},
    "run_in_check_mode": {"type": "bool", "default": False},
    # ssh: this task runs per node over its connection; srun: run once for the play (run_once),
    # one Slurm step over the play's nodes, every node judged here.
    "transport": {"type": "str", "default": "ssh", "choices": ["ssh", "srun"]},
    "srun": {"type": "dict", "default": {}},
    "one_at_a_time": {"type": "bool", "default": False},
}
SRUN_OPTIONS = ("srun_args", "gpus_per_node", "launch_timeout", "margin", "environment", "srun", "sinfo")


def _read_script(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        raise AnsibleActionFail("collect_stage: cannot read the collector script %s: %s" % (path, exc))


def _with_digests(state, tools):
    """The state with each raw record's argv_digest (the command line and timeout it ran with), so
    a resumed run re-judges an output only under the same settings (_resume.resumable)."""
    last = state.get("last") if isinstance(state, dict) else None
    raw = last.get("raw") if isinstance(last, dict) else None
    if not isinstance(raw, dict):
        return state
    digests = dict((str(t.get("name")), _resume.argv_digest(t)) for t in tools if isinstance(t, dict))
    raw = dict((tool, dict(record, argv_digest=digests[tool]) if isinstance(record, dict) and tool in digests
                else record) for tool, record in raw.items())
    return dict(state, last=dict(last, raw=raw))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True  # check mode: runs nothing, reports what it would run (skipped)
    _supports_async = False

    def _resumed(self, args, node):
        """Whether this node's stage is judged again from the interrupted run's outputs (resume_dir)."""
        if not args["resume_dir"] or args["replay_dir"]:
            return False
        if getattr(self, "_resume_state", None) is None:
            self._resume_state = _resume.state(args["resume_dir"])
        return _resume.resumable(self._resume_state, args["resume_dir"], node, args["stage"], args["tools"])

    def _collect(self, args, node):
        """(the collector's output: a string from the node or a {tools, errors} dict, result extras)."""
        if self._resumed(args, node):
            tool_names = [str(t.get("name")) for t in args["tools"] if isinstance(t, dict)]
            found = read_node(args["resume_dir"], node, tool_names, index=self._resume_state[1])
            found.pop("replay", None)  # judged as the live run judged it: the same outputs
            return found, {"resumed": True}
        if args["replay_dir"]:
            if not os.path.isdir(args["replay_dir"]):
                raise AnsibleActionFail("collect_stage: replay directory %s does not exist" % args["replay_dir"])
            tool_names = [str(t.get("name")) for t in args["tools"] if isinstance(t, dict)]
            return read_node(args["replay_dir"], node, tool_names), {}
        script = self._script(args)
        try:
            command = collector_command(args["tools"], script, args["environment"], node=node)
        except ValueError as exc:
            raise AnsibleActionFail("collect_stage: stage %s: %s" % (args["stage"], exc))
        # As raw does: no shell wrapper of our own (the command quotes itself), become if asked.
        try:
            run = self._low_level_execute_command(command, executable=False)
        except BaseException:
            # The task's timeout (or an abort) leaves the connection's process running, and with it
            # the node's session and tool: end it, so the node hangs up on the collector.
            kill_children()
            raise
        stdout, rc = to_text(run.get("stdout", "")), run.get("rc")
        stderr = to_text(run.get("stderr", "")).strip()
        # rc is the collector's, not a verdict: the checks in the state carry the verdict.
        extras = {"rc": rc, "stderr": stderr[-STDERR_KEEP:]} if stderr else {"rc": rc}
        if not stdout.strip() and rc not in (0, None):
            # The collector itself did not start (no bash, a login shell that exits, a full disk).
            return {"tools": {}, "errors": ["the collector exited with status %s and printed nothing%s"
                                            % (rc, ": " + stderr[-500:] if stderr else "")]}, extras
        return stdout, extras

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        # A worker whose ansible-playbook is gone waits forever for a reader of its result: it
        # ends its connection (the ssh client or local shell) and exits instead; the collector on
        # the node is hung up on, or its watchdog sees its parents gone, and kills the running tool.
        self._guard = Guard(on_gone=kill_children).start()
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        node = to_text(task_vars.get("inventory_hostname", "node"))
        if self._task.check_mode and not args["run_in_check_mode"]:
            # --check: no tool runs on the node (DCGM level 3, nccl-tests, fio are stress tests);
            # the result says what would run, and the results callback prints the plan.
            would_run = [" ".join(str(a) for a in (t.get("argv") or [])) if isinstance(t, dict) else str(t)
                         for t in args["tools"]]
            expected, at_most = _estimates.tools_estimate(args["tools"])
            result.update(changed=False, skipped=True, stage=args["stage"], would_run=would_run,
                          estimate_s=expected, limit_s=at_most, msg="check mode: would run %s" % "; ".join(would_run))
            if args["transport"] == "srun":  # one task for the play: it would run on all its nodes
                result["nodes"] = [to_text(n) for n in task_vars.get("ansible_play_batch") or [node]]
            return result
        if args["transport"] == "srun":
            return self._run_srun(result, args, task_vars, node)
        collected, extras = self._collect(args, node)
        try:
            state = judge_stage(node_state_of(task_vars, run_id=args["run_id"]), args["stage"], collected,
                                args["profile"], options=args["options"], node=node, run_id=args["run_id"])
        except ValueError as exc:
            raise AnsibleActionFail("collect_stage: %s" % exc)
        result.update(extras)
        state, outputs = without_outputs(_with_digests(state, args["tools"]))
        result.update(changed=False, failed=False, stage=args["stage"], status=worst_status(state["last"]["checks"]),
                      raw_outputs=outputs, ansible_facts={"collect_node_state": state})
        return result

    def _run_srun(self, result, args, task_vars, node):
        """One task for the play: every node's output (one srun step per tool line, or the replay),
        judged here; every node's new state in collect_node_states (the task's facts are delegated
        to the controller: kept once, not copied to every host)."""
        unknown = sorted(set(args["srun"]) - set(SRUN_OPTIONS))
        if unknown:
            raise AnsibleActionFail("collect_stage: unknown srun option(s) %s (known: %s)"
                                    % (", ".join(unknown), ", ".join(SRUN_OPTIONS)))
        if not self._task.run_once:
            raise AnsibleActionFail("collect_stage: transport srun runs once for the play: set run_once on the task")
        hostvars = task_vars.get("hostvars")
        raw_get = getattr(hostvars, "raw_get", None)
        plural = plural_states(hostvars)
        previous = {}
        for name in [to_text(n) for n in task_vars.get("ansible_play_batch") or [node]]:
            variables = raw_get(name) if raw_get else (task_vars if name == node else {})
            previous[name] = node_state_of(variables, name, plural, args["run_id"])
        # As Ansible drops a host it could not reach from the play, a node srun could not reach in
        # an earlier stage of this run is not tried again: its state is kept as it is.
        nodes = [n for n in previous if not (previous[n] or {}).get("unreachable")
                 or (previous[n] or {}).get("run_id") != args["run_id"]]
        kept = dict((n, previous[n]) for n in previous if n not in nodes)
        per_node = _srun_stage.node_args(self, task_vars, nodes, args)
        resumed = [n for n in nodes if self._resumed(per_node[n], n)]
        if args["replay_dir"]:
            outputs = dict((n, self._collect(per_node[n], n)[0]) for n in nodes)
            steps = []
        else:
            outputs = dict((n, self._collect(per_node[n], n)[0]) for n in resumed)
            live = dict((n, mine) for n, mine in per_node.items() if n not in resumed)
            opts = dict(args["srun"])
            runner = _srun_stage.SrunStage(args["stage"], self._script(args), opts,
                                           env=_srun_stage.srun_environment(opts.get("environment")), guard=self._guard)
            try:
                outputs.update(runner.run(live, sequential=args["one_at_a_time"]) if live else {})
            except BaseException:
                self._guard.kill_all()
                raise
            steps = runner.steps
        # Nodes of this run outside the play batch keep their states too (the facts are replaced whole).
        states = dict((n, st) for n, st in (plural or {}).items()
                      if isinstance(st, dict) and (not args["run_id"] or st.get("run_id") == args["run_id"]))
        states.update(kept)
        statuses, raw_outputs = {}, {}
        for name in nodes:
            mine, output = per_node[name], outputs.get(name, "")
            try:
                states[name] = judge_stage(previous[name], args["stage"], output, mine["profile"],
                                           options=mine["options"], node=name, run_id=args["run_id"])
            except ValueError as exc:
                raise AnsibleActionFail("collect_stage: %s" % exc)
            if isinstance(output, dict) and output.get("component") == "transport":
                states[name]["unreachable"] = args["stage"]
            states[name], raw_outputs[name] = without_outputs(_with_digests(states[name], mine["tools"]))
            statuses[name] = worst_status(states[name]["last"]["checks"])
        # judged: the nodes this stage judged (the callback reports these; kept states are old news)
        result.update(changed=False, failed=False, stage=args["stage"], status=worst_status(
            [{"status": s} for s in statuses.values()]), transport="srun", steps=steps, node_status=statuses,
            judged=sorted(statuses), raw_outputs=raw_outputs, ansible_facts={"collect_node_states": states})
        return result

    def _script(self, args):
        return args["script"] if args["script"] is not None else _read_script(DEFAULT_SCRIPT)
