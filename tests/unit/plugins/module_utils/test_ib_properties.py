"""Property tests for the InfiniBand parsers: whatever the input, a result, never an exception.

Uses the hypothesis profile loaded in tests/conftest.py (never set max_examples here).
"""
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters import parse_ib_counters
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ib_counters_deltas import counter_deltas
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibnetdiscover import parse_ibnetdiscover
from ansible_collections.gpucluster.acceptance.plugins.module_utils._ibstat import parse_ibstat
from ansible_collections.gpucluster.acceptance.plugins.module_utils._perftest import parse_perftest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"

PARSERS = {
    "ibstat": parse_ibstat,
    "ib_counters": parse_ib_counters,
    "ibnetdiscover": parse_ibnetdiscover,
    "perftest": parse_perftest,
}
# Small fixtures only: the 300 KB NDR topology would make thousands of examples slow.
SAMPLES = {
    tool: [p.read_text() for p in sorted((FIXTURES / tool).glob("*.txt")) if p.stat().st_size < 20000]
    for tool in PARSERS
}
ALL_SAMPLES = [(tool, text) for tool, texts in SAMPLES.items() for text in texts]

GARBAGE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)
NOISY_LINES = st.sampled_from([
    "", "   ", "\t\t", "#", "[", "]", "[1]", '"', "Port 1:", "CA '", "State:", "Rate: abc", "Switch\t65",
    'Ca\t1 "H-', "0x", "PortXmitData:......", "/sys/class/infiniband/", " #bytes  #iterations  BW peak[Gb/sec]",
    " 65536 5000", "ibpanic:", "iberror:", "ibwarn:", "Couldn't", "-" * 87, "\x00", "\x1b[0m", "\ufeff",
    "lid 4 lmc", "4xNDR", "==> mlx5_0 <==", "CapMask: 0x", "N/A (no PMA)", "-1e309", "1e400", "nan",
])


def check_shape(result):
    """A dict with lists of strings in errors/warnings, and JSON-serialisable (it goes to Ansible)."""
    assert isinstance(result, dict)
    assert isinstance(result["errors"], list) and all(isinstance(e, str) for e in result["errors"])
    assert isinstance(result["warnings"], list) and all(isinstance(w, str) for w in result["warnings"])
    json.dumps(result)


@pytest.mark.parametrize("tool", sorted(PARSERS))
@given(text=st.text())
def test_any_text(tool, text):
    check_shape(PARSERS[tool](text))


@pytest.mark.parametrize("tool", sorted(PARSERS))
@given(data=st.binary())
def test_random_bytes(tool, data):
    check_shape(PARSERS[tool](data.decode("utf-8", errors="replace")))
    check_shape(PARSERS[tool](data.decode("latin-1")))


@pytest.mark.parametrize("tool", sorted(PARSERS))
@given(lines=st.lists(NOISY_LINES, max_size=40))
def test_noisy_lines(tool, lines):
    check_shape(PARSERS[tool]("\n".join(lines)))


@pytest.mark.parametrize("tool", sorted(PARSERS))
@given(blank=st.text(alphabet=" \t\r\n", max_size=20))
def test_empty_is_an_error(tool, blank):
    result = PARSERS[tool](blank)
    check_shape(result)
    assert result["errors"]


@given(sample=st.sampled_from(ALL_SAMPLES), cut=st.floats(min_value=0, max_value=1))
def test_truncation(sample, cut):
    tool, text = sample
    check_shape(PARSERS[tool](text[:int(len(text) * cut)]))


@given(sample=st.sampled_from(ALL_SAMPLES), data=st.data())
def test_dropped_lines(sample, data):
    tool, text = sample
    lines = text.splitlines()
    keep = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    check_shape(PARSERS[tool]("\n".join(line for line, k in zip(lines, keep) if k)))


@given(sample=st.sampled_from(ALL_SAMPLES), data=st.data())
def test_garbage_inserted(sample, data):
    tool, text = sample
    lines = text.splitlines()
    position = data.draw(st.integers(min_value=0, max_value=len(lines)))
    junk = data.draw(st.lists(st.one_of(GARBAGE, NOISY_LINES), min_size=1, max_size=5))
    check_shape(PARSERS[tool]("\n".join(lines[:position] + junk + lines[position:])))


@given(sample=st.sampled_from(ALL_SAMPLES), data=st.data())
def test_lines_cut_in_the_middle(sample, data):
    tool, text = sample
    lines = text.splitlines()
    if not lines:
        return
    index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
    cut = data.draw(st.integers(min_value=0, max_value=len(lines[index])))
    lines[index] = lines[index][:cut]
    check_shape(PARSERS[tool]("\n".join(lines)))


# Truncations that must be reported, not just survived -------------------------------------------

IBSTAT = (FIXTURES / "ibstat" / "gpud_h100_roce_tabs_polling.txt").read_text().splitlines()
PERFTEST = (FIXTURES / "perftest" / "nvidia_gpu_operator_write_bw_a_gbits_roce.txt").read_text().splitlines()
NETDISCOVER = (FIXTURES / "ibnetdiscover" / "handmade_two_leaf_one_spine_full.txt").read_text().splitlines()


@given(keep=st.integers(min_value=0, max_value=len(IBSTAT) - 1))
def test_ibstat_cut_before_a_rate_line_is_an_error(keep):
    text = "\n".join(IBSTAT[:keep])
    result = parse_ibstat(text)
    # Cutting the last port block before its Rate line, or before any CA, must be noticed.
    last_port = max((i for i in range(keep) if re.match(r"^\s*Port \d+:\s*$", IBSTAT[i])), default=None)
    rate_seen = last_port is not None and any(IBSTAT[i].strip().startswith("Rate:") for i in range(last_port, keep))
    if last_port is None or not rate_seen:
        assert result["errors"]


