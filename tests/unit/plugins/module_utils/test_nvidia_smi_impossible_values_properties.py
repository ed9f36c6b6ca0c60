# -*- coding: utf-8 -*-
"""Property tests: a real nvidia-smi output (-q or CSV) with one value made impossible is never
judged pass, and no NaN or Infinity reaches a result.

Impossible: a negative or non-finite temperature or error count, a count that is not a whole
number, a number too large for a float (1e309), a PCI bus id that is not one. Uses the
hypothesis profile loaded by tests/conftest.py (no max_examples here).
"""

import json
import re

from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_common import worst_status
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import judge_gpu_health
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi import (
    normalize_bus_id, parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile

from conftest import FIXTURES

PROFILE = load_profile("hgx_h100_sxm")
Q_FIXTURES = ("q_h100_sxm_8gpu_565.txt", "q_a100_sxm4_4gpu_pending_remap_555.txt",
              "q_p100_460_old_layout_excerpt.txt", "q_a10g_1gpu_535.txt")
CSV_FIXTURES = ("csv_h100_8gpu_units_handmade.csv", "csv_h100_8gpu_nounits_handmade.csv")
_TEXT = {}

NON_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-1e309", "9" * 400])
NEGATIVE = st.one_of(st.integers(min_value=-10 ** 12, max_value=-1).map(str),
                     st.floats(min_value=-1e12, max_value=-1e-3, allow_nan=False).map(lambda f: "%.3f" % f))
FRACTION = st.floats(min_value=0.001, max_value=1e9, allow_nan=False).filter(
    lambda f: not float("%.3f" % f).is_integer()).map(lambda f: "%.3f" % f)
HOT = st.integers(min_value=201, max_value=10 ** 9).map(str)
NOT_A_BUS_ID = st.text(alphabet="0123456789abcdefABCDEFxyzXYZ:.-_", min_size=1, max_size=24).filter(
    lambda t: normalize_bus_id(t) is None)


def text_of(name):
    if name not in _TEXT:
        _TEXT[name] = (FIXTURES / "nvidia_smi" / name).read_text()
    return _TEXT[name]


def never_pass(results):
    json.dumps(results, allow_nan=False)  # no NaN or Infinity in any result
    assert worst_status(results) in ("fail", "error"), [r["message"] for r in results]


# ------------------------------------------------------------------------------------ -q ----

_KEY = re.compile(r"^(\s+)([^:]+?)(\s*:\s*)(.*)$")


def q_lines(name, sections, exclude=("Threshold",)):
    """(line number, indentation, key) of the value lines inside the named -q sections."""
    found = []
    current = None
    for number, line in enumerate(text_of(name).split("\n")):
        depth = len(line) - len(line.lstrip(" "))
        stripped = line.strip()
        if depth == 4 and ":" not in stripped:
            current = stripped
        elif depth == 4:
            current = None
        match = _KEY.match(line)
        if match and current in sections and match.group(4).strip() and depth > 4 \
                and not any(word in match.group(2) for word in exclude) \
                and match.group(4).strip().lower() not in ("n/a", "yes", "no"):
            found.append(number)
    return found


def perturb_q(name, number, value):
    lines = text_of(name).split("\n")
    match = _KEY.match(lines[number])
    unit = " C" if match.group(4).strip().endswith(" C") else ""
    lines[number] = "%s%s%s%s%s" % (match.group(1), match.group(2), match.group(3), value, unit)
    return "\n".join(lines)


COUNT_SECTIONS = ("ECC Errors", "Retired Pages", "Remapped Rows", "Aggregate Uncorrectable SRAM Sources")


@st.composite
def q_count_case(draw):
    name = draw(st.sampled_from([n for n in Q_FIXTURES if q_lines(n, COUNT_SECTIONS)]))
    number = draw(st.sampled_from(q_lines(name, COUNT_SECTIONS)))
    value = draw(st.one_of(NON_FINITE, NEGATIVE, FRACTION))
    return name, number, value


@given(q_count_case())
def test_q_impossible_error_count_is_never_a_pass(case):
    name, number, value = case
    results = judge_gpu_health(parse_nvidia_smi_q(perturb_q(name, number, value)), None, None, PROFILE)
    never_pass(results)
    assert any(r["status"] == "error" and "line %d:" % (number + 1) in r["message"] for r in results)


@st.composite
def q_temperature_case(draw):
    name = draw(st.sampled_from([n for n in Q_FIXTURES if q_lines(n, ("Temperature",))]))
    number = draw(st.sampled_from(q_lines(name, ("Temperature",))))
    tlimit = "T.Limit" in text_of(name).split("\n")[number]
    value = draw(NON_FINITE if tlimit else st.one_of(NON_FINITE, NEGATIVE, HOT))
    return name, number, value


@given(q_temperature_case())
def test_q_impossible_temperature_is_never_a_pass(case):
    name, number, value = case
    results = judge_gpu_health(parse_nvidia_smi_q(perturb_q(name, number, value)), None, None, PROFILE)
    never_pass(results)
    assert any(r["status"] == "error" and "line %d:" % (number + 1) in r["message"] for r in results)


@given(st.sampled_from(Q_FIXTURES), NOT_A_BUS_ID, st.integers(min_value=0, max_value=7))
def test_q_bus_id_that_is_not_one_is_never_a_pass(name, bad, which):
    text = text_of(name)
    headers = re.findall(r"^GPU ([0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d)$", text, re.M)
    bus = headers[which % len(headers)]
    # The section header, or the PCI section's Bus Id line.
    for variant in (text.replace("GPU %s\n" % bus, "GPU %s\n" % bad, 1),
                    re.sub(r"(Bus Id\s+: )%s" % re.escape(bus), lambda m: m.group(1) + bad, text, count=1)):
        never_pass(judge_gpu_health(parse_nvidia_smi_q(variant), None, None, PROFILE))


# ----------------------------------------------------------------------------------- CSV ----

CSV_COLUMNS = ("temperature.gpu", "temperature.memory", "ecc.errors.uncorrected.volatile.total", "index")


@st.composite
def csv_case(draw):
    name = draw(st.sampled_from(CSV_FIXTURES))
    lines = text_of(name).split("\n")
    header = [re.sub(r"\s*\[.*\]$", "", c.strip()) for c in lines[0].split(",")]
    column = draw(st.sampled_from(CSV_COLUMNS + ("pci.bus_id",)))
    row = draw(st.integers(min_value=1, max_value=len([l for l in lines if l.strip()]) - 1))
    if column == "pci.bus_id":
        value = draw(NOT_A_BUS_ID.filter(lambda t: "," not in t))
    elif column.startswith("temperature."):
        value = draw(st.one_of(NON_FINITE, NEGATIVE, HOT))
    else:
        value = draw(st.one_of(NON_FINITE, NEGATIVE, FRACTION))
    cells = lines[row].split(",")
    cells[header.index(column)] = " " + value
    lines[row] = ",".join(cells)
    return "\n".join(lines), row


@given(csv_case())
def test_csv_impossible_value_is_never_a_pass(case):
    text, row = case
    parsed = parse_nvidia_smi_csv(text)
    assert any(e.startswith("line %d:" % (row + 1)) for e in parsed["errors"])
    never_pass(judge_gpu_health(None, parsed, None, PROFILE))
    # The same CSV next to a healthy -q: the CSV's error still keeps the node from passing.
    never_pass(judge_gpu_health(HEALTHY_Q, parsed, None, PROFILE))


HEALTHY_Q = parse_nvidia_smi_q(text_of("q_h100_sxm_8gpu_565.txt"))
