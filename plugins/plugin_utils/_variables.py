# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's variable names, and the unknown ones among a run's variables (a typo check).

Known names: every option of every role's meta/argument_specs.yml (all entry points), the keys of
roles/*/defaults/main.yml and roles/*/vars/main.yml, and every name with one of the checked
prefixes that the playbooks, role tasks, defaults and vars use (playbook variables such as acceptance_profile,
facts they set such as acceptance_run_id). Controller-side; reads the collection's own files.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import glob
import os
import re

import yaml

PREFIXES = ("acceptance_", "check_", "node_health_", "checkpoint_plan_")
COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
_NAME = re.compile(r"\b((?:%s)[A-Za-z0-9_]*[A-Za-z0-9])\b" % "|".join(PREFIXES))


def _yaml(path):
    try:
        with open(path) as handle:
            return yaml.safe_load(handle) or {}
    except (IOError, OSError, yaml.YAMLError):
        return {}


def known_names(root=COLLECTION_ROOT):
    """Every variable name the collection defines or uses, as a set."""
    names = set()
    for path in glob.glob(os.path.join(root, "roles", "*", "meta", "argument_specs.yml")):
        specs = _yaml(path).get("argument_specs") or {}
        for entry in specs.values():
            names.update(((entry or {}).get("options") or {}).keys())
    for kind in ("defaults", "vars"):
        for path in glob.glob(os.path.join(root, "roles", "*", kind, "main.yml")):
            data = _yaml(path)
            if isinstance(data, dict):
                names.update(str(k) for k in data)
    texts = (glob.glob(os.path.join(root, "playbooks", "*.yml"))
             + glob.glob(os.path.join(root, "playbooks", "tasks", "*.yml"))
             + glob.glob(os.path.join(root, "roles", "*", "tasks", "*.yml"))
             + glob.glob(os.path.join(root, "roles", "*", "defaults", "*.yml"))
             + glob.glob(os.path.join(root, "roles", "*", "vars", "*.yml")))
    for path in texts:
        try:
            with open(path) as handle:
                names.update(_NAME.findall(handle.read()))
        except (IOError, OSError):
            continue
    return set(n for n in names if not n.startswith("__"))


def unknown_variables(names, known, prefixes=PREFIXES):
    """[{name, closest}] for each name with a checked prefix that is not known, sorted by name.

    closest is the nearest known name (difflib), or None when nothing is close.
    """
    known = set(known)
    found = []
    for name in sorted(set(str(n) for n in names)):
        if not name.startswith(tuple(prefixes)) or name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        found.append({"name": name, "closest": close[0] if close else None})
    return found


def describe(unknown):
    """One sentence per unknown name: 'acceptance_profil (did you mean acceptance_profile?)'."""
    return ["%s (did you mean %s?)" % (u["name"], u["closest"]) if u["closest"] else "%s (no similar name)" % u["name"]
            for u in unknown]
