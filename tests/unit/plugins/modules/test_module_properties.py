"""The module family: every module of the collection with a main(), run in-process with garbage.

Property: a module ends in exit_json or fail_json (a message naming what was wrong), never in a
Python exception (Ansible shows that as "MODULE FAILURE" and a traceback naming nothing the user
gave). Modules are found by listing plugins/modules; each one's own argument spec is read from
its AnsibleModule call, so a new module or option is tried without a line here.

Values are drawn by the option's type most of the time (so the module gets past its argument spec
and into its own code) and as garbage of any type otherwise. Every path points into a scratch
directory, every command is looked up on an empty PATH, and run_command answers with garbage: no
draw reaches the machine's Slurm or file system outside the scratch directory.
"""
import decimal
import importlib
import math
import os
import tempfile

import pytest
from hypothesis import event, given, strategies as st

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _guard

from conftest import REPO, garbage

PACKAGE = "ansible_collections.gpucluster.acceptance.plugins.modules."
MODULES = sorted(path.stem for path in (REPO / "plugins" / "modules").glob("*.py")
                 if not path.name.startswith("_") and "def main(" in path.read_text())
SCRATCH = tempfile.mkdtemp(prefix="gc-module-props-")
EMPTY_PATH = os.path.join(SCRATCH, "no-commands-here")
STATUSES = ("pass", "fail", "error", "skip")
# Options that name a program: drawn as names no empty PATH has (never an absolute path to a real tool).
COMMANDS = ("binary", "mpi", "ibnetdiscover_command", "scontrol_command", "scontrol_path")


class Ended(BaseException):
    """exit_json/fail_json end the module as SystemExit does: no `except Exception` catches it."""

    def __init__(self, how, result):
        BaseException.__init__(self, how)
        self.how, self.result = how, result


def _exit_json(self, **result):  # pylint: disable=unused-argument
    raise Ended("exit", result)


def _fail_json(self, msg=None, **result):  # pylint: disable=unused-argument
    raise Ended("fail", dict(result, msg=msg))


class Specs(object):
    """Each module's argument spec, as its main() hands it to AnsibleModule."""

    found = {}

    @classmethod
    def of(cls, name):
        if name not in cls.found:
            seen = {}

            def capture(self, argument_spec=None, **kwargs):  # pylint: disable=unused-argument
                seen.update(argument_spec)
                raise Ended("spec", {})
            module = importlib.import_module(PACKAGE + name)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(basic.AnsibleModule, "__init__", capture)
                try:
                    module.main()
                except Ended:
                    pass
            cls.found[name] = seen
        return cls.found[name]


def _scratch_tree():
    os.makedirs(EMPTY_PATH, exist_ok=True)
    data = os.path.join(SCRATCH, "data")
    os.makedirs(os.path.join(data, "sub"), exist_ok=True)
    for name, text in (("a.bin", "abc"), ("sub/b.txt", "x" * 100), ("garbage.json", "{not json"),
                       ("index.jsonl", '{"path": "a.bin", "size": "x"}\n[1,2]\n\x00\n'), ("results.json", "[]")):
        with open(os.path.join(data, name), "w") as handle:
            handle.write(text)
    return data


DATA = _scratch_tree()
PATHS = st.sampled_from(["", DATA, os.path.join(DATA, "a.bin"), os.path.join(DATA, "garbage.json"),
                         os.path.join(DATA, "index.jsonl"), os.path.join(DATA, "sub"), os.path.join(DATA, "missing"),
                         os.path.join(SCRATCH, "out", "new.txt"), os.path.join(DATA, "results.json")])
# 400 digits, not 5,000: a string of more than 4,300 digits given to an int option stops
# ansible-core's own AnsibleModule (its invocation log), before any line of a module runs.
GARBAGE = garbage(digits=400)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from(["", "x", "9" * 400, "1e309", "\x00", "\u00b2", "gpu001", "-1"]), st.text(max_size=12))
# Names a hostlist can hold (and one with '&', which a shell replacement would mangle); odd names
# come as the odd option's garbage.
NODES = st.lists(st.sampled_from(["gpu001", "gpu002", "gpu003", "n1", "x&y"]), max_size=4)
PROGRAMS = st.sampled_from(["no-such-tool", "all_reduce_perf", "scontrol", "ib write", ""])


