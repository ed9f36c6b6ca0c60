# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink domains on rack-scale systems (GB200/GB300 NVL72): trays grouped by what their GPUs say.

On a rack profile (``nvlink.fabric: rack``) each tray's gpu_health stage reports the NVLink domain
its GPUs registered in (metric ``nvlink_domain``: ``<ClusterUUID>.<CliqueId>``, the GPU operator's
clique label), or none. The domains are found from those outputs alone, never from labels.

judge_nvlink_domains(states, profile) -> a stage result (stage ``nvlink_domain``) or None:

- ``nvlink_domain.membership`` (per tray): a tray whose clique differs from the one most trays of
  its ClusterUUID share is misplaced (partitioned apart from its rack), named with both cliques.
- ``nvlink_domain.size`` (per domain): more trays than ``nvlink.domain_trays`` cannot be one rack
  (a fail naming them); fewer is a partial domain (a warning: the capacity says what it holds).
- ``nvlink_domain.rack`` (per domain): every tray of the domain failed the same check: one
  rack-level fault (an NVLink switch tray, the rack's power or cooling), with the trays as evidence,
  instead of one finding per tray.
- ``nvlink_domain.imex`` (per domain): the IMEX domain its trays see is not UP (an IMEX node not
  READY, connections lost) or a tray's own daemon does not answer: one failure naming them (each
  tray only warns: one stopped daemon must not fail, and drain, every tray of the rack).
- ``nvlink_domain.capacity`` (cluster): usable NVLink-domain capacity: per domain the trays and GPUs
  that passed every stage, the full domains, and how many tensor-parallel groups of each size fit
  inside domains (a group never spans two). The document carries the same as data.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, check_result, fmt_num, join_names, profile_get, warning_result)

STAGE = "nvlink_domain"
TP_SIZES = (4, 8, 16, 32, 64)
_BAD = (FAIL, ERROR)


def _tray(state):
    """(domain or None, passed every stage, {check: message} of its failed gpu_health checks)."""
    stages = (state or {}).get("stages") or {}
    gpu = stages.get("gpu_health") or {}
    domain = (gpu.get("metrics") or {}).get("nvlink_domain")
    passed = bool(stages) and not (state or {}).get("failed_stages") and all(
        (s or {}).get("status") not in _BAD for s in stages.values())
    return domain, passed, gpu.get("status")


def _cluster_of(domain):
    return domain.rsplit(".", 1)[0]


def _membership(domains):
    """Fail checks for trays in a minority clique of their ClusterUUID."""
    by_cluster = {}
    for domain, trays in domains.items():
        by_cluster.setdefault(_cluster_of(domain), []).append((len(trays), domain))
    checks = []
    for cluster, entries in sorted(by_cluster.items()):
        if len(entries) < 2:
            continue
        main = max(entries)[1]
        for _count, domain in sorted(entries):
            if domain == main:
                continue
            for tray in domains[domain]:
                checks.append(check_result(
                    STAGE + ".membership", FAIL, "%s is in NVLink clique %s of cluster %s while %d tray(s) of that "
                    "cluster are in clique %s: the tray is partitioned apart from its rack's NVLink domain"
                    % (tray, domain.rsplit(".", 1)[1], cluster, len(domains[main]), main.rsplit(".", 1)[1]),
                    {"domain": domain, "rack_domain": main}, tray,
                    evidence=["%s: nvlink_domain %s" % (tray, domain),
                              "%s: nvlink_domain %s" % (join_names(domains[main]), main)]))
    return checks


def _sizes(domains, size):
    checks = []
    for domain, trays in sorted(domains.items()):
        metrics = {"domain": domain, "trays": len(trays), "expected": size}
        if size and len(trays) > size:
            checks.append(check_result(STAGE + ".size", FAIL, "NVLink domain %s holds %d trays, one rack holds %d: "
                                       "trays of another rack report its clique (%s)"
                                       % (domain, len(trays), size, join_names(trays, limit=24)), metrics,
                                       "domain %s" % domain))
        elif size and len(trays) < size:
            checks.append(warning_result(STAGE + ".size", "NVLink domain %s: %d of its %d trays are in this run (%s)"
                                         % (domain, len(trays), size, join_names(trays, limit=24)), metrics,
                                         "domain %s" % domain))
    return checks


def _failed_checks(state):
    gpu = ((state or {}).get("stages") or {}).get("gpu_health") or {}
    return set((gpu.get("metrics") or {}).get("failed_checks") or [])


