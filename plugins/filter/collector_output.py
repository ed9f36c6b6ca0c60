# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: collector_output
short_description: One tool's record from the collector script's framed output
version_added: 0.2.0
description:
  - The collector script (the C(gpucluster.acceptance.collect) role's C(gpucluster-collect.sh))
    frames each tool's output between markers that carry its exit status and duration. This filter
    returns one tool's C(output), C(rc), C(seconds) and C(complete) (false when its end marker is
    missing, the collector was cut off).
  - A tool the output does not hold comes back with C(complete=false), the given O(rc) and an
    C(error) saying so; never an empty success.
options:
  _input:
    description: The collector's standard output.
    type: str
    required: true
  tool:
    description: The tool's name, as given after C(@tool).
    type: str
    required: true
  rc:
    description: The collector's own exit status, used when the tool's end marker is missing.
    type: raw
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: The workload launcher's output, exit status and duration
  ansible.builtin.set_fact:
    record: "{{ launch.stdout | gpucluster.acceptance.collector_output('workload', rc=launch.rc) }}"
"""

RETURN = r"""
_value:
  description: C({output, rc, seconds, complete}) and, when the tool is missing, C(error).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils._sections import parse_sections
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters


def _collector_output(text, tool, rc=None):
    if not isinstance(text, string_types):
        raise AnsibleFilterError("collector_output: expected the collector's output (a string), got %s"
                                 % type(text).__name__)
    sections = parse_sections(text)
    record = sections["tools"].get(str(tool))
    if record is None:
        return {"output": text, "rc": rc, "seconds": None, "complete": False,
                "error": "%s: no output of it in the collector's output (%s)"
                % (tool, "; ".join(sections["errors"]) or "other tools only")}
    if record.get("rc") is None:
        record["rc"] = rc
    return record


class FilterModule(object):
    def filters(self):
        return guarded_filters({"collector_output": _collector_output})