@given(keep=st.integers(min_value=0, max_value=len(PERFTEST) - 1))
def test_perftest_cut_before_the_table_ends_is_an_error(keep):
    result = parse_perftest("\n".join(PERFTEST[:keep]))
    assert result["errors"]


@given(keep=st.integers(min_value=0, max_value=len(NETDISCOVER) - 2))
def test_ibnetdiscover_cut_before_the_ca_blocks_end_is_noticed(keep):
    result = parse_ibnetdiscover("\n".join(NETDISCOVER[:keep]))
    if not any(line.startswith("Ca") for line in NETDISCOVER[:keep]):
        # No CA block yet: nothing at all, a cut line, or nodes seen on ports without their block.
        assert result["errors"]


# counter_deltas with arbitrary structures ----------------------------------------------------------

JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=10)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children,
                                                                               max_size=4)),
    max_leaves=20)
COUNTERS = st.dictionaries(
    st.sampled_from(["mlx5_0", "mlx5_1"]),
    st.dictionaries(st.sampled_from(["1", "2", 1]),
                    st.dictionaries(st.sampled_from(["symbol_error", "link_downed", "port_xmit_wait", "x"]),
                                    st.integers(min_value=-5, max_value=2 ** 40), max_size=4),
                    max_size=2),
    max_size=2)


@given(before=st.one_of(JSONISH, COUNTERS, st.text(max_size=200)),
       after=st.one_of(JSONISH, COUNTERS, st.text(max_size=200)))
def test_counter_deltas_never_raises(before, after):
    result = counter_deltas(before, after)
    check_shape(result)


REAL_COUNTERS = st.dictionaries(
    st.sampled_from(["mlx5_0", "mlx5_1"]),
    st.dictionaries(st.sampled_from(["1", "2"]),
                    st.dictionaries(st.sampled_from(["symbol_error", "link_downed", "port_xmit_wait"]),
                                    st.integers(min_value=0, max_value=2 ** 64 - 1), max_size=3),
                    max_size=2),
    max_size=2)


@given(before=REAL_COUNTERS, after=REAL_COUNTERS)
def test_counter_deltas_are_never_negative(before, after):
    result = counter_deltas(before, after)
    check_shape(result)
    for ca, ports in result["deltas"].items():
        for port, names in ports.items():
            for name, delta in names.items():
                assert 0 <= delta <= after[ca][port][name]
                went_back = after[ca][port][name] < before[ca][port][name]
                assert went_back == ("%s/%s/%s" % (ca, port, name) in result["resets"])


@given(base=REAL_COUNTERS, growth=st.integers(min_value=0, max_value=1000))
def test_counter_deltas_measure_growth(base, growth):
    after = {ca: {port: {name: value + growth for name, value in names.items()}
                  for port, names in ports.items()} for ca, ports in base.items()}
    result = counter_deltas(base, after)
    assert result["resets"] == []
    for ca, ports in base.items():
        for port, names in ports.items():
            assert result["deltas"][ca][port] == {name: growth for name in names}


# Numbers at the edges: huge digit strings, exponents, infinities ----------------------------------

NUMBERISH = st.one_of(
    st.sampled_from(["1e400", "-1e309", "1e-400", "0", "-0", "1.", ".5", "+7", "9" * 30, "9" * 5000, "0x10",
                     "18446744073709551615", "18446744073709551616", "4294967295", "nan", "inf"]),
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr))


@given(cells=st.lists(NUMBERISH, min_size=1, max_size=9))
def test_perftest_rows_with_odd_numbers(cells):
    text = (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n "
            + "    ".join(cells) + "\n" + "-" * 87 + "\n")
    result = parse_perftest(text)
    check_shape(result)
    for row in result["rows"]:
        assert all(math.isfinite(value) for value in row.values() if isinstance(value, float))


@given(value=NUMBERISH, port=NUMBERISH)
def test_counter_and_port_values_with_odd_numbers(value, port):
    check_shape(parse_ib_counters("/sys/class/infiniband/mlx5_0/ports/%s/counters/symbol_error:%s\n" % (port, value)))
    check_shape(parse_ib_counters("# Port counters: Lid %s port %s (CapMask: 0x00)\nSymbolErrorCounter:....%s\n"
                                  % (port, port, value)))


@given(value=NUMBERISH, port=NUMBERISH)
def test_ibstat_values_with_odd_numbers(value, port):
    text = ("CA 'mlx5_0'\n\tNumber of ports: %s\n\tPort %s:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            "\t\tRate: %s\n\t\tBase lid: %s\n\t\tLink layer: InfiniBand\n" % (value, port, value, value))
    check_shape(parse_ibstat(text))


@given(value=NUMBERISH, port=NUMBERISH)
def test_ibnetdiscover_values_with_odd_numbers(value, port):
    text = ('Switch\t%s "S-%s"\t\t# "sw" enhanced port 0 lid %s lmc %s\n'
            '[%s]\t"H-0000000000000001"[%s](1) \t\t# "h1 mlx5_0" lid %s %sxNDR\n'
            'Ca\t%s "H-0000000000000001"\t\t# "h1 mlx5_0"\n'
            '[%s](1) \t"S-%s"[%s]\t\t# lid %s lmc 0 "sw" lid %s 4xNDR\n'
            % (value, port, value, value, port, port, value, value, value, port, port, port, value, value))
    check_shape(parse_ibnetdiscover(text))
