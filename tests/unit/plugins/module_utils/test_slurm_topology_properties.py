"""topology.conf properties: garbage and truncation never raise, garbage never passes, and
parse(render(model)) gives the model back."""
from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._hostlist import (
    compress_hostlist, expand_hostlist)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology import parse_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_render import render_slurm_topology
from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_topology_validate import validate_slurm_topology

KEYS = ("switches", "blocks", "block_sizes", "rings", "plugin", "errors", "warnings")


def check_shape(parsed):
    assert set(KEYS) <= set(parsed)
    assert all(isinstance(message, str) for message in parsed["errors"] + parsed["warnings"])
    for switch in parsed["switches"]:
        assert set(switch) == {"name", "nodes", "switches", "link_speed", "line"}
        assert isinstance(switch["line"], int) and switch["line"] >= 1
        assert not (switch["nodes"] and switch["switches"])
    for record in parsed["blocks"] + parsed["rings"]:
        assert set(record) == {"name", "nodes", "line"}
    assert all(isinstance(size, int) for size in parsed["block_sizes"])
    if not (parsed["switches"] or parsed["blocks"] or parsed["rings"]):
        assert parsed["errors"], "a file without switches, blocks or rings must have errors"


# Text that looks a bit like topology.conf, so the generator reaches the parser's branches.
_TOPOLOGY_ALPHABET = st.sampled_from(list("SwitchNameBlockSizesRingNodesLinkSpeed=[]-,0123 \t\n#\\\"")
                                     + ["SwitchName=", "Switches=", "Nodes=", "BlockName=",
                                        "BlockSizes=", "LinkSpeed=", "gpu[01-04]", "\r\n"])
topology_like = st.lists(_TOPOLOGY_ALPHABET, max_size=60).map("".join)


@given(st.one_of(st.text(max_size=200), topology_like))
def test_any_text_parses_and_validates_without_raising(text):
    parsed = parse_slurm_topology(text)
    check_shape(parsed)
    problems = validate_slurm_topology(parsed)
    assert all(p["severity"] in ("fatal", "warning") for p in problems)
    if parsed["errors"]:
        assert any(p["severity"] == "fatal" for p in problems)
    validate_slurm_topology(parsed, nodes=["gpu01", "gpu02"])


# Lines with no '=' (and no backslash or quote) can never be Key=Value: each is garbage.
_GARBAGE_CHARS = "".join(chr(c) for c in range(32, 127) if chr(c) not in '=\\"') + "\t\u00e9\u2603"
garbage_line = st.text(alphabet=_GARBAGE_CHARS, min_size=1, max_size=40).filter(
    lambda line: line.split("#", 1)[0].strip()
    and not line.strip().lower().startswith("include"))


@given(st.lists(st.one_of(garbage_line.map(lambda g: ("garbage", g)),
                          st.integers(min_value=0, max_value=50).map(lambda n: ("switch", n))),
                min_size=1, max_size=12))
def test_garbage_lines_are_errors_and_never_switches(lines):
    text_lines = []
    valid = []
    for index, (kind, value) in enumerate(lines):
        if kind == "garbage":
            text_lines.append(value)
        else:
            name = "sw%d" % index
            text_lines.append("SwitchName=%s Nodes=n[%d-%d]" % (name, value, value + 1))
            valid.append(name)
    parsed = parse_slurm_topology("\n".join(text_lines))
    check_shape(parsed)
    assert [s["name"] for s in parsed["switches"]] == valid
    garbage = sum(1 for kind, _text in lines if kind == "garbage")
    cannot_read = [e for e in parsed["errors"] if "cannot read" in e or "unrecognized" in e]
    assert len(cannot_read) == garbage
    assert bool(parsed["errors"]) == (garbage > 0)


@st.composite
def tree_models(draw):
    """Leaf switches over disjoint node sets, optional middle layer, one spine."""
    leaf_count = draw(st.integers(min_value=1, max_value=6))
    start = 1
    leaves = []
    for index in range(leaf_count):
        size = draw(st.integers(min_value=1, max_value=12))
        numbers = list(range(start, start + size))
        start += size + draw(st.integers(min_value=0, max_value=3))
        width = draw(st.sampled_from([0, 3, 4]))
        nodes = ["gpu%0*d" % (width, n) for n in numbers] if width else ["gpu%d" % n for n in numbers]
        leaf = {"name": "leaf%02d" % index, "nodes": draw(st.permutations(nodes))}
        if draw(st.booleans()):
            leaf["link_speed"] = draw(st.integers(min_value=0, max_value=2 ** 32 - 1))
        leaves.append(leaf)
    switches = list(leaves)
    children = [leaf["name"] for leaf in leaves]
    if leaf_count > 1 and draw(st.booleans()):
        half = leaf_count // 2
        switches.append({"name": "mid0", "switches": children[:half]})
        switches.append({"name": "mid1", "switches": children[half:]})
        children = ["mid0", "mid1"]
    spine = {"name": "spine.1", "switches": children}
    if draw(st.booleans()):
        spine["link_speed"] = draw(st.integers(min_value=0, max_value=100000))
    switches.append(spine)
    order = draw(st.permutations(list(range(len(switches)))))
    return {"switches": [switches[i] for i in order]}


