"""playbooks/data_transfer.yml for real: manifest a tree, copy it with rsync, break the copy the
ways copies break, verify it on four nodes (one share each) and on one, follow a running rsync.

Every verdict is read from the run's validated results.json and junit.xml. No sleeps: the
progress test waits on the destination growing, with a deadline.
"""
import json
import random
import shutil
import subprocess

import pytest
import yaml

from harness import playbook, wait_for

pytestmark = pytest.mark.integration

NODES = ["gpu001", "gpu002", "gpu003", "gpu004"]


def make_tree(root, files=24, seed=3):
    rng = random.Random(seed)
    for i in range(files):
        path = root / ("shard-%02d" % (i % 4)) / ("part-%03d.tar" % i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randint(1, 64) * 1024))
    (root / "README").write_text("a corpus\n")


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    work = tmp_path_factory.mktemp("xfer")
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    data = {"all": {"children": {"gpu_nodes": {"hosts": dict((n, dict(local)) for n in NODES)}},
                    "hosts": {"localhost": dict(local)}}}
    path = work / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(inventory, artifacts, *args):
    done = playbook(inventory, artifacts, *args, playbook_name="data_transfer.yml", timeout=600)
    assert done.results is not None, done.output[-3000:]
    return done


def problems(done):
    return sorted((c["check"], c["component"]) for c in done.results["checks"]
                  if c["status"] in ("fail", "error") and c["stage"] == "data_transfer" and c["check"] != "transfer.verified")


@pytest.fixture(scope="module")
def copied(tmp_path_factory, inventory):
    work = tmp_path_factory.mktemp("copy")
    src, dst, manifest = work / "src", work / "dst", work / "corpus.manifest"
    make_tree(src)
    created = run(inventory, work / "artifacts", "--tags", "create", "-e", "data_transfer_source=%s" % src,
                  "-e", "data_transfer_manifest=%s" % manifest)
    assert created.rc == 0, created.output[-3000:]
    subprocess.run(["rsync", "-a", "%s/" % src, "%s/" % dst], check=True, timeout=120)
    return work, src, dst, manifest, created


def verify(inventory, work, dst, manifest, *extra):
    return run(inventory, work / "artifacts", "--tags", "verify", "-e", "data_transfer_destination=%s" % dst,
               "-e", "data_transfer_manifest=%s" % manifest, *extra)


def test_manifest_is_a_valid_bag_and_sha256sum_file(copied):
    import bagit
    work, _src, dst, manifest, created = copied
    (check,) = [c for c in created.results["checks"] if c["check"] == "transfer.manifest"]
    assert "manifest of 25 files" in check["message"] and check["status"] == "pass"
    # The manifest directory is a BagIt bag once the copy is its data/ (bagit refuses a symlink
    # leading out of the bag)
    bag_dir = work / "bag"
    shutil.copytree(manifest, bag_dir)
    shutil.copytree(dst, bag_dir / "data")
    bagit.Bag(str(bag_dir)).validate()
    check_sums = subprocess.run(["sha256sum", "-c", "--quiet", str(manifest / "SHA256SUMS")], cwd=str(dst),
                                capture_output=True, text=True, timeout=120, check=False)
    assert check_sums.returncode == 0, check_sums.stdout + check_sums.stderr


def test_clean_copy_passes_on_four_nodes(copied, inventory):
    work, _src, dst, manifest, _created = copied
    done = verify(inventory, work, dst, manifest)
    assert done.rc == 0, done.output[-3000:]
    verified = [c for c in done.results["checks"] if c["check"] == "transfer.verified"]
    assert len(verified) == 4 and all(c["status"] == "pass" for c in verified)
    assert sum(c["metrics"]["files"] for c in verified) == 25
    assert done.results["transfer"]["verification"]["files"] == 25


