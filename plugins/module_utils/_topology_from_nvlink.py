# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm topology/block from the measured NVLink domains, and a provider's block file checked against them.

Private to the collection. Standard library only; pure functions.

On rack-scale systems (GB200/GB300 NVL72) Slurm's topology/block must put the trays of one NVLink
domain in one block: a job inside a block gets multi-node NVLink, one across blocks does not. The
domains come from an acceptance run's results.json (``nvlink_domains``: the trays grouped by the
``<ClusterUUID>.<CliqueId>`` their GPUs registered in, found from the nodes' own outputs).

* ``domain_of_nodes(document)``: {tray: domain} from the results document.
* ``blocks_from_domains(document)``: {tray: {"block": name}} labels, one block per domain (``nvl01``,
  ``nvl02`` … in the order of each domain's first tray), for model_from_labels; trays in no domain
  are left out (a warning names them).
* ``validate_blocks(conf_text, document, nodes=None)``: the provider's ``BlockName=`` lines against
  the measured domains. Each block is matched with the domain most of its trays registered in;
  ``misplaced``: a tray in a block whose domain is another one (evidence: the tray's domain and the
  block's); ``split``: a domain spread over several blocks; ``unmeasured``: trays of the file no
  domain holds (they failed registration or were not in the run); ``missing``: measured trays no
  block holds; ``slow``: a block whose domain's measured multi-node NVLink run (``nvlink_domains.mnnvl``)
  fell back to InfiniBand, was a rack-level fault or was below the floor. ``ok`` only when nothing is
  misplaced, split, missing or slow.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import compress_hostlist, natural_key
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_slurm_view import (
    parse_scontrol_show_topology, shown_blocks)


def _block(document):
    block = (document or {}).get("nvlink_domains") if isinstance(document, dict) else None
    if not isinstance(block, dict) or not isinstance(block.get("domains"), list):
        raise ValueError("the results document has no nvlink_domains block: run acceptance with a rack-scale "
                         "profile (nvlink.fabric: rack) first")
    return block


def domain_of_nodes(document):
    """{tray: '<ClusterUUID>.<CliqueId>'} for every tray of every measured domain."""
    out = {}
    for row in _block(document)["domains"]:
        for node in list(row.get("passed") or []) + list(row.get("failed") or []):
            out[node] = row["domain"]
    return out


def _ordered_domains(members):
    by_domain = {}
    for node, domain in members.items():
        by_domain.setdefault(domain, []).append(node)
    return sorted(by_domain.items(), key=lambda kv: natural_key(sorted(kv[1], key=natural_key)[0]))


def blocks_from_domains(document):
    """({tray: {"block": name}}, {block: domain}, warnings, base block size)."""
    block = _block(document)
    members = domain_of_nodes(document)
    labels, names = {}, {}
    ordered = _ordered_domains(members)
    width = max(2, len(str(len(ordered))))
    for index, (domain, trays) in enumerate(ordered, 1):
        name = "nvl%0*d" % (width, index)
        names[name] = domain
        for node in trays:
            labels[node] = {"block": name}
    warnings = []
    if block.get("outside"):
        warnings.append("trays in no NVLink domain, left out of every block: %s" % compress_hostlist(block["outside"]))
    sizes = [len(trays) for _domain, trays in ordered]
    base = block.get("domain_trays") or (min(sizes) if sizes else 0)
    if sizes and min(sizes) < base:
        warnings.append("the smallest domain holds %d trays, fewer than a rack's %d: the base block size is %d (a "
                        "job of a full rack's size fits only the full blocks)" % (min(sizes), base, min(sizes)))
        base = min(sizes)
    return labels, names, warnings, base


def _file_blocks(conf_text):
    """{block: [trays]} of a topology/block file, or of ``scontrol show topology`` in its block
    form (what a running slurmctld uses: told apart by its BlockIndex= fields)."""
    if "BlockIndex=" in conf_text:
        shown = parse_scontrol_show_topology(conf_text)
        blocks = shown_blocks(shown)
        problems = [str(p) for p in shown.get("errors") or []]
        if not blocks and not problems:
            problems.append("scontrol show topology printed no BlockName= line: not topology/block")
        return blocks, problems
    parsed = parse_slurm_topology(conf_text)
    blocks = {}
    for record in parsed.get("blocks") or []:
        blocks.setdefault(record["name"], []).extend(record.get("nodes") or [])
    problems = [str(p) for p in parsed.get("errors") or []]
    if not blocks and not problems:
        problems.append("the file has no BlockName= lines: not a topology/block file")
    return blocks, problems


def validate_blocks(conf_text, document, nodes=None):
    """The provider's topology/block file against the measured NVLink domains (see the module docstring)."""
    members = domain_of_nodes(document)
    blocks, problems = _file_blocks(conf_text)
    result = {"ok": False, "blocks": {}, "misplaced": [], "split": [], "unmeasured": [], "missing": [],
              "messages": [], "problems": problems}
    domain_blocks = {}
    placed = set()
    for name in sorted(blocks, key=natural_key):
        trays = blocks[name]
        placed.update(trays)
        counts = {}
        for node in trays:
            if node in members:
                counts[members[node]] = counts.get(members[node], 0) + 1
        domain = max(sorted(counts), key=lambda d: counts[d]) if counts else None
        result["blocks"][name] = {"domain": domain, "nodes": trays}
        if domain:
            domain_blocks.setdefault(domain, []).append(name)
        for node in trays:
            if node not in members:
                result["unmeasured"].append(node)
            elif domain and members[node] != domain:
                result["misplaced"].append({"node": node, "block": name, "block_domain": domain,
                                            "domain": members[node]})
    for item in result["misplaced"]:
        home = [b for b, entry in sorted(result["blocks"].items()) if entry["domain"] == item["domain"]]
        item["evidence"] = ("%s registered in NVLink domain %s; block %s's other trays are in %s"
                            % (item["node"], item["domain"], item["block"], item["block_domain"]))
        result["messages"].append("%s is in block %s but its GPUs are in NVLink domain %s%s: a job in %s would "
                                  "not get multi-node NVLink to it" % (
                                      item["node"], item["block"], item["domain"],
                                      " (the domain of block %s)" % ", ".join(home) if home else "", item["block"]))
    for domain, names in sorted(domain_blocks.items()):
        if len(names) > 1:
            result["split"].append({"domain": domain, "blocks": names})
            result["messages"].append("NVLink domain %s is split over blocks %s" % (domain, ", ".join(names)))
    wanted = set(nodes) if nodes else set(members)
    result["missing"] = sorted((n for n in wanted if n in members and n not in placed), key=natural_key)
    if result["missing"]:
        result["messages"].append("trays of a measured NVLink domain in no block: %s" % compress_hostlist(result["missing"]))
    result["unmeasured"] = sorted(set(result["unmeasured"]), key=natural_key)
    result["slow"] = _slow_blocks(result["blocks"], document)
    result["messages"].extend(item["message"] for item in result["slow"])
    result["ok"] = not (problems or result["misplaced"] or result["split"] or result["missing"] or result["slow"])
    return result


def _slow_blocks(blocks, document):
    """Blocks whose NVLink domain did not deliver multi-node NVLink when measured (results.json
    ``nvlink_domains.mnnvl``: fell back to InfiniBand, a rack-level fault, below the floor): the
    block is right about the trays but a job in it gets no NVLink bandwidth. [] without measurements."""
    rows = dict((r.get("domain"), r) for r in ((document or {}).get("nvlink_domains") or {}).get("mnnvl") or []
                if isinstance(r, dict))
    slow = []
    for name, entry in sorted(blocks.items(), key=lambda kv: natural_key(kv[0])):
        row = rows.get(entry["domain"])
        busbw, floor = (row or {}).get("busbw"), (row or {}).get("floor")
        if not row or (busbw is None and not row.get("unavailable")):
            continue
        if row.get("unavailable"):
            why = "no bandwidth over multi-node NVLink: the run failed while InfiniBand only worked"
        elif row.get("fell_back") or row.get("rack_fault") or (floor and busbw < floor and not row.get("slow_trays")):
            why = "%s GB/s over multi-node NVLink, %s" % (busbw, "fell back to InfiniBand" if row.get("fell_back") else
                                                          "a rack-level fault" if row.get("rack_fault") else
                                                          "below the floor %s GB/s" % floor)
        else:
            continue
        slow.append({"block": name, "domain": entry["domain"], "busbw": busbw, "ib_busbw": row.get("ib_busbw"),
                     "message": "block %s (NVLink domain %s, %s) measured %s: a job in it gets no NVLink bandwidth"
                                % (name, entry["domain"], row.get("label"), why)})
    return slow
