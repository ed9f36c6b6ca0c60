# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fold_stage action: fold a stage judged elsewhere (once, for all nodes) into one node's state.

The workload stage judges every rank in one run_once task; each node then takes its share
through this action, which uses the same fold as the per-node stages (_run_state.fold_stage):
no copy of the bookkeeping in a template.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.module_utils._status import STATUSES

ARGUMENT_SPEC = {
    "stage": {"type": "str", "required": True},
    "checks": {"type": "list", "elements": "dict", "required": True},
    "metrics": {"type": "dict", "default": {}},
    "raw": {"type": "dict", "default": {}},
    "run_id": {"type": "str", "default": ""},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        node = to_text(task_vars.get("inventory_hostname", "node"))
        checks = []
        for check in args["checks"]:
            if check.get("status") not in STATUSES or not check.get("check"):
                raise AnsibleActionFail("fold_stage: every check needs a check name and a status in %s, got %r"
                                        % ("/".join(STATUSES), check))
            record = dict(check)
            record["stage"], record["node"] = args["stage"], node
            record.setdefault("raw", sorted(args["raw"]))
            checks.append(record)
        if not checks:
            checks = [{"check": "judge", "status": "error", "stage": args["stage"], "node": node, "component": None,
                       "message": "the %s stage returned no result for %s" % (args["stage"], node),
                       "metrics": {}, "evidence": []}]
        state = _run_state.fold_stage(_run_state.node_state_of(task_vars, run_id=args["run_id"]), args["stage"], checks, args["metrics"],
                                      args["raw"], node=node, run_id=args["run_id"])
        state, outputs = _run_state.without_outputs(state)
        result.update(changed=False, failed=False, status=state["stages"][args["stage"]]["status"],
                      raw_outputs=outputs, ansible_facts={"collect_node_state": state})
        return result
