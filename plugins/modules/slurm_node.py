#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_node module: drain Slurm nodes with a tagged reason, and resume only the ones we drained."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: slurm_node
version_added: 0.1.0
short_description: Drain Slurm nodes with a tagged reason and resume only those
description:
  - Drains Slurm nodes (C(scontrol update State=DRAIN Reason=...)) with a reason that starts with
    O(reason_tag), and resumes (C(State=RESUME)) only nodes whose current reason starts with that
    tag. A node drained or set DOWN by someone else, with another reason, is never resumed and
    never re-drained over; it is reported as C(skipped) with its reason.
  - Idempotent. A node already drained with the same reason is C(unchanged); one drained with
    the tag but another text gets the new reason.
  - Busy nodes (ALLOCATED, MIXED) are drained, never set DOWN. Their jobs run to the end and
    Slurm shows them as DRAINING (C(ALLOCATED+DRAIN)).
  - DOWN, UNKNOWN and not-responding nodes get the DRAIN flag, so they stay out when their
    slurmd registers again (C(ReturnToService)). If such a node is not drained, the reason Slurm
    gave it (for example C(Not responding)) is replaced, and the old one is reported.
    Nodes in a maintenance reservation (MAINT, RESERVED) are drained, and the module reports it.
  - On an UNKNOWN node, scontrol answers a RESUME with rc=1 and C(Invalid node state specified)
    yet clears the drain. Each change is therefore judged by re-reading the node's state, not by
    scontrol's exit status.
  - FUTURE nodes (hidden from plain C(scontrol show node), read with C(--future)) are not drained.
    They are reported as C(skipped), because Slurm runs nothing on them, and C(State=RESUME), which
    brings one into service, would clear the drain anyway. A FUTURE node drained earlier with the tag is
    resumed with C(State=UNDRAIN), so it stays FUTURE.
  - Before any change, every name must be a node Slurm knows. The module fails, naming the unknown
    ones, and changes nothing.
  - Every command runs without a shell, under C(timeout) (coreutils), because scontrol can hang
    for a minute when it cannot read its configuration.
options:
  name:
    description:
      - Nodes to act on, as names or Slurm hostlist expressions (C(gpu[001-004,010])). They are
        expanded and duplicates removed.
    type: list
    elements: str
    required: true
    aliases: [nodes]
  state:
    description:
      - C(drained) drains the nodes with O(reason).
      - C(resumed) resumes the nodes whose reason starts with O(reason_tag) and leaves the other
        nodes alone.
    type: str
    choices: [drained, resumed]
    required: true
  reason:
    description:
      - "Why the nodes are drained. O(reason_tag) and a space are put in front unless the text
        already starts with the tag: V(xid 79 on GPU3) is written as C(gpucluster: xid 79 on GPU3)."
      - Whitespace runs, newlines included, are folded into single spaces.
      - Required when O(state=drained). Ignored when O(state=resumed).
    type: str
  reason_tag:
    description:
      - Prefix that marks our drains. Only nodes whose reason starts with it are resumed, or have
        their reason updated.
      - Must not be empty.
    type: str
    default: "gpucluster:"
  scontrol_path:
    description: The scontrol command, a name looked up on E(PATH) or an absolute path.
    type: str
    default: scontrol
  slurm_conf:
    description:
      - Path of slurm.conf, passed to scontrol as E(SLURM_CONF).
      - When not set, scontrol uses E(SLURM_CONF) from the module's environment, or its built-in
        default.
    type: path
  timeout:
    description: Seconds each scontrol call may take before it is killed (1 to 604800, a week).
    type: int
    default: 30
  reasons:
    description:
      - Per-node drain reasons (node name to reason), for O(state=drained); a node not in it gets
        O(reason). Either O(reason) or O(reasons) is required when draining.
    type: dict
  max_drained:
    description:
      - "Cluster-wide cap, for O(state=drained): after this call at most this many nodes may be
        drained (or DOWN) with O(reason_tag), counting every node of the cluster (C(scontrol --future
        show node)), read again just before draining. When the drain would exceed it, nothing is
        drained, RV(refused) is true and RV(refusal) says why; the module does not fail."
      - With O(lock_file) the read and the drain are one step for every run that uses the same
        lock file, so concurrent runs cannot together exceed the cap.
    type: int
  lock_file:
    description:
      - Exclusive C(flock) held around "read the drains, apply O(max_drained), drain" (created if
        missing, with its directory). Every run that shares the file is serialised.
      - Not taken in check mode.
    type: path
  lock_timeout:
    description: Seconds to wait for O(lock_file) (0 to 604800); then the module fails naming the lock and its holder's pid.
    type: int
    default: 60
