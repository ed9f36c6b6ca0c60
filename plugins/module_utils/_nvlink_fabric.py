# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVLink fabric registration of each GPU: read from nvidia-smi, judged against the profile.

Where it is printed:

- ``nvidia-smi -q``, a ``Fabric`` section per GPU (drivers from R530; the key column is 34 wide up
  to R570 and 47 wide from R580, both read alike)::

      Fabric
          State                             : Completed
          Status                            : Success
          CliqueId                          : 4026
          ClusterUUID                       : 9c6f5af3-53bf-49b5-a436-b66766c413c3
          Health
              Summary                       : Healthy
              Bandwidth                     : Full
              Route Recovery in progress    : False
              Route Unhealthy               : False
              Access Timeout Recovery       : False
              Incorrect Configuration       : None

  A ``grep -A`` of it (no ``GPU <bus id>`` header) is read too: parse_fabric_blocks.
- ``nvidia-smi --query-gpu=fabric.state,fabric.status,fabric.cliqueId,fabric.clusterUuid``.

judge_fabric(views, profile) -> ``gpu.fabric`` checks. ``nvlink.fabric`` in the profile says what
the node's GPUs must show: null (no NVSwitch fabric, or GPUs that do not report it: not judged),
``nvswitch`` (HGX: every GPU State ``Completed`` and Status ``Success``; anything else is the fabric
manager not running or not finished, or the registration failed) or ``rack`` (NVL72: also a
CliqueId other than 0, a non-zero ClusterUUID, one clique for the whole tray and a clean Health
block). A value nvidia-smi prints that is not in its vocabulary is an error, never a pass.
Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, join_names, profile_get)

CHECK = "gpu.fabric"
PROFILE_KEY = "nvlink.fabric"
KINDS = ("nvswitch", "rack")
# -q's Health rows -> key, and the values that are healthy.
HEALTH = (("Summary", "summary", ("Healthy",)), ("Bandwidth", "bandwidth", ("Full",)),
          ("Route Recovery in progress", "route_recovery", ("False",)),
          ("Route Unhealthy", "route_unhealthy", ("False",)),
          ("Access Timeout Recovery", "access_timeout_recovery", ("False",)),
          ("Incorrect Configuration", "incorrect_configuration", ("None",)))
_HEALTH_WORDS = {"summary": "health summary", "bandwidth": "NVLink bandwidth",
                 "route_recovery": "route recovery in progress", "route_unhealthy": "route unhealthy",
                 "access_timeout_recovery": "access timeout recovery",
                 "incorrect_configuration": "incorrect configuration"}
STATES = ("Not Started", "In Progress", "Completed")
_UNREPORTED = re.compile(r"^\[?(N/A|Not Supported|Unknown Error|Insufficient Permissions)\]?$", re.I)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_CSV_FIELDS = (("fabric.state", "state"), ("fabric.status", "status"), ("fabric.cliqueid", "clique_id"),
               ("fabric.clusteruuid", "cluster_uuid"))
_Q_FIELDS = (("State", "state"), ("Status", "status"), ("CliqueId", "clique_id"), ("ClusterUUID", "cluster_uuid"))


def unreported(value):
    """True for a value nvidia-smi prints when it has none (N/A, [Not Supported]) or None."""
    return value is None or bool(_UNREPORTED.match(str(value).strip()))


def fabric_of_section(section):
    """{state, status, clique_id, cluster_uuid, health: {key: value}, evidence} from -q's Fabric node.

    Values are kept as printed (N/A too): whether N/A is fine depends on the profile.
    """
    fabric = {"health": {}, "evidence": [leaf.path() for leaf in section.leaves()]}
    for label, key in _Q_FIELDS:
        node = section.get(label)
        fabric[key] = node.value.strip() if node is not None and node.value is not None else None
    health = section.get("Health")
    for label, key, _good in HEALTH:
        node = health.get(label) if health is not None else None
        if node is not None and node.value is not None:
            fabric["health"][key] = node.value.strip()
    return fabric


def fabric_of_csv(row):
    """The same dict from a --query-gpu row that has fabric.* fields; None when it has none."""
    fields = dict((str(name).lower(), value) for name, value in row.items())
    if not any(name in fields for name, _key in _CSV_FIELDS):
        return None
    fabric = {"health": {}, "evidence": []}
    for name, key in _CSV_FIELDS:
        value = fields.get(name)
        fabric[key] = None if value is None else str(value).strip()
    return fabric


_KEY_VALUE = re.compile(r"^(\s*)(\S.*?)\s*:\s(.*)$")


def parse_fabric_blocks(text):
    """Fabric sections of a -q excerpt without GPU headers (a ``grep -A`` of it): a list of dicts."""
    blocks, block, indent, in_health = [], None, None, False
    labels = dict(_Q_FIELDS)
    health_labels = dict((label, key) for label, key, _good in HEALTH)
    for raw in (text or "").splitlines():
        if raw.strip() == "Fabric":
            block, indent, in_health = {"health": {}, "evidence": []}, len(raw) - len(raw.lstrip()), False
            block.update((key, None) for key in labels.values())
            blocks.append(block)
            continue
        if block is None or not raw.strip():
            continue
        depth = len(raw) - len(raw.lstrip())
        if depth <= indent:
            block = None
            continue
        if raw.strip() == "Health":
            in_health = True
            continue
        match = _KEY_VALUE.match(raw)
        if not match:
            continue
        label, value = match.group(2), match.group(3).strip()
        if in_health and label in health_labels:
            block["health"][health_labels[label]] = value
        elif label in labels:
            block[labels[label]] = value
        block["evidence"].append("Fabric > %s : %s" % (label, value))
    return blocks


