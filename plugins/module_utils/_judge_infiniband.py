# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge InfiniBand ports (parse_ibstat) and their error counters over a test.

judge_infiniband(ibstat, counters_before, counters_after, profile): the counters are parse
results holding counters {hca: {port: {counter_name: int}}} taken before and after a load test
(both None: counters not judged).

Which ports are the compute fabric: the HCAs in nic_names when the profile lists them, otherwise
every port whose link layer is infiniband.link_layer (storage/management ports on Ethernet are
left out and named in a skip result).

Checks (component = "<hca> port <n>"):
- ib.parse            ibstat or a counter snapshot missing/unreadable
- ib.port_count       compute ports found vs nics_per_node; named HCAs missing
- ib.port_state       State Active and Physical state LinkUp ("mlx5_3 port 1 is Down")
- ib.rate             Rate == infiniband.port_rate ("mlx5_1 port 1 runs at 200 Gb/s, expected 400")
- ib.link_layer       a named HCA runs another link layer than the profile's
- ib.counters         counter rises over infiniband.counter_limits, with the delta
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, join_names, parse_error_results,
    profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import (
    counter_deltas, parse_ib_counters)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat

TOOL = "ibstat"
TOOL_COUNTERS = "IB port counters"


def _port_label(ca, port):
    return "%s port %s" % (ca, port)


def _compute_ports(ibstat, profile, results):
    """[(ca_name, port_dict)] of the compute fabric; records skip/fail results on the way."""
    names = profile_get(profile, "nic_names")
    layer = profile_get(profile, "infiniband.link_layer")
    cas = ibstat.get("cas") or []
    by_name = dict((ca.get("name"), ca) for ca in cas)
    ports = []
    if names:
        for name in names:
            ca = by_name.get(name)
            if ca is None:
                results.append(check_result("ib.port_count", FAIL, "compute HCA %s is missing from "
                                            "ibstat" % name, {"hca": name}, name))
                continue
            if not ca.get("ports"):
                results.append(check_result("ib.port_count", FAIL, "compute HCA %s reports no "
                                            "ports" % name, {"hca": name}, name))
            for port in ca.get("ports") or []:
                ports.append((name, port))
        return ports
    others = []
    for ca in cas:
        if ca.get("node_type") not in (None, "CA"):
            continue
        for port in ca.get("ports") or []:
            port_layer = port.get("link_layer")
            if layer and port_layer and port_layer != layer:
                others.append("%s (%s)" % (_port_label(ca.get("name"), port.get("port")),
                                           port_layer))
                continue
            ports.append((ca.get("name"), port))
    if others:
        results.append(check_result(
            "ib.port_count", SKIP, "not on the %s compute fabric, not judged: %s"
            % (layer, join_names(others)), {"ports": others}))
    return ports


