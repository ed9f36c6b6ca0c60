"""Property tests for parse_dcgm_diag and parse_xid_log: odd input never raises, never passes.

Uses the hypothesis profile loaded in tests/conftest.py (no max_examples here).
"""
import json
import re

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._dcgm_diag import (
    parse_dcgm_diag)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._xid_log import (
    parse_xid_log)

from conftest import FIXTURES

DCGM = dict((path.name, path.read_text(encoding="utf-8"))
            for path in sorted((FIXTURES / "dcgm_diag").iterdir())
            if path.suffix in (".txt", ".json"))
XID = dict((path.name, path.read_text(encoding="utf-8"))
           for path in sorted((FIXTURES / "xid_log").iterdir()) if path.suffix == ".log")

STATUSES = ("pass", "fail", "warn", "skip")
PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}$")


def _check_dcgm(result):
    """Invariants every parse_dcgm_diag result keeps, whatever the input."""
    assert isinstance(result["errors"], list) and isinstance(result["warnings"], list)
    assert result["overall"] in ("pass", "fail")
    assert result["format"] in ("text", "json", None)
    assert result["failed_gpus"] == sorted(set(result["failed_gpus"]))
    for test in result["tests"]:
        assert test["status"] in STATUSES
        assert isinstance(test["name"], str) and test["name"]
        assert all(isinstance(g, int) for g in test["gpus"])
        assert all(status in STATUSES for status in test["gpu_results"].values())
        assert all(isinstance(d, str) for d in test["details"])
        assert not any(key.startswith("_") for key in test)
    assert not any(key.startswith("_") for key in result)
    if result["overall"] == "pass":
        assert result["tests"] and not result["errors"]
        assert not any(t["status"] == "fail" for t in result["tests"])
        assert any(t["status"] in ("pass", "warn") for t in result["tests"])
    json.dumps(result)  # plain data only


def _check_xid(result):
    assert isinstance(result["errors"], list) and isinstance(result["warnings"], list)
    for event in result["events"]:
        assert isinstance(event["xid"], int) and event["xid"] >= 0
        assert event["pci"] is None or PCI.match(event["pci"])
        assert event["pid"] is None or isinstance(event["pid"], int)
        assert event["process"] is None or (isinstance(event["process"], str)
                                            and event["process"].strip())
        assert 1 <= event["line"] <= result["lines"]
        assert isinstance(event["message"], str)
    assert sum(result["by_xid"].values()) == len(result["events"])
    assert result["gpu_lost"] == sorted(set(result["gpu_lost"]))
    assert all(PCI.match(pci) for pci in result["gpu_lost"])
    json.dumps(result)


# ------------------------------------------------------------------------------------------
# dcgmi diag
# ------------------------------------------------------------------------------------------

@given(st.sampled_from(sorted(DCGM)), st.data())
def test_dcgm_truncation_never_passes(name, data):
    text = DCGM[name]
    end = len(text.rstrip())
    cut = data.draw(st.integers(min_value=0, max_value=max(end - 1, 0)))
    result = parse_dcgm_diag(text[:cut])
    _check_dcgm(result)
    # Cutting anywhere before the last character of the closing border (text) or of the
    # closing brace (JSON) loses data: the parse must say so instead of passing.
    assert result["overall"] == "fail"


@given(st.sampled_from(sorted(DCGM)), st.data())
def test_dcgm_dropped_lines_never_raise(name, data):
    lines = DCGM[name].splitlines()
    keep = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    text = "\n".join(line for line, kept in zip(lines, keep) if kept)
    result = parse_dcgm_diag(text)
    _check_dcgm(result)
    if not any(kept for kept in keep):
        assert result["overall"] == "fail"


@given(st.sampled_from(sorted(DCGM)), st.data())
def test_dcgm_garbage_inserted_never_raises(name, data):
    lines = DCGM[name].splitlines()
    position = data.draw(st.integers(min_value=0, max_value=len(lines)))
    garbage = data.draw(st.text(max_size=80))
    lines.insert(position, garbage)
    _check_dcgm(parse_dcgm_diag("\n".join(lines)))


@given(st.text())
def test_dcgm_random_text_never_raises(text):
    _check_dcgm(parse_dcgm_diag(text))


@given(st.text(alphabet=st.characters(blacklist_characters="|{[+")))
def test_dcgm_not_a_diag_output_never_passes(text):
    result = parse_dcgm_diag(text)
    _check_dcgm(result)
    assert result["overall"] == "fail"
    assert result["errors"]


