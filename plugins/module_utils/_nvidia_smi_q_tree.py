# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``nvidia-smi -q`` report read into a tree: one node per indentation level, one per GPU block.

Private to _nvidia_smi: parse_nvidia_smi_q reads the GPU fields from these trees
(_nvidia_smi_q_fields). Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvidia_smi_values import _echo
from ansible_collections.gpucluster.acceptance.plugins.module_utils._text import (
    is_missing,
    lines_of,
    strip_launcher_prefix,
    to_number,
)


_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
# A section header whose bus id is unreadable ("GPU 00000000:ZZ:00.0"): still a new GPU block.
_GPU_HEADER_LIKE = re.compile(r"^GPU\s+(\S*:\S*)\s*$")
# Keys never contain a colon: the first one separates key and value ("Bus Id : :" has value ":").
_KEY_VALUE = re.compile(r"^([^:\s](?:[^:]*[^:\s])?)\s*:\s?(.*)$")
_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")


class _Node(object):
    """One indentation level of the -q report: values and subsections by name.

    line and text: where it was printed (1-based line number, the line stripped), for evidence.
    """

    __slots__ = ("name", "value", "children", "order", "line", "text_line", "parent")

    def __init__(self, name, value=None, line=None, text_line=None):
        self.name = name
        self.value = value
        self.children = {}
        self.order = []
        self.line = line
        self.text_line = text_line
        self.parent = None

    def add(self, node):
        if node.name not in self.children:
            self.children[node.name] = node
        self.order.append(node)
        node.parent = self
        return node

    def path(self):
        """'ECC Errors > Volatile > DRAM Uncorrectable : 2' (the printed line with its sections)."""
        names = []
        node = self.parent
        while node is not None and node.parent is not None:
            names.append(node.name)
            node = node.parent
        names.reverse()
        return re.sub(r"\s{2,}", " ", " > ".join(names + [self.text_line or self.name]))

    def leaves(self):
        """Every node below this one that carries a value, in output order."""
        found = []
        for child in self.order:
            if child.value is not None and child.value.strip():
                found.append(child)
            found.extend(child.leaves())
        return found

    def get(self, *path):
        node = self
        for name in path:
            if node is None:
                return None
            node = node.children.get(name)
        return node

    def text(self, *path):
        """The value at path, None when missing, N/A or a section without a value."""
        node = self.get(*path)
        if node is None or node.value is None or is_missing(node.value):
            return None
        return node.value.strip()

    def number(self, *path):
        return to_number(self.text(*path))


def _indent(line):
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _parse_tree(text, result):
    """Top-level values and [bus id or None, lineno, tree, header text] for every GPU block."""
    top = _Node("top")
    blocks = []
    stack = None
    banners = 0
    for lineno, raw in enumerate(lines_of(text), 1):
        line = strip_launcher_prefix(raw).rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        if _echo(stripped):
            result["warnings"].append("line %d: shell prompt or command echo ignored: %s"
                                      % (lineno, stripped[:120]))
            continue
        if stripped[:1] == "=" and _BANNER.match(stripped):
            banners += 1
            if banners > 1:
                result["warnings"].append("line %d: a second NVSMI LOG banner: several reports "
                                          "concatenated" % lineno)
            stack = None
            continue
        level = _indent(line)
        match = _GPU_HEADER.match(stripped) if level == 0 else None
        if level == 0 and (match or _GPU_HEADER_LIKE.match(stripped)):
            root = _Node(stripped, line=lineno, text_line=stripped)
            if match:
                blocks.append([match.group(1).upper(), lineno, root, stripped])
            else:
                result["errors"].append("line %d: GPU section header with an unreadable PCI bus id: %s"
                                        % (lineno, stripped[:80]))
                blocks.append([None, lineno, root, stripped])
            stack = [(-1, root)]
            continue
        kv = _KEY_VALUE.match(stripped)
        if kv:
            node = _Node(kv.group(1).strip(), kv.group(2), line=lineno, text_line=stripped)
        else:
            node = _Node(stripped, line=lineno, text_line=stripped)
        if stack is None:
            if level == 0:
                top.add(node)
            continue
        while len(stack) > 1 and stack[-1][0] >= level:
            stack.pop()
        stack[-1][1].add(node)
        stack.append((level, node))
    return top, blocks


def _merge_blocks(blocks, warnings):
    """One block per bus id: `-q -d ECC` and `-q -d TEMPERATURE` outputs pasted together are one GPU."""
    merged = []
    by_bus = {}
    for block in blocks:
        bus_id, lineno, root = block[0], block[1], block[2]
        first = by_bus.get(bus_id) if bus_id else None
        if first is None:
            if bus_id:
                by_bus[bus_id] = block
            merged.append(block)
            continue
        warnings.append("line %d: GPU %s appears again; its sections are merged into the first one "
                        "(values already read are kept)" % (lineno, bus_id))
        for child in root.order:
            first[2].add(child)
    return merged
