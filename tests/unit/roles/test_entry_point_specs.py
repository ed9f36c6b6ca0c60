"""Every role entry point a playbook or role imports has an argument spec (meta/argument_specs.yml),
so that `ansible-doc -t role` documents it and its options are the role's own."""
import functools
import re

import yaml

from conftest import REPO

_TEMPLATE_VAR = re.compile(r"\{\{\s*(\w+)")
_DEFAULT = re.compile(r"default\(['\"](\w+)['\"]\)")


def _tasks(data):
    """Every task-like mapping in a YAML document, nested blocks included."""
    if isinstance(data, list):
        for item in data:
            yield from _tasks(item)
    elif isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _tasks(value)


@functools.lru_cache(maxsize=1)
def _documents():
    paths = sorted(list((REPO / "playbooks").rglob("*.yml")) + list((REPO / "roles").glob("*/tasks/*.yml")))
    return tuple((path, yaml.safe_load(path.read_text())) for path in paths)


def _values_of(variable):
    """The literal values a play or task gives a variable (tasks_from: "{{ var }}")."""
    found = set()
    for _path, data in _documents():
        for task in _tasks(data):
            value = task.get(variable)
            if isinstance(value, str) and "{{" not in value:
                found.add(value)
    return found


def _entry_points():
    wanted = {}
    for path, data in _documents():
        for task in _tasks(data):
            for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                spec = task.get(key)
                if not isinstance(spec, dict) or "tasks_from" not in spec:
                    continue
                role = spec["name"].split(".")[-1]
                value = str(spec["tasks_from"])
                names = {value}
                if "{{" in value:
                    names = _values_of(_TEMPLATE_VAR.search(value).group(1)) | set(_DEFAULT.findall(value))
                for name in names:
                    wanted.setdefault(role, set()).add(re.sub(r"\.ya?ml$", "", name))
    return wanted


def test_the_entry_points_are_found():
    wanted = _entry_points()
    assert {"validate", "ssh", "stage", "main"} <= wanted["collect"]
    assert "stage" in wanted["check_topology"] and "discover" in wanted["check_fabric"]


def test_every_imported_entry_point_has_a_spec_with_the_role_s_options():
    missing = []
    for role, names in sorted(_entry_points().items()):
        specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        for name in sorted(names):
            if name not in specs:
                missing.append("%s: %s" % (role, name))
            elif specs[name].get("options") != specs["main"].get("options"):
                missing.append("%s: %s has other options than main" % (role, name))
    assert missing == []