@given(st.binary())
def test_dcgm_random_bytes_never_raise(raw):
    result = parse_dcgm_diag(raw.decode("utf-8", errors="replace"))
    _check_dcgm(result)


@given(st.sampled_from([name for name in sorted(DCGM) if name.endswith(".json")]), st.data())
def test_dcgm_json_with_values_replaced_never_raises(name, data):
    text = DCGM[name]
    start = text.index("{")
    document = json.loads(text[start:])
    replacement = data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=10),
                                      st.lists(st.none(), max_size=2), st.booleans()))

    def mutate(node, depth=0):
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node)))
            if depth > 0 and data.draw(st.booleans()):
                node[key] = replacement
            else:
                mutate(node[key], depth + 1)
        elif isinstance(node, list) and node:
            index = data.draw(st.integers(min_value=0, max_value=len(node) - 1))
            if data.draw(st.booleans()):
                node[index] = replacement
            else:
                mutate(node[index], depth + 1)
    mutate(document)
    _check_dcgm(parse_dcgm_diag(json.dumps(document)))


# ------------------------------------------------------------------------------------------
# Kernel log (Xid)
# ------------------------------------------------------------------------------------------

@given(st.sampled_from(sorted(XID)), st.data())
def test_xid_truncation_and_dropped_lines_never_raise(name, data):
    text = XID[name]
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    _check_xid(parse_xid_log(text[:cut]))
    lines = text.splitlines()
    keep = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    kept = [line for line, flag in zip(lines, keep) if flag]
    result = parse_xid_log("\n".join(kept))
    _check_xid(result)
    # Dropping lines never invents events: each event is one kept "NVRM: Xid" line.
    assert len(result["events"]) <= sum(1 for line in kept if "NVRM: Xid" in line)


@given(st.text())
def test_xid_random_text_never_raises(text):
    _check_xid(parse_xid_log(text))


@given(st.binary())
def test_xid_random_bytes_never_raise(raw):
    _check_xid(parse_xid_log(raw.decode("utf-8", errors="replace")))


_HEX = "0123456789abcdef"
_PREFIXES = st.sampled_from([
    "", "[ 1234.567890] ", "[Mon Jan  1 00:00:00 2024] ", "Jan  1 00:00:00 node1 kernel: ",
    "Jan  1 00:00:00 node1 kernel: [   65.315783] ", "2024-01-01T00:00:00.123456+00:00 node1 kernel: ",
    "kernel: "])


@given(prefix=_PREFIXES,
       domain=st.text(alphabet=_HEX, min_size=4, max_size=4),
       bus=st.text(alphabet=_HEX, min_size=2, max_size=2),
       dev=st.text(alphabet=_HEX, min_size=2, max_size=2),
       label=st.booleans(),
       xid=st.integers(min_value=0, max_value=999),
       pid=st.one_of(st.none(), st.integers(min_value=0, max_value=2 ** 22),
                     st.just("'<unknown>'"), st.just("<unknown>")),
       name=st.one_of(st.none(), st.just("<unknown>"),
                      st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,14}", fullmatch=True)),
       message=st.from_regex(r"[A-Za-z][A-Za-z0-9 ().:_-]{0,60}", fullmatch=True))
def test_xid_generated_lines_round_trip(prefix, domain, bus, dev, label, xid, pid, name, message):
    device = "%s%s:%s:%s" % ("PCI:" if label else "", domain, bus, dev)
    parts = ["NVRM: Xid (%s): %d" % (device, xid)]
    if pid is not None:
        parts.append("pid=%s" % pid)
    if name is not None:
        parts.append("name=%s" % name)
    message = message.strip()
    if message and not re.match(r"(?i)(pid|name)\s*=", message):
        parts.append(message)
    else:
        message = ""
    line = prefix + ", ".join(parts)
    result = parse_xid_log("some unrelated line\n" + line + "\n")
    _check_xid(result)
    assert len(result["events"]) == 1
    event = result["events"][0]
    assert event["xid"] == xid
    assert event["pci"] == ("%s:%s:%s" % (domain, bus, dev)).lower()
    assert event["pid"] == (pid if isinstance(pid, int) else None)
    assert event["process"] == (None if name in (None, "<unknown>") else name)
    assert event["message"] == message
    assert event["line"] == 2
    assert event["timestamp"] == (prefix.strip() or None if prefix.strip() != "kernel:" else None)
