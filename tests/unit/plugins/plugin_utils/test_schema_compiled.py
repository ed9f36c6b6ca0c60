"""The compiled results schema says valid exactly when jsonschema does (it only makes validate fast)."""
import copy
import json

import jsonschema
import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _results
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._schema_compiled import (
    UnsupportedSchema, compile_schema, equal)

from conftest import REPO

SCHEMA = json.loads((REPO / "schemas" / "results.schema.json").read_text())
LIBRARY = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
COMPILED = compile_schema(SCHEMA)


def _trimmed(name):
    """A real run's results.json with a few checks of each status (small enough to validate often)."""
    document = json.loads((REPO / "tests" / "fixtures" / "report" / name / "results.json").read_text())
    kept = []
    for status in ("pass", "fail", "error", "skip"):
        kept += [c for c in document["checks"] if c["status"] == status][:2]
    document["checks"] = kept
    return document


DOCUMENTS = [_trimmed("demo_run"), _trimmed("rdma_run")]
# Words the schema gives a meaning to (enums, property names), so that mutations often land on them.
WORDS = sorted(set(w for w in json.dumps(SCHEMA).replace('"', " ").split() if w.isidentifier()))[:400]
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-3, 10 ** 6), st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from(WORDS), st.text(max_size=8))
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.sampled_from(WORDS), inner, max_size=3)),
                      max_leaves=6)


def _places(value, path=()):
    """Every (container path, key) in a JSON value."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((path, key))
            found += _places(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append((path, index))
            found += _places(item, path + (index,))
    return found


def _at(document, path):
    for key in path:
        document = document[key]
    return document


@pytest.mark.parametrize("document", DOCUMENTS, ids=["demo", "rdma"])
def test_the_real_documents_are_valid_both_ways(document):
    assert LIBRARY.is_valid(document) and COMPILED(document)


@given(which=st.integers(0, len(DOCUMENTS) - 1), picks=st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(
    ("replace", "delete", "add")), VALUES, st.sampled_from(WORDS)), min_size=1, max_size=3))
def test_a_mutated_document_gets_the_same_answer_as_from_jsonschema(which, picks):
    document = copy.deepcopy(DOCUMENTS[which])
    for index, action, value, word in picks:
        places = _places(document)
        path, key = places[index % len(places)]
        holder = _at(document, path)
        if action == "replace":
            holder[key] = value
        elif action == "delete" and isinstance(holder, dict):
            del holder[key]
        elif action == "delete":
            holder.pop(key)
        elif isinstance(holder, dict):
            holder[word] = value
        else:
            holder.append(value)
    assert COMPILED(document) == LIBRARY.is_valid(document)


def test_an_invalid_document_is_still_named_by_jsonschema():
    document = copy.deepcopy(DOCUMENTS[0])
    document["checks"][0]["status"] = "warn"
    problems = _results.validate(document)
    assert problems and problems[0].startswith("checks/0/status: 'warn' is not one of")


def test_a_keyword_it_does_not_know_is_refused_not_ignored():
    with pytest.raises(UnsupportedSchema):
        compile_schema({"type": "string", "pattern": "^a"})
    with pytest.raises(UnsupportedSchema):
        compile_schema({"$ref": "other.json#/x"})


@pytest.mark.parametrize("one, two, same", [(1, 1.0, True), (True, 1, False), (False, 0, False), ("a", "a", True),
                                            ([1, {"a": None}], [1.0, {"a": None}], True), ({"a": 1}, {"b": 1}, False)])
def test_equality_is_json_schema_s(one, two, same):
    assert equal(one, two) is same
