# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA pair stage's runs: which NIC is on which rail, the perftest command lines of a round,
the node-side driver that starts them, and what one pair's two outputs prove.

A *rail* is a NIC position: rail k is the k-th compute NIC of every node (mlx5_k on an HGX node;
the profile's nic_names order where it names them), cabled to the same rail switches in a
rail-optimised fabric. A *test* is one perftest server on one node and its client on another,
NIC k to NIC k. A round runs every test of every rail at once as one Slurm step over the round's
nodes: each node's task (DRIVER) starts its servers, then its clients, each under ``timeout``; a
client that finds no server yet (perftest's ``Couldn't connect to``) tries again until the start-up
window closes, so no one waits on a clock; a server that no client reached by the time every client
has given up (server_wait: no TCP connection on its port, ``ss``) is ended then rather than at its
own timeout (a client whose NIC refused the test would otherwise hold the round for the whole
timeout), so no stray server is left behind. Every test of a round has its own TCP port (base +
its index), so servers on one node never collide.

Outcomes of one test (judge_test): ok (a bandwidth), timeout (connected, then hung: a finding),
nic (the NIC itself refused: not found, port not Active - a finding on that end), connect (the
client never reached a waiting server: the out-of-band TCP path, not the fabric), infra (the
launcher or the node's task failed) and invalid (unreadable output). Only ok, timeout and nic
reach the localisation planner.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import parse_perftest
from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure
from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._numbers import is_digits

STAGE = "rdma"
SECTION = "@@@ gpucluster-perftest"
_SECTION = re.compile(r"^@@@ gpucluster-perftest (\S+) (server|client|before|after) rc=(\S*)$")
_NIC_ERRORS = re.compile(r"IB device \S+ not found|Unable to find the Infiniband/RoCE device|No IB devices found|"
                         r"Port number \d+ state is \S+|Couldn't set the link layer|Couldn't get context for the device")
_NO_SERVER = re.compile(r"Couldn't connect to (\S+)")
_WAITING = re.compile(r"Waiting for client to connect")
_UNREACHED = re.compile(r"^gpucluster-perftest: no client connected", re.M)  # DRIVER's line

# Seconds a server waits for its client beyond twice the start-up window (server_wait).
LAUNCH_SKEW = 10


def server_wait(opts):
    """Seconds after which a server no client has reached is ended (0: never, left to its timeout).

    A client tries for the start-up window from when its own task started; the tasks of one Slurm
    step start on their nodes at slightly different times (seconds apart on a loaded or large
    allocation), so the server waits the window twice over plus LAUNCH_SKEW: a client that started
    up to a window plus LAUNCH_SKEW after its server has made its last try by then. With rdma_cm the
    connection goes through the RDMA connection manager, not a TCP socket ss could see: never."""
    if opts.get("rdma_cm"):
        return 0
    return 2 * int(opts.get("startup") or 30) + LAUNCH_SKEW


# The node-side driver, run by bash in every task of the round's step: arguments are groups
#   NODE ROLE KEY TIMEOUT STARTUP WAIT PORT COUNT ARGV...
# and the task runs the groups of its own node. Servers start first; each client retries while it
# finds no server, until STARTUP seconds have passed. Every run is under `timeout`. A server still
# running after WAIT seconds (0: no limit) with no established TCP connection on PORT was reached by
# no client and never will be: it is ended and recorded as timed out (rc 124), with a line saying so.
# Outputs are printed in sections once all of this node's runs have ended.
DRIVER = r'''
me=${SLURMD_NODENAME:-$(hostname -s)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpucluster-perftest.XXXXXX") || exit 70
trap 'rm -rf "$dir"' EXIT
root=${1//@node@/"$me"}; shift
snap() { [ -n "$root" ] || return 0; timeout -k 5 60 grep -H . "$root"/*/ports/*/counters/* > "$dir/$1" 2>&1; echo $? > "$dir/$1.rc"; }
snap before
keys=(); n=0
while [ $# -gt 0 ]; do
  node=$1 role=$2 key=$3 limit=$4 startup=$5 wait=$6 port=$7 count=$8; shift 8
  argv=("${@:1:$count}"); shift "$count"
  [ "$node" = "$me" ] || continue
  n=$((n + 1)); out="$dir/$n"; keys+=("$n $key $role")
  if [ "$role" = server ]; then
    ( timeout -k 5 "$((limit + startup))" "${argv[@]}" > "$out" 2>&1 &
      pid=$!
      if [ "$wait" -gt 0 ] && command -v ss > /dev/null 2>&1; then
        end=$((SECONDS + wait))
        while [ "$SECONDS" -lt "$end" ] && kill -0 "$pid" 2> /dev/null; do sleep 0.5; done
        if kill -0 "$pid" 2> /dev/null && [ -z "$(ss -Htn state established "( sport = :$port )" 2> /dev/null)" ]; then
          kill "$pid" 2> /dev/null; wait "$pid"
          echo "gpucluster-perftest: no client connected to port $port within ${wait}s: server ended" >> "$out"
          echo 124 > "$out.rc"; exit 0
        fi
      fi
      wait "$pid"; echo $? > "$out.rc" ) &
  else
    ( deadline=$((SECONDS + startup))
      while :; do
        timeout -k 5 "$limit" "${argv[@]}" > "$out" 2>&1; rc=$?
        if [ "$rc" -ne 0 ] && [ "$SECONDS" -lt "$deadline" ] && grep -q "Couldn't connect to" "$out"; then
          sleep 0.5; continue
        fi
        echo "$rc" > "$out.rc"; break
      done ) &
  fi
done
wait
snap after
for entry in "${keys[@]}"; do
  read -r num key role <<< "$entry"
  printf '@@@ gpucluster-perftest %s %s rc=%s\n' "$key" "$role" "$(cat "$dir/$num.rc" 2>/dev/null)"
  cat "$dir/$num"
done
if [ -n "$root" ]; then
  for when in before after; do
    printf '@@@ gpucluster-perftest counters-%s %s rc=%s\n' "$me" "$when" "$(cat "$dir/$when.rc" 2>/dev/null)"
    cat "$dir/$when"
  done
fi
'''


def rail_nics(node_info, profile_nics, nics_per_node):
    """The node's compute NICs in rail order: the profile's nic_names where it names them, else the
    ports ibstat showed, sorted naturally (mlx5_0, mlx5_1, ... mlx5_10), else mlx5_0..mlx5_{n-1}.
    A port ibstat showed not Active is left out (the infiniband stage judged it)."""
    ports = (node_info or {}).get("ports") or {}
    if profile_nics:
        names = list(profile_nics)
    elif ports:
        names = sorted(ports, key=natural_key)
    else:
        names = ["mlx5_%d" % i for i in range(int(nics_per_node or 0))]
    return [n for n in names if not ports or (ports.get(n) or {}).get("state") in (None, "Active")]


def perftest_argv(opts, role, nic, port, gpu=None, server=None):
    """argv of one perftest process (no shell involved)."""
    argv = [opts.get("tool") or "ib_write_bw", "-d", nic, "-p", str(port), "--report_gbits", "-F"]
    if opts.get("size"):
        argv += ["-s", str(opts["size"])]
    if opts.get("qps") and int(opts["qps"]) > 1:
        argv += ["-q", str(opts["qps"])]
    if opts.get("iterations"):
        argv += ["-n", str(opts["iterations"])]
    if opts.get("rdma_cm"):
        argv.append("-R")
    if opts.get("bidirectional"):
        argv.append("-b")
    if gpu is not None:
        argv.append("--use_cuda=%d" % int(gpu))
    argv += [str(a) for a in opts.get("extra_args") or []]
    if role == "client":
        argv.append(server)
    return argv


def test_key(round_no, rail, server, client):
    return "round%d-rail%d-%s-%s" % (round_no, rail, server, client)


def plan_tests(round_no, pairs_by_rail, nodes_info, opts):
    """[{key, rail, server, client, group, step, nic: {node: name}, port, argv: {server, client}}] of a round.

    pairs_by_rail: {rail: [[a, b], ...]}; the lower-named node of a pair serves. perftest tests
    two ends: a larger group (the planner joins an odd node to a pair) is tested as its first node
    against each other one, one test per step (a NIC in two tests at once would share its rate);
    each step's pairs are analysed as evidence of their own (_rdma)."""
    tests = []
    base = int(opts.get("base_port") or 18515)
    for rail in sorted(pairs_by_rail):
        for group in pairs_by_rail[rail]:
            members = sorted(group, key=natural_key)
            for step, other in enumerate(members[1:]):
                tests.append(_pair_test(round_no, rail, (members[0], other), members, step, nodes_info, opts,
                                        base + len(tests)))
    return tests


def _pair_test(round_no, rail, pair, group, step, nodes_info, opts, port):  # pylint: disable=too-many-arguments
    """One perftest between the two nodes of ``pair`` on ``rail`` (see plan_tests)."""
    server, client = sorted(pair, key=natural_key)
    nics = dict((n, nodes_info[n]["nics"][rail]) for n in (server, client))
    gpus = dict((n, (nodes_info[n].get("gpus") or {}).get(nics[n])) if opts.get("use_cuda") else (n, None)
                for n in (server, client))
    return {"key": test_key(round_no, rail, server, client), "rail": rail, "server": server, "client": client,
            "group": list(group), "step": step, "nic": nics, "gpu": gpus, "port": port,
            "argv": {"server": perftest_argv(opts, "server", nics[server], port, gpus[server]),
                     "client": perftest_argv(opts, "client", nics[client], port, gpus[client], server)}}


def driver_args(tests, opts):
    """The driver's arguments for a round: one group per process."""
    # first the sysfs root whose port counters each node reads before and after its tests ("": none;
    # "@node@" in it becomes the node's name)
    words = [opts.get("counters_root") or ""]
    limit, startup = int(opts.get("timeout") or 120), int(opts.get("startup") or 30)
    wait = server_wait(opts)
    for test in tests:
        for role in ("server", "client"):
            argv = test["argv"][role]
            words += [test[role], role, test["key"], str(limit), str(startup), str(wait), str(test["port"]),
                      str(len(argv))] + argv
    return words


def split_sections(text):
    """{(key, role): {output, rc}} from one node's driver output, and the lines outside any section."""
    sections, outside, current = {}, [], None
    for line in (text or "").splitlines():
        match = _SECTION.match(line)
        if match:
            rc = match.group(3)
            current = {"output": [], "rc": int(rc) if is_digits(rc.lstrip("-")) else None}
            sections[(match.group(1), match.group(2))] = current
        elif current is not None:
            current["output"].append(line)
        elif line.strip():
            outside.append(line)
    for entry in sections.values():
        entry["output"] = "\n".join(entry["output"]) + ("\n" if entry["output"] else "")
    return sections, outside


def _lines(text, pattern, count=2):
    return [line.strip() for line in (text or "").splitlines() if pattern.search(line)][:count]


def judge_test(test, server, client, opts):
    """What one test proves: {outcome, gbits, side, sentence, component, evidence}.

    server / client: {output, rc} or None (the node's task gave no section for it)."""
    server_node, client_node = test["server"], test["client"]
    where = "%s %s \u2194 %s %s (rail %d)" % (
        server_node, test["nic"][server_node], client_node, test["nic"][client_node], test["rail"])
    out = {"gbits": None, "side": None, "component": None, "evidence": []}
    for role, record in (("server", server), ("client", client)):
        if record is None:
            out.update(outcome="infra", component="launcher", side=test[role],
                       sentence="%s: the %s on %s never reported (its task in the Slurm step failed)"
                       % (where, role, test[role]))
            return out
    for role, record in (("server", server), ("client", client)):
        found = _lines(record["output"], _NIC_ERRORS)
        if found and record["rc"] not in (0,):
            node = test[role]
            out.update(outcome="nic", side=node, component="%s %s" % (node, test["nic"][node]), evidence=found,
                       sentence="%s: %s on %s refused the test: %s" % (where, test["nic"][node], node, found[0]))
            return out
    for role, record in (("client", client), ("server", server)):
        found = classify_failure(record["output"], record["rc"])
        if found and record["rc"] not in (0,):
            out.update(outcome="infra", component=found["component"], side=test[role], evidence=[found["message"]],
                       sentence="%s: the %s could not run: %s (%s)" % (where, role, found["cause"], found["message"]))
            return out
    if client["rc"] != 0 and _lines(client["output"], _NO_SERVER):
        waiting = bool(_WAITING.search(server["output"] or ""))
        out.update(outcome="connect", component="perftest out-of-band connection (TCP)",
                   evidence=_lines(client["output"], _NO_SERVER) + _lines(server["output"], re.compile(r"\S"), 1),
                   sentence="%s: the client never reached its server on port %d within %ss (server %s): the "
                   "TCP path between the nodes, not the fabric" % (where, test["port"], opts.get("startup", 30),
                                                                   "waiting" if waiting else "not listening"))
        return out
    unreached = bool(_UNREACHED.search(server["output"] or ""))  # then it did not hang: nobody came
    if client["rc"] in (124, 137) or (server["rc"] in (124, 137) and client["rc"] != 0 and not unreached):
        out.update(outcome="timeout", evidence=[l.strip() for l in client["output"].splitlines() if l.strip()][-2:],
                   sentence="%s: hung after connecting; killed after %ss" % (where, opts.get("timeout", 120)))
        return out
    parsed = parse_perftest(client["output"])
    value = parsed.get("bw_average")
    if client["rc"] != 0 or value is None or parsed.get("errors") and not parsed.get("rows"):
        problems = list(parsed.get("errors") or []) or ["exit status %s" % client["rc"]]
        out.update(outcome="invalid", component="perftest", evidence=problems[:3],
                   sentence="%s: no bandwidth in the client's output (rc %s): %s" % (where, client["rc"], problems[0]))
        return out
    ceiling = float(opts.get("max_gbits") or 1600)
    if not 0 < float(value) <= ceiling:  # a garbled or impossible figure measured nothing
        out.update(outcome="invalid", component="perftest", evidence=[str(value)],
                   sentence="%s: %s Gb/s is not a plausible reading (0 to %g, plausibility.rdma_gbits_max)"
                   % (where, value, ceiling))
        return out
    row = parsed["rows"][-1]
    out.update(outcome="ok", gbits=float(value),
               sentence="%s: %.1f Gb/s average at %d bytes, %d QP(s)" % (
                   where, value, parsed.get("msg_size") or 0, parsed.get("qps") or 1),
               evidence=[client["output"].splitlines()[row["line"] - 1].strip()] if row.get("line") else [])
    return out


def nodes_info(nodes, states, profile):
    """{node: {nics: [rail order], ports, gpus: {nic: gpu index}}} from the per-node stages' metrics
    (infiniband: the ports ibstat showed; topology: the GPU nearest each NIC)."""
    names = profile.get("nic_names") or []
    count = profile.get("nics_per_node") or 0
    info = {}
    for node in nodes:
        stages = ((states or {}).get(node) or {}).get("stages") or {}
        ports = ((stages.get("infiniband") or {}).get("metrics") or {}).get("ports") or {}
        near = ((stages.get("topology") or {}).get("metrics") or {}).get("nic_gpu") or {}
        entry = {"ports": ports, "gpus": dict((n, v.get("gpu")) for n, v in near.items() if isinstance(v, dict))}
        entry["nics"] = rail_nics(entry, names, count)
        if not entry["gpus"]:  # no topology stage: NIC k serves GPU k, as on HGX boards
            entry["gpus"] = dict((nic, i) for i, nic in enumerate(entry["nics"]))
        info[node] = entry
    return info
