# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A per-node stage over Slurm: one task for the play, one srun step per distinct tool line.

The collect_stage action calls this for ``transport: srun``. It renders the task's arguments for
every node (a host's own inventory values and facts over the play's, as the strategy would), groups
the nodes whose tool lines and environment are the same (``@node@`` keeps per-node paths out of
the line), asks Slurm which nodes can run a step, runs one step per group (the groups at once;
one node at a time for the stages that must run alone), splits the output per node and hands each
node's output to the same judge as over SSH. A node srun could not reach is an error with
component ``transport``; a stage Slurm itself could not run there (slurmctld gone, the step
refused) is a ``scheduler`` error that keeps the node in the run; the others go on.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import threading
from collections import ChainMap

import jinja2
from jinja2 import meta

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _srun
from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import collector_argv
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import run_one
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure

try:
    from ansible.parsing.mod_args import ModuleArgsParser
except ImportError:  # pragma: no cover - every supported ansible-core has it
    ModuleArgsParser = None

# Never compared per host: what the action itself reads per node (the states) and lazy views.
_SKIP = frozenset(("collect_node_state", "collect_node_states", "hostvars", "vars", "omit"))
# Beyond this many variables the walk gives up and every host is rendered (always right, slower).
_MAX_NAMES = 2000
# What srun reports when a node's task never printed: kept short in each node's message.
SRUN_TAIL = 600


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


class _AnyPlugin(dict):
    """Filters and tests for parsing only: every name is known (Ansible's and collections' alike)."""

    def __contains__(self, key):
        return True

    def __getitem__(self, key):
        return _no_op

    def get(self, key, default=None):
        return _no_op


def _no_op(*args, **kwargs):
    return None


def referenced_names(raw, variables):
    """Every variable name the raw value's templates use, followed through the variables' own raw
    values; None when a template cannot be read (then every host is rendered)."""
    environment = jinja2.Environment()
    environment.filters, environment.tests = _AnyPlugin(), _AnyPlugin()
    seen, todo = set(), [raw]
    while todo:
        for text in _strings(todo.pop()):
            if "{{" not in text and "{%" not in text:
                continue
            try:
                names = meta.find_undeclared_variables(environment.parse(str(text)))
            except Exception:  # pylint: disable=broad-except  # an extension tag, a syntax we do not know
                return None
            for name in names - seen:
                seen.add(name)
                if name in variables:
                    todo.append(variables[name])
            if len(seen) > _MAX_NAMES:
                return None
    return seen


def raw_task_args(task):
    """The task's arguments before templating (its data as loaded), or None when not available."""
    if ModuleArgsParser is None:
        return None
    try:
        ds = task.get_ds()
        if not isinstance(ds, dict):
            return None
        return ModuleArgsParser(task_ds=ds, collection_list=task.collections).parse()[1]
    except Exception:  # pylint: disable=broad-except  # any parse problem: render once for all
        return None


def _role_defaults(task):
    defaults = {}
    try:
        for role in task.get_play().get_roles():
            defaults.update(role.get_default_vars())
    except Exception:  # pylint: disable=broad-except
        return {}
    return defaults


def _overlay(own, base, task_vars, defaults, names=None):
    """The variables of one host that differ from the first host's and nothing above overrides
    (only ``names`` when given: the variables the task's templates use)."""
    overlay = {}
    for key in (own if names is None else names):
        if key in _SKIP or key not in own:
            continue
        value = own[key]
        if key in base:
            mine = base[key]
            # the first host's value is its inventory/fact value: nothing of higher precedence set it
            if task_vars.get(key) is mine or task_vars.get(key) == mine:
                if value is not mine and value != mine:
                    overlay[key] = value
        elif key not in task_vars or (key in defaults and task_vars[key] == defaults[key]):
            overlay[key] = value
    return overlay


def node_args(action, task_vars, nodes, first_args):
    """{node: its arguments}: the first node's as the strategy rendered them; another node's the
    same unless a variable the task's templates use differs there, then rendered from the task's
    raw arguments with that node's variables (as the strategy would have)."""
    out = {nodes[0]: first_args} if nodes else {}
    if len(nodes) < 2:
        return out
    raw = raw_task_args(action._task)  # pylint: disable=protected-access
    hostvars = task_vars.get("hostvars")
    if raw is None or hostvars is None or not hasattr(hostvars, "raw_get"):
        return dict((node, first_args) for node in nodes)
    # Per argument, the variables its templates use: a host renders only the arguments whose
    # variables differ there (the profile, a large dict, rarely does).
    names = dict((key, referenced_names(value, task_vars)) for key, value in raw.items() if key in first_args)
    every = None if any(n is None for n in names.values()) else set().union(*names.values())
    defaults = _role_defaults(action._task)  # pylint: disable=protected-access
    base = hostvars.raw_get(nodes[0])
    for node in nodes[1:]:
        overlay = _overlay(hostvars.raw_get(node), base, task_vars, defaults, every)
        keys = [k for k in names if names[k] is None or set(overlay) & names[k]]
        if not keys:
            out[node] = first_args
            continue
        templar = action._templar.copy_with_new_env(  # pylint: disable=protected-access
            available_variables=ChainMap(overlay, task_vars))
        mine = dict(first_args)
        mine.update(templar.template(dict((k, raw[k]) for k in keys)))
        out[node] = mine
    return out


