# -*- coding: utf-8 -*-
"""Property tests: the nvidia-smi parsers never raise and never return GPUs without saying why.

Uses the hypothesis profile loaded by tests/conftest.py (no max_examples here).
"""

from pathlib import Path

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    parse_nvidia_smi_csv,
    parse_nvidia_smi_q,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"
Q_FIXTURES = sorted(p.name for p in FIXTURES.glob("q_*.txt"))
CSV_WITH_HEADER = sorted(p.name for p in FIXTURES.glob("csv_*.csv") if "noheader" not in p.name)
_CACHE = {}

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=500)
FIELDS = st.one_of(st.none(), st.text(max_size=40),
                   st.lists(st.text(max_size=12), max_size=5))


def load(name):
    if name not in _CACHE:
        _CACHE[name] = (FIXTURES / name).read_text()
    return _CACHE[name]


def check(result):
    assert isinstance(result["errors"], list) and isinstance(result["warnings"], list)
    assert all(isinstance(m, str) for m in result["errors"] + result["warnings"])
    if not result["gpus"]:
        assert result["errors"], "no GPUs and no error saying why"


# ------------------------------------------------------------------------------------ -q ----

@given(st.sampled_from(Q_FIXTURES), st.floats(min_value=0, max_value=1))
def test_q_truncation_never_raises(name, fraction):
    text = load(name)
    result = parse_nvidia_smi_q(text[:int(len(text) * fraction)])
    check(result)


@given(st.sampled_from(Q_FIXTURES), st.integers(min_value=1, max_value=30),
       st.integers(min_value=0, max_value=10 ** 6))
def test_q_dropped_lines_never_raise(name, every, offset):
    lines = load(name).split("\n")
    kept = [line for i, line in enumerate(lines) if (i + offset) % every]
    check(parse_nvidia_smi_q("\n".join(kept)))


@given(st.sampled_from(Q_FIXTURES), TEXT, st.integers(min_value=0, max_value=2000))
def test_q_garbage_inserted_never_raises(name, garbage, at):
    lines = load(name).split("\n")
    lines.insert(at % (len(lines) + 1), garbage)
    check(parse_nvidia_smi_q("\n".join(lines)))


@given(TEXT)
def test_q_garbage_never_raises(text):
    check(parse_nvidia_smi_q(text))


@given(st.binary(max_size=400))
def test_q_random_bytes_never_raise(data):
    check(parse_nvidia_smi_q(data.decode("utf-8", errors="replace")))


@given(st.lists(st.sampled_from(["GPU 00000000:18:00.0", "    Product Name : X",
                                 "    Remapped Rows", "        Pending : Yes", "    ECC Errors",
                                 "        Volatile", "            Single Bit",
                                 "                Total : 3", "    Clocks Event Reasons",
                                 "        Idle : Active", "Attached GPUs : 2", "    Processes",
                                 "==============NVSMI LOG==============", "", "\t: :",
                                 "    Power Readings", "        Power Draw : N/A"]),
                max_size=40))
def test_q_shuffled_fragments_never_raise(lines):
    check(parse_nvidia_smi_q("\n".join(lines)))


def test_q_empty_and_header_only():
    for text in ("", "==============NVSMI LOG==============\n\nTimestamp : now\n"
                     "Driver Version : 550.54.15\nCUDA Version : 12.4\n\nAttached GPUs : 8\n"):
        result = parse_nvidia_smi_q(text)
        assert result["errors"] and result["gpus"] == []


# ----------------------------------------------------------------------------------- CSV ----

@given(st.sampled_from(CSV_WITH_HEADER), st.floats(min_value=0, max_value=1))
def test_csv_truncation_never_raises(name, fraction):
    text = load(name)
    check(parse_nvidia_smi_csv(text[:int(len(text) * fraction)]))


@given(st.sampled_from(CSV_WITH_HEADER), st.sets(st.integers(min_value=0, max_value=20)))
def test_csv_dropped_lines_never_raise(name, dropped):
    lines = load(name).split("\n")
    check(parse_nvidia_smi_csv("\n".join(l for i, l in enumerate(lines) if i not in dropped)))


@given(st.sampled_from(CSV_WITH_HEADER), TEXT, st.integers(min_value=0, max_value=20))
def test_csv_garbage_inserted_never_raises(name, garbage, at):
    lines = load(name).split("\n")
    lines.insert(at % (len(lines) + 1), garbage)
    check(parse_nvidia_smi_csv("\n".join(lines)))


@given(TEXT, FIELDS)
def test_csv_garbage_never_raises(text, fields):
    check(parse_nvidia_smi_csv(text, fields=fields))


@given(st.binary(max_size=400))
def test_csv_random_bytes_never_raise(data):
    check(parse_nvidia_smi_csv(data.decode("utf-8", errors="replace")))


@given(st.sampled_from(CSV_WITH_HEADER))
def test_csv_header_only(name):
    header = load(name).split("\n")[0]
    result = parse_nvidia_smi_csv(header + "\n")
    assert result["errors"] and result["gpus"] == []
    assert result["fields"]


def test_csv_empty():
    for text in ("", "\n \n"):
        result = parse_nvidia_smi_csv(text)
        assert result["errors"] and result["gpus"] == []
