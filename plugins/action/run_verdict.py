# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_verdict action: the playbook's final verdict, read from this run's validated results.json.

The results callback writes results.json into the run directory just before a task named
"Verdict: ..." starts, and exports that directory as GPUCLUSTER_RUN_DIR; this action reads it, so
the final message counts exactly what the summary, junit.xml and the report count.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results

RUN_DIR_ENV = "GPUCLUSTER_RUN_DIR"
ENABLE = ("enable the results callback: callbacks_enabled = gpucluster.acceptance.acceptance_report "
          "under [defaults] in ansible.cfg (or ANSIBLE_CALLBACKS_ENABLED=gpucluster.acceptance.acceptance_report)")

ARGUMENT_SPEC = {
    "results": {"type": "path"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if self._task.check_mode:  # --check measured nothing: no verdict from it
            result.update(changed=False, msg="check mode: nothing was run or measured, no verdict")
            return result
        path = args.get("results")
        if not path:
            run_dir = os.environ.get(RUN_DIR_ENV)
            if not run_dir:
                result.update(failed=True, msg="no results for this run: %s" % ENABLE)
                return result
            path = os.path.join(run_dir, "results.json")
        document, problems = _results.load(path)
        if problems:
            result.update(failed=True, msg="the run's results cannot be read: %s" % "; ".join(problems[:5]))
            return result
        verdict = document["verdict"]
        keys = ("status", "nodes_total", "nodes_failed", "failed_nodes", "cluster_failed")
        # No GPUCLUSTER_RUN_DIR: the results callback is off (results given explicitly), so no
        # summary follows this message; name the setting that would print one.
        recording = bool(os.environ.get(RUN_DIR_ENV))
        msg = _report.verdict_message(document, results=path, summary=recording)
        if not recording and verdict["status"] != "pass":
            msg += " (no summary is printed: %s)" % ENABLE
        result.update(changed=False, verdict=dict((k, verdict[k]) for k in keys), results=path,
                      msg=msg, failed=verdict["status"] != "pass")
        return result
