# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge InfiniBand ports (parse_ibstat) and their error counters over a test.

judge_infiniband(ibstat, counters_before, counters_after, profile): the counters are parse
results holding counters {hca: {port: {counter_name: int}}} taken before and after a load test
(both None: counters not judged).

Which ports are the compute fabric: the HCAs in nic_names when the profile lists them, otherwise
every port whose link layer is infiniband.link_layer (storage/management ports on Ethernet are
left out and named in a skip result) and which the stage's own ``nvidia-smi topo -m``
(ib-gpu-affinity) shows near a GPU (nic_gpu_relation: PIX/PXB); an InfiniBand HCA no GPU is near
(a storage HCA) is named in a skip result, not judged against the compute port rate.

A parser error (an ibpanic/iberror line, a truncated port block, a garbled counter line) is an
ib.parse error reported next to the findings from the rest of the output: a port at rate 200
above an ibpanic tail is still named. Every result carries the printed lines it rests on as
evidence (the port's State / Physical state / Rate lines, the counter lines before and after).

Checks (component = "<hca> port <n>"):
- ib.parse            ibstat or a counter snapshot missing, or a part of it unreadable
- ib.port_count       compute ports found vs nics_per_node; named HCAs missing
- ib.port_state       State Active and Physical state LinkUp ("mlx5_3 port 1 is Down")
- ib.rate             Rate == infiniband.port_rate ("mlx5_1 port 1 runs at 200 Gb/s, expected 400")
- ib.link_layer       a named HCA runs another link layer than the profile's
- ib.counters         counter rises over infiniband.counter_limits, with the delta
- ib.pcie_link        each compute HCA's PCIe link (sysfs current/max link speed and width) vs
                      pcie.nic_gen / pcie.nic_width (default: the HCA's own maximum); component
                      "<hca>"; a link carrying less than the port's rate says so
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, FAIL, PASS, SKIP, check_result, fmt_num, is_number, join_names, parse_error_results,
    profile_get)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_deltas import counter_deltas
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_storage import gpu_local_hcas, storage_hcas
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_topo import parse_nvidia_topo
from ansible_collections.gpucluster.acceptance.plugins.module_utils._pcie_link import (
    available_gbps, fold_passes, judge_link, parse_pcie_sysfs)

TOOL = "ibstat"
TOOL_COUNTERS = "IB port counters"
TOOL_PCIE = "ib-pcie"
# The stage's own nvidia-smi topo -m: which HCAs a GPU is near (compute) and which none (storage).
TOOL_AFFINITY = "ib-gpu-affinity"


def _port_label(ca, port):
    return "%s port %s" % (ca, port)


def _port_lines(port, *keys):
    """The port's printed lines whose key is one of keys ('State', 'Rate', ...); all when none."""
    lines = port.get("lines") or []
    if not keys:
        return lines
    wanted = tuple(k.lower() + ":" for k in keys)
    return [line for line in lines if line.rsplit(" > ", 1)[-1].lower().startswith(wanted)]


def _parse_problem(check, tool, parsed, required):
    """(error results, usable): findings are still judged from a result with errors but data."""
    failed = parse_error_results(check, tool, parsed, required=required)
    if not failed:
        return [], True
    usable = isinstance(parsed, dict) and all(parsed.get(k) for k in required) and bool(parsed.get("errors"))
    for result in failed:
        if usable:
            result["message"] = result["message"].replace(
                "output unreadable:", "part of the output is unreadable (the rest is judged):")
        if isinstance(parsed, dict):
            result["evidence"] = [str(e) for e in parsed.get("errors") or []][:12]
    return failed, usable


def _compute_ports(ibstat, profile, results, local=None):
    """[(ca_name, port_dict)] of the compute fabric; records skip/fail results on the way.

    local ({HCA: GPU-local}, gpu_local_hcas): without nic_names, where the fabric's link layer has
    more HCAs than nics_per_node, the surplus among those no GPU is near (a storage or management
    HCA: SYS/NODE to every GPU) is reported, not judged against the compute port rate. Never more
    than the surplus, and only from a matrix that shows every GPU (gpu_local_hcas)."""
    names = profile_get(profile, "nic_names")
    layer = profile_get(profile, "infiniband.link_layer")
    cas = ibstat.get("cas") or []
    by_name = dict((ca.get("name"), ca) for ca in cas)
    ports = []
    if names:
        for name in names:
            ca = by_name.get(name)
            if ca is None:
                failed = name in (ibstat.get("failed_cas") or [])
                results.append(check_result(
                    "ib.port_count", ERROR if failed else FAIL,
                    "compute HCA %s %s" % (name, "could not be read by ibstat (ibpanic)" if failed
                                           else "is missing from ibstat"),
                    {"hca": name}, name, evidence=[ca_.get("text") for ca_ in cas if ca_.get("text")]))
                continue
            if not ca.get("ports"):
                results.append(check_result("ib.port_count", FAIL, "compute HCA %s reports no "
                                            "ports" % name, {"hca": name}, name, evidence=[t for t in [ca.get("text")] if t]))
            for port in ca.get("ports") or []:
                ports.append((name, port))
        return ports
    others, storage = [], []
    away = storage_hcas(cas, profile, layer, local)
    for ca in cas:
        if ca.get("node_type") not in (None, "CA"):
            continue
        for port in ca.get("ports") or []:
            port_layer = port.get("link_layer")
            if layer and port_layer and port_layer != layer:
                others.append("%s (%s)" % (_port_label(ca.get("name"), port.get("port")),
                                           port_layer))
                continue
            if ca.get("name") in away:
                storage.append("%s (%s, %s Gb/s)" % (_port_label(ca.get("name"), port.get("port")),
                                                     port_layer or layer, fmt_num(port.get("rate"))))
                continue
            ports.append((ca.get("name"), port))
    if others:
        results.append(check_result(
            "ib.port_count", SKIP, "not on the %s compute fabric, not judged: %s"
            % (layer, join_names(others)), {"ports": others}))
    if storage:
        results.append(check_result(
            "ib.port_count", SKIP, "no GPU near them (nvidia-smi topo -m: not %s to any GPU), so not the compute "
            "fabric (storage or management HCAs), not judged: %s" % ("/".join(profile_get(profile, "nic_gpu_relation")
                                                                              or []), join_names(storage)),
            {"ports": storage, "storage": True}, tool=TOOL_AFFINITY))
    return ports


def judge_infiniband(ibstat, counters_before, counters_after, profile, pcie=None, topo=None):
    """List of check results for one node's HCA ports, counter deltas and (pcie: the
    parse_pcie_sysfs result, None when not collected) the HCAs' PCIe links; topo (parse_nvidia_topo
    of the stage's own topo -m, None when not collected) tells storage HCAs from compute ones."""
    results, usable = _parse_problem("ib.parse", TOOL, ibstat, ("cas",))
    if not usable:
        return results
    ports = _compute_ports(ibstat, profile, results, gpu_local_hcas(topo, profile))
    names = profile_get(profile, "nic_names")
    expected = profile_get(profile, "nics_per_node")
    layer = profile_get(profile, "infiniband.link_layer")
    rate = profile_get(profile, "infiniband.port_rate")
    failed_cas = list(ibstat.get("failed_cas") or [])

    if expected is not None and not names:
        metrics = {"found": len(ports), "expected": expected}
        evidence = [ca.get("text") for ca in ibstat.get("cas") or [] if ca.get("text")]
        if len(ports) >= expected:
            results.append(check_result("ib.port_count", PASS, "%d %s ports (at least %d expected)"
                                        % (len(ports), layer or "HCA", expected), metrics, evidence=evidence))
        else:
            unread = " (ibstat could not read %s)" % join_names(failed_cas) if failed_cas else ""
            results.append(check_result("ib.port_count", FAIL, "%d %s ports, expected at least %d%s"
                                        % (len(ports), layer or "HCA", expected, unread),
                                        dict(metrics, unreadable=failed_cas), evidence=evidence))

    bad_state = bad_rate = 0
    for ca, port in ports:
        label = _port_label(ca, port.get("port"))
        state, phys = port.get("state"), port.get("physical_state")
        metrics = {"state": state, "physical_state": phys, "rate": port.get("rate"),
                   "link_layer": port.get("link_layer")}
        if names and layer and port.get("link_layer") and port.get("link_layer") != layer:
            results.append(check_result("ib.link_layer", FAIL, "%s link layer is %s, expected %s"
                                        % (label, port.get("link_layer"), layer), metrics, label,
                                        evidence=_port_lines(port, "Link layer")))
        state_lines = _port_lines(port, "State", "Physical state")
        if state is None or phys is None:
            bad_state += 1
            results.append(check_result(
                "ib.port_state", ERROR, "%s: ibstat printed no %s line (output truncated?)"
                % (label, "State" if state is None else "Physical state"), metrics, label,
                evidence=_port_lines(port)))
            continue
        if state != "Active":
            bad_state += 1
            results.append(check_result(
                "ib.port_state", FAIL, "%s is %s (physical state %s)" % (label, state, phys),
                metrics, label, evidence=state_lines))
            continue
        if phys != "LinkUp":
            bad_state += 1
            results.append(check_result("ib.port_state", FAIL, "%s physical state is %s, expected "
                                        "LinkUp" % (label, phys), metrics, label, evidence=state_lines))
            continue
        if rate is not None:
            found = port.get("rate")
            if not is_number(found):
                bad_rate += 1
                results.append(check_result("ib.rate", ERROR, "%s reports no readable rate"
                                            % label, metrics, label, evidence=_port_lines(port)))
            elif found != rate:
                bad_rate += 1
                results.append(check_result("ib.rate", FAIL, "%s runs at %s Gb/s, expected %s"
                                            % (label, fmt_num(found), fmt_num(rate)),
                                            dict(metrics, expected=rate), label,
                                            evidence=_port_lines(port, "State", "Rate")))
    if ports and not bad_state:
        results.append(check_result("ib.port_state", PASS, "all %d compute ports are Active/LinkUp"
                                    % len(ports), {"ports": len(ports)},
                                    evidence=[l for _ca, p in ports for l in _port_lines(p, "State")]))
    if ports and rate is not None and not bad_state and not bad_rate:
        results.append(check_result("ib.rate", PASS, "all %d compute ports run at %s Gb/s"
                                    % (len(ports), fmt_num(rate)), {"rate": rate},
                                    evidence=[l for _ca, p in ports for l in _port_lines(p, "Rate")]))

    results.extend(_judge_counters(ports, counters_before, counters_after, profile))
    if pcie is not None:
        results.extend(_judge_pcie(ports, pcie, profile))
    return results


def _judge_pcie(ports, pcie, profile):
    """ib.pcie_link for each compute HCA (its PCI function's link, once per HCA)."""
    results = []
    if pcie.get("errors") and not pcie.get("devices"):
        return [check_result("ib.parse", ERROR, "%s output unreadable: %s" % (TOOL_PCIE, "; ".join(pcie["errors"][:3])),
                             {}, evidence=pcie["errors"][:12], tool=TOOL_PCIE)]
    if pcie.get("errors"):
        results.append(check_result("ib.parse", ERROR, "%s: part of the output is unreadable (the rest is judged): %s"
                                    % (TOOL_PCIE, "; ".join(pcie["errors"][:3])), {},
                                    evidence=pcie["errors"][:12], tool=TOOL_PCIE))
    want_gen, want_width = profile_get(profile, "pcie.nic_gen"), profile_get(profile, "pcie.nic_width")
    rates = {}
    for ca, port in ports:
        rates.setdefault(ca, port.get("rate"))
    links = []
    for ca in rates:
        device = (pcie.get("devices") or {}).get(ca)
        if device is None:
            results.append(check_result("ib.pcie_link", ERROR, "%s: sysfs shows no PCIe link attributes for it"
                                        % ca, {}, ca, tool=TOOL_PCIE))
            continue
        link = dict(device, name=ca, component=ca, evidence=device.get("lines"), tool=TOOL_PCIE,
                    summary=[line for line in device.get("lines") or [] if "/current_link_" in line])
        links.append(link)
        result = judge_link("ib.pcie_link", link, want_gen, want_width)
        if result is None:
            continue
        gbps, rate = available_gbps(link["current_gen"], link["current_width"]), rates[ca]
        if result["status"] == FAIL and gbps and is_number(rate) and gbps < rate:
            result["message"] += ": %s Gb/s, less than the port's %s Gb/s" % (fmt_num(round(gbps)), fmt_num(rate))
        results.append(result)
    if not links:
        return results
    return fold_passes("ib.pcie_link", "compute HCA", links, results, want_gen, want_width, tool=TOOL_PCIE)


def _judge_counters(ports, before, after, profile):
    return judge_counters(ports, before, after, profile)


def judge_counters(ports, before, after, profile, during="the test"):
    """ib.counters results for ``ports`` [(ca, {port: n})] from two parse_ib_counters snapshots
    taken around some traffic (``during`` names it in the messages: "perftest round 2")."""
    limits = profile_get(profile, "infiniband.counter_limits") or {}
    if before is None and after is None:
        return [check_result("ib.counters", SKIP, "%s: no before/after snapshots collected"
                             % TOOL_COUNTERS, {})]
    results = []
    usable = True
    for label, parsed in (("before the test", before), ("after the test", after)):
        problems, ok = _parse_problem("ib.parse", "%s (%s)" % (TOOL_COUNTERS, label), parsed, ("counters",))
        results.extend(problems)
        usable = usable and ok
    if not usable:
        return results
    # The counters that were read are judged even when some lines of a snapshot were not.
    diff = counter_deltas(before["counters"], after["counters"])
    if diff.get("errors"):
        results.append(check_result("ib.parse", ERROR, "%s: cannot compare the snapshots: %s"
                                    % (TOOL_COUNTERS, "; ".join(diff["errors"])),
                                    {"errors": list(diff["errors"])}))
        return results
    deltas = diff.get("deltas") or {}
    lower_bound = set(diff.get("resets") or []) | set(diff.get("saturated") or [])
    vanished = set(diff.get("missing_before") or []) | set(diff.get("missing_after") or [])
    lines_before = before.get("lines") or {}
    lines_after = after.get("lines") or {}
    judged = 0
    bad = 0
    for ca, port in ports:
        number = str(port.get("port"))
        label = _port_label(ca, number)
        values = (deltas.get(ca) or {}).get(number)
        if values is None:
            bad += 1
            results.append(check_result("ib.counters", ERROR, "%s is missing from the before or "
                                        "after counter snapshot" % label, {}, label,
                                        evidence=_port_lines(port, "State")))
            continue
        # A limited counter one snapshot read and the other did not: not "no rise", nothing compared.
        lost = sorted(name for name in limits if limits[name] is not None and "%s/%s/%s" % (ca, number, name) in vanished)
        if lost:
            bad += 1
            results.append(check_result("ib.counters", ERROR, "%s: %s read in one snapshot and not in the other "
                                        "around %s: the snapshots do not compare like with like"
                                        % (label, ", ".join(lost), during), {"lost": lost}, label))
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
                    "ib.counters", FAIL, "%s %s rose by %s%s during %s (limit %s)"
                    % (label, name, "at least " if where in lower_bound else "", fmt_num(delta), during,
                       fmt_num(limit)), metrics, label,
                    evidence=["before: " + lines_before.get(where, "?"), "after: " + lines_after.get(where, "?")]))
    if not bad:
        if judged:
            results.append(check_result("ib.counters", PASS, "no error counter rose above its "
                                        "limit on %d ports%s" % (len(ports), "" if during == "the test"
                                                                 else " during %s" % during), {"judged": judged},
                                        evidence=["after: " + v for k, v in sorted(lines_after.items())
                                                  if k.rsplit("/", 1)[-1] in ("symbol_error", "link_downed")]))
        else:
            results.append(check_result("ib.counters", SKIP, "none of the limited counters (%s) "
                                        "appear in both snapshots" % join_names(sorted(
                                            k for k, v in limits.items() if v is not None)), {}))
    return results


