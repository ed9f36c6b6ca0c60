# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_launch_args filter: the partition and reservation every srun launch of a run uses."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: slurm_launch_args
version_added: 0.1.0
short_description: srun arguments for the run's partition and reservation
description:
  - Turns C(acceptance_slurm_partition) and C(acceptance_slurm_reservation) into the srun
    arguments C(--partition=NAME) and C(--reservation=NAME) that every srun launch of the
    collection puts first (the srun transport, the fabric, RDMA, NVLink-domain and workload
    stages), so a partition or reservation is set once.
  - An empty value adds nothing (Slurm's default partition, no reservation).
  - A name Slurm cannot hold (whitespace, a leading C(-), C(=), quotes, a shell character) fails
    with a message naming it; inventory values never reach a command line unchecked.
options:
  _input:
    description: The partition (C(acceptance_slurm_partition)); empty for Slurm's default.
    type: str
    required: true
  reservation:
    description: The reservation (C(acceptance_slurm_reservation)); empty for none.
    type: str
    default: ""
author:
  - gpucluster.acceptance maintainers (@gpucluster)
"""

EXAMPLES = r"""
- name: The launch arguments of a run in partition gpu and reservation burnin
  ansible.builtin.debug:
    msg: "{{ 'gpu' | gpucluster.acceptance.slurm_launch_args('burnin') }}"
  # => ['--partition=gpu', '--reservation=burnin']
"""

RETURN = r"""
_value:
  description: The srun arguments, partition first; an empty list when both are empty.
  type: list
  elements: str
"""

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._filter import guarded_filters

# Slurm partition and reservation names: letters, digits and . _ - (a comma list for partitions).
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(,[A-Za-z0-9_][A-Za-z0-9_.-]*)*\Z")


def _checked(value, what):
    if value is None:
        return ""
    if not isinstance(value, string_types):
        raise AnsibleFilterError("slurm_launch_args: %s must be a name, got %s" % (what, type(value).__name__))
    value = value.strip()
    if value and not _NAME.match(value):
        raise AnsibleFilterError("slurm_launch_args: %s %r is not a Slurm name (letters, digits, '.', '_', '-';"
                                 " a comma list for partitions)" % (what, value[:80]))
    return value


def slurm_launch_args(partition, reservation=""):
    """['--partition=P', '--reservation=R'] for the values that are set."""
    partition, reservation = _checked(partition, "partition"), _checked(reservation, "reservation")
    if "," in reservation:
        raise AnsibleFilterError("slurm_launch_args: one reservation, got %r" % reservation)
    return (["--partition=%s" % partition] if partition else []) + (
        ["--reservation=%s" % reservation] if reservation else [])


class FilterModule(object):
    def filters(self):
        return guarded_filters({"slurm_launch_args": slurm_launch_args})