def test_broken_copy_names_each_file_exactly_and_one_node_agrees(tmp_path, copied, inventory):
    work, _src, dst0, manifest, _created = copied
    dst = tmp_path / "dst"
    shutil.copytree(dst0, dst)
    (dst / "shard-01" / "part-005.tar").write_bytes((dst / "shard-01" / "part-005.tar").read_bytes()[:100])  # truncated
    target = dst / "shard-02" / "part-006.tar"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    target.write_bytes(bytes(data))
    (dst / "shard-03" / "part-007.tar").unlink()  # missing
    (dst / "shard-00" / "stray.bin").write_bytes(b"x" * 10)  # extra
    (dst / "shard-00" / "part-999.tar.part").write_bytes(b"y" * 10)  # still being written
    expected = [("transfer.checksum", "shard-02/part-006.tar"), ("transfer.extra", "shard-00/stray.bin"),
                ("transfer.in_progress", "shard-00/part-999.tar.part"), ("transfer.missing", "shard-03/part-007.tar"),
                ("transfer.size", "shard-01/part-005.tar")]
    four = verify(inventory, work, dst, manifest)
    assert four.rc != 0 and problems(four) == expected
    one = verify(inventory, work, dst, manifest, "-e", "data_transfer_nodes=gpu003")
    assert problems(one) == expected
    junit = [case.get("name") for case in four.junit.iter("testcase")
             if case.find("failure") is not None or case.find("error") is not None]
    for _check, path in expected:
        assert any(path in name for name in junit), (path, junit)
    (size,) = [c for c in four.results["checks"] if c["check"] == "transfer.size"]
    assert "(truncated)" in size["message"]
    assert four.results["transfer"]["verification"]["missing"] == 1
    assert "Data transfer" in (four.dir / "report.html").read_text()
    assert 'gpucluster_acceptance_transfer_verification_files{result="missing"} 1' in (four.dir / "metrics.prom").read_text()


def test_second_verification_rehashes_only_what_changed(tmp_path, copied, inventory):
    work, _src, dst0, manifest, _created = copied
    dst = tmp_path / "dst"
    shutil.copytree(dst0, dst)
    cache = ["-e", "data_transfer_verify_cache=%s/cache-{{ inventory_hostname }}.jsonl" % tmp_path]
    first = verify(inventory, work, dst, manifest, *cache)
    second_file = dst / "shard-00" / "part-000.tar"
    data = bytearray(second_file.read_bytes())
    data[0] ^= 0xFF
    second_file.write_bytes(bytes(data))
    second = verify(inventory, work, dst, manifest, *cache)

    def counts(done):
        checks = [c for c in done.results["checks"] if c["check"] == "transfer.verified"]
        return sum(c["metrics"]["ok"] for c in checks), [c["message"] for c in checks]
    assert first.rc == 0 and counts(first)[0] == 25
    assert problems(second) == [("transfer.checksum", "shard-00/part-000.tar")]
    messages = " ".join(counts(second)[1])
    assert "1 hashed now" in messages and "0 hashed now" in messages  # the other nodes rehashed nothing


def test_progress_and_eta_while_rsync_runs(tmp_path, inventory):
    src, dst, manifest = tmp_path / "src", tmp_path / "dst", tmp_path / "m"
    make_tree(src, files=16, seed=9)
    artifacts = tmp_path / "artifacts"
    assert run(inventory, artifacts, "--tags", "create", "-e", "data_transfer_source=%s" % src,
               "-e", "data_transfer_manifest=%s" % manifest).rc == 0
    total = sum(f.stat().st_size for f in src.rglob("*") if f.is_file())
    args = ["--tags", "progress", "-e", "data_transfer_destination=%s" % dst, "-e", "data_transfer_manifest=%s" % manifest,
            "-e", "data_transfer_egress_price_per_gb=0.09"]
    # --bwlimit keeps the copy running for minutes (KiB/s); the test stops it when done.
    copy = subprocess.Popen(["rsync", "-a", "--bwlimit=16", "%s/" % src, "%s/" % dst], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        def arrived():
            return sum(f.stat().st_size for f in dst.rglob("*") if f.is_file()) if dst.exists() else 0
        wait_for(lambda: arrived() > 0, 120, "rsync to write its first bytes")
        first = run(inventory, artifacts, *args)
        seen = arrived()
        wait_for(lambda: arrived() > seen, 120, "more bytes to arrive")
        second = run(inventory, artifacts, *args)
    finally:
        copy.kill()
        copy.wait(timeout=30)
    p1, p2 = first.results["transfer"]["progress"], second.results["transfer"]["progress"]
    assert p1["bytes_total"] == p2["bytes_total"] == total
    assert 0 < p1["bytes_arrived"] < p2["bytes_arrived"] < total
    assert p1["rate_bytes_per_s"] is None  # one observation: no rate yet
    assert p2["rate_bytes_per_s"] > 0 and p2["eta_s"] > 0
    assert p2["remaining_cost"] == round((total - p2["bytes_arrived"]) / 1e9 * 0.09, 2)
    (check,) = [c for c in second.results["checks"] if c["check"] == "transfer.progress"]
    assert check["status"] == "pass" and "ETA" in check["message"] and "arrived" in check["message"]
    prom = (second.dir / "metrics.prom").read_text()
    assert 'gpucluster_acceptance_transfer_bytes{kind="arrived"} %d' % p2["bytes_arrived"] in prom
    assert "gpucluster_acceptance_transfer_eta_seconds" in prom
    assert "ETA" in (second.dir / "report.html").read_text()
    json.dumps(p2)