def judge_infiniband_stage(outputs, profile, options):
    """The infiniband stage: (checks, metrics) from ibstat and the counters before and after.

    A tool a replayed set did not capture is named in a skip result; the rest is judged.
    """
    if outputs.get("ibstat") is None:
        return [check_result("ib.parse", SKIP, "ibstat was not captured: port state and rate not judged",
                             tool="ibstat")], {}
    before, after = outputs.get("ib-counters-before"), outputs.get("ib-counters-after")
    checks = []
    if before is None or after is None:
        checks.append(check_result("ib.counters", SKIP, "%s was not captured: error counters not judged"
                                   % ("ib-counters-before" if before is None else "ib-counters-after")))
        before = after = None
    pcie = outputs.get(TOOL_PCIE)
    if pcie is None and TOOL_PCIE in outputs:
        checks.append(check_result("ib.pcie_link", SKIP, "%s was not captured: the HCAs' PCIe links were not "
                                   "judged" % TOOL_PCIE, tool=TOOL_PCIE))
    affinity = outputs.get(TOOL_AFFINITY)
    ibstat = parse_ibstat(outputs["ibstat"])
    topo = None if not affinity else parse_nvidia_topo(affinity)
    results = judge_infiniband(ibstat, None if before is None else parse_ib_counters(before),
                               None if after is None else parse_ib_counters(after), profile,
                               pcie=None if pcie is None else parse_pcie_sysfs(pcie), topo=topo)
    if checks:
        results = [r for r in results if not (r["check"] == "ib.counters" and r["status"] == SKIP
                                              and "no before/after" in r["message"])] + checks
    # The compute fabric's ports only: the RDMA pair stage tests each one on its rail (a storage
    # HCA, or one on another link layer, has no rail).
    compute = set(ca for ca, _port in _compute_ports(
        ibstat, profile, [], gpu_local_hcas(topo, profile)))
    metrics = {"ports": dict((name, entry) for name, entry in port_metrics(ibstat).items() if name in compute)}
    for result in results:  # what each result rests on: ibstat, or the two counter snapshots
        if not result.get("tool") and result["check"] in ("ib.port_count", "ib.port_state", "ib.rate",
                                                          "ib.link_layer"):
            result["tool"] = "ibstat"
    return results, metrics


def port_metrics(ibstat):
    """{CA name: {state, physical_state, rate, link_layer}} of each CA's first port, as ibstat
    printed them: what the RDMA pair stage (_rdma) tests per NIC and judges against."""
    ports = {}
    for ca in ibstat.get("cas") or []:
        if not isinstance(ca, dict) or not ca.get("name") or not ca.get("ports"):
            continue
        port = ca["ports"][0]
        ports[str(ca["name"])] = {"state": port.get("state"), "physical_state": port.get("physical_state"),
                                  "rate": port.get("rate"), "link_layer": port.get("link_layer")}
    return ports
