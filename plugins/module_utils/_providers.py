# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers compared on the cost of a useful GPU-hour, with the contract questions as a scorecard.

One YAML file (docs/examples/providers.yml) lists each provider's list price, its MTBF (measured
here, or quoted), its node replacement time and the answers to the contract questions. For the
job size in the file each provider gets M_job = M_node / nodes, Young's interval for the job's
checkpoint write time, goodput, availability = M_node / (M_node + replacement) and

    effective cost = price / (goodput x availability)

and the providers are ranked by it: "a cheaper rate on a cluster that loses ten percent of its
time to slow replacement and a bad link is the more expensive cluster".
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _checkpoint_plan as plan

# The contract and SLA questions to put to every provider (the seed article's list), scored by the
# user: 2 = a firm yes in the contract, 1 = partly or only verbally, 0 = no or no answer.
QUESTIONS = (
    ("acceptance", "Does the reservation clock start only after a burn-in you run and can reproduce "
                   "(topology, DCGM level 3, ibstat, nccl-tests full and pairwise, your own model)?"),
    ("replacement", "How fast is a failed node or GPU replaced, is that time in the SLA, and what is credited when "
                    "it is missed?"),
    ("health_checks", "Which health checks run between jobs, how often, do failing nodes drain automatically, and "
                      "can you add your own?"),
    ("topology", "Is the fabric topology disclosed (leaf, spine, rail per node; a topology.conf) and is the "
                 "fabric non-blocking within the reservation?"),
    ("spares", "Are warm spare nodes held for the reservation, and does the scheduler requeue jobs automatically?"),
    ("storage", "What shared file system, object store and local NVMe come with it, at what measured throughput, and "
                "what do egress and direct connectivity to your cloud region cost?"),
    ("capacity", "Are the capacity dates backed by a live site, and what is the fallback if a build slips?"),
)
SCORES = {"yes": 2, "partial": 1, "no": 0}


def _number(entry, key, name, errors, required=True, positive=True):
    value = entry.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (positive and value <= 0) or value < 0:
        kind = "positive" if positive else "non-negative"
        errors.append("%s: %s must be a %s number, got %r" % (name, key, kind, value))
        return None
    return float(value)


def _score(answers, name, errors):
    scored, total = {}, 0
    answers = answers if isinstance(answers, dict) else {}
    known = dict(QUESTIONS)
    for key in answers:
        if key not in known:
            errors.append("%s: answers.%s is not a contract question (known: %s)" % (name, key, ", ".join(known)))
    for key, _question in QUESTIONS:
        value = answers.get(key)
        if isinstance(value, bool):  # YAML reads an unquoted yes / no as a boolean
            points = 2 if value else 0
        elif isinstance(value, str) and value.lower() in SCORES:
            points = SCORES[value.lower()]
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2):
            points = value
        elif value is None:
            points = None
        else:
            errors.append("%s: answers.%s must be yes, partial, no or 0..2, got %r" % (name, key, value))
            points = None
        scored[key] = points
        total += points or 0
    return scored, total


def compare_providers(data, write_s=None, restart_s=None, measured_mtbf_node_s=None):
    """Rank the providers of a providers file; returns {job_nodes, ..., ranked: [...], errors: [...]}.

    write_s / restart_s: the measured C and R (used where the file gives none); measured_mtbf_node_s:
    this cluster's measured M_node, used for a provider whose mtbf is 'measured'.
    """
    errors = []
    data = data if isinstance(data, dict) else {}
    job_nodes = data.get("job_nodes")
    if isinstance(job_nodes, bool) or not isinstance(job_nodes, int) or job_nodes < 1:
        errors.append("job_nodes must be a positive integer, got %r" % (job_nodes,))
        job_nodes = None
    file_write = _number(data, "write_s", "providers file", errors, required=False)
    c = file_write if file_write is not None else write_s
    if c is None:
        errors.append("no checkpoint write time: set write_s in the file or measure it (checkpoint stage)")
    ranked = []
    providers = data.get("providers")
    if not isinstance(providers, list) or not providers:
        errors.append("providers must be a non-empty list")
        providers = []
    for index, entry in enumerate(providers):
        if not isinstance(entry, dict):
            errors.append("providers[%d] must be a mapping" % index)
            continue
        name = str(entry.get("name") or "providers[%d]" % index)
        mine = []
        price = _number(entry, "price_per_gpu_hour", name, mine)
        source = entry.get("mtbf_source", "quoted")
        if entry.get("mtbf_node_h") == "measured":
            mtbf = measured_mtbf_node_s
            source = "measured"
            if mtbf is None:
                mine.append("%s: mtbf_node_h is 'measured' but this run measured no M" % name)
        else:
            hours = _number(entry, "mtbf_node_h", name, mine)
            mtbf = hours * 3600.0 if hours is not None else None
        replacement_h = _number(entry, "replacement_h", name, mine, positive=False)
        restart = _number(entry, "restart_s", name, mine, required=False, positive=False)
        restart = restart if restart is not None else restart_s
        if restart is None:
            mine.append("%s: no restart time: set restart_s" % name)
        scored, total = _score(entry.get("answers"), name, mine)
        row = {"name": name, "price_per_gpu_hour": price, "mtbf_node_s": mtbf, "mtbf_source": source,
               "replacement_h": replacement_h, "restart_s": restart, "answers": scored, "score": total,
               "score_max": 2 * len(QUESTIONS), "notes": str(entry.get("notes", ""))[:300], "errors": mine}
        if not mine and job_nodes and c is not None:
            mtbf_job = mtbf / job_nodes
            found = plan.cadence(c, mtbf_job, restart)
            available = plan.availability_from_replacement(mtbf, replacement_h * 3600.0)
            row.update(mtbf_job_s=mtbf_job, interval_s=found["interval_s"], goodput=found["goodput"],
                       availability=available,
                       effective_cost=plan.effective_gpu_hour_cost(price, found["goodput"], available))
        errors.extend(mine)
        ranked.append(row)
    ranked.sort(key=lambda r: (r.get("effective_cost") is None, r.get("effective_cost") or 0.0, r["name"]))
    for position, row in enumerate(ranked, 1):
        row["rank"] = position if row.get("effective_cost") is not None else None
    return {"job_nodes": job_nodes, "write_s": c, "ranked": ranked, "errors": errors,
            "questions": [{"id": key, "question": text} for key, text in QUESTIONS]}