@given(tree_models())
def test_tree_render_parse_round_trip(model):
    text = render_slurm_topology(model)
    parsed = parse_slurm_topology(text)
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert parsed["plugin"] == "topology/tree"
    assert len(parsed["switches"]) == len(model["switches"])
    for wanted, got in zip(model["switches"], parsed["switches"]):
        assert got["name"] == wanted["name"]
        assert got["link_speed"] == wanted.get("link_speed")
        assert sorted(got["nodes"]) == sorted(set(wanted.get("nodes", [])))
        assert sorted(got["switches"]) == sorted(set(wanted.get("switches", [])))
        assert len(got["nodes"]) == len(set(got["nodes"]))
    cluster = [n for s in model["switches"] for n in s.get("nodes", [])]
    assert validate_slurm_topology(parsed, cluster) == []
    assert render_slurm_topology(parsed) == text


@st.composite
def block_models(draw):
    base = draw(st.integers(min_value=1, max_value=8))
    count = draw(st.integers(min_value=1, max_value=6))
    blocks = []
    for index in range(count):
        first = 1 + index * base
        blocks.append({"name": "nvl%d" % index,
                       "nodes": ["gb%03d" % n for n in range(first, first + base)]})
    sizes = [base * 2 ** level for level in sorted(set(
        draw(st.lists(st.integers(min_value=0, max_value=5), max_size=3))) | {0})]
    return {"blocks": blocks, "block_sizes": sizes if draw(st.booleans()) else []}


@given(block_models())
def test_block_render_parse_round_trip(model):
    parsed = parse_slurm_topology(render_slurm_topology(model))
    assert parsed["errors"] == [] and parsed["warnings"] == []
    assert parsed["block_sizes"] == model["block_sizes"]
    assert [(b["name"], b["nodes"]) for b in parsed["blocks"]] == [
        (b["name"], b["nodes"]) for b in model["blocks"]]
    nodes = [n for b in model["blocks"] for n in b["nodes"]]
    assert validate_slurm_topology(parsed, compress_hostlist(nodes)) == []


@given(tree_models(), st.data())
def test_truncated_files_never_raise_and_never_lose_nodes_silently(model, data):
    text = render_slurm_topology(model)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    parsed = parse_slurm_topology(text[:cut])
    check_shape(parsed)
    cluster = [n for s in model["switches"] for n in s.get("nodes", [])]
    problems = validate_slurm_topology(parsed, cluster)
    fatal = [p for p in problems if p["severity"] == "fatal"]
    covered = set(n for s in parsed["switches"] for n in s["nodes"])
    if set(cluster) - covered:
        # a cut leaf line, a missing leaf or an empty file: never accepted
        assert fatal, text[:cut]
    if cut == 0 or not parsed["switches"]:
        assert parsed["errors"]


@given(tree_models(), st.sampled_from(["Foo=1", "Node=gpu1", "garbage", "Switches=leaf00"]),
       st.data())
def test_damaged_line_is_reported(model, damage, data):
    lines = render_slurm_topology(model, header=None).splitlines()
    index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
    if damage == "Switches=leaf00":
        assume("Nodes=" in lines[index])       # both kinds of children on one switch
    lines[index] += " " + damage
    parsed = parse_slurm_topology("\n".join(lines))
    assert any(e.startswith("line %d: " % (index + 1)) for e in parsed["errors"])
    assert any(p["severity"] == "fatal" for p in validate_slurm_topology(parsed))


@given(st.lists(st.sampled_from(["gpu[001-004]", "gpu[003-006]", "cpu[1-2]", "gpu007"]),
                min_size=1, max_size=4))
def test_nodes_under_two_leaves_are_always_found(node_exprs):
    lines = ["SwitchName=l%d Nodes=%s" % (i, expr) for i, expr in enumerate(node_exprs)]
    lines.append("SwitchName=sp Switches=l[0-%d]" % (len(node_exprs) - 1))
    parsed = parse_slurm_topology("\n".join(lines))
    owners = {}
    for index, expr in enumerate(node_exprs):
        for node in expand_hostlist(expr):
            owners.setdefault(node, set()).add("l%d" % index)
    shared = {node for node, leaves in owners.items() if len(leaves) > 1}
    problems = [p for p in validate_slurm_topology(parsed) if p["code"] == "node_multiple_leaves"]
    flagged = set()
    for problem in problems:
        flagged |= set(expand_hostlist(problem["message"].split(" ")[1]))
    assert flagged == shared
