# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Multi-node NVLink across each NVLink domain's trays (rack-scale profiles): the nvlink_domain
stage's measured part, run from the controller like the fabric stage.

Per domain (the trays that passed every per-node stage and registered in one
``<ClusterUUID>.<CliqueId>``, from their own outputs), in three phases:

1. the domain's trays at once with multi-node NVLink required (``NCCL_MNNVL_ENABLE=1`` on the
   launch line: NCCL then refuses to start where MNNVL cannot work, "MNNVL is not supported on this
   system", instead of quietly taking InfiniBand), every domain at once (their NVLink is disjoint);
2. the same trays over InfiniBand only (``NCCL_MNNVL_ENABLE=0``), one domain after the other (they
   share the InfiniBand fabric), reported apart (``nvlink_domain.infiniband``) and bounded by what
   the trays' NICs carry (above it, the setting did not reach the ranks: nothing measured);
3. where the NVLink run worked, pairs and groups of the domain's trays by the fabric stage's
   planner, every tray on one "leaf" (no group spans two domains), until a slow tray is pinned.

``nvlink_domain.mnnvl`` fails when the NVLink run failed or hung while the same trays ran over
InfiniBand (multi-node NVLink unavailable), was not ``fallback_ratio`` times the InfiniBand-only
rate (fell back), or is below the floor. A domain none of whose trays clears, together below the
floor, is one rack-level fault (``nvlink_domain.rack``). Such domain-level findings blame no tray.
Replay judges a run directory's ``raw/_nvlink_domain`` under the labels the live run gave its
domains; a directory made before this stage existed replays it as skipped. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import threading

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import (
    ERROR, SKIP, check_result, join_names)
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _fabric
from ansible_collections.gpucluster.acceptance.plugins.module_utils._files import stage_captured
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _nvlink_verdicts as verdicts

STAGE = "nvlink_domain"
IB_PREFIX = "ib-"
# fabric stage check -> this stage's check
RENAMED = {"full_allocation": STAGE + ".mnnvl", "pair_bandwidth": STAGE + ".tray", "launcher": STAGE + ".launcher",
           "fabric.run": STAGE + ".run", "leaf_uplink": STAGE + ".rack"}
MNNVL = "NCCL_MNNVL_ENABLE"


def labels(domains, replay_dir=""):
    """{domain: 'nvl01', ...}: a short name per domain, in the domains' sorted order; replaying, the
    names the live run gave them (its results.json), so that no domain reads another's outputs."""
    names = dict((domain, "nvl%02d" % (i + 1)) for i, domain in enumerate(sorted(domains)))
    if replay_dir:
        try:
            with open(os.path.join(replay_dir, "results.json")) as handle:
                rows = ((json.load(handle).get("nvlink_domains") or {}).get("mnnvl")) or []
            captured = dict((r["domain"], r["label"]) for r in rows if isinstance(r, dict) and r.get("label"))
        except (IOError, OSError, ValueError, AttributeError, KeyError, TypeError):
            captured = {}
        names = dict((d, captured.get(d) or "%s-uncaptured" % n) for d, n in names.items())
    return names


def _relabel(checks, label, domain, prefix, raw):
    for check in checks:
        check["check"] = RENAMED.get(check["check"], check["check"])
        check["stage"] = STAGE
        check.setdefault("metrics", {})["domain"] = domain
        check["raw"] = [k if k in raw or k.startswith(prefix) else prefix + k for k in check.get("raw") or []]
        check["message"] = check["message"].replace("the fabric stage could not run", "the NVLink-domain stage could "
                                                    "not run")
        if check["node"] is None and not check.get("component", "").startswith("domain"):
            check["component"] = "domain %s (%s)" % (label, check.get("component") or "")
        elif check["node"] is not None and check.get("component") == check["node"]:
            check["component"] = "%s in domain %s" % (check["node"], label)  # JUnit and the report group by domain
    return checks


