"""Build ``ibnetdiscover`` topology text for a made-up fabric (for tests of the topology role).

The layout follows ``tests/fixtures/ibnetdiscover/handmade_two_leaf_one_spine_full.txt`` (itself
derived from a real NDR fabric dump and ibnetdiscover.c's printf formats): a block per switch
with its port lines, then a block per host adapter. Quantum switches are described as
``MF0;<name>:MQM9700/U1``; adapters as ``<host> mlx5_<n>``.
"""


def _guid(kind, index):
    base = {"spine": 0x2C5EAB0300C20000, "leaf": 0x2C5EAB0300B80000, "hca": 0xE09D730300000000}[kind]
    return "%016x" % (base + index)


def ibnetdiscover_text(host_links, spines=("spine01",), leaf_spines=None, spine_cores=None, speed="4xNDR"):
    """``host_links``: {host: [leaf name per adapter]}; ``spines``: spine names;
    ``leaf_spines``: {leaf: [spines]} (default: every leaf to every spine); ``spine_cores``:
    {spine: [core switch names]} for a third level (default none). Returns the text."""
    leaves = []
    for host in host_links:
        for leaf in host_links[host]:
            if leaf not in leaves:
                leaves.append(leaf)
    leaf_spines = leaf_spines or {leaf: list(spines) for leaf in leaves}
    spine_cores = spine_cores or {}
    cores = []
    for spine in spines:
        for core in spine_cores.get(spine, []):
            if core not in cores:
                cores.append(core)
    switch_guid = {name: _guid("spine", i) for i, name in enumerate(list(spines) + cores)}
    switch_guid.update({name: _guid("leaf", i) for i, name in enumerate(leaves)})
    lid = {name: i + 1 for i, name in enumerate(list(spines) + cores + leaves)}
    desc = {name: "MF0;%s:MQM9700/U1" % name for name in switch_guid}
    # adapters: (host, n, leaf, guid, leaf port, lid)
    adapters = []
    leaf_next_port = {leaf: 1 for leaf in leaves}
    for host in host_links:
        for n, leaf in enumerate(host_links[host]):
            port = leaf_next_port[leaf]
            leaf_next_port[leaf] += 1
            adapters.append((host, n, leaf, _guid("hca", len(adapters) + 1), port, 100 + len(adapters)))
    # switch-switch cables: leaf port 33.. to spine port 1..
    uplinks = []  # (leaf, leaf port, spine, spine port)
    spine_next_port = {spine: 1 for spine in spines}
    for leaf in leaves:
        for k, spine in enumerate(leaf_spines.get(leaf, [])):
            uplinks.append((leaf, 33 + k, spine, spine_next_port[spine]))
            spine_next_port[spine] += 1
    corelinks = []  # (spine, spine port, core, core port)
    core_next_port = {core: 1 for core in cores}
    for spine in spines:
        for k, core in enumerate(spine_cores.get(spine, [])):
            corelinks.append((spine, 49 + k, core, core_next_port[core]))
            core_next_port[core] += 1

    out = ["#", "# Topology file: generated on Mon Mar  3 10:00:00 2025", "#",
           "# Initiated from node %s port %s" % (adapters[0][3], adapters[0][3]), ""]

    def switch_header(name):
        guid = switch_guid[name]
        out.extend(["vendid=0x2c9", "devid=0xd2f2", "sysimgguid=0x%s" % guid, "switchguid=0x%s(%s)" % (guid, guid),
                    'Switch\t65 "S-%s"\t\t# "%s" enhanced port 0 lid %d lmc 0' % (guid, desc[name], lid[name])])

    for core in cores:
        switch_header(core)
        for spine, sport, cr, cport in corelinks:
            if cr == core:
                out.append('[%d]\t"S-%s"[%d]\t\t# "%s" lid %d %s' % (cport, switch_guid[spine], sport, desc[spine],
                                                                     lid[spine], speed))
        out.append("")
    for spine in spines:
        switch_header(spine)
        for leaf, lport, sp, sport in uplinks:
            if sp == spine:
                out.append('[%d]\t"S-%s"[%d]\t\t# "%s" lid %d %s' % (sport, switch_guid[leaf], lport, desc[leaf],
                                                                     lid[leaf], speed))
        for sp, sport, core, cport in corelinks:
            if sp == spine:
                out.append('[%d]\t"S-%s"[%d]\t\t# "%s" lid %d %s' % (sport, switch_guid[core], cport, desc[core],
                                                                     lid[core], speed))
        out.append("")
    for leaf in leaves:
        switch_header(leaf)
        for host, n, aleaf, guid, port, alid in adapters:
            if aleaf == leaf:
                out.append('[%d]\t"H-%s"[1](%s) \t\t# "%s mlx5_%d" lid %d %s' % (port, guid, guid, host, n, alid, speed))
        for uleaf, lport, spine, sport in uplinks:
            if uleaf == leaf:
                out.append('[%d]\t"S-%s"[%d]\t\t# "%s" lid %d %s' % (lport, switch_guid[spine], sport, desc[spine],
                                                                     lid[spine], speed))
        out.append("")
    for host, n, leaf, guid, port, alid in adapters:
        out.extend(["vendid=0x2c9", "devid=0x1021", "sysimgguid=0x%s" % guid, "caguid=0x%s" % guid,
                    'Ca\t1 "H-%s"\t\t# "%s mlx5_%d"' % (guid, host, n),
                    '[1](%s) \t"S-%s"[%d]\t\t# lid %d lmc 0 "%s" lid %d %s' % (
                        guid, switch_guid[leaf], port, alid, desc[leaf], lid[leaf], speed), ""])
    return "\n".join(out)