def _rack_faults(groups, states, size):
    """One rack-level fault per group of trays (a domain, or the trays in none) that all failed
    gpu_health on the same check: {label: trays}."""
    checks = []
    for label, trays in sorted(groups.items()):
        if len(trays) < 2 or (size and len(trays) < max(2, size // 2)):
            continue
        failed = [_failed_checks(states.get(t)) for t in trays]
        common = set.intersection(*failed) if all(failed) else set()
        if common:
            checks.append(check_result(STAGE + ".rack", FAIL, "all %d trays %s fail %s: a rack-level fault (an NVLink "
                                       "switch tray, the rack's power or cooling), not %d tray faults"
                                       % (len(trays), label, join_names(sorted(common)), len(trays)),
                                       {"nodes": list(trays), "checks": sorted(common)}, label,
                                       evidence=["%s: %s" % (join_names(trays, limit=24), ", ".join(sorted(common)))]))
    return checks


def _imex(domains, states):
    """One failure per domain whose IMEX domain is not UP (as its trays see it), naming the IMEX nodes
    not READY and the trays whose own daemon did not answer; each tray only warned."""
    checks = []
    for domain, trays in sorted(domains.items()):
        seen = {}
        for tray in trays:
            summary = ((((states.get(tray) or {}).get("stages") or {}).get("gpu_health") or {}).get("metrics") or {}).get("imex")
            if summary and summary.get("state") != "UP":
                seen[tray] = summary
        silent = [t for t in trays if "gpu.imex" in _failed_checks(states.get(t))]
        if not seen and not silent:
            continue
        not_ready = sorted(set(n for s in seen.values() for n in s.get("not_ready") or []))
        parts = []
        if seen:
            parts.append("%d tray(s) see the IMEX domain %s%s" % (
                len(seen), join_names(sorted(set(s.get("state") for s in seen.values()))),
                ", not READY: %s" % join_names(not_ready, limit=12) if not_ready else ""))
        if silent:
            parts.append("the IMEX daemon of %s does not answer" % join_names(silent))
        checks.append(check_result(STAGE + ".imex", FAIL, "NVLink domain %s: %s: multi-node NVLink memory sharing "
                                   "(NCCL MNNVL) fails across the domain" % (domain, "; ".join(parts)),
                                   {"domain": domain, "not_ready": not_ready, "silent": silent,
                                    "trays": sorted(seen)}, "domain %s" % domain,
                                   evidence=["%s: IMEX %s" % (t, s.get("state")) for t, s in sorted(seen.items())][:6]
                                   + ["%s: nvidia-imex-ctl -N gave no domain state" % t for t in silent][:6]))
    return checks


def capacity(domains, passed, gpus_per_tray, size):
    """The usable-capacity document: per domain trays/GPUs that passed, full domains, TP groups."""
    rows = []
    for domain, trays in sorted(domains.items()):
        good = [t for t in trays if t in passed]
        rows.append({"domain": domain, "trays": len(trays), "trays_passed": len(good),
                     "gpus_passed": len(good) * gpus_per_tray, "passed": good,
                     "failed": [t for t in trays if t not in passed],
                     "full": bool(size) and len(good) == size})
    largest = max([r["gpus_passed"] for r in rows] or [0])
    sizes = sorted(set(t for t in TP_SIZES if t <= (size or 0) * gpus_per_tray) | ({size * gpus_per_tray} if size else set()))
    groups = dict((str(t), sum(r["gpus_passed"] // t for r in rows)) for t in sizes)
    return {"domain_trays": size, "gpus_per_tray": gpus_per_tray, "domains": rows,
            "full_domains": sum(1 for r in rows if r["full"]), "largest_gpus": largest, "tp_groups": groups}


def statement(doc, outside):
    """'2 NVLink domains (36 trays, 144 GPUs): 1 full, 1 with 17 of 18 trays passing; ...'."""
    rows = doc["domains"]
    size = doc["domain_trays"]
    trays = sum(r["trays"] for r in rows)
    parts = ["%d full (%d trays each, all passing)" % (doc["full_domains"], size)] if size else []
    parts += ["%s with %d of its %d trays passing" % (r["domain"], r["trays_passed"], r["trays"])
              for r in rows if not r["full"]]
    groups = ", ".join("TP%s: %d" % (t, n) for t, n in sorted(doc["tp_groups"].items(), key=lambda kv: int(kv[0])))
    text = "%d NVLink domain(s) (%d trays, %d GPUs): %s; tensor-parallel groups that fit in a domain: %s" % (
        len(rows), trays, trays * doc["gpus_per_tray"], "; ".join(parts) or "none full", groups or "none")
    if outside:
        text += "; %d tray(s) in no domain (%s)" % (len(outside), join_names(outside))
    return text


def domain_trays(states):
    """{domain: [trays that passed every per-node stage]}: what the multi-node NVLink runs test
    (_nvlink_burnin), from the trays' own outputs."""
    out = {}
    for node, state in sorted((states or {}).items()):
        domain, ok, _status = _tray(state)
        if domain and ok:
            out.setdefault(domain, []).append(node)
    return out


def _measured(state):
    """A tray that reported something: a stage that passed, failed or errored (a replay of a tray
    the live run never reached has every stage skipped, not captured)."""
    stages = (state or {}).get("stages") or {}
    return any((s or {}).get("status") in (PASS, FAIL, ERROR) for s in stages.values())


def _lost_racks(states, racks, size):
    """Racks (the inventory's block or rack labels) whose every tray never reported: one rack-level
    fault each (power, cooling, the rack's network), not one unreachable tray per tray."""
    if not any(_measured(s) for s in (states or {}).values()):
        return [], []  # no per-node stage ran (--tags fabric): nobody reported, and that is no fault
    by_rack = {}
    for node, label in sorted((racks or {}).items()):
        if label not in (None, "") and node in (states or {}):
            by_rack.setdefault(str(label), []).append(node)
    checks = []
    for label, trays in sorted(by_rack.items()):
        if len(trays) < 2 or (size and len(trays) < max(2, size // 2)) or any(_measured(states.get(t)) for t in trays):
            continue
        checks.append(check_result(
            STAGE + ".rack", FAIL, "all %d trays of rack %s (its inventory label) are unreachable at once, no output "
            "from any of them: a rack-level fault (the rack's power, cooling or network), not %d tray faults"
            % (len(trays), label, len(trays)), {"nodes": trays, "rack": label, "checks": ["unreachable"]},
            "rack %s" % label, evidence=["%s: no stage reported" % join_names(trays, limit=24)]))
    return checks, [{"rack": c["metrics"]["rack"], "trays": c["metrics"]["nodes"]} for c in checks]


def _mnnvl_rows(mnnvl):
    """The measured rows of the multi-node NVLink runs (_nvlink_burnin) for the document."""
    keys = ("domain", "label", "status", "busbw", "ib_busbw", "floor", "fell_back", "unavailable", "rack_fault",
            "slow_trays", "rounds")
    return [dict((k, row.get(k)) for k in keys) for row in (mnnvl or {}).get("domains") or [] if isinstance(row, dict)]


def _mnnvl_text(row):
    if row.get("unavailable"):
        return "%s unavailable (InfiniBand only %s)" % (row["label"], fmt_num(row["ib_busbw"]))
    if row["busbw"] is None:
        return "%s not measured (%s)" % (row["label"], row["status"])
    text = "%s %s GB/s" % (row["label"], fmt_num(row["busbw"]))
    if row["ib_busbw"] is not None:
        text += " (InfiniBand only %s)" % fmt_num(row["ib_busbw"])
    if row["fell_back"]:
        text += ", fell back to InfiniBand"
    elif row["rack_fault"]:
        text += ", a rack-level fault"
    elif row["slow_trays"]:
        text += ", slow: %s" % join_names(row["slow_trays"])
    return text


def judge_nvlink_domains(states, profile, mnnvl=None, racks=None):
    """The nvlink_domain stage result ({stage, checks, failed_nodes, document}); None off rack profiles.

    mnnvl: the multi-node NVLink stage's result (_nvlink_burnin), whose unusable trays the capacity
    leaves out; racks: {node: inventory rack/block label}, for racks lost at once."""
    if profile_get(profile, "nvlink.fabric") != "rack":
        return None
    size = profile_get(profile, "nvlink.domain_trays")
    gpus_per_tray = profile_get(profile, "gpus_per_node") or 0
    domains, passed, outside = {}, set(), []
    for node, state in sorted((states or {}).items()):
        domain, ok, gpu_status = _tray(state)
        if domain:
            domains.setdefault(domain, []).append(node)
            if ok:
                passed.add(node)
        elif gpu_status is not None:
            outside.append(node)
    groups = dict(("of NVLink domain %s" % d, trays) for d, trays in domains.items())
    if outside:
        groups["registered in no NVLink domain"] = outside
    lost_checks, lost = _lost_racks(states, racks, size)
    checks = _membership(domains) + _sizes(domains, size) + _rack_faults(groups, states, size) + _imex(domains, states)
    checks += lost_checks
    passed -= set(c["component"] for c in checks if c["check"] == STAGE + ".membership")  # misplaced: not usable
    passed -= set((mnnvl or {}).get("unusable") or [])  # slow over multi-node NVLink, or a domain that fell back
    doc = capacity(domains, passed, gpus_per_tray, size)
    doc["outside"] = outside
    doc["statement"] = statement(doc, outside)
    rows = _mnnvl_rows(mnnvl)
    if rows:
        doc["mnnvl"] = rows
        doc["statement"] += "; multi-node NVLink: " + "; ".join(_mnnvl_text(r) for r in rows)
    if lost:
        doc["lost_racks"] = lost
        doc["statement"] += "; lost at once: " + ", ".join("rack %s (%d trays)" % (r["rack"], len(r["trays"])) for r in lost)
    checks.append(check_result(STAGE + ".capacity", PASS, doc["statement"],
                               {"full_domains": doc["full_domains"], "tp_groups": doc["tp_groups"]}))
    for check in checks:
        check["stage"] = STAGE
        check["node"] = check.get("component") if check["check"] == STAGE + ".membership" else None
    failed = sorted(set(c["node"] for c in checks if c["status"] in _BAD and c["node"]))
    return {"stage": STAGE, "checks": checks, "failed_nodes": failed, "document": doc}
