# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The srun transport's pure parts: the step's command line, its output split per node, and which
nodes Slurm can run a step on.

A per-node stage under ``acceptance_transport: srun`` is one Slurm step over its nodes (one task
per node, ``--label``) running the same collector as over SSH. Each task first prints a header with
its Slurm node name, so the controller maps task ids to nodes from the output itself (task order is
Slurm's node order, which need not be the inventory's), then the collector's own markers follow.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii
import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import NODE_TOKEN

NODE_HEADER = "==> gpucluster-node %s <=="
_HEADER = re.compile(r"^==> gpucluster-node (\S+) <==$")
# srun --label: "<task id>: <line>", the id right-aligned to the widest id.
_LABELLED = re.compile(r"^ *(\d+): ?(.*)$")

# The prelude each task runs: the header, then the collector with @node@ made this node's name,
# its output base64-encoded in short lines (srun --label cuts a long line into several labelled
# pieces, indistinguishable from real lines; base64 keeps every byte and line as the tool wrote it).
# The step's own identity (SLURM_*, PMI*, OMPI_*) is removed first: a tool must run as it would
# over SSH, and an MPI-built nccl-tests that saw them would join the step's N tasks into one
# N-node job instead of testing this node alone. Arguments, not a pasted string: nothing from the
# inventory is parsed by this shell.
PRELUDE = (
    'node=${SLURMD_NODENAME:-$(hostname -s)}; '
    'for v in $(compgen -e); do case $v in SLURMD_NODENAME) ;; '
    'SLURM_* | PMI_* | PMIX_* | OMPI_* | I_MPI_* | MPI_LOCALRANKID | MPI_LOCALNRANKS) unset "$v" ;; esac; done; '
    'printf "==> gpucluster-node %s <==\\n" "$node"; '
    # the replacement quoted: bash 5.2's patsub_replacement would turn a '&' in the name into @node@
    'args=(); for a in "$@"; do args+=("${a//' + NODE_TOKEN + '/"$node"}"); done; '
    '"${args[@]}" 2>&1 | base64 -w 76'
)

# Slurm node states a step can start on (sinfo %T, lower case; a trailing '*' means the node does
# not respond and is never usable). Allocated nodes are usable only inside the caller's allocation,
# which srun decides: a step waits or fails there with its own message.
USABLE = ("idle", "mixed", "allocated", "completing", "planned", "reserved")


def srun_argv(nodes, collector, job_name, extra_args=(), gpus_per_node=0, srun="srun"):
    """argv of the one step that runs ``collector`` (an argv list) once on each of ``nodes``."""
    argv = [srun, "--nodes=%d" % len(nodes), "--ntasks=%d" % len(nodes), "--ntasks-per-node=1",
            "--nodelist=%s" % ",".join(nodes), "--label", "--kill-on-bad-exit=0", "--no-kill",
            "--job-name=%s" % job_name]
    if gpus_per_node:
        argv.append("--gpus-per-node=%d" % int(gpus_per_node))
    argv.extend(str(a) for a in extra_args or ())
    return argv + ["bash", "-c", PRELUDE, "gpucluster-srun"] + list(collector)


def split_labelled(text):
    """({task id: its lines joined}, [lines srun printed itself]) from a --label step's output."""
    tasks, own = {}, []
    for line in (text or "").splitlines():
        match = _LABELLED.match(line)
        if match:
            tasks.setdefault(int(match.group(1)), []).append(match.group(2))
        elif line.strip():
            own.append(line)
    return dict((task, "\n".join(lines) + "\n") for task, lines in tasks.items()), own


def _decode(lines):
    """The bytes base64 ``lines`` hold, as text; a cut-off tail (a killed step) is dropped."""
    data = "".join(line.strip() for line in lines)
    data = data[:len(data) - len(data) % 4]
    try:
        raw = base64.b64decode(data)
    except (binascii.Error, ValueError):
        return None
    return raw.decode("utf-8", "replace")


def node_outputs(text):
    """({node: its collector output}, {task id: output without a header}, srun's own lines).

    A task's output is its node's from its header line on; a task that printed no header (it
    never started the prelude) is kept apart, never given to a node by guessing.
    """
    tasks, own = split_labelled(text)
    by_node, headless = {}, {}
    for task, output in sorted(tasks.items()):
        lines = output.splitlines()
        match = _HEADER.match(lines[0].strip()) if lines else None
        decoded = _decode(lines[1:]) if match else None
        if match and decoded is not None:
            by_node[match.group(1)] = by_node.get(match.group(1), "") + decoded
        else:
            headless[task] = output
    return by_node, headless, own


def parse_sinfo_states(text):
    """{node: state} from ``sinfo --noheader --Node --format=%N|%T`` (a node listed twice, once per
    partition, keeps its first state)."""
    states = {}
    for line in (text or "").splitlines():
        name, sep, state = line.strip().partition("|")
        if sep and name:
            states.setdefault(name, state.strip().lower())
    return states


def unusable_reason(state):
    """Why Slurm cannot start a step on a node in ``state`` (None when it can)."""
    if state is None:
        return "Slurm does not know the node"
    if state.endswith("*"):
        return "Slurm reports it %s (not responding)" % state
    base = state.rstrip("~#!%$@^-")
    if base in USABLE:
        return None
    return "Slurm reports it %s" % state


def srun_failure_summary(lines, keep=3):
    """srun's own last error lines, joined (what to tell about a node that never answered)."""
    errors = [line.strip() for line in lines if "error" in line.lower()] or [line.strip() for line in lines]
    return "; ".join(errors[-keep:])
