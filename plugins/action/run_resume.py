# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_resume action: whether an interrupted run's directory can be resumed by this run (_resume)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _resume

ARGUMENT_SPEC = {
    "dir": {"type": "path", "required": True},
    "playbook": {"type": "str", "required": True},
    "profile": {"type": "str", "default": ""},
    "targets": {"type": "list", "elements": "str", "required": True},
    "replay_dir": {"type": "str", "default": ""},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        info, problems = _resume.check(args["dir"], args["playbook"], args["profile"] or None, args["targets"],
                                       replay=args["replay_dir"] or None)
        result["changed"] = False
        if problems:
            result.update(failed=True, msg="; ".join(problems))
            return result
        if info["complete"]:
            result.update(failed=True, msg="%s is a complete run (verdict %s): nothing to resume, nothing changed" % (
                info["directory"], info["verdict"] or "none"))
            return result
        judged = _resume.judged(info["directory"])
        count = sum(len(stages) for stages in judged.values())
        result.update(run_id=info["run_id"], directory=info["directory"], judged=count,
                      msg="resuming %s: %d (node, stage) pair(s) judged again from their captured outputs, the rest run"
                      % (info["directory"], count))
        return result
