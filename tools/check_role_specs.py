"""Check that each role's defaults/main.yml and meta/argument_specs.yml name the same variables.

A default missing from the spec is undocumented; a spec option without a default (and not
required) is a surprise for users. Private variables (__role_*) belong in neither.
"""
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def check_role(role_dir):
    problems = []
    defaults_file = role_dir / "defaults" / "main.yml"
    specs_file = role_dir / "meta" / "argument_specs.yml"
    defaults = yaml.safe_load(defaults_file.read_text()) if defaults_file.exists() else {}
    defaults = defaults or {}
    if not specs_file.exists():
        return ["%s: meta/argument_specs.yml is missing" % role_dir.name]
    specs = (yaml.safe_load(specs_file.read_text()) or {}).get("argument_specs", {})
    options = specs.get("main", {}).get("options", {}) or {}
    prefix = role_dir.name + "_"
    for name in defaults:
        if name.startswith("__"):
            problems.append("%s: private variable %s belongs in vars/, not defaults" % (role_dir.name, name))
        elif not name.startswith(prefix):
            problems.append("%s: default %s is not prefixed with %s" % (role_dir.name, name, prefix))
        if name not in options:
            problems.append("%s: default %s is missing from meta/argument_specs.yml" % (role_dir.name, name))
    for name, spec in options.items():
        if name not in defaults and not (spec or {}).get("required"):
            problems.append("%s: option %s has no default in defaults/main.yml" % (role_dir.name, name))
    return problems


def main():
    problems = []
    for role_dir in sorted((ROOT / "roles").glob("*/")):
        problems.extend(check_role(role_dir))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
