# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Glue between the pure parsers in module_utils and Ansible filter plugins."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types


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
