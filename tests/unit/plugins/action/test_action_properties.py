"""The action family: every action plugin of the collection, run with garbage arguments and output.

Property: an action returns a result (a failed one with a message) or raises Ansible's own error
with a message; never another Python exception (Ansible reports that as "Unexpected failure during
module execution" and a traceback). Actions are found by listing plugins/action; each one's
argument spec is its module-level ARGUMENT_SPEC, so a new action or option is tried without a line
here.

What comes from outside is garbage too: the node's collector output and exit status (the
connection answers with drawn text), a replay directory's files, a results.json, and a node state
a hostile inventory put in the host's facts.
"""
import importlib
import json
import os
import tempfile
import types

import pytest
from hypothesis import event, given, strategies as st

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task
from ansible.template import Templar

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard
from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES

from conftest import REPO, garbage

PACKAGE = "ansible_collections.gpucluster.acceptance.plugins.action."
ACTIONS = sorted(path.stem for path in (REPO / "plugins" / "action").glob("*.py") if not path.name.startswith("_"))
GARBAGE = garbage()
SCRATCH = tempfile.mkdtemp(prefix="gc-action-props-")
STATUSES = ("pass", "fail", "error", "skip")
# Words of the collector's and the tools' formats: output that looks like output.
WORDS = ["==> gpucluster-collect", "tool=nvidia-smi", "rc=0", "seconds=1.2.3", "seconds=1e309", "<==", "GPU 0",
         "PASS", "N/A", "{", '{"record": "header"}', "mlx5_0", "State: Active", "\u00b2", "9" * 40, "\x00", "#", ""]
OUTPUT = st.lists(st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join), max_size=12).map("\n".join)
LOADER = DataLoader()


def _typed(name, spec):
    if spec.get("choices"):
        return st.sampled_from(list(spec["choices"]))
    kind = spec.get("type", "str")
    if name == "tools":
        return st.lists(st.fixed_dictionaries({"name": st.sampled_from(["nvidia-smi", "dmesg", "x", ""]),
                                               "argv": st.lists(st.sampled_from(["nvidia-smi", "-q", ""]), max_size=3)},
                                              optional={"timeout": GARBAGE, "pause_before": GARBAGE}), max_size=3)
    if name == "checks":
        return st.lists(st.fixed_dictionaries({"check": st.sampled_from(["a", "b", ""]),
                                               "status": st.sampled_from(STATUSES + ("warn", ""))},
                                              optional={"message": GARBAGE, "metrics": GARBAGE}), max_size=3)
    return {"bool": st.booleans(), "dict": st.dictionaries(st.text(max_size=6), GARBAGE, max_size=3),
            "list": st.lists(GARBAGE, max_size=3), "path": st.text(max_size=8).map(lambda t: os.path.join(SCRATCH, t)),
            "str": st.text(max_size=12)}.get(kind, GARBAGE)


def _args(data, spec):
    odd = data.draw(st.sampled_from([None, None] + sorted(spec)), label="the odd option")
    args = {}
    for name, option in sorted(spec.items()):
        if not option.get("required") and name != odd and data.draw(st.booleans(), label="leave out " + name):
            continue
        args[name] = data.draw(GARBAGE if name == odd else _typed(name, option), label=name)
    return args


def _replay_dir(data, stage):
    """A run directory a replay reads: files of drawn output for some nodes, a drawn results.json."""
    folder = tempfile.mkdtemp(dir=SCRATCH)
    for node in data.draw(st.lists(st.sampled_from(["gpu001", "gpu002"]), unique=True), label="nodes captured"):
        os.makedirs(os.path.join(folder, "raw", node))
        for tool in STAGES[stage][0]:
            with open(os.path.join(folder, "raw", node, tool + ".txt"), "w") as handle:
                handle.write(data.draw(OUTPUT, label=tool))
    with open(os.path.join(folder, "results.json"), "w") as handle:
        handle.write(json.dumps(data.draw(GARBAGE, label="results.json"), default=str))
    return folder


def _action(name, args, check_mode, run_once, answer):
    task = Task()
    task.args = args
    task.action = "gpucluster.acceptance." + name
    task.check_mode = check_mode
    task.run_once = run_once
    connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=None))
    action = importlib.import_module(PACKAGE + name).ActionModule(task, connection, PlayContext(), LOADER,
                                                                  Templar(loader=LOADER), None)
    action._low_level_execute_command = lambda *a, **k: answer  # the node answers with drawn output
    return action


def test_every_action_is_found():
    assert set(ACTIONS) >= {"collect_stage", "fold_stage", "results_ready", "run_verdict"}, ACTIONS


@given(name=st.sampled_from(ACTIONS), check_mode=st.booleans(), data=st.data())
def test_garbage_ends_in_a_result_or_an_ansible_error(name, check_mode, data):
    spec = getattr(importlib.import_module(PACKAGE + name), "ARGUMENT_SPEC", {})
    args = _args(data, spec)
    task_vars = {"inventory_hostname": data.draw(st.sampled_from(["gpu001", "gpu002"]), label="node"),
                 "ansible_play_batch": ["gpu001", "gpu002"]}
    if data.draw(st.booleans(), label="a state in the facts"):
        task_vars["collect_node_state"] = data.draw(GARBAGE, label="collect_node_state")
    if name == "collect_stage":
        args["script"] = "true"  # the collector is never read from disk or run: the node's answer is drawn
        if args.get("transport") == "srun" or data.draw(st.booleans(), label="replay"):
            stage = args.get("stage")
            args["replay_dir"] = _replay_dir(data, stage if isinstance(stage, str) and stage in STAGES else "gpu_health")
    if name == "run_verdict" and data.draw(st.booleans(), label="results file"):
        path = os.path.join(tempfile.mkdtemp(dir=SCRATCH), "results.json")
        with open(path, "w") as handle:
            handle.write(data.draw(st.one_of(GARBAGE.map(lambda v: json.dumps(v, default=str)), OUTPUT), label="results"))
        args["results"] = path
    answer = {"stdout": data.draw(OUTPUT, label="stdout"), "stderr": data.draw(OUTPUT, label="stderr"),
              "rc": data.draw(st.sampled_from([0, 1, 2, 124, 137, None]), label="rc")}
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GPUCLUSTER_RUN_DIR", raising=False)
        patch.chdir(SCRATCH)  # a garbage relative path (say "-12") lands in the scratch folder
        patch.setattr(_guard.Guard, "start", lambda self: self)  # no watcher thread per call: nothing runs
        action = _action(name, args, check_mode, data.draw(st.booleans(), label="run_once"), answer)
        try:
            result = action.run(task_vars=task_vars)
        except AnsibleError as exc:
            event("%s: AnsibleError" % name)
            assert str(exc).strip(), name
            return
    event("%s: %s" % (name, "failed" if result.get("failed") else "result"))
    assert isinstance(result, dict), result
    if result.get("failed"):
        assert isinstance(result.get("msg"), str) and result["msg"].strip(), result
    for check in (((result.get("ansible_facts") or {}).get("collect_node_state") or {}).get("last") or {}).get("checks", []):
        assert check["status"] in STATUSES, check
