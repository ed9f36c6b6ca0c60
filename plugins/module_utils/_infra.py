# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tell infrastructure failures from hardware findings in a launcher's or tool's output.

A run that could not start, or whose launcher lost its scheduler or its connection, measured
nothing: it must become an ``error`` naming the component that failed — never a slow node or a
failed link. classify_failure() reads the output (and exit status) of srun, mpirun, ssh or a tool
and returns the component with the tool's own words, or None when nothing infrastructural shows:

- ``scheduler``: Slurm itself (slurmctld unreachable, no configuration, allocation or step
  creation refused, authentication, node failure reported by Slurm);
- ``transport``: the connection to the node (ssh refused, timed out, host key, reset; mpirun's
  daemons that could not be started);
- ``launcher``: the program could not be started or was killed by the system (PMIx/PMI/MPI
  initialisation, program or library not found, permission denied, the OOM killer).

NCCL's own network errors (NET/IB completion errors, retry counters exceeded) are findings about
the fabric and are deliberately not matched. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

SCHEDULER = "scheduler"
TRANSPORT = "transport"
LAUNCHER = "launcher"
COMPONENTS = (SCHEDULER, TRANSPORT, LAUNCHER)

# (component, pattern, what it means). The first pattern that matches a line wins, scheduler
# first: "srun: error: Unable to contact slurm controller (connect failure)" names a connection
# too, but the scheduler is the component that failed.
_RULES = (
    (SCHEDULER, r"Unable to contact slurm controller", "slurmctld cannot be reached"),
    (SCHEDULER, r"Could not establish a configuration source", "Slurm has no configuration"),
    (SCHEDULER, r"(?:slurm_load_\w+|slurm_\w+): .*(?:Unable to contact|Socket timed out|Zero Bytes were transmitted)",
     "slurmctld did not answer"),
    (SCHEDULER, r"Socket timed out on send/recv operation", "slurmctld did not answer"),
    (SCHEDULER, r"Unable to allocate resources", "Slurm refused the allocation"),
    (SCHEDULER, r"Required node not available|Requested node configuration is not available"
                r"|job \d+ queued and waiting for resources|Nodes required for job are DOWN",
     "Slurm cannot run the job on these nodes now (down, drained, reserved or busy)"),
    (LAUNCHER, r"Task launch for \S+ failed on node", "slurmd could not start the task"),
    (SCHEDULER, r"Unable to create step", "Slurm refused the job step"),
    (SCHEDULER, r"(?:Invalid job id specified|Job/step already completing or completed|Job has been cancelled)",
     "Slurm ended or lost the job"),
    (SCHEDULER, r"(?:Munge decode failed|Protocol authentication error|Invalid authentication credential"
                r"|auth/munge: .*error)", "Slurm authentication failed"),
    (SCHEDULER, r"srun: error: Node failure on|srun: error: Nodes? .* (?:are|is) (?:down|not responding)",
     "Slurm reports a node failure"),
    (SCHEDULER, r"slurmstepd: error: \*\*\* (?:STEP|JOB) \S+ (?:ON \S+ )?CANCELLED", "Slurm cancelled the step"),
    (TRANSPORT, r"^ssh: (?:connect to host|Could not resolve hostname)", "ssh cannot reach the node"),
    (TRANSPORT, r"Host key verification failed", "ssh host key verification failed"),
    (TRANSPORT, r"Permission denied \((?:publickey|password|keyboard-interactive)", "ssh login refused"),
    (TRANSPORT, r"kex_exchange_identification|ssh_exchange_identification|Connection closed by .* port \d+",
     "the ssh connection was closed"),
    (TRANSPORT, r"^(?:client_loop: )?send disconnect: Broken pipe|Connection to \S+ closed by remote host",
     "the ssh connection dropped"),
    (TRANSPORT, r"ORTE was unable to reliably start one or more daemons|PRTE has lost communication"
                r"|ORTE has lost communication", "mpirun could not reach its daemons on the nodes"),
    (LAUNCHER, r"PMIX ERROR|PMIx_Init failed|pmix_init failed|mpi/pmix(?:_v\d)?: .*(?:error|ERROR)"
               r"|Couldn't find the specified plugin name for mpi/pmix|MPI type .* not found"
               r"|invalid MPI type", "PMIx could not start the ranks"),
    (LAUNCHER, r"PMI2?_Init failed|PMI_Init returned|OPAL ERROR: (?:Not initialized|Unreachable)"
               r"|orte_ess_init failed|ompi_mpi_init: .*failed|It looks like MPI_INIT failed"
               r"|An error occurred in MPI_Init|MPI_Init(?:_thread)? failed|direct launched using \"srun\"",
     "MPI could not initialise"),
    (LAUNCHER, r"There are not enough slots available in the system|mpirun was unable to launch the specified application"
               r"|mpirun was unable to find the specified executable|ORTE_ERROR_LOG|PRTE_ERROR_LOG",
     "mpirun could not start the ranks"),
    (LAUNCHER, r"execve\(\): .*: No such file or directory|: command not found$|gpucluster-collect: .*: command not found"
               r"|cannot execute binary file|exec format error|srun: error: Unable to exec",
     "the program is not installed where it was run"),
    (LAUNCHER, r"error while loading shared libraries", "a library the program needs is missing"),
    (LAUNCHER, r"execve\(\): .*: Permission denied|: Permission denied$", "permission denied"),
    (LAUNCHER, r"oom[-_]kill|Out Of Memory|Out of memory: Killed process|Memory cgroup out of memory",
     "killed by the out-of-memory killer"),
)
_COMPILED = tuple((component, re.compile(pattern), meaning) for component, pattern, meaning in _RULES)
# NCCL's own lines are findings about the fabric, never the launcher's words.
_NCCL_LINE = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b")
# srun -l / --label and mpirun --tag-output prefixes.
_PREFIX = re.compile(r"^(?:\s*\d+:\s|\[\d+,\d+\]<std(?:out|err)>:\s?)")
# "... on node gpu005" / "StepId=... failed on node gpu005:" / "ssh: connect to host gpu005 port 22"
_NODE_WORDS = (re.compile(r"\bon node[s]? (\S+?)[:,.]?(?:\s|$)"),
               re.compile(r"connect to host (\S+) port"),
               re.compile(r"Could not resolve hostname (\S+?):"),
               re.compile(r"Connection (?:to|closed by) (\S+) "))
_MAX_WORDS = 300


def _clean(line):
    return _PREFIX.sub("", line.rstrip("\r")).strip()


def classify_failure(text, rc=None):
    """{component, message, cause, line, node} for the first infrastructural line, else None.

    message is the tool's own words (the matching line); cause says what it means; node is the
    node the line names when it names one. rc is the exit status (137 without a matching line is
    not classified: a timeout kill looks the same).
    """
    for raw in (text or "").splitlines():
        line = _clean(raw)
        if not line or _NCCL_LINE.search(line):
            continue
        for component, pattern, meaning in _COMPILED:
            if pattern.search(line):
                node = None
                for words in _NODE_WORDS:
                    match = words.search(line)
                    if match:
                        node = match.group(1)
                        break
                return {"component": component, "cause": meaning, "node": node,
                        "message": line[:_MAX_WORDS]}
    return None


def describe(found, what):
    """One sentence for a classified failure: '<what> could not run: <cause> (<tool's words>)'."""
    return "%s could not run: %s (%s): %s" % (what, found["cause"], found["component"], found["message"])
