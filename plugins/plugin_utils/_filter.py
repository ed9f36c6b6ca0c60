# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Glue between the pure parsers in module_utils and Ansible filter plugins.

Every filter of the collection goes through guarded_filters (its FilterModule.filters()): input of
the wrong shape (a dict where a list belongs, a string where a number belongs, inf, a missing key)
becomes an AnsibleFilterError naming the filter and what it got, never a bare Python exception
from deep inside, which Ansible reports as an "unexpected templating type error" that names
neither. tests/unit/plugins/filter/test_filter_properties.py tries every filter with garbage.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools

from ansible.errors import AnsibleError, AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state

# What a filter's code raises on input of the wrong shape (its own clear AnsibleError passes).
_INPUT_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, RecursionError,
                 ZeroDivisionError)


def _shape(value):
    """'dict of 3', 'list of 0', 'str', 'float inf': what a filter was given, short."""
    if isinstance(value, (dict, list, tuple)):
        return "%s of %d" % (type(value).__name__, len(value))
    if isinstance(value, float):
        return "float %r" % value
    return type(value).__name__


def guarded(name, function):
    """``function`` as the filter ``name``: an input error is an AnsibleFilterError naming both."""
    @functools.wraps(function)
    def _filter(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except AnsibleError:
            raise
        except _INPUT_ERRORS as exc:
            given = ", ".join([_shape(a) for a in args] + ["%s=%s" % (k, _shape(v)) for k, v in sorted(kwargs.items())])
            raise AnsibleFilterError("%s could not use its input (%s): %s: %s"
                                     % (name, given, type(exc).__name__, str(exc)[:300]))
    return _filter


def node_states_of(name, hostvars, nodes, run_id=""):
    """The filter ``name``'s view of every node's acceptance state of this run (see _run_state)."""
    if not isinstance(nodes, (list, tuple)):
        raise AnsibleFilterError("%s: nodes must be a list, got %s" % (name, type(nodes).__name__))
    return _run_state.node_states(hostvars, nodes, run_id=run_id)


def guarded_filters(filters):
    """A FilterModule.filters() dict with every filter guarded."""
    return dict((name, guarded(name, function)) for name, function in filters.items())


def text_filter(name, parser):
    """Wrap parser(text) as a filter that rejects non-string input with a clear message.

    Garbled or empty strings are the parser's business (errors in the result); only a wrong
    type — a dict from a registered task result instead of its .stdout, say — is an exception.
    """
    def _filter(data, *args, **kwargs):
        if isinstance(data, bytes):
            data = data.decode("utf-8", errors="replace")
        if not isinstance(data, string_types):
            raise AnsibleFilterError(
                "%s expects the tool's output as a string, got %s; pass the task result's "
                ".stdout, not the whole result" % (name, type(data).__name__))
        return parser(str(data), *args, **kwargs)
    _filter.__name__ = name
    return _filter
