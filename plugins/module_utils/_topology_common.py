# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Slurm topology model builders share: the root's name, switch-name characters, problems, node lists.

Private to the collection. Standard library only; pure functions. The model from the fabric
(_topology_from_fabric), the model from labels (_topology_from_labels), build_topology
(_topology_model) and the checks of Slurm's view (_topology_slurm_view) all name nodes in natural
order, report problems as {severity, code, message}, shorten long node lists in messages and take
nodes as a list or a hostlist. It is apart so that each of them can import it without importing
the others.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    expand_hostlist, hostlist_text, natural_key)

DEFAULT_ROOT = "root"
# Runs of characters a Slurm switch name made from a description or a label does not keep.
_NAME_OK = re.compile(r"[^A-Za-z0-9_.-]+")


def _sorted(names):
    return sorted(names, key=natural_key)


def _problem(severity, code, message):
    return {"severity": severity, "code": code, "message": message}


def _short(names):
    text = hostlist_text(names)
    return text if len(text) <= 200 else text[:197] + "..."


def _expand_nodes(nodes):
    if isinstance(nodes, str):
        return expand_hostlist(nodes)
    if not isinstance(nodes, (list, tuple, set)):
        raise TypeError("nodes must be a list of names or a hostlist string, got %s" % type(nodes).__name__)
    out = []
    for item in nodes:
        if not isinstance(item, str):
            raise TypeError("node names must be strings, got %s" % type(item).__name__)
        out.extend(expand_hostlist(item))
    return out
