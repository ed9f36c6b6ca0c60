# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results.schema.json compiled into plain Python predicates: is a document valid, fast.

Why apart from _results: the jsonschema library walks the schema for every one of the 150,000
checks of a 4,096-node run (about half a minute on the controller); a predicate per schema node,
made once, answers the same question in about a second. It only says valid or not: _results asks
jsonschema to name the problems of a document this finds invalid, so every message still comes
from the library and the schema file stays the one contract.

The compiler knows the draft 2020-12 keywords the schema uses (type, enum, const, properties,
required, additionalProperties, items, prefixItems, minItems, uniqueItems, minimum, maximum,
minLength, oneOf and local $ref) and the annotations that assert nothing; a schema with any other
keyword is refused (UnsupportedSchema), and _results then validates with jsonschema alone. A unit
property test draws documents and checks that both always agree.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

ANNOTATIONS = frozenset(("description", "title", "$schema", "$id", "$comment", "examples", "default", "$defs"))


class UnsupportedSchema(ValueError):
    """The schema uses a keyword this compiler does not implement."""


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# JSON Schema's types over Python's JSON values (jsonschema's own rules: a bool is no number; a
# float with an integral value is an integer).
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "number": _is_number,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def equal(one, two):
    """JSON equality as JSON Schema means it: 1 == 1.0, but True is not 1."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two))
    if _is_number(one) and _is_number(two):
        return one == two
    return type(one) is type(two) and one == two


class _Compiler(object):
    def __init__(self, root):
        self.root = root
        self.refs = {}

    def ref(self, pointer):
        if pointer not in self.refs:
            if not pointer.startswith("#/"):
                raise UnsupportedSchema("$ref %r is not local" % pointer)
            target = self.root
            for part in pointer[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            holder = []

            def late(value):  # a schema may refer to itself: bound once compiled, below
                return holder[0](value)
            self.refs[pointer] = late
            holder.append(self.compile(target))
        return self.refs[pointer]

    def compile(self, schema):
        if schema is True or schema == {}:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise UnsupportedSchema("a schema must be an object or a boolean: %r" % (schema,))
        tests = []
        for keyword in sorted(schema):
            if keyword in ANNOTATIONS or keyword in ("items", "additionalProperties", "required"):
                continue  # items and additionalProperties are compiled with their siblings
            maker = getattr(self, "_" + keyword.lstrip("$"), None)
            if maker is None:
                raise UnsupportedSchema("keyword %r" % keyword)
            tests.append(maker(schema[keyword], schema))
        if "items" in schema and "prefixItems" not in schema:
            tests.append(self._prefixItems([], schema))
        if ("additionalProperties" in schema or "required" in schema) and "properties" not in schema:
            tests.append(self._properties({}, schema))
        if len(tests) == 1:
            return tests[0]
        return lambda value: all(test(value) for test in tests)

    def _type(self, names, _schema):
        checks = [_TYPES[n] for n in ([names] if isinstance(names, str) else names)]
        return lambda value: any(check(value) for check in checks)

    def _enum(self, options, _schema):
        return lambda value: any(equal(value, option) for option in options)

    def _const(self, constant, _schema):
        return lambda value: equal(value, constant)

    def _minimum(self, low, _schema):
        return lambda value: not _is_number(value) or value >= low

    def _maximum(self, high, _schema):
        return lambda value: not _is_number(value) or value <= high

    def _minLength(self, low, _schema):  # pylint: disable=invalid-name
        return lambda value: not isinstance(value, str) or len(value) >= low

    def _minItems(self, low, _schema):  # pylint: disable=invalid-name
        return lambda value: not isinstance(value, list) or len(value) >= low

    def _uniqueItems(self, unique, _schema):  # pylint: disable=invalid-name
        if not unique:
            return lambda value: True

        def test(value):
            if not isinstance(value, list):
                return True
            return not any(equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value)))
        return test

    def _ref(self, pointer, _schema):
        return self.ref(pointer)

    def _oneOf(self, options, _schema):  # pylint: disable=invalid-name
        compiled = [self.compile(option) for option in options]
        return lambda value: sum(1 for test in compiled if test(value)) == 1

    def _prefixItems(self, prefix, schema):  # pylint: disable=invalid-name
        firsts = [self.compile(item) for item in prefix]
        rest = self.compile(schema["items"]) if "items" in schema else None

        def test(value):
            if not isinstance(value, list):
                return True
            for check, item in zip(firsts, value):
                if not check(item):
                    return False
            return rest is None or all(rest(item) for item in value[len(firsts):])
        return test

    def _properties(self, properties, schema):
        known = dict((name, self.compile(sub)) for name, sub in properties.items())
        required = list(schema.get("required") or [])
        extra = schema.get("additionalProperties", True)
        extra = None if extra is True else self.compile(extra)

        def test(value):
            if not isinstance(value, dict):
                return True
            for name in required:
                if name not in value:
                    return False
            for name, item in value.items():
                check = known.get(name)
                if check is not None:
                    if not check(item):
                        return False
                elif extra is not None and not extra(item):
                    return False
            return True
        return test


def compile_schema(schema):
    """A function(document) -> bool for a JSON Schema; UnsupportedSchema for keywords it does not know."""
    return _Compiler(schema).compile(schema)
