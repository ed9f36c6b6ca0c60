"""parse_fio over real fio 3.33 JSON (tests/fixtures/checkpoint)."""
import json

import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._fio import parse_fio, side_of

from conftest import FIXTURES


def _text(name):
    return (FIXTURES / "checkpoint" / name).read_text()


def test_write_then_read_jobs_give_their_rates_and_latencies():
    parsed = parse_fio(_text("fio_write_read.json"))
    assert parsed["errors"] == [] and parsed["version"] == "fio-3.33"
    assert [(j["name"], j["error"]) for j in parsed["jobs"]] == [("write", 0), ("read", 0)]
    write, job = side_of(parsed, "write")
    assert job["name"] == "write" and write["bytes"] == 32 * 1024 * 1024
    document = json.loads(_text("fio_write_read.json"))["jobs"][0]["write"]
    assert write["bw_bytes"] == document["bw_bytes"] and write["mb_s"] == pytest.approx(document["bw_bytes"] / 1e6)
    assert write["clat_p99_ms"] == pytest.approx(document["clat_ns"]["percentile"]["99.000000"] / 1e6)
    assert write["runtime_s"] == pytest.approx(document["runtime"] / 1000.0)
    read, job = side_of(parsed, "read")
    assert job["name"] == "read" and read["bytes"] == 32 * 1024 * 1024 and read["mb_s"] > 0
    assert parsed["jobs"][0]["read"] is None and parsed["jobs"][1]["write"] is None  # a side with no bytes


def test_the_decoded_document_is_read_the_same():
    assert parse_fio(json.loads(_text("fio_write_read.json"))) == parse_fio(_text("fio_write_read.json"))


def test_enospc_messages_before_the_json_and_the_job_error():
    text = _text("fio_enospc_stdout.txt")
    assert text.startswith("fio: ENOSPC on laying out file")
    parsed = parse_fio(text)
    assert parsed["errors"] == []
    assert parsed["jobs"][0]["name"] == "write" and parsed["jobs"][0]["error"] == 28


@pytest.mark.parametrize("text, fragment", [
    ("", "no JSON document"),
    ("fio: unrecognized option '--bogus'\n", "no JSON document in fio's output (fio: unrecognized option"),
    ('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n    {', "fio's JSON cannot be read"),
    ('{"fio version": "fio-3.33", "jobs": []}', "has no jobs"),
    ('[1, 2]', "no JSON document"),
])
def test_unreadable_output_is_an_error_never_a_number(text, fragment):
    parsed = parse_fio(text)
    assert parsed["jobs"] == [] and any(fragment in e for e in parsed["errors"]), parsed["errors"]


def test_a_job_without_error_field_is_named():
    document = json.loads(_text("fio_write_read.json"))
    del document["jobs"][1]["error"]
    parsed = parse_fio(document)
    assert parsed["errors"] == ["jobs[1] has no error field"] and parsed["jobs"][1]["error"] is None