def _typed(name, spec):
    """A value of the option's own type (or one of its choices), odd where the type allows."""
    if name in COMMANDS:
        return st.lists(PROGRAMS, min_size=1, max_size=3) if spec.get("type") == "list" else PROGRAMS
    if spec.get("choices"):
        return st.sampled_from(list(spec["choices"]))
    kind = spec.get("type", "str")
    if kind == "path" or name in ("counters_root", "path", "manifest", "lock_file"):
        return PATHS
    if name in ("nodes", "name"):
        return NODES
    return {"int": st.sampled_from([1, 2, 3, 8, 30]) | st.sampled_from([1, 2]) | st.integers(-3, 10 ** 6),
            "float": st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, 0.5, 1.0]),
            "bool": st.booleans(),
            "list": st.lists(SCALARS.map(str) if spec.get("elements") == "str" else GARBAGE, max_size=4)
            if spec.get("elements") != "dict" else st.lists(st.dictionaries(st.text(max_size=6), GARBAGE, max_size=4),
                                                            max_size=3),
            "dict": st.dictionaries(st.sampled_from(["gpu001", "gpu002", "x", ""]), GARBAGE, max_size=4),
            "str": SCALARS.map(str)}.get(kind, GARBAGE)


def _not_finite(value):
    if isinstance(value, float):
        return not math.isfinite(value)
    try:
        return isinstance(value, str) and not decimal.Decimal(value).is_finite()
    except (decimal.InvalidOperation, ValueError):
        return False


def _odd(option):
    """Garbage for an option; for an int option, no inf or NaN (float('inf'), "INF", "nan"):
    ansible-core's own int check raises OverflowError or ValueError on them (in AnsibleModule's
    argument spec, before any line of a module runs)."""
    if option.get("type") != "int":
        return GARBAGE
    return GARBAGE.filter(lambda value: not _not_finite(value))


def _draw_args(data, spec):
    args = {}
    # At most one option of garbage per call: more, and nearly every call stops at the argument spec.
    odd = data.draw(st.sampled_from([None, None] + sorted(set(spec) - set(COMMANDS))), label="the odd option")
    for name, option in sorted(spec.items()):
        if not option.get("required") and name != odd and data.draw(st.booleans(), label="leave out " + name):
            continue
        args[name] = data.draw(_odd(option) if name == odd else _typed(name, option), label=name)
    if "environment" in spec:
        args["environment"] = {"PATH": EMPTY_PATH}  # Popen looks programs up on the environment's PATH
    return args


def test_every_module_is_found_with_its_spec():
    assert len(MODULES) >= 6, MODULES
    for name in MODULES:
        assert Specs.of(name), name


@given(name=st.sampled_from(MODULES), check_mode=st.booleans(), data=st.data())
def test_garbage_ends_in_exit_or_a_named_failure(name, check_mode, data):
    spec = Specs.of(name)
    args = _draw_args(data, spec)
    answer = data.draw(st.tuples(st.sampled_from([0, 1, 2, 124, 137]), SCALARS.map(str), SCALARS.map(str)),
                       label="run_command answers")
    args["_ansible_check_mode"] = check_mode
    module = importlib.import_module(PACKAGE + name)
    with pytest.MonkeyPatch.context() as patch:
        # No watcher thread per call (each would poll for the test's lifetime); nothing runs to guard.
        patch.setattr(_guard.Guard, "start", lambda self: self)
        patch.chdir(SCRATCH)  # a garbage relative path (say "-12") lands in the scratch folder
        patch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
        patch.setattr(basic.AnsibleModule, "fail_json", _fail_json)
        patch.setattr(basic.AnsibleModule, "run_command", lambda self, *a, **k: answer)
        patch.setenv("PATH", EMPTY_PATH + os.pathsep + os.environ["PATH"])
        how, result = "returned", {}
        with patch_module_args(args):
            try:
                module.main()
            except Ended as ended:
                how, result = ended.how, ended.result
    assert how in ("exit", "fail"), "%s returned without exit_json or fail_json" % name
    event("%s: %s" % (name, how))  # --hypothesis-show-statistics: how deep the draws went
    if how == "fail":
        assert isinstance(result["msg"], str) and result["msg"].strip(), result
        return
    for check in (result.get("stage_result") or {}).get("checks") or []:
        assert check.get("status") in STATUSES, check
