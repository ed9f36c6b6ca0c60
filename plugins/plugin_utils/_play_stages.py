# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stages as the results callback finds them in a playbook: the stage a task belongs
to (_stage_of), the per-node stages a play collects (_play_stages) and which published facts are a
stage's result (_is_stage_result).

Apart from the callback (plugins/callback/acceptance_report.py) because it reads Ansible's task and
play objects, not the callback's events: a play's stages are found by walking its blocks, which
test_play_stages.py does on plain objects.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible import context

COLLECT_ACTIONS = ("gpucluster.acceptance.collect_stage", "collect_stage")
FREE_STRATEGIES = ("free", "ansible.builtin.free")


def _stage_of(task):
    """The acceptance stage a task belongs to: the collect role's stage, else its role's name."""
    stage = task.get_vars().get("collect_stage")
    if isinstance(stage, str) and stage and "{" not in stage:
        return stage
    role = getattr(task, "_role", None)
    if role is not None:
        return role.get_name().split(".")[-1]
    return task.get_name()


def _play_stages(play):
    """The per-node stages a play collects (its collect_stage tasks), in order."""
    stages = []
    blocks = list(getattr(play, "pre_tasks", None) or []) + list(getattr(play, "tasks", None) or [])
    args = context.CLIARGS or {}
    only, skip = list(args.get("tags") or ["all"]), list(args.get("skip_tags") or [])

    def selected(task):  # --tags / --skip-tags leave some stages out
        # Progress only: a task whose tags cannot be evaluated here is counted.
        evaluate = getattr(task, "evaluate_tags", None)
        try:
            return evaluate is None or evaluate(only, skip, all_vars={})
        except Exception:  # pylint: disable=broad-except
            return True

    def walk(items):
        for item in items:
            if hasattr(item, "block"):
                walk(item.block or [])
                walk(item.rescue or [])
                walk(item.always or [])
            elif getattr(item, "action", None) in COLLECT_ACTIONS and selected(item):
                stage = _stage_of(item)
                if stage not in stages:
                    stages.append(stage)

    walk(blocks)
    return stages


def _is_stage_result(value):
    """A stage's published result: {stage, checks, ...} or a list of them."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(i, dict) and "stage" in i and "checks" in i for i in items)
