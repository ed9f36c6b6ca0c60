# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Talking to Slurm for the slurm_node module: the node names it is given, expanded (expand_names),
and scontrol run under a timeout with its answers read (SlurmNodes: show, show_all, update).

Apart from the decisions (_slurm_node: pure functions over scontrol's text) because this side runs
commands and fails the module (the AnsibleModule it is given) when Slurm cannot be asked: argv
lists, no shell, every call bounded by coreutils' timeout.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    compress_hostlist, expand_hostlist)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node import parse_scontrol_show_node


class SlurmNodes(object):
    """Runs scontrol for the module (argv lists, no shell, each call under timeout)."""

    def __init__(self, module):
        self.module = module
        self.timeout = module.params["timeout"]
        self.scontrol = self._find_scontrol(module.params["scontrol_path"])
        self.timeout_bin = module.get_bin_path("timeout")
        if not self.timeout_bin:
            module.fail_json(msg="the 'timeout' command (coreutils) is not on PATH: it is needed to "
                                 "bound scontrol calls")
        self.env = {"SLURM_TIME_FORMAT": "standard"}
        if module.params["slurm_conf"]:
            self.env["SLURM_CONF"] = module.params["slurm_conf"]

    def _find_scontrol(self, path):
        if os.sep in path:
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                self.module.fail_json(msg="scontrol_path %s is not an executable file" % path)
            return path
        found = self.module.get_bin_path(path)
        if not found:
            self.module.fail_json(msg="%s not found on PATH (set scontrol_path, or install the Slurm client)" % path)
        return found

    def run(self, args):
        argv = [self.timeout_bin, "-k", "5", str(self.timeout), self.scontrol] + list(args)
        rc, out, err = self.module.run_command(argv, environ_update=self.env, check_rc=False)
        if rc in (124, 137):
            self.module.fail_json(msg="scontrol %s timed out after %d s (is slurmctld reachable, "
                                      "is SLURM_CONF right?)" % (" ".join(args[:3]), self.timeout),
                                  cmd=argv, rc=rc, stdout=out, stderr=err)
        return rc, out, err

    def show(self, names):
        """Parsed `scontrol --future show node -o HOSTLIST` (FUTURE nodes included)."""
        rc, out, err = self.run(["--future", "show", "node", "-o", compress_hostlist(names)])
        parsed = parse_scontrol_show_node(out + "\n" + err)
        # rc=1 also when some names are unknown ("Node x not found"): the caller names those.
        if rc != 0 and not parsed["not_found"]:
            self.module.fail_json(msg="scontrol show node failed (rc=%d): %s"
                                      % (rc, (err or out).strip()[:500] or "no output"), rc=rc, stdout=out, stderr=err)
        if rc == 0 and parsed["errors"] and not parsed["nodes"]:
            self.module.fail_json(msg="cannot read scontrol show node output: %s" % "; ".join(parsed["errors"]),
                                  stdout=out, stderr=err)
        return parsed

    def show_all(self):
        """Every node of the cluster, FUTURE ones included."""
        rc, out, err = self.run(["--future", "show", "node", "-o"])
        if rc != 0:
            self.module.fail_json(msg="scontrol show node failed (rc=%d): %s"
                                      % (rc, (err or out).strip()[:500] or "no output"), rc=rc, stdout=out, stderr=err)
        return parse_scontrol_show_node(out + "\n" + err)["nodes"]

    def update(self, names, command, reason):
        args = ["update", "NodeName=%s" % compress_hostlist(names), "State=%s" % command]
        if reason is not None:
            args.append("Reason=%s" % reason)
        rc, out, err = self.run(args)
        return rc, (err or out).strip()


def expand_names(module, items):
    names = []
    for item in items:
        try:
            expanded = expand_hostlist(item)
        except (TypeError, ValueError) as exc:
            module.fail_json(msg="name: %s" % exc)
        for name in expanded:
            if name not in names:
                names.append(name)
    if not names:
        module.fail_json(msg="name: no node names given")
    return names