notes:
  - Runs on the host where scontrol can reach slurmctld, usually the controller or a login node.
    Delegate it there, once, with C(run_once), for many nodes.
  - State names follow C(scontrol show node) (C(IDLE+DRAIN), C(ALLOCATED+DRAIN),
    C(UNKNOWN+DRAIN+NOT_RESPONDING)). C(sinfo -R) lists the reasons.
  - Scontrol runs with E(SLURM_TIME_FORMAT=standard), so the C([user@time]) Slurm appends to a
    reason can be told from the reason itself.
seealso:
  - name: scontrol update
    description: Slurm's command to drain and resume nodes.
    link: https://slurm.schedmd.com/scontrol.html
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads the nodes and reports what would change; runs no C(scontrol update).
  diff_mode:
    support: full
    details: Before and after state and reason of each requested node, one line per node.
  platform:
    platforms: posix
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Drain the nodes that failed acceptance
  gpucluster.acceptance.slurm_node:
    name: "{{ acceptance_failed_nodes }}"
    state: drained
    reason: "acceptance {{ acceptance_run_id }}: dcgm diag r3 failed"
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true

- name: Drain a hostlist
  gpucluster.acceptance.slurm_node:
    name: gpu[001-004,010]
    state: drained
    reason: NCCL all_reduce busbw below profile

- name: Resume the nodes we drained; operator drains stay
  gpucluster.acceptance.slurm_node:
    name: "{{ groups['gpu_nodes'] }}"
    state: resumed
  register: resumed

- name: Say which nodes someone else drained
  ansible.builtin.debug:
    msg: "{{ resumed.skipped_nodes }}"
"""

RETURN = r"""
changed:
  description: Whether any node was drained, given a new reason or resumed (or would be, in check mode).
  returned: always
  type: bool
nodes:
  description: One entry per requested node, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The node name.
      type: str
      sample: gpu003
    action:
      description:
        - C(drained) (drained now, or its reason updated), C(resumed), C(unchanged) (already as
          wanted) or C(skipped) (left alone, see RV(nodes[].message)).
        - C(failed) when Slurm does not show the wanted state after the change; the module then
          fails, naming the node.
      type: str
      sample: drained
    before:
      description: State and reason before the change.
      type: dict
      contains:
        state:
          description: Slurm's full state, for example C(IDLE), C(ALLOCATED+DRAIN), C(UNKNOWN+NOT_RESPONDING).
          type: str
        reason:
          description: The reason without Slurm's C([user@time]) suffix, or null.
          type: str
    after:
      description:
        - State and reason after the change, as read back from Slurm. In check mode, what the
          change would give.
      type: dict
      contains:
        state:
          description: Slurm's full state.
          type: str
        reason:
          description: The reason, or null.
          type: str
    message:
      description: What was done and why, or why the node was left alone.
      type: str
      sample: "drained: running jobs finish first (ALLOCATED -> DRAINING), no new jobs start"
drained_nodes:
  description: Names of the nodes drained, or whose reason was updated.
  returned: always
  type: list
  elements: str
resumed_nodes:
  description: Names of the nodes resumed.
  returned: always
  type: list
  elements: str
unchanged_nodes:
  description: Names of the nodes already as wanted.
  returned: always
  type: list
  elements: str
refused:
  description: True when O(max_drained) refused the drain (nothing was drained).
  returned: always
  type: bool
refusal:
  description: Why the drain was refused (the cap, the nodes already drained with the tag); empty otherwise.
  returned: always
  type: str
ours_elsewhere:
  description: With O(max_drained), the other nodes Slurm showed drained with the tag when the cap was checked.
  returned: always
  type: list
  elements: str
skipped_nodes:
  description: Names of the nodes left alone (drained by someone else, FUTURE).
  returned: always
  type: list
  elements: str
reason:
  description: The full reason set on drained nodes (with the tag); null when O(state=resumed).
  returned: always
  type: str
  sample: "gpucluster: dcgm diag r3 failed"
