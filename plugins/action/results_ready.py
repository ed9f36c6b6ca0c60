# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results_ready action: at a run's start, check that its results will be recorded.

The results callback makes the run's directory and exports it (GPUCLUSTER_RUN_DIR) when the run id
appears, so the variable is set in tasks after that only when the callback is enabled; and the
callback writes results.json and junit.xml only when the controller's Python has jsonschema and
junit-xml. Either one missing would be found only at the end of a long run, with no results.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys

from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results

RUN_DIR_ENV = "GPUCLUSTER_RUN_DIR"
CALLBACK = "gpucluster.acceptance.acceptance_report"
ENABLE = ("this run would leave no results: enable the results callback with callbacks_enabled = %s "
          "under [defaults] in ansible.cfg (or ANSIBLE_CALLBACKS_ENABLED=%s)" % (CALLBACK, CALLBACK))
# The collection's runtime requirements, beside this file in the installed collection.
REQUIREMENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "meta", "ee-requirements.txt")


def missing_libraries():
    """The Python packages (pip names) the results callback needs and this controller lacks."""
    return [name for name, present in (("junit-xml", _report.HAS_JUNIT_XML), ("jsonschema", _results.HAS_JSONSCHEMA))
            if not present]


def problems(environ, missing, python=sys.executable, requirements=REQUIREMENTS):
    """Each reason this run would leave no results, as the sentence to show."""
    found = []
    # In check mode the callback records only the plan (no run directory) and says so here.
    if not environ.get(RUN_DIR_ENV) and not environ.get("GPUCLUSTER_CHECK_PLAN"):
        found.append(ENABLE)
    if missing:
        found.append("the controller's Python (%s) lacks %s, which the results callback needs to write "
                     "the run's results and artifacts: %s -m pip install %s (or -r %s)"
                     % (python, " and ".join(missing), python, " ".join(missing), requirements))
    return found


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        self.validate_argument_spec(argument_spec={})
        found = problems(os.environ, missing_libraries())
        result.update(changed=False, run_dir=os.environ.get(RUN_DIR_ENV) or None)
        if found:
            result.update(failed=True, msg="; ".join(found))
        else:
            result["msg"] = "results go to %s" % (os.environ.get(RUN_DIR_ENV) or "nowhere: check mode measures nothing")
        return result