def group_nodes(per_node, sequential=False):
    """[(nodes, args)]: nodes with the same tools and environment run in one step (one node per
    step when ``sequential``), in the inventory's order."""
    groups, order = {}, []
    for node, args in per_node.items():
        key = node if sequential else json.dumps([args.get("tools"), args.get("environment")], sort_keys=True,
                                                 default=str)
        if key not in groups:
            groups[key] = ([], args)
            order.append(key)
        groups[key][0].append(node)
    return [groups[k] for k in order]


def step_timeout(args, margin, launch_timeout):
    seconds = 0.0
    for tool in args.get("tools") or []:
        if isinstance(tool, dict):
            seconds += float(tool.get("timeout") or 0) + float(tool.get("pause_before") or 0)
    return seconds + float(margin) + float(launch_timeout)


def slurm_states(nodes, env, timeout, sinfo="sinfo"):
    """({node: state}, None) from sinfo, or ({}, why) when sinfo itself failed."""
    record = run_one([sinfo, "--noheader", "--Node", "--format=%N|%T", "--nodes=%s" % compress_hostlist(nodes)],
                     timeout, env=env)
    if record["error"] or record["rc"] != 0 or record["timed_out"]:
        why = record["error"] or ("timed out after %ss" % timeout if record["timed_out"]
                                  else "rc=%s: %s" % (record["rc"], record["output"].strip()[-300:]))
        return {}, "sinfo %s" % why
    return _srun.parse_sinfo_states(record["output"]), None


class SrunStage(object):
    """Runs one stage's steps; ``outputs`` is {node: collector output or {tools, errors, component}}."""

    def __init__(self, stage, script, opts, env=None, guard=None):
        self.stage, self.script, self.opts, self.env, self.guard = stage, script, opts, env, guard
        self.outputs = {}
        self.steps = []
        self._lock = threading.Lock()

    def _unreached(self, node, why):
        """The node's output when no task of the stage ran there. Slurm's own failure (slurmctld
        gone, the step refused: classify_failure on srun's or sinfo's words) is a ``scheduler``
        error and the node stays in the run; otherwise the node could not be reached
        (``transport``: Slurm reports it down, its task never answered) and is not tried again."""
        found = classify_failure(why)
        self.outputs[node] = {"tools": {}, "errors": ["%s: srun could not run the %s stage there: %s"
                                                      % (node, self.stage, why)],
                              "component": found["component"] if found else "transport"}

    def _run_group(self, nodes, args):
        try:
            collector = collector_argv(args["tools"], self.script, args.get("environment"))
        except ValueError as exc:
            with self._lock:
                for node in nodes:
                    self.outputs[node] = {"tools": {}, "errors": [str(exc)]}
            return
        argv = _srun.srun_argv(nodes, collector, "gpucluster-%s" % self.stage, self.opts.get("srun_args"),
                               self.opts.get("gpus_per_node"), srun=self.opts.get("srun") or "srun")
        timeout = step_timeout(args, self.opts.get("margin", 30), self.opts.get("launch_timeout", 180))
        record = run_one(argv, timeout, env=self.env, guard=self.guard)
        by_node, headless, own = _srun.node_outputs(record["output"])
        said = _srun.srun_failure_summary(own) or record["error"] or ""
        with self._lock:
            self.steps.append({"nodes": compress_hostlist(nodes), "rc": record["rc"], "seconds": record["seconds"],
                               "timed_out": record["timed_out"], "srun": said[-SRUN_TAIL:]})
            for node in nodes:
                if node in by_node:
                    self.outputs[node] = by_node[node]
                elif record["timed_out"]:
                    self._unreached(node, "the step did not start there within %.0f s%s"
                                    % (timeout, " (%s)" % said[-SRUN_TAIL:] if said else ""))
                else:
                    self._unreached(node, "no output from its task (srun rc=%s%s)"
                                    % (record["rc"], ": " + said[-SRUN_TAIL:] if said else ""))
            if headless:
                self.steps[-1]["headless_tasks"] = sorted(headless)

    def run(self, per_node, sequential=False):
        nodes = list(per_node)
        if not nodes:
            return self.outputs
        states, why = slurm_states(nodes, self.env, self.opts.get("sinfo_timeout", 60),
                                   sinfo=self.opts.get("sinfo") or "sinfo")
        usable = {}
        for node in nodes:
            reason = ("cannot ask Slurm for the node states (%s)" % why) if why \
                else _srun.unusable_reason(states.get(node))
            if reason:
                self._unreached(node, reason)
            else:
                usable[node] = per_node[node]
        groups = group_nodes(usable, sequential)
        if sequential:
            for group, args in groups:
                self._run_group(group, args)
        else:
            threads = [threading.Thread(target=self._run_group, args=group) for group in groups]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        return self.outputs


def srun_environment(extra):
    """The controller's environment with the stage's srun environment over it."""
    env = dict(os.environ)
    env.update(dict((str(k), str(v)) for k, v in (extra or {}).items()))
    return env
