"""A provider's topology.conf against a real NDR fabric (ibnetdiscover) with the measured pairs."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_from_fabric import model_from_fabric
from ansible_collections.gpucluster.acceptance.plugins.module_utils._topology_validate import validate_against_fabric
from conftest import FIXTURES

NDR = (FIXTURES / "ibnetdiscover" / "topograph_example_ndr_full.txt").read_text()
LEAVES = model_from_fabric(NDR)["leaves"]
A, B = "a05-p1-dgx-01-c01", "a06-p1-dgx-02-c01"   # on fabric leaves su-...-01-01 and su-...-01-02
NODES = sorted(n for members in LEAVES.values() for n in members)


def provider_file(leaves, swap=(), drop=(), names=None):
    """A topology.conf in a provider's naming (s1, s2, ...), one explicit node list per switch."""
    lines = []
    order = sorted(leaves)
    for index, leaf in enumerate(order, 1):
        swapped = dict([swap, swap[::-1]]) if swap else {}
        members = [swapped.get(n, n) for n in leaves[leaf]]
        members = [n for n in members if n not in drop]
        lines.append("SwitchName=%s Nodes=%s" % ((names or {}).get(leaf, "s%d" % index), ",".join(members)))
    lines.append("SwitchName=top Switches=%s" % ",".join((names or {}).get(l, "s%d" % i) for i, l in enumerate(order, 1)))
    return "\n".join(lines) + "\n"


def test_a_file_that_matches_the_fabric_is_ok_whatever_its_switch_names():
    out = validate_against_fabric(provider_file(LEAVES), NDR, nodes=NODES)
    assert out["ok"] and not out["problems"], out["messages"]
    assert out["switch_map"]["s1"] == "su-A09-P1-IBLEAF-01-01"


def test_two_nodes_under_the_wrong_switch_are_both_named_with_the_measured_bandwidth():
    pairs = {A: {n: 180.0 for n in LEAVES["su-A09-P1-IBLEAF-01-02"] if n != B},
             B: {n: 181.0 for n in LEAVES["su-A09-P1-IBLEAF-01-01"] if n != A}}
    pairs[A].update({n: 362.0 for n in LEAVES["su-A09-P1-IBLEAF-01-01"][1:4]})
    pairs[B].update({n: 360.0 for n in LEAVES["su-A09-P1-IBLEAF-01-02"][1:4]})
    for leaf in ("su-A09-P1-IBLEAF-01-01", "su-A09-P1-IBLEAF-01-02"):  # the healthy same-leaf pairs
        members = LEAVES[leaf][1:]
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                pairs.setdefault(a, {})[b] = 361.0
    out = validate_against_fabric(provider_file(LEAVES, swap=(A, B)), NDR, nodes=NODES, pair_busbw=pairs)
    assert not out["ok"]
    assert [(m["node"], m["switch"], m["fabric_leaf"], m["fabric_switch"]) for m in out["misplaced"]] == [
        (A, "s2", "su-A09-P1-IBLEAF-01-01", "s1"), (B, "s1", "su-A09-P1-IBLEAF-01-02", "s2")]
    first = out["misplaced"][0]["message"]
    assert first.startswith("%s: topology.conf puts it under s2 with a06-p1-dgx-02-c[02-04,07,10-12,14,16,18]" % A)
    assert "the fabric has it on su-A09-P1-IBLEAF-01-01 (the file's s1)" in first
    assert "(median 180.0 GB/s)" in first and "(median 362.0 GB/s)" in first
    assert "run at 50 % of its pairs on its fabric leaf: the path to them crosses a spine" in first
    # The same-switch pairs that measured cross-spine name them too.
    assert sorted(out["bandwidth"]["suspects"]) == sorted([A, B])


def test_missing_nodes_unknown_switches_and_nodes_not_on_the_fabric():
    leaves = dict(LEAVES)
    gone = leaves.pop("su-B09-P1-IBLEAF-01-08")
    text = provider_file(leaves, drop=(A,)) + "SwitchName=extra Nodes=ghost01\n"
    out = validate_against_fabric(text, NDR, nodes=NODES + ["ghost01"])
    assert not out["ok"]
    assert {m["node"] for m in out["missing"]} == set(gone) | {A}
    assert out["not_on_fabric"] == [{"node": "ghost01", "switch": "extra"}]
    assert [u["leaf"] for u in out["unknown_leaves"]] == ["su-B09-P1-IBLEAF-01-08"]
    assert any(m.startswith("fabric leaf su-B09-P1-IBLEAF-01-08 (") and "a switch Slurm does not know" in m
               for m in out["messages"])


def test_a_split_leaf_and_unreadable_input():
    leaves = dict(LEAVES)
    members = leaves.pop("su-A09-P1-IBLEAF-01-01")
    leaves["half1"], leaves["half2"] = members[:5], members[5:]
    out = validate_against_fabric(provider_file(leaves, names={"half1": "h1", "half2": "h2"}), NDR, nodes=NODES)
    assert out["split"] == [{"leaf": "su-A09-P1-IBLEAF-01-01", "switches": ["h1", "h2"]}]
    bad = validate_against_fabric("garbage line\n", "not ibnetdiscover\n")
    assert not bad["ok"] and len(bad["problems"]) >= 2
    assert any("no leaf switch" in p for p in bad["problems"])
