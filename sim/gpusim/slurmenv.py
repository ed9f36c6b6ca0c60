# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The srun task layout from the SLURM_* environment: which task runs where.

Slurm hostlists (``gpu[001-003,007],login1``) and task counts (``8(x2),4``) are expanded; tasks
are placed in block order (what ``srun`` does by default): node 0 gets tasks 0..n0-1, and so on.
"""
from __future__ import annotations

import re


def expand_hostlist(text):
    """'gpu[001-003,007],x1' -> ['gpu001', 'gpu002', 'gpu003', 'gpu007', 'x1']."""
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text or ""):
        m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", part)
        if not m:
            if part:
                names.append(part)
            continue
        prefix, body, suffix = m.groups()
        for item in body.split(","):
            if "-" in item:
                lo, hi = item.split("-", 1)
                width = len(lo)
                for n in range(int(lo), int(hi) + 1):
                    names.append("%s%0*d%s" % (prefix, width, n, suffix))
            elif item:
                names.append("%s%s%s" % (prefix, item, suffix))
    return names


def expand_counts(text):
    """'8(x2),4' -> [8, 8, 4]."""
    counts = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        m = re.match(r"^(\d+)(?:\(x(\d+)\))?$", item)
        if not m:
            return []
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts


class Layout:
    """procs: list of (node, local index) by SLURM_PROCID; me: this process's procid."""

    def __init__(self, procs, me, job=None, step=None):
        self.procs = procs
        self.me = me
        self.job = job
        self.step = step

    @property
    def nodes(self):
        seen = []
        for node, _local in self.procs:
            if node not in seen:
                seen.append(node)
        return seen

    def tasks_on(self, node):
        return sum(1 for n, _local in self.procs if n == node)


def layout_from_env(env, this_node):
    """The Layout of the srun step this process belongs to, or None outside srun."""
    try:
        ntasks = int(env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS") or 0)
        procid = int(env["SLURM_PROCID"])
    except (KeyError, ValueError):
        return None
    if ntasks <= 1 and procid == 0:
        return None
    nodes = expand_hostlist(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "") or [this_node]
    counts = expand_counts(env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or "")
    if len(counts) != len(nodes) or sum(counts) != ntasks:
        per, extra = divmod(ntasks, len(nodes))
        counts = [per + (1 if i < extra else 0) for i in range(len(nodes))]
    procs = []
    for node, count in zip(nodes, counts):
        procs += [(node, local) for local in range(count)]
    if procid >= len(procs):
        return None
    return Layout(procs, procid, env.get("SLURM_JOB_ID"), env.get("SLURM_STEP_ID"))