def judge_infiniband(ibstat, counters_before, counters_after, profile):
    """List of check results for one node's HCA ports and counter deltas."""
    failed = parse_error_results("ib.parse", TOOL, ibstat, required=("cas",))
    if failed:
        return failed
    results = []
    ports = _compute_ports(ibstat, profile, results)
    names = profile_get(profile, "nic_names")
    expected = profile_get(profile, "nics_per_node")
    layer = profile_get(profile, "infiniband.link_layer")
    rate = profile_get(profile, "infiniband.port_rate")

    if expected is not None and not names:
        metrics = {"found": len(ports), "expected": expected}
        if len(ports) >= expected:
            results.append(check_result("ib.port_count", PASS, "%d %s ports (at least %d expected)"
                                        % (len(ports), layer or "HCA", expected), metrics))
        else:
            results.append(check_result("ib.port_count", FAIL, "%d %s ports, expected at least %d"
                                        % (len(ports), layer or "HCA", expected), metrics))

    bad_state = bad_rate = 0
    for ca, port in ports:
        label = _port_label(ca, port.get("port"))
        state, phys = port.get("state"), port.get("physical_state")
        metrics = {"state": state, "physical_state": phys, "rate": port.get("rate"),
                   "link_layer": port.get("link_layer")}
        if names and layer and port.get("link_layer") and port.get("link_layer") != layer:
            results.append(check_result("ib.link_layer", FAIL, "%s link layer is %s, expected %s"
                                        % (label, port.get("link_layer"), layer), metrics, label))
        if state != "Active":
            bad_state += 1
            results.append(check_result(
                "ib.port_state", FAIL, "%s is %s (physical state %s)"
                % (label, state or "in an unknown state", phys or "unknown"), metrics, label))
            continue
        if phys != "LinkUp":
            bad_state += 1
            results.append(check_result("ib.port_state", FAIL, "%s physical state is %s, expected "
                                        "LinkUp" % (label, phys or "unknown"), metrics, label))
            continue
        if rate is not None:
            found = port.get("rate")
            if not is_number(found):
                bad_rate += 1
                results.append(check_result("ib.rate", ERROR, "%s reports no readable rate"
                                            % label, metrics, label))
            elif found != rate:
                bad_rate += 1
                results.append(check_result("ib.rate", FAIL, "%s runs at %s Gb/s, expected %s"
                                            % (label, fmt_num(found), fmt_num(rate)),
                                            dict(metrics, expected=rate), label))
    if ports and not bad_state:
        results.append(check_result("ib.port_state", PASS, "all %d compute ports are Active/LinkUp"
                                    % len(ports), {"ports": len(ports)}))
    if ports and rate is not None and not bad_state and not bad_rate:
        results.append(check_result("ib.rate", PASS, "all %d compute ports run at %s Gb/s"
                                    % (len(ports), fmt_num(rate)), {"rate": rate}))

    results.extend(_judge_counters(ports, counters_before, counters_after, profile))
    return results


def _judge_counters(ports, before, after, profile):
    limits = profile_get(profile, "infiniband.counter_limits") or {}
    if before is None and after is None:
        return [check_result("ib.counters", SKIP, "%s: no before/after snapshots collected"
                             % TOOL_COUNTERS, {})]
    results = []
    results.extend(parse_error_results("ib.parse", TOOL_COUNTERS + " (before the test)", before,
                                       required=("counters",)))
    results.extend(parse_error_results("ib.parse", TOOL_COUNTERS + " (after the test)", after,
                                       required=("counters",)))
    if results:
        return results
    diff = counter_deltas(before, after)
    if diff.get("errors"):
        return [check_result("ib.parse", ERROR, "%s: cannot compare the snapshots: %s"
                             % (TOOL_COUNTERS, "; ".join(diff["errors"])),
                             {"errors": list(diff["errors"])})]
    deltas = diff.get("deltas") or {}
    lower_bound = set(diff.get("resets") or []) | set(diff.get("saturated") or [])
    judged = 0
    bad = 0
    for ca, port in ports:
        number = str(port.get("port"))
        label = _port_label(ca, number)
        values = (deltas.get(ca) or {}).get(number)
        if values is None:
            bad += 1
            results.append(check_result("ib.counters", ERROR, "%s is missing from the before or "
                                        "after counter snapshot" % label, {}, label))
            continue
        for name in sorted(limits):
            limit = limits[name]
            if limit is None or not is_number(values.get(name)):
                continue
            judged += 1
            delta = values[name]
            where = "%s/%s/%s" % (ca, number, name)
            metrics = {"counter": name, "delta": delta, "limit": limit,
                       "lower_bound": where in lower_bound}
            if delta > limit:
                bad += 1
                results.append(check_result(
                    "ib.counters", FAIL, "%s %s rose by %s%s during the test (limit %s)"
                    % (label, name, "at least " if where in lower_bound else "", fmt_num(delta),
                       fmt_num(limit)), metrics, label))
    if not bad:
        if judged:
            results.append(check_result("ib.counters", PASS, "no error counter rose above its "
                                        "limit on %d ports" % len(ports), {"judged": judged}))
        else:
            results.append(check_result("ib.counters", SKIP, "none of the limited counters (%s) "
                                        "appear in both snapshots" % join_names(sorted(
                                            k for k, v in limits.items() if v is not None)), {}))
    return results


def judge_infiniband_stage(outputs, profile, options):
    """The infiniband stage: (checks, metrics) from ibstat and the counters before and after."""
    return judge_infiniband(parse_ibstat(outputs["ibstat"]), parse_ib_counters(outputs["ib-counters-before"]),
                            parse_ib_counters(outputs["ib-counters-after"]), profile), {}