class _Domain(object):
    """One domain's runs, checks and raw outputs."""

    def __init__(self, label, domain, trays, opts, env):
        self.label, self.domain, self.trays = label, domain, trays
        self.opts, self.env = opts, env
        self.prefix = label + "-"
        self.checks, self.raw = [], {}
        self.full = self.judged = self.ib_check = self.ib_judged = None
        self.rounds, self.stop, self.tray_checks = 0, None, None

    def fabric(self, prefix, env, **more):
        return _fabric.FabricRuns(self.trays, {}, dict(self.opts, key_prefix=prefix, **more), env)

    def preflight(self):
        fab = self.fabric(self.prefix, self.env)
        found = _fabric.launcher_preflight(fab, self.trays, self.checks)
        self.raw.update(fab.runner.raw)
        if found["status"] == ERROR:
            self.stop = found["cause"]

    def nvlink_run(self):
        fab = self.fabric(self.prefix, self.env, launch_env={MNNVL: self.env.get(MNNVL, "1")})
        self.full, self.judged, _view = _fabric.full_allocation(fab, self.trays, self.opts.get("floor"))
        self.raw.update(fab.runner.raw)

    def infiniband_run(self):
        env = dict(self.env, **{MNNVL: "0"})
        fab = self.fabric(self.prefix + IB_PREFIX, env, launch_env={MNNVL: "0"}, max_busbw=self.opts.get("ib_max_busbw"))
        self.ib_check, self.ib_judged, _view = _fabric.full_allocation(fab, self.trays, self.opts.get("ib_floor"))
        self.raw.update(fab.runner.raw)
        self.ib_check["message"] = "NVLink domain %s: the same %d trays over InfiniBand only (%s=0): %s" % (
            self.label, len(self.trays), MNNVL, self.ib_check["message"])
        self.ib_check["check"] = STAGE + ".infiniband"

    def localise(self):
        opts = dict(self.opts, key_prefix=self.prefix, counters_root="", preflight=False, full_allocation=False,
                    launch_env={MNNVL: self.env.get(MNNVL, "1")})
        found = _fabric.fabric_stage(self.trays, dict((t, {"leaf": self.label}) for t in self.trays), opts, self.env)
        self.raw.update(found["raw"])
        self.rounds = len(found["document"].get("rounds") or [])
        self.tray_checks = _relabel(found["checks"], self.label, self.domain, self.prefix, self.raw)


def _skipped(label, domain, trays, why):
    check = check_result(STAGE + ".mnnvl", SKIP, "NVLink domain %s: %s" % (label, why),
                         {"domain": domain, "trays": len(trays)}, "domain %s" % label)
    check.update(stage=STAGE, node=None, raw=[])
    return check


def _parallel(items, work, limit):
    """work(item) for every item, at most ``limit`` at once (threads: each waits on its launcher)."""
    slots = threading.Semaphore(max(1, int(limit or 1)))

    def run(item):
        with slots:
            work(item)
    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _environment(env, opts):
    """The NVLink runs' environment: NCCL_MNNVL_ENABLE=1, then what the user set (who may change it)."""
    env = dict(os.environ if env is None else env)
    env[MNNVL] = "1"
    env.update(opts.get("environment") or {})
    return env


def _runnable(domains, names, opts):
    """(domains that run, checks of those that do not): fewer than 2 trays, or not captured."""
    uncaptured = bool(opts.get("replay_dir")) and not stage_captured(opts["replay_dir"], STAGE)
    runs, checks, rows = [], [], []
    for domain in sorted(domains):
        trays = sorted(domains[domain])
        why = None
        if len(trays) < 2:
            why = "%s: fewer than 2 of its trays passed the per-node stages: no multi-node NVLink test" % (
                join_names(trays) or "no tray")
        elif uncaptured or names[domain].endswith("-uncaptured"):
            why = "not captured: the replayed run directory has no raw/_%s outputs of this domain (made before " \
                  "this stage existed, run without it, or the domain was not in it)" % STAGE
        if why:
            check = _skipped(names[domain].replace("-uncaptured", ""), domain, trays, why)
            checks.append(check)
            rows.append(verdicts.row(names[domain].replace("-uncaptured", ""), domain, trays, [check], 0, False))
        else:
            runs.append((domain, trays))
    return runs, checks, rows


def nvlink_stage(domains, opts, env=None):
    """{domain: [trays]} -> {stage, checks, raw, failed_nodes, domains (rows), unusable, document}."""
    opts = dict(opts, stage=STAGE)
    env = _environment(env, opts)
    if not domains:
        check = _skipped("-", None, [], "no tray reported the NVLink domain its GPUs registered in (run the "
                         "gpu_health stage with it): nothing to measure")
        check["component"] = "nvlink_domain"
        return verdicts.result([check], {}, [])
    names = labels(domains, opts.get("replay_dir"))
    runs, checks, rows = _runnable(domains, names, opts)
    if runs:
        verdicts.check_localize_settings(runs[0][1], opts)
    work = [_Domain(names[d], d, trays, opts, env) for d, trays in runs]
    if work and opts.get("preflight", True):
        work[0].preflight()  # the launcher proved once: broken, no domain is run
    stop = work[0].stop if work else None
    if stop is None:
        _parallel(work, lambda d: d.nvlink_run(), opts.get("concurrency"))
        for one in work:  # one after the other: the domains share the InfiniBand fabric
            one.infiniband_run()
        _parallel([d for d in work if verdicts.worth_localising(d)], lambda d: d.localise(), opts.get("concurrency"))
    raw = {}
    for one in work:
        # named as this stage's checks before they are judged (the verdicts and the row look them up by name)
        _relabel([c for c in [one.full, one.ib_check] + one.checks if c], one.label, one.domain, one.prefix, one.raw)
        found, row = verdicts.judge_domain(one, stop, work[0].label)
        checks.extend(found)
        raw.update(one.raw)
        rows.append(row)
    rows.sort(key=lambda r: r["label"])
    return verdicts.result(checks, raw, rows)
