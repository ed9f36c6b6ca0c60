# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake tools' parsed-spec cache (sim/gpusim/spec.py read_cached): a spec changed on a running
cluster, in place or by an atomic rewrite, is always read afresh; a damaged cache is parsed past;
what the tools print is the same with or without it."""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sim"))

from gpusim import cli, spec  # noqa: E402  pylint: disable=wrong-import-position

SPEC = """name: cachet
profile: hgx_h100_sxm
nodes: {prefix: gpu, count: 2, width: 3, start: 1}
faults: []
"""


def _write(path, text):
    path.write_text(text)
    return path


def test_a_kept_parse_is_used_while_the_file_is_the_same(tmp_path):
    path = _write(tmp_path / "spec.yml", SPEC)
    cache = tmp_path / "run" / "gpusim"
    assert spec.read_cached(str(path), str(cache))["name"] == "cachet"
    kept = json.loads((cache / spec.SPEC_CACHE).read_text())
    # What is kept is what is returned while the key holds: plant another name under the same key.
    kept["data"]["name"] = "planted"
    (cache / spec.SPEC_CACHE).write_text(json.dumps(kept))
    assert spec.read_cached(str(path), str(cache))["name"] == "planted"


def test_an_edit_in_place_or_an_atomic_rewrite_is_read_afresh(tmp_path):
    path = _write(tmp_path / "spec.yml", SPEC)
    cache = str(tmp_path / "run" / "gpusim")
    assert spec.read_cached(str(path), cache)["faults"] == []
    fault = SPEC.replace("faults: []", "faults: [{kind: xid, node: gpu002, gpu: 1, xid: 79}]")
    with open(path, "r+", encoding="utf-8") as handle:  # same inode
        handle.write(fault)
    assert spec.read_cached(str(path), cache)["faults"][0]["xid"] == 79
    renamed = _write(tmp_path / "spec.yml.new", fault.replace("79", "48"))
    os.replace(renamed, path)  # new inode, maybe the same size and time
    assert spec.read_cached(str(path), cache)["faults"][0]["xid"] == 48


def test_a_damaged_or_unwritable_cache_is_parsed_past(tmp_path):
    path = _write(tmp_path / "spec.yml", SPEC)
    cache = tmp_path / "run" / "gpusim"
    cache.mkdir(parents=True)
    for junk in ("", "{", "[]", '{"key": 1}', '{"key": null, "data": 3}'):
        (cache / spec.SPEC_CACHE).write_text(junk)
        assert spec.read_cached(str(path), str(cache))["name"] == "cachet", junk
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    assert spec.read_cached(str(path), str(blocked))["name"] == "cachet"


def test_a_missing_spec_still_names_the_file(tmp_path):
    try:
        spec.load(str(tmp_path / "missing.yml"), cache_dir=str(tmp_path / "run"))
    except spec.SpecError as exc:
        assert "missing.yml: no such spec file" in str(exc)
    else:
        raise AssertionError("a missing spec loaded")


def test_the_tools_print_the_same_with_and_without_the_cache(tmp_path):
    path = _write(tmp_path / "spec.yml", SPEC.replace("faults: []", "faults: [{kind: xid, node: gpu002, gpu: 1, xid: 79}]"))
    env = {"GPUCLUSTER_SIM_SPEC": str(path), "GPUCLUSTER_SIM_NODE": "gpu002"}
    plain = cli.run_tool("dmesg", [], env)[0]
    cached = dict(env, GPUCLUSTER_SIM_RUN=str(tmp_path / "run"))
    first = cli.run_tool("dmesg", [], cached)[0]
    assert (tmp_path / "run" / "gpusim" / spec.SPEC_CACHE).exists()
    second = cli.run_tool("dmesg", [], cached)[0]
    assert "Xid" in plain.out and (plain.out, plain.code) == (first.out, first.code) == (second.out, second.code)
