#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: nvlink_burnin
short_description: Multi-node NVLink across each NVLink domain's trays, the same trays over InfiniBand, slow trays pinned
version_added: 0.1.0
description:
  - Rack-scale systems (GB200/GB300 NVL72), the nvlink_domain stage's measured part. Per NVLink domain
    (its trays that passed the per-node stages), an nccl-tests run over all its trays with
    C(NCCL_MNNVL_ENABLE=1) judged against O(floor), the NVLink floor; pairs and groups of its trays
    planned by the localisation planner inside the domain (a group never spans two domains) until a
    slow tray is pinned; and one run of the same trays with C(NCCL_MNNVL_ENABLE=0), reported apart as
    the InfiniBand-only rate, which the NVLink run must beat by O(fallback_ratio) (a run NCCL took over
    InfiniBand never passes as NVLink).
  - A domain none of whose trays clears, together below the floor, is one rack-level fault
    (C(nvlink_domain.rack)), not one per tray.
  - A run the launcher, the scheduler or the transport broke measured nothing; it is run once more, then an
    C(error) naming the component, and no tray is blamed (as in M(gpucluster.acceptance.fabric_burnin)).
  - Runs where the launcher runs (the login node), not on the trays. In check mode nothing is
    launched; the first domain's first round is returned.
options:
  domains:
    description:
      - NVLink domain (C(<ClusterUUID>.<CliqueId>)) -> its trays that passed the per-node stages, as the
        trays' own C(nvidia-smi -q) reported it (the C(nvlink_domain_trays) filter).
    type: dict
    required: true
  floor:
    description: Bus bandwidth (GB/s) below which a multi-node NVLink run is low (C(nvlink.mnnvl_busbw_min)); 0 for peers only.
    type: float
    default: 0
  ib_floor:
    description: Bus bandwidth (GB/s) below which the InfiniBand-only run is low (C(nccl.multi_node_pair_busbw_min)); 0 for none.
    type: float
    default: 0
  fallback_ratio:
    description: The NVLink run must reach this multiple of the same trays' InfiniBand-only run, else NCCL fell back to InfiniBand.
    type: float
    default: 1.5
  ib_max_busbw:
    description:
      - Bus bandwidth (GB/s) above which the InfiniBand-only run is implausible (more than the trays' NICs
        carry - C(NCCL_MNNVL_ENABLE=0) did not reach the ranks and the run went over NVLink); such a run
        measured nothing. 0 for no bound.
    type: float
    default: 0
  environment:
    description:
      - Environment for the launcher (for example C(SLURM_CONF)); on the NVLink runs it is set after
        C(NCCL_MNNVL_ENABLE=1) (so it may change it), the InfiniBand-only run always has C(NCCL_MNNVL_ENABLE=0).
        The C(NCCL_MNNVL_ENABLE) value of each run is also put on its launch line (C(srun --export=ALL,...),
        C(mpirun -x)), so that the ranks get it whatever the site exports.
    type: dict
    default: {}
extends_documentation_fragment:
  - gpucluster.acceptance.nccl_launch
author: gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Multi-node NVLink across each NVLink domain's trays
  gpucluster.acceptance.nvlink_burnin:
    domains: "{{ states | gpucluster.acceptance.nvlink_domain_trays }}"
    binary: /opt/nccl-tests/build/all_reduce_perf
    tasks_per_node: 4
    gpus_per_node: 4
    floor: 580
    ib_floor: 150
  register: nvlink
"""

RETURN = r"""
stage_result:
  description:
    - The nvlink_domain stage's measured checks (per domain the all-trays NVLink run, the InfiniBand-only
      run, a rack-level fault; per tray its pairs), C(raw) outputs, C(domains) (a row per domain - busbw,
      ib_busbw, floor, fell_back, rack_fault, slow_trays, rounds), C(unusable) (trays that cannot hold a
      multi-tray NVLink job) and C(failed_nodes).
  returned: always
  type: dict
plan:
  description: In check mode, the first domain's first round of groups.
  returned: check mode
  type: list
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _localize, _nvlink_burnin
from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import LAUNCH_BOUNDS, launch_spec
from ansible_collections.gpucluster.acceptance.plugins.module_utils._records import door_problem


def _spec():
    """The shared nccl-tests launch options (_fabric_runs.LAUNCH_SPEC) and this module's own."""
    return launch_spec(
        domains=dict(type="dict", required=True),
        floor=dict(type="float", default=0),
        ib_floor=dict(type="float", default=0),
        fallback_ratio=dict(type="float", default=1.5),
        ib_max_busbw=dict(type="float", default=0),
    )


def _domains(module, value):
    """{domain: [tray names]} as given, or a failure naming what is wrong."""
    out = {}
    for domain, trays in (value or {}).items():
        if not isinstance(trays, list) or not all(isinstance(t, str) and t for t in trays):
            module.fail_json(msg="nvlink_burnin: domains[%s] must be a list of tray names, got %r" % (domain, trays))
        out[str(domain)] = sorted(set(trays))
    return out


def main():
    module = AnsibleModule(argument_spec=_spec(), supports_check_mode=True)
    params = module.params
    domains = _domains(module, params["domains"])
    problem = door_problem(dict(params, nodes=sorted(set(t for v in domains.values() for t in v))), LAUNCH_BOUNDS,
                           module.check_mode)
    if not problem and not 1.0 <= params["fallback_ratio"] <= 100.0:
        problem = "fallback_ratio must be 1 to 100, got %s" % params["fallback_ratio"]
    for name in ("floor", "ib_floor", "max_busbw", "ib_max_busbw"):
        if not problem and not 0 <= params[name] < 10 ** 6:  # NaN and inf too: a NaN floor would pass anything
            problem = "%s must be a number of GB/s from 0, got %s" % (name, params[name])
    if problem:
        module.fail_json(msg="nvlink_burnin: %s" % problem)
    if params["replay_dir"] and not os.path.isdir(params["replay_dir"]):
        module.fail_json(msg="nvlink_burnin: replay directory %s does not exist" % params["replay_dir"])
    opts = dict(params, floor=params["floor"] or None, ib_floor=params["ib_floor"] or None,
                max_rounds=params["max_rounds"] or None, max_busbw=params["max_busbw"] or None,
                ib_max_busbw=params["ib_max_busbw"] or None)
    if module.check_mode:
        first = next((sorted(t) for _d, t in sorted(domains.items()) if len(t) >= 2), [])
        plan = []
        if first:
            label = _nvlink_burnin.labels(domains)[next(d for d, t in sorted(domains.items()) if len(t) >= 2)]
            plan = _localize.new_state(first, dict((t, {"leaf": label}) for t in first), mode=params["mode"],
                                       seed=params["seed"])["next_round"]
        module.exit_json(changed=False, plan=plan, stage_result={"stage": _nvlink_burnin.STAGE, "checks": [], "raw": {},
                                                                 "document": {}, "failed_nodes": [], "domains": [],
                                                                 "unusable": []})
    opts["environment"] = dict((str(k), str(v)) for k, v in params["environment"].items())
    try:
        result = _nvlink_burnin.nvlink_stage(domains, opts, dict(os.environ))
    except ValueError as exc:
        module.fail_json(msg="nvlink_burnin: %s" % exc)
    except (IOError, OSError) as exc:
        module.fail_json(msg="nvlink_burnin: cannot write or read the run's files: %s" % exc)
    module.exit_json(changed=False, stage_result=result)


if __name__ == "__main__":
    main()
