# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric stage's launcher preflight: prove the launcher before any bandwidth is judged.

Two runs, kept (and replayed) under their own keys in raw/_fabric like the groups:

* ``preflight-mpi-list``: ``srun --mpi=list`` (srun launcher only). The MPI plugin the stage asks
  for (check_fabric_mpi, e.g. ``pmix`` or ``pmix_v4``) must be one srun offers; a missing PMIx plugin
  is a launcher error named as such, with the list srun printed.
* ``preflight-2-ranks``: the nccl-tests binary on the first two nodes, one rank each, at the smallest
  message size. Its output must report one 2-rank run.

What the preflight decides (``status``):

* ``pass``: the plugin is offered (or none was asked for) and the launch reported 2 ranks;
* ``error``: the launcher, the scheduler or the transport is broken (the plugin is missing, srun
  cannot reach slurmctld, the binary cannot start, the ranks did not find each other). The stage
  ends there as an error with that component, and no node or link is blamed;
* ``skip``: the launch ran but proves nothing about the launcher: it hung or returned wrong values
  (the rounds name the node), or it ran as independent one-rank runs (``singletons``): nccl-tests
  built without MPI=1 on a node, or MPI started as singletons because the launcher's PMI does not
  reach the MPI library. The rounds tell them apart; when every run of the stage was one-rank runs
  the stage ends as a launcher error (_fabric). A capture without the preflight is not judged.

Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._fabric_runs import group_command
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import LAUNCHER, classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import ERROR, PASS, SKIP

MPI_LIST_KEY = "preflight-mpi-list"
LAUNCH_KEY = "preflight-2-ranks"
# The smallest run nccl-tests accepts: one 8-byte message, no warm-up, values checked.
DEFAULT_ARGS = ["-b", "8", "-e", "8", "-f", "2", "-n", "1", "-w", "0", "-c", "1"]

# Slurm 21.08 on:  "MPI plugin types are..." then one tab-indented name per line, then
# "specific pmix plugin versions available: pmix_v4" (versions comma separated).
# Slurm 20.11 and before printed on stderr, each line prefixed "srun: ": "srun: MPI types are...".
_HEADER = re.compile(r"^MPI (?:plugin )?types are\.\.\.\s*$")
_VERSIONS = re.compile(r"^specific (\w+) plugin versions available:\s*(.*)$")
_NAME = re.compile(r"^[A-Za-z][\w.-]*\Z")
_SRUN_PREFIX = re.compile(r"^srun: ")


def parse_mpi_list(text):
    """What ``srun --mpi=list`` offers: {plugins, versions, header, errors}.

    plugins: the plugin type names in srun's order; versions: {type: [versioned names]} (e.g.
    {"pmix": ["pmix_v4"]}); header: whether srun's own heading was seen; errors: lines that are
    none of these (kept beside what the rest shows).
    """
    result = {"plugins": [], "versions": {}, "header": False, "errors": []}
    listing = False
    for raw in (text or "").splitlines():
        line = _SRUN_PREFIX.sub("", raw.rstrip())
        stripped = line.strip()
        if not stripped or stripped.startswith("$ "):
            continue
        if _HEADER.match(stripped):
            result["header"], listing = True, True
            continue
        match = _VERSIONS.match(stripped)
        if match:
            names = [n.strip() for n in match.group(2).split(",") if n.strip()]
            result["versions"].setdefault(match.group(1), []).extend(names)
            listing = False
            continue
        if listing and _NAME.match(stripped) and (line[:1].isspace() or raw.startswith("srun: ")):
            result["plugins"].append(stripped)
            continue
        result["errors"].append("unexpected line in srun --mpi=list: %r" % stripped[:200])
    return result


def offered(parsed):
    """Every name srun accepts after --mpi= (types and their versioned names)."""
    names = list(parsed["plugins"])
    for versions in parsed["versions"].values():
        names.extend(v for v in versions if v not in names)
    return names


def _listing(parsed):
    text = ", ".join(parsed["plugins"]) or "nothing"
    for kind, versions in sorted(parsed["versions"].items()):
        text += "; %s versions: %s" % (kind, ", ".join(versions))
    return text


def judge_mpi_list(record, requested):
    """{status, sentence, component, evidence, plugins} for the ``srun --mpi=list`` run."""
    out = {"status": ERROR, "component": LAUNCHER, "evidence": [], "plugins": []}
    if record.get("missing"):
        out.update(status=SKIP, component=None, sentence="srun --mpi=list is not in the captured outputs: not judged")
        return out
    if record.get("error"):
        out.update(sentence="srun --mpi=list could not start: %s" % record["error"], evidence=[record["error"]])
        return out
    text = record.get("output") or ""
    if record.get("timed_out"):
        out.update(sentence="srun --mpi=list hung: killed after its timeout", evidence=text.splitlines()[-3:])
        return out
    parsed = parse_mpi_list(text)
    out["plugins"] = offered(parsed)
    found = classify_failure(text, record.get("rc"))
    if found and (record.get("rc") not in (0, None) or not parsed["plugins"]):
        out.update(component=found["component"], evidence=[found["message"]],
                   sentence="srun --mpi=list could not run: %s (%s): %s" % (
                       found["cause"], found["component"], found["message"]))
        return out
    if not parsed["plugins"]:
        out.update(evidence=[line for line in text.splitlines() if line.strip()][-3:],
                   sentence="srun --mpi=list printed no MPI plugin (rc %s)%s" % (
                       record.get("rc"), ": " + "; ".join(parsed["errors"][:2]) if parsed["errors"] else ""))
        return out
    listing = "srun --mpi=list offers %s" % _listing(parsed)
    out["evidence"] = [listing] + parsed["errors"][:3]
    if requested and requested not in out["plugins"]:
        pmix = requested.startswith("pmix")
        out["sentence"] = "srun has no MPI plugin %s%s (%s): install the plugin or set check_fabric_mpi to " \
                          "one srun offers" % (requested, " (PMIx is missing)" if pmix else "", listing)
        return out
    out.update(status=PASS, component=None,
               sentence="srun offers mpi/%s (%s)" % (requested, listing) if requested else
               "srun offers %s (the cluster's MpiDefault is used)" % _listing(parsed))
    return out


