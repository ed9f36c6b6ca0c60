# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: any_failed
short_description: Whether any node failed (or errored in) a per-node stage of this run
version_added: 0.3.0
description:
  - Fail-fast's question before the controller stages. True when a node's C(collect_node_state)
    of this run names a failed stage. Nodes that never reported are not counted here (the
    verdict counts them).
extends_documentation_fragment:
  - gpucluster.acceptance.node_states
  - gpucluster.acceptance.node_states.run_id
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Stop before the controller stages
  ansible.builtin.meta: end_play
  when: hostvars | gpucluster.acceptance.any_failed(acceptance_targets, run_id=acceptance_run_id)
"""

RETURN = r"""
_value:
  description: True when a node failed a per-node stage.
  type: bool
"""

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters, node_states_of


def _any_failed(hostvars, nodes, run_id=""):
    return _run_state.any_failed(node_states_of("any_failed", hostvars, nodes, run_id))


class FilterModule(object):
    def filters(self):
        return guarded_filters({"any_failed": _any_failed})
