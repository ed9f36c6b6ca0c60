#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: collect_stage
version_added: 0.1.0
short_description: Run one acceptance stage's tools on a node and judge the outputs, in one task
description:
  - Runs the stage's tools on the node with the collection's collector script (each tool under its
    own C(timeout), outputs framed by markers) the way M(ansible.builtin.raw) runs a command - no
    module upload, no Python needed on the node - then parses and judges the outputs on the
    controller and folds the result into the node's C(collect_node_state) fact.
  - One task per node per stage. The C(gpucluster.acceptance.collect) role calls it; the stage roles
    (C(check_preflight), C(check_topology) ...) import that role. Playbooks rarely call it directly.
  - The node's previous state is its C(collect_node_state) fact. A state that carries another
    O(run_id) (left by an earlier run in a persistent fact cache) is dropped, never folded in.
  - A tool that times out, is missing, exits without output or is cut off becomes an C(error)
    check naming the node, the stage and the tool; a collector that cannot start at all becomes
    one C(error) check with its exit status and stderr. The task itself fails only on invalid
    arguments or a missing replay directory, and is unreachable when the node is.
  - With O(replay_dir) the outputs are read from a past run's artifact directory (or a folder per
    node, one C(<tool>.txt) per tool) instead of the node, and judged the same way.
  - This is an action plugin; it runs on the controller and reaches the node through the connection.
options:
  stage:
    description: The stage.
    type: str
    required: true
    choices: [checkpoint, checkpoint_alone, data_loader, data_loader_alone, dcgm, gpu_health, infiniband, nccl_single_node,
              preflight, sdc, topology]
  tools:
    description:
      - The tools to run, in order, each a dict with C(name) (letters, digits, C(.), C(_), C(-)),
        C(timeout) (whole seconds, > 0) and C(argv) (a list; every element is quoted on its own).
      - Optional C(pause_before) (seconds) sleeps on the node before that tool, for example between
        two counter reads.
    type: list
    elements: dict
    required: true
  environment:
    description: Environment variables for the tools on the node (names are checked, values quoted).
    type: dict
    default: {}
  profile:
    description: The merged hardware profile (the C(gpucluster.acceptance.hardware_profile) lookup).
    type: dict
    default: {}
  options:
    description: Stage options handed to the judge (required tools, expected driver, DCGM level ...).
    type: dict
    default: {}
  replay_dir:
    description: Judge the outputs captured in this directory instead of running the tools.
    type: str
    default: ""
  resume_dir:
    description:
      - The interrupted run this one resumes. A node whose stage it judged, with every tool of the
        stage captured complete, is judged again from those outputs (no tool runs there); the
        other nodes run the tools.
    type: str
    default: ""
  run_id:
    description:
      - This run's id, stored in the state. Empty keeps whatever state the node has.
    type: str
    default: ""
  script:
    description:
      - The collector script's text. By default the C(gpucluster.acceptance.collect) role's
        C(gpucluster-collect.sh).
    type: str
  run_in_check_mode:
    description:
      - In check mode, run the tools and judge them as usual (quick read-only checks, as the health
        check does). By default check mode runs nothing and returns C(skipped) with C(would_run).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.conn
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  become:
    support: full
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: >-
      Check mode runs no tool (the stages include stress tests): the result is C(skipped) with
      C(would_run), each tool's command line; O(run_in_check_mode=true) runs them as usual.
  connection:
    support: full
  delegation:
    support: none
  diff_mode:
    support: none
    details: Changes nothing on the node.
  platform:
    platforms: posix
    details: The node needs bash and C(timeout) (coreutils), not Python.
seealso:
  - module: ansible.builtin.raw
  - plugin: gpucluster.acceptance.judge_stage
    plugin_type: filter
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: Collect and judge the topology stage
  gpucluster.acceptance.collect_stage:
    stage: topology
    tools:
      - name: nvidia-smi-topo
        timeout: 60
        argv: [nvidia-smi, topo, -m]
    profile: "{{ acceptance_profile_data }}"
    run_id: "{{ acceptance_run_id }}"
  timeout: 90

- name: Re-judge a past run's DCGM outputs with today's thresholds
  gpucluster.acceptance.collect_stage:
    stage: dcgm
    tools:
      - name: dcgmi-diag
        timeout: 3600
        argv: [dcgmi, diag, -r, "3", -j]
    options:
      level: 3
    profile: "{{ acceptance_profile_data }}"
    replay_dir: artifacts/20261129T120000Z-ab12cd
"""

RETURN = r"""
stage:
  description: The stage judged.
  returned: success
  type: str
  sample: topology
status:
  description: The stage's worst check on this node, C(pass), C(warn), C(fail) or C(error).
  returned: success
  type: str
  sample: pass
rc:
  description: The collector's exit status (not a verdict; the checks carry the verdict).
  returned: when the tools ran on the node
  type: int
  sample: 0
stderr:
  description: The collector's standard error, its last 2000 characters, when not empty.
  returned: when not empty
  type: str
would_run:
  description: In check mode (without O(run_in_check_mode)), each tool's command line, not run.
  returned: in check mode
  type: list
  elements: str
  sample: [dcgmi diag -r 3 -j]
raw_outputs:
  description:
    - This stage's raw tool outputs, by tool (under srun, by node, then tool), read by the
      C(acceptance_report) callback, which writes them under C(raw/) as they arrive.
    - Beside the fact, not in it, so that the controller does not keep every node's outputs in
      memory for the rest of the play.
  returned: success
  type: dict
ansible_facts:
  description: The node's state with this stage folded in.
  returned: success
  type: dict
  contains:
    collect_node_state:
      description:
        - C(run_id), C(failed_stages), C(stages) (status and metrics per stage) and C(last) (this
          stage's checks and the index of its raw tool outputs, with exit status, seconds and
          whether each ran to its end).
      type: dict
"""