"""

import contextlib

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils._health_lock import (
    LockTimeout, exclusive_lock)

from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import WEEK, options_problem
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node import (
    decide, diff_text, full_reason, summary)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node_apply import (
    _cap, apply_plans, node_results)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node_scontrol import (
    SlurmNodes, expand_names)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="list", elements="str", required=True, aliases=["nodes"]),
            state=dict(type="str", required=True, choices=["drained", "resumed"]),
            reason=dict(type="str"),
            reason_tag=dict(type="str", default="gpucluster:"),
            scontrol_path=dict(type="str", default="scontrol"),
            slurm_conf=dict(type="path"),
            timeout=dict(type="int", default=30),
            reasons=dict(type="dict"),
            max_drained=dict(type="int"),
            lock_file=dict(type="path"),
            lock_timeout=dict(type="int", default=60),
        ),
        required_if=[("state", "drained", ["reason", "reasons"], True)],
        supports_check_mode=True,
    )
    problem = options_problem(module.params, {"timeout": (1, WEEK), "lock_timeout": (0, WEEK)})
    if problem:  # before the lock: a lock_timeout of a year would hold the drain step that long
        module.fail_json(msg=problem)
    try:
        with _locked(module):
            _run(module)
    except LockTimeout as exc:
        module.fail_json(msg=str(exc), lock_file=module.params["lock_file"])
    except (IOError, OSError, ValueError) as exc:  # the lock file cannot be opened (a directory, a NUL byte)
        module.fail_json(msg="cannot take the drain lock %s: %s" % (module.params["lock_file"], exc),
                         lock_file=module.params["lock_file"])


def _locked(module):
    """The lock of the whole read-decide-drain step (none without lock_file, none in check mode)."""
    params = module.params
    if not params["lock_file"] or module.check_mode:
        return contextlib.nullcontext()
    return exclusive_lock(params["lock_file"], params["lock_timeout"])


def _run(module):
    params = module.params
    want = params["state"]
    tag = (params["reason_tag"] or "").strip()
    if not tag:
        module.fail_json(msg="reason_tag must not be empty: it tells our drains from everyone else's")
    if params["max_drained"] is not None and params["max_drained"] < 0:
        module.fail_json(msg="max_drained must be >= 0, got %d" % params["max_drained"])
    reasons = dict((str(k), str(v)) for k, v in (params["reasons"] or {}).items())
    reason = None
    if want == "drained":
        for text in [params["reason"]] * (params["reason"] is not None) + list(reasons.values()):
            if full_reason(text, tag) == tag:
                module.fail_json(msg="reason must say why the nodes are drained (got only the tag %r)" % tag)
        reason = full_reason(params["reason"], tag) if params["reason"] is not None else None

    names = expand_names(module, params["name"])
    slurm = SlurmNodes(module)
    current = slurm.show(names)
    missing = [name for name in names if name not in current["nodes"]]
    if missing:
        module.fail_json(msg="unknown node%s %s: not in Slurm's node list (scontrol --future show node); "
                             "nothing was changed" % ("s" if len(missing) > 1 else "", compress_hostlist(missing)),
                         unknown=missing)

    plans = {}
    for name in names:
        plans[name] = decide(current["nodes"][name], want, reason=reasons.get(name, params["reason"]), tag=tag)
    refusal, elsewhere = _cap(slurm, names, plans, params, tag)
    for name in names:
        if refusal and plans[name]["command"]:
            plans[name] = dict(plans[name], action="unchanged", command=None,
                               after=summary(current["nodes"][name]), message=refusal)

    failures, after = [], {}
    if not module.check_mode:
        failures, after = apply_plans(slurm, names, plans, want, tag)
    results, lists, changed = node_results(names, plans, current, after)
    output = dict(changed=changed, nodes=results, reason=reason, refused=bool(refusal), refusal=refusal,
                  ours_elsewhere=elsewhere, **lists)
    if module._diff:
        output["diff"] = {
            "before": diff_text(dict((r["name"], r["before"]) for r in results)),
            "after": diff_text(dict((r["name"], r["after"]) for r in results)),
        }
    if failures:
        module.fail_json(msg="could not set %d node%s %s: %s" % (
            len(failures), "s" if len(failures) > 1 else "", want, "; ".join(failures)), **output)
    module.exit_json(**output)


if __name__ == "__main__":
    main()
