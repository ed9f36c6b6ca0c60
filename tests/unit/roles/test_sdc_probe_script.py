"""The SDC probe itself (roles/check_sdc/files/gpucluster_sdc_probe.py), run for real with PyTorch
on the CPU: bit-identical results across runs and GPUs, a flipped bit changes the checksum."""
import json
import os
import subprocess
import sys

from conftest import REPO

PROBE = REPO / "roles" / "check_sdc" / "files" / "gpucluster_sdc_probe.py"


def _run(*args, env=None):
    environment = dict(os.environ, PATH="/nonexistent")  # no nvidia-smi: one CPU "GPU"
    environment.update(env or {})
    proc = subprocess.run([sys.executable, str(PROBE), "--device", "cpu", "--size", "32", "--seconds", "0",
                           "--iterations", "4", "--max-iterations", "4", "--sample-seconds", "0"] + list(args),
                          capture_output=True, text=True, timeout=300, env=environment, check=False)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _checksums(records):
    return dict((r["workload"], r["checksums"]) for r in records if r["record"] == "result")


def test_repeated_cpu_runs_give_identical_checksums():
    first = _run("--precisions", "fp64,fp32,bf16,fp16")
    second = _run("--precisions", "fp64,fp32,bf16,fp16")
    assert _checksums(first) == _checksums(second)
    for checksums in _checksums(first).values():
        assert len(checksums) == 1 and list(checksums.values())[0][0] == 4  # every iteration the same bits
    header = first[0]
    assert header["record"] == "header" and header["deterministic"]["use_deterministic_algorithms"] is True
    assert header["deterministic"]["cpu_threads"] == 1 and header["simulated"] is False
    assert first[-1]["record"] == "done"


def test_another_seed_gives_other_checksums():
    assert _checksums(_run("--precisions", "fp32")) != _checksums(_run("--precisions", "fp32", "--seed", "7"))


def test_reference_error_is_within_rounding():
    for record in _run("--precisions", "fp64,fp32,bf16"):
        if record["record"] == "result":
            assert 0 <= record["reference"]["max_rel_err"] < 0.01, record


def test_a_hook_that_is_not_a_simulation_is_ignored(tmp_path):
    hook = tmp_path / "hook"
    hook.write_text("#!/bin/sh\necho '{\"gpus\": {}}'\n")
    hook.chmod(0o755)
    header = _run("--precisions", "fp32", "--sim-hook", str(hook))[0]
    assert header["simulated"] is False
    assert any("did not say it is a simulation" in w for w in header["warnings"])


def test_unknown_precision_is_an_error_record():
    environment = dict(os.environ, PATH="/nonexistent")
    proc = subprocess.run([sys.executable, str(PROBE), "--device", "cpu", "--precisions", "int3"],
                          capture_output=True, text=True, timeout=300, env=environment, check=False)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 2 and records[-1]["record"] == "error" and "int3" in records[-1]["message"]


def test_deterministic_kernels_without_importing_the_graph_compiler():
    # torch.use_deterministic_algorithms also imports torch._inductor (a second torch import's worth
    # of CPU on every node): the probe sets the eager flag alone, and the flag is the same one.
    code = ("import importlib.util, sys, torch\n"
            "spec = importlib.util.spec_from_file_location('probe', sys.argv[1])\n"
            "probe = importlib.util.module_from_spec(spec); spec.loader.exec_module(probe)\n"
            "assert not torch.are_deterministic_algorithms_enabled()\n"
            "probe.deterministic(torch)\n"
            "print(torch.are_deterministic_algorithms_enabled(), 'torch._inductor' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(PROBE)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]