# --------------------------------------------------------------------------------------------
# Judging
# --------------------------------------------------------------------------------------------

def _zero_uuid(value):
    return not _UUID.match(value or "") or set(value.replace("-", "")) == {"0"}


def _cause(kind, state):
    if kind == "rack":
        return ("the NVLink fabric has not registered the GPU: the rack's NVLink switch trays (their fabric "
                "manager) have not placed it" if state != "Completed" else
                "NVLink registration failed: the rack's fabric could not place this GPU (its tray's NVLink "
                "connection or an NVLink switch tray)")
    return ("nvidia-fabricmanager is not running or has not finished on this node (CUDA fails with \"system "
            "not yet initialized\" until it has)" if state != "Completed" else
            "the fabric manager could not register the GPU with the NVSwitches")


def _registration(fabric, kind):
    """(status, problem) of State/Status; None when they are Completed/Success."""
    state, status = fabric.get("state"), fabric.get("status")
    if unreported(state):
        return ERROR, ("reports no fabric State (%s): its NVLink registration cannot be judged (the profile "
                       "expects an NVSwitch fabric: a driver before R530, or a GPU that does not report it)"
                       % (state or "not printed"))
    if state not in STATES:
        return ERROR, "reports a fabric State nvidia-smi does not use: '%s'" % state
    if state != "Completed":
        return FAIL, "fabric State is %s (Status %s): %s" % (state, status or "not printed", _cause(kind, state))
    if status != "Success":
        return FAIL, "fabric State Completed with Status %s: %s" % (status or "not printed", _cause(kind, state))
    return None


def _health(fabric):
    bad = []
    for _label, key, good in HEALTH:
        value = fabric["health"].get(key)
        if value is None or unreported(value) or value in good:
            continue
        bad.append("%s: %s" % (_HEALTH_WORDS[key], value))
    return bad


def _gpu_problems(fabric, kind):
    """[(status, text)] for one GPU's fabric dict."""
    found = _registration(fabric, kind)
    problems = [found] if found else []
    if kind == "rack" and not found:
        clique, cluster = fabric.get("clique_id"), fabric.get("cluster_uuid")
        if not (clique or "").isdigit() or int(clique) == 0:
            problems.append((FAIL, "CliqueId %s: the GPU is in no NVLink clique (its tray is outside the rack's "
                                   "NVLink domain)" % (clique or "not printed")))
        if _zero_uuid(cluster):
            problems.append((FAIL, "ClusterUUID %s: the GPU belongs to no NVLink cluster" % (cluster or "not printed")))
    health = _health(fabric)
    if health:
        problems.append((FAIL, "fabric health: %s" % "; ".join(health)))
    return problems


def domain_of(fabric):
    """'<ClusterUUID>.<CliqueId>' (the GPU operator's clique label) or None when not in a domain."""
    clique, cluster = (fabric or {}).get("clique_id"), (fabric or {}).get("cluster_uuid")
    if not (clique or "").isdigit() or int(clique) == 0 or _zero_uuid(cluster):
        return None
    return "%s.%s" % (cluster.lower(), int(clique))


def judge_fabric(views, profile):
    """gpu.fabric checks for one node's GPU views (each with a ``fabric`` dict or None)."""
    kind = profile_get(profile, PROFILE_KEY)
    if kind not in KINDS or not views:
        return []
    with_fabric = [v for v in views if v.get("fabric")]
    if not with_fabric:
        return [check_result(CHECK, SKIP, "nvidia-smi printed no Fabric section for any GPU (a driver before R530): "
                             "the NVLink fabric registration was not judged", {"expected": kind},
                             tool=views[0].get("tool"))]
    results = []
    for view in with_fabric:
        problems = _gpu_problems(view["fabric"], kind)
        if problems:
            status = FAIL if any(s == FAIL for s, _text in problems) else ERROR
            results.append(check_result(
                CHECK, status, "%s %s" % (view["name"], "; ".join(text for _s, text in problems)),
                {"expected": kind, "fabric": _public(view["fabric"])}, view["label"],
                evidence=_evidence(view), tool=view.get("tool")))
    results.extend(_one_domain(with_fabric, kind, results))
    if results:
        return results
    domains = sorted(set(filter(None, (domain_of(v["fabric"]) for v in with_fabric))))
    where = " in NVLink domain %s" % domains[0] if kind == "rack" and domains else ""
    return [check_result(CHECK, PASS, "all %d GPUs: fabric State Completed, Status Success%s%s"
                         % (len(with_fabric), where, ", health clean" if kind == "rack" else ""),
                         {"expected": kind, "domain": domains[0] if domains else None},
                         evidence=_evidence(with_fabric[0]), tool=with_fabric[0].get("tool"))]


def _one_domain(views, kind, results):
    """A tray whose GPUs sit in different cliques is one failure naming them (rack profiles)."""
    if kind != "rack" or results:
        return []
    by_domain = {}
    for view in views:
        by_domain.setdefault(domain_of(view["fabric"]), []).append(view["label"])
    if len(by_domain) < 2:
        return []
    parts = ["%s: %s" % (domain, join_names(labels)) for domain, labels in sorted(by_domain.items())]
    return [check_result(CHECK, FAIL, "the node's GPUs are in %d different NVLink domains (%s): one tray "
                         "belongs to one clique" % (len(by_domain), "; ".join(parts)),
                         {"expected": kind, "domains": sorted(by_domain)}, evidence=_evidence(views[0]),
                         tool=views[0].get("tool"))]


def _public(fabric):
    return dict((k, v) for k, v in fabric.items() if k != "evidence")


def _evidence(view):
    header = (view.get("ev") or {}).get("bus_id") or []
    return header[:1] + list(view["fabric"].get("evidence") or [])