def short_timeout(opts):
    """Seconds a short step of the stage may take (the preflight, the counter snapshots): the
    preflight timeout, at most the stage's own."""
    limits = [float(v) for v in (opts.get("preflight_timeout"), opts.get("timeout")) if v]
    return min(limits) if limits else 120.0


def launch_opts(opts):
    """The fabric options for the 2-rank launch: one rank of one GPU per node, one tiny message."""
    launch = dict(opts)
    launch.update(tasks_per_node=1, gpus_per_process=1, args=list(opts.get("preflight_args") or DEFAULT_ARGS),
                  timeout=short_timeout(opts))
    return launch


def judge_launch(judged, group):
    """{status, sentence, component, evidence} from _fabric_judge.judge_run's view of the 2-rank launch."""
    outcome = judged["outcome"]
    where = ",".join(group)
    if outcome == "ok":
        ranks = (judged.get("parsed") or {}).get("nranks")
        return {"status": PASS, "component": None, "evidence": judged["evidence"],
                "sentence": "a %d-rank nccl-tests launch on %s reported %d ranks in one run" % (len(group), where, ranks)}
    if outcome == "missing":
        return {"status": SKIP, "component": None, "evidence": [],
                "sentence": "the 2-rank launch is not in the captured outputs: not judged"}
    if outcome == "infra" or (outcome == "invalid" and judged.get("component") == LAUNCHER):
        # the launcher, scheduler or transport broke it, or it started another number of ranks
        return {"status": ERROR, "component": judged.get("component") or LAUNCHER, "evidence": judged["evidence"],
                "sentence": "the 2-rank launch failed: %s" % judged["sentence"]}
    if outcome == "invalid":  # an unreadable or implausible value of a GPU: the rounds judge the nodes
        return {"status": SKIP, "component": None, "evidence": judged["evidence"],
                "sentence": "the 2-rank launch proves nothing about the launcher (%s); the rounds judge the nodes"
                % judged["sentence"]}
    if outcome == "build":
        # Every rank ran alone: nccl-tests built without MPI=1 on a node, or MPI started as singletons
        # because the launcher's PMI is not the one the MPI library speaks (Open MPI 5 under
        # srun --mpi=pmi2 or none). The rounds tell them apart: a node's build fails only its groups.
        return {"status": SKIP, "component": None, "evidence": judged["evidence"], "singletons": True,
                "sentence": "the 2-rank launch on %s ran as independent one-rank runs (nccl-tests built without "
                            "MPI=1, or MPI singletons: the launcher's PMI does not reach the MPI library); "
                            "the rounds tell a node's build from the launcher" % where}
    # wrong, timeout: about a node or a link, not the launcher; the rounds name it.
    return {"status": SKIP, "component": None, "evidence": judged["evidence"],
            "sentence": "the 2-rank launch proves nothing about the launcher (%s); the rounds judge the nodes"
            % judged["sentence"]}


def run_preflight(runner, nodes, opts, judge_run):
    """Run (or replay) the preflight; return {status, component, message, checks: [...], raw keys}.

    runner: the stage's _fabric_runs.Runner; judge_run: _fabric_judge.judge_run (what a launch proves).
    """
    steps = []
    requested = (opts.get("mpi") or "").strip()
    if opts.get("launcher", "srun") == "srun":
        (record,) = runner.run([(MPI_LIST_KEY, [], [opts.get("srun", "srun"), "--mpi=list"], short_timeout(opts))])
        listed = judge_mpi_list(record, requested)
        listed.update(step="mpi_list", raw=MPI_LIST_KEY)
        steps.append(listed)
    if not steps or steps[-1]["status"] != ERROR:
        group = sorted(nodes)[:2]
        launch = launch_opts(opts)
        argv = group_command(group, launch)
        (record,) = runner.run([(LAUNCH_KEY, group, argv, launch["timeout"])])
        first = judge_run(record, launch)
        if first["outcome"] == "infra":  # once more, as every group is (a transient socket timeout)
            (again,) = runner.run([(LAUNCH_KEY + ".retry1", group, argv, launch["timeout"])])
            if not again.get("missing"):
                first = judge_run(again, launch)
        judged = judge_launch(first, group)
        judged.update(step="launch", raw=LAUNCH_KEY, nodes=group)
        steps.append(judged)
    failed = [s for s in steps if s["status"] == ERROR]
    status = ERROR if failed else (PASS if all(s["status"] == PASS for s in steps) else SKIP)
    decisive = failed[0] if failed else steps[-1]
    message = "launcher preflight: " + "; ".join(s["sentence"] for s in steps)
    return {"status": status, "component": decisive.get("component") if failed else None,
            "singletons": any(s.get("singletons") for s in steps),
            "cause": decisive["sentence"], "message": message, "requested": requested or None,
            "steps": [{"step": s["step"], "status": s["status"], "sentence": s["sentence"], "raw": s["raw"]}
                      for s in steps],
            "evidence": [e for s in steps for e in s["evidence"]][:6], "raw": [s["raw"] for s in steps]}
