"""parse_sdc_probe over real probe outputs (tests/fixtures/sdc), and outputs broken the ways real
runs break them (a prompt above, a cut line, a run killed before its last record)."""
import json

from ansible_collections.gpucluster.acceptance.plugins.module_utils._sdc_probe import dominant, parse_sdc_probe

from conftest import FIXTURES


def _text(name):
    return (FIXTURES / "sdc" / name).read_text()


def test_real_output_is_read_whole():
    parsed = parse_sdc_probe(_text("gpu004.jsonl"))
    assert parsed["errors"] == [] and parsed["other"] == [] and parsed["probe_errors"] == []
    assert parsed["header"]["device"] == "cpu" and parsed["header"]["simulated"] is True
    assert len(parsed["header"]["gpus"]) == 8
    assert len(parsed["results"]) == 8 * 6
    assert sorted(parsed["samples"]) == list(range(8))
    assert parsed["done"]["iterations"] == 20


def test_a_prompt_and_a_cut_line_are_reported_beside_the_results():
    lines = _text("gpu001.jsonl").splitlines()
    cut = lines[5][:40]
    text = "\n".join(["[user@gpu001 ~]$ python3 probe.py"] + lines[:5] + [cut] + lines[6:])
    parsed = parse_sdc_probe(text)
    assert parsed["other"] == ["line 1: [user@gpu001 ~]$ python3 probe.py"]
    assert len(parsed["errors"]) == 1 and parsed["errors"][0].startswith("line 7: not a probe record")
    assert len(parsed["results"]) == 8 * 6 - 1  # every other result is still there
    assert parsed["done"] is not None


def test_killed_run_has_no_done_record():
    lines = _text("gpu004.jsonl").splitlines()
    parsed = parse_sdc_probe("\n".join(lines[:10]))
    assert parsed["done"] is None and parsed["errors"] == []
    assert len(parsed["results"]) == sum('"record": "result"' in l for l in lines[:10]) > 0


def test_counts_that_do_not_add_up_are_an_error_not_a_result():
    lines = _text("gpu004.jsonl").splitlines()
    record = json.loads(lines[1])
    key = next(iter(record["checksums"]))
    record["checksums"][key][0] += 1
    lines[1] = json.dumps(record)
    parsed = parse_sdc_probe("\n".join(lines))
    assert any("do not add up" in e for e in parsed["errors"])
    assert len(parsed["results"]) == 8 * 6 - 1


def test_a_result_reported_twice_is_not_counted_twice():
    lines = _text("gpu004.jsonl").splitlines()
    parsed = parse_sdc_probe("\n".join(lines[:2] + lines[1:]))
    assert any("reported twice" in e for e in parsed["errors"])


def test_dominant_checksum_and_ties():
    assert dominant({"a" * 32: [3, 0, 5], "b" * 32: [17, 1, 19]}) == ("b" * 32, 17)
    # A tie goes to the checksum seen first.
    assert dominant({"b" * 32: [2, 0, 3], "a" * 32: [2, 1, 2]}) == ("b" * 32, 2)
    assert dominant({}) == (None, 0)


def test_nothing_is_nothing():
    assert parse_sdc_probe(None)["header"] is None
    assert parse_sdc_probe("")["results"] == []
