#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""history_append module: append JSON lines to a log with O_APPEND and fsync, never rewriting it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: history_append
version_added: 0.1.0
short_description: Append JSON lines to a history log, never rewriting or deduplicating it
description:
  - Appends each entry of O(entries) as one JSON line to O(path). The file is opened with
    C(O_APPEND) and each line is written with a single C(write), then the file is C(fsync)ed,
    all under an exclusive C(flock) on the file. Lines of concurrent runs are never interleaved,
    lost or overwritten.
  - The file is never read or rewritten. An entry identical to an earlier line is appended again
    (a history keeps every event, not a set of them).
  - The file and its directory are created when missing.
options:
  path:
    description: The history file.
    type: path
    required: true
  entries:
    description: The entries, each a mapping written as one JSON line (keys sorted).
    type: list
    elements: dict
    required: true
  mode:
    description: Mode of the file when it is created, an octal string such as C(0644).
    type: str
    default: "0644"
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Writes nothing; reports the lines it would append.
  diff_mode:
    support: full
    details: The appended lines, as an addition at the end of the file.
  platform:
    platforms: posix
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Append a drain to the history
  gpucluster.acceptance.history_append:
    path: /var/log/gpucluster/drain-history.jsonl
    entries:
      - {time: "2026-01-01T00:00:00Z", node: gpu003, action: drain, reason: "gpucluster: gpu_health: xid 79"}
"""

RETURN = r"""
appended:
  description: How many lines were appended (would be, in check mode).
  returned: always
  type: int
lines:
  description: The lines appended, without their newline.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils._health_lock import (
    append_lines, history_line)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            entries=dict(type="list", elements="dict", required=True),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    entries = module.params["entries"]
    try:
        mode = int(module.params["mode"], 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o7777:  # os.open takes a C int: '147602206330' was an OverflowError traceback
        module.fail_json(msg="mode must be an octal file mode such as '0644' (0000 to 7777), got %r"
                         % module.params["mode"])
        return
    lines = [history_line(entry) for entry in entries]
    if entries and not module.check_mode:
        try:
            append_lines(path, entries, mode)
        except (IOError, OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
            module.fail_json(msg="cannot append to %s: %s" % (path, exc))
    output = dict(changed=bool(entries), appended=len(entries), lines=[line.rstrip("\n") for line in lines])
    if module._diff:
        output["diff"] = {"before": "", "after": "".join(lines),
                          "before_header": "%s (lines before are kept as they are)" % path,
                          "after_header": "%s (appended)" % path}
    module.exit_json(**output)


if __name__ == "__main__":
    main()
