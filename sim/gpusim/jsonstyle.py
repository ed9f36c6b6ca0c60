# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON laid out as jsoncpp 1.9's ``Value::toStyledString()`` does (what ``dcgmi ... -j`` prints).

StreamWriterBuilder defaults: tab indentation, ``"key" : value``, object members in byte order
(jsoncpp keeps them in a std::map), every non-empty array one element per line (comment style
"All"), a new line (after the trailing space of ``" : "``) before a nested ``{`` or ``[``, and
one final newline.
"""
from __future__ import annotations

import json


def _quote(text):
    return json.dumps(text, ensure_ascii=True)


def _scalar(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return _quote(str(value))


class _Writer:
    def __init__(self):
        self.parts = []
        self.indent = ""
        self.indented = True

    def write_indent(self):
        self.parts.append("\n" + self.indent)

    def with_indent(self, text):
        if not self.indented:
            self.write_indent()
        self.parts.append(text)
        self.indented = False

    def value(self, value):
        if isinstance(value, dict):
            if not value:
                self.parts.append("{}")
                return
            self.with_indent("{")
            self.indent += "\t"
            keys = sorted(value, key=lambda k: k.encode("utf-8"))
            for n, key in enumerate(keys):
                self.with_indent(_quote(key))
                self.parts.append(" : ")
                self.value(value[key])
                if n + 1 < len(keys):
                    self.parts.append(",")
            self.indent = self.indent[:-1]
            self.with_indent("}")
        elif isinstance(value, (list, tuple)):
            if not value:
                self.parts.append("[]")
                return
            self.with_indent("[")
            self.indent += "\t"
            for n, child in enumerate(value):
                if not self.indented:
                    self.write_indent()
                self.indented = True
                self.value(child)
                self.indented = False
                if n + 1 < len(value):
                    self.parts.append(",")
            self.indent = self.indent[:-1]
            self.with_indent("]")
        else:
            self.parts.append(_scalar(value))


def styled(value):
    """``value`` (dicts, lists, str, int, float, bool, None) as jsoncpp toStyledString() text."""
    writer = _Writer()
    writer.value(value)
    return "".join(writer.parts) + "\n"
